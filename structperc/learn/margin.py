"""The margin perceptron of Kazama & Torisawa (2007), Algorithm 3.1.

For each instance (x, y*), with y', y'' the best and second-best labelings under the current
weights (exact 2-best decoding):

    if y' != y*:                         w += Phi(x, y*) - Phi(x, y')
    elif s(y*) - s(y'') <= C:            w += Phi(x, y*) - Phi(x, y'')

so the gold labeling is pushed ahead of its closest rival by a margin of at least C (scores are
unnormalised sums of feature weights, hence the large C values of the paper: 500 ... 32,000).
Averaging (``average=True``) is applied as for the averaged perceptron.
"""

from __future__ import annotations

from torch import Tensor

from structperc.decode.nbest import nbest
from structperc.learn.base import StepStats
from structperc.model.batch import FeatureBatch
from structperc.model.updates import Updater, path_delta


class MarginPerceptron:
    """Alg. 3.1 with margin ``C``; ``average`` predicts with the averaged weights."""

    def __init__(self, C: float = 11313.0, average: bool = False):
        if C < 0:
            raise ValueError(f"learner.C must be >= 0, got {C}")
        self.C = C
        self.average = average

    def step(self, updater: Updater, batch: FeatureBatch, gold: Tensor) -> StepStats:
        """One online update on one document; ``gold`` [N] label ids of its tokens."""
        weights = updater.weights
        paths, scores = nbest(weights.potentials(batch), batch.lengths, 2)  # [1, 2, T], [1, 2]
        first = batch.unpad(paths[:, 0])  # [N]
        errors = int((first != gold).sum())
        rival = None
        if errors:
            rival = first
        elif bool(scores[0, 1] > float("-inf")) and float(scores[0, 0] - scores[0, 1]) <= self.C:
            rival = batch.unpad(paths[:, 1])
        if rival is not None:
            updater.apply(path_delta(batch, gold, rival, weights.num_labels))
        return StepStats(tokens=len(gold), errors=errors, updates=int(rival is not None))
