"""Online learners of Shimizu & Haas (2006, section 4), for label-chunk structures and chains.

Both learners run Algorithm 4.1: for each instance (x_i, y_i), y' = argmax_y s(x_i, y) under the
current weights; if y' != y_i the weights move along d = Phi(x_i, y_i) - Phi(x_i, y') by a step tau:

    VP    (Alg. 4.2, voted perceptron)   tau = 1
    MMVP  (Alg. 4.3, max-margin update)  tau = max(0, min((l(y') - s(y_i) + s(y')) / ||d||^2, C))

with l the Hamming loss (POS tags + NP tags for the joint model, labels for a chain).  The paper's
SMO step with alpha_i(y_i) = 1, alpha_i(y') = 0 reduces to MMVP with C = 1, and so does single-best
MIRA (McDonald et al. 2005; Crammer & Singer 2003): after an unclipped step, s(y_i) - s(y') = l(y').
Both predict with the averaged weights (Collins 2002), which is how the paper approximates the
votes of Freund & Schapire's voted perceptron; ``model.updates.Updater`` keeps that average.

A learner sees a "problem" (``Problem``): how to decode, to form d, and to count the loss.  The
joint model's problem is ``JointProblem``; ``ChainProblem`` wraps a first-order chain
(``ChainWeights`` + Viterbi + ``path_delta``), so the same learner objects train the baselines
through ``structperc.train.fit``, which calls ``learner.step(updater, batch, gold)``.
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import Tensor

from structperc.decode.viterbi import viterbi
from structperc.learn.base import StepStats
from structperc.model.batch import FeatureBatch
from structperc.model.updates import SparseDelta, Updater, path_delta


def max_margin_tau(loss: float, margin: float, norm_sq: float, C: float) -> float:
    """The step of Alg. 4.3: clip((loss - margin) / norm_sq, 0, C); 0 when norm_sq is 0.

    margin = s(y*) - s(y') under the current weights, norm_sq = ||Phi(y*) - Phi(y')||^2.
    """
    if norm_sq <= 0:
        return 0.0
    return max(0.0, min((loss - margin) / norm_sq, C))


class Problem(Protocol):
    """What a learner needs to know about a structure (the instance is one sentence)."""

    def decode(self, batch) -> object: ...  # y' = argmax_y s(x, y)

    def errors(self, gold, pred) -> int: ...  # tokens with a wrong tag (training error)

    def loss(self, gold, pred) -> float: ...  # l(y') against y*

    def delta(self, batch, gold, pred) -> SparseDelta: ...  # Phi(x, y*) - Phi(x, y')


class ChainProblem:
    """A first-order chain: Viterbi on ``ChainWeights`` potentials; labels [N]; Hamming loss."""

    def __init__(self, weights):
        self.weights = weights

    def decode(self, batch: FeatureBatch) -> Tensor:
        paths, _ = viterbi(self.weights.potentials(batch), batch.lengths)  # [B, T]
        return batch.unpad(paths)  # [N]

    def errors(self, gold: Tensor, pred: Tensor) -> int:
        return int((gold != pred).sum())

    def loss(self, gold: Tensor, pred: Tensor) -> float:
        return float((gold != pred).sum())

    def delta(self, batch: FeatureBatch, gold: Tensor, pred: Tensor) -> SparseDelta:
        return path_delta(batch, gold, pred, self.weights.num_labels)


class _OnlineLearner:
    """Alg. 4.1 around a step size rule ``tau``."""

    average: bool

    def tau(self, loss: float, delta: SparseDelta, tables: dict[str, Tensor]) -> float:
        raise NotImplementedError

    @torch.no_grad()
    def update(self, updater: Updater, problem: Problem, batch, gold) -> StepStats:
        """Decode one instance and, if it is wrong, move the weights by tau * d."""
        pred = problem.decode(batch)
        errors = problem.errors(gold, pred)
        tokens = int(batch.lengths.sum())
        if not errors:
            return StepStats(tokens=tokens)
        delta = problem.delta(batch, gold, pred)
        tau = self.tau(problem.loss(gold, pred), delta, updater.weights.tables())
        if tau > 0:
            updater.apply(delta, tau)
        return StepStats(tokens=tokens, errors=errors, updates=int(tau > 0))

    def step(self, updater: Updater, batch: FeatureBatch, gold: Tensor) -> StepStats:
        """One instance of a first-order chain (the signature ``structperc.train.fit`` calls)."""
        return self.update(updater, ChainProblem(updater.weights), batch, gold)


class VotedPerceptron(_OnlineLearner):
    """Alg. 4.1 with Alg. 4.2 (tau = 1); ``average`` predicts with the averaged weights (VP)."""

    def __init__(self, average: bool = True):
        self.average = average

    def tau(self, loss: float, delta: SparseDelta, tables: dict[str, Tensor]) -> float:
        return 1.0


class MaxMarginPerceptron(_OnlineLearner):
    """Alg. 4.1 with Alg. 4.3, the max-margin (SMO / single-best MIRA) step clipped at ``C``."""

    def __init__(self, C: float = 1.0, average: bool = True):
        if C <= 0:
            raise ValueError(f"learner.C must be > 0, got {C}")
        self.C = C
        self.average = average

    def tau(self, loss: float, delta: SparseDelta, tables: dict[str, Tensor]) -> float:
        return max_margin_tau(loss, delta.dot(tables), delta.norm_sq(), self.C)
