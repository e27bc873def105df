"""The structured perceptron (Collins 2002a) and its averaged form, for any structure.

For each instance (x, y*):  y' = argmax_y Phi(x, y) . w  (the structure's decoder);  if y' != y*:
w += Phi(x, y*) - Phi(x, y').  The averaged perceptron predicts with the average of the weight
vectors after every instance (kept lazily by ``model.updates.Updater``).  Shimizu & Haas's (2006)
voted perceptron (VP, Alg. 4.1 + 4.2) is this rule with ``average=True``: they approximate the
votes of Freund & Schapire's voted perceptron by the averaged weights, as Collins does.
"""

from __future__ import annotations

from structperc.learn.base import Learner, StepStats, check_bpm_runs
from structperc.model.updates import Updater


class Perceptron(Learner):
    """Collins' perceptron; ``average=True`` predicts with the averaged weights (VP).

    ``bpm_runs``: start from Kazama & Torisawa's BPM initialisation (``trainer.fit``);
    ``label_costs``: decode loss-augmented (``learn/costs.py``; scores are sums of update counts,
    so costs of the perceptron are in those units).
    """

    def __init__(self, average: bool = False, bpm_runs: int = 0, label_costs=None):
        self.average = average
        self.bpm_runs = check_bpm_runs(bpm_runs)
        self.label_costs = label_costs

    def step(self, structure, updater: Updater, batch, gold) -> StepStats:
        """One online update on one instance; ``gold`` its labeling (``structure.instance``)."""
        pred = structure.argmax(batch)
        errors = structure.errors(gold, pred)
        if errors:
            updater.apply(structure.delta(batch, gold, pred))
        return StepStats(tokens=len(gold), errors=errors, updates=int(errors > 0))
