"""The margin perceptron of Kazama & Torisawa (2007), Algorithm 3.1.

For each instance (x, y*), with y', y'' the best and second-best labelings under the current
weights (exact 2-best decoding):

    if y' != y*:                         w += Phi(x, y*) - Phi(x, y')
    elif s(y*) - s(y'') <= C:            w += Phi(x, y*) - Phi(x, y'')

so the gold labeling is pushed ahead of its closest rival by a margin of at least C (scores are
unnormalised sums of feature weights, hence the large C values of the paper: 500 ... 32,000).
Averaging (``average=True``) is applied as for the averaged perceptron; ``bpm_runs`` starts from
the BPM initialisation, as the paper's margin row does (section 6.2).
"""

from __future__ import annotations

from structperc.learn.base import Learner, StepStats, check_bpm_runs
from structperc.model.updates import Updater


class MarginPerceptron(Learner):
    """Alg. 3.1 with margin ``C``; ``average`` predicts with the averaged weights."""

    requires = frozenset({"nbest"})
    nbest = 2

    def __init__(
        self, C: float = 11313.0, average: bool = False, bpm_runs: int = 0, label_costs=None
    ):
        if C < 0:
            raise ValueError(f"learner.C must be >= 0, got {C}")
        self.C = C
        self.average = average
        self.bpm_runs = check_bpm_runs(bpm_runs)
        self.label_costs = label_costs  # loss-augmented 2-best (learn/targets.py)

    def step(self, structure, updater: Updater, batch, gold) -> StepStats:
        """One online update on one instance; ``gold`` its labeling (``structure.instance``)."""
        paths, scores = structure.nbest(batch, 2)  # [2, N], [2]
        first = paths[0]
        errors = structure.errors(gold, first)
        rival = None
        if errors:
            rival = first
        elif bool(scores[1] > float("-inf")) and float(scores[0] - scores[1]) <= self.C:
            rival = paths[1]
        if rival is not None:
            updater.apply(structure.delta(batch, gold, rival))
        return StepStats(tokens=len(gold), errors=errors, updates=int(rival is not None))
