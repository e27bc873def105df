"""Learners: the update rules, each written against a structure's interface
(``structperc.structures``) and the fitting vocabulary, so any learner trains any structure
that has the capabilities it requires.

    base.py                ``Learner`` and ``StepStats``: what every learner shares
    fitting.py             ``FitSettings``, ``FitResult``: the vocabulary of the training loop
                           (``structperc.trainer.fit``), on nothing of the package
    targets.py             what a step trains towards (the gold, a partial gold's best
                           completion)
    costs.py               per-label costs of cost-sensitive training
    perceptron.py          the structured perceptron, plain or averaged (Collins 2002)
    margin.py              the margin perceptron (Kazama & Torisawa 2007, Alg. 3.1)
    max_margin.py          the max-margin update (Shimizu & Haas 2006, Alg. 4.3)
    passive_aggressive.py  PA, PA-I, PA-II (Crammer et al. 2006)
    arow.py                AROW (Crammer, Kulesza & Dredze 2009)
    proposed.py            perceptrons with non-local features (Kazama & Torisawa 2007,
                           Alg. 4.1 and 4.2)
    ranking.py             the ranking perceptron over fixed candidate lists (Collins 2002)
    boosting.py            boosting for ranking (Collins 2002, section 4.2)

A new learner is a module here and a file in ``conf/learner/`` naming it by ``_target_``; the
CRF, trained by L-BFGS, is ``structperc.crf``.
"""

from structperc.learn.arow import AROW
from structperc.learn.base import Learner, StepStats
from structperc.learn.boosting import RankBoost
from structperc.learn.costs import cost_vector
from structperc.learn.fitting import EpochLog, FitResult, FitSettings
from structperc.learn.margin import MarginPerceptron
from structperc.learn.max_margin import MaxMarginPerceptron
from structperc.learn.passive_aggressive import PassiveAggressive
from structperc.learn.perceptron import Perceptron
from structperc.learn.proposed import ProposedPerceptron
from structperc.learn.ranking import RankingPerceptron
from structperc.learn.targets import StepTargets

__all__ = [
    "AROW",
    "EpochLog",
    "FitResult",
    "FitSettings",
    "Learner",
    "MarginPerceptron",
    "MaxMarginPerceptron",
    "PassiveAggressive",
    "Perceptron",
    "ProposedPerceptron",
    "RankBoost",
    "RankingPerceptron",
    "StepStats",
    "StepTargets",
    "cost_vector",
]
