"""The structured perceptron (Collins 2002a) and its averaged form.

For each instance (x, y*):  y' = argmax_y Phi(x, y) . w  (Viterbi);  if y' != y*:
w += Phi(x, y*) - Phi(x, y').  The averaged perceptron predicts with the average of the weight
vectors after every instance (kept lazily by ``model.updates.Updater``).
"""

from __future__ import annotations

from torch import Tensor

from structperc.decode.viterbi import viterbi
from structperc.learn.base import StepStats
from structperc.model.batch import FeatureBatch
from structperc.model.updates import Updater, path_delta


class Perceptron:
    """Collins' perceptron; ``average=True`` predicts with the averaged weights."""

    def __init__(self, average: bool = False):
        self.average = average

    def step(self, updater: Updater, batch: FeatureBatch, gold: Tensor) -> StepStats:
        """One online update on one document; ``gold`` [N] label ids of its tokens."""
        weights = updater.weights
        potentials = weights.potentials(batch)  # [1, T, L, L]
        paths, _ = viterbi(potentials, batch.lengths)  # [1, T]
        pred = batch.unpad(paths)  # [N]
        errors = int((pred != gold).sum())
        if errors:
            updater.apply(path_delta(batch, gold, pred, weights.num_labels))
        return StepStats(tokens=len(gold), errors=errors, updates=int(errors > 0))
