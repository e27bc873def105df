"""What every learner shares: the per-instance statistics it reports, and the ``Learner`` base.

A learner is an update rule written once against the structure interface
(``structures/base.py``): it sees a structure, an ``Updater`` (``model/updates.py``) and one
instance, and never the weight tables' layout.  It declares, instead of being probed for:

    requires   the capabilities it needs of a structure ("argmax", "nbest", "rescoring",
               "marginals"); ``trainer.fit`` refuses a structure that lacks one
    average    whether it predicts with the averaged weights (the ``Updater`` keeps the sums)
    bpm_runs   Kazama & Torisawa's BPM initialisation: ``trainer.fit`` first averages this many
               single shuffled epochs from zero weights (0: off)
    nbest      how many labelings a step decodes (1: the argmax); a rescoring structure is
               evaluated with this many candidates during training
    online     True: ``step`` is called per instance by ``trainer.fit``'s epoch loop; False: the
               learner runs its own optimisation over the whole training set (``fit``, the CRF)
    resumable  (online = False) ``trainer.fit`` checkpoints its iterations, and on resume hands
               ``fit`` the past iterations' logs (``past``) with the weights restored
    base_scale β, the scale of a first model's score as a reranking feature (Collins 2002)
    vote       whether it predicts by the votes of every intermediate weight vector (Freund &
               Schapire's voted perceptron; the updater then records the updates)
    label_costs  label (or chunk type) -> the cost of missing it, or None: cost-augmented
               decoding for the online learners, softmax-margin for the CRF (``learn/costs.py``)

A learner that keeps state of its own beside the weights (AROW's per-weight variances) sets it
up in ``start`` (``trainer.fit`` calls it before training) and hands it to the per-epoch checkpoint
through ``state`` / ``load_state``, so a killed run resumes with it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # annotations only
    from torch import Tensor

    from structperc.model.updates import Updater


@dataclass
class StepStats:
    """What one training instance did.

    tokens:  tokens of the instance.
    errors:  tokens the model mislabeled before the update (Kazama's per-word training error).
    updates: weight updates made (0 or 1 for the plain perceptron).
    extra:   learner-specific counts (e.g. updates of kind A and B), summed over an epoch.
    """

    tokens: int = 0
    errors: int = 0
    updates: int = 0
    extra: Counter = field(default_factory=Counter)

    def __iadd__(self, other: StepStats) -> StepStats:
        self.tokens += other.tokens
        self.errors += other.errors
        self.updates += other.updates
        self.extra.update(other.extra)
        return self


class Learner:
    """Base of the update rules; subclasses set the class attributes and ``step`` (or ``fit``).

    Constructors only store (and check) their arguments, so Hydra builds a learner from
    ``conf/learner/*.yaml`` before the structure exists.
    """

    requires: frozenset[str] = frozenset({"argmax"})
    average: bool = False
    bpm_runs: int = 0
    nbest: int = 1
    online: bool = True
    resumable: bool = False
    base_scale: float = 1.0
    vote: bool = False
    label_costs: dict[str, float] | None = None

    def step(self, structure, updater: Updater, batch, gold) -> StepStats:
        """One online update on one instance (``structure.instance``); gold is its labeling."""
        raise NotImplementedError(f"{type(self).__name__} is not an online learner")

    def fit(self, structure, updater: Updater, data, settings, on_epoch=None, group=None):
        """Train on all of ``data`` at once (``online = False``); returns a ``fitting.FitResult``.
        ``group``: the ``distributed.Group`` training together (None: this process alone)."""
        raise NotImplementedError(f"{type(self).__name__} trains online: use trainer.fit")

    def start(self, updater: Updater) -> None:
        """Fresh learner state for training ``updater.weights`` (default: none to keep)."""

    def state(self) -> dict[str, Tensor]:
        """The learner's own tensors for a checkpoint (default: none)."""
        return {}

    def load_state(self, state: dict[str, Tensor]) -> None:
        """Restore what ``state`` returned (after ``start``)."""
        if state:
            raise ValueError(f"{type(self).__name__} keeps no state, got {sorted(state)}")

    @property
    def name(self) -> str:
        """The learner's short name in logs and result files."""
        return type(self).__name__


class SizedStep(Learner):
    """A learner that, on a mistake, moves the weights by tau · (Φ(x, y*) − Φ(x, y')), its
    step size tau a function of the mistake (``tau``): the max-margin update, PA."""

    def tau(self, loss: float, margin: float, norm_sq: float) -> tuple[float, dict]:
        """(tau, counts to report) of a mistake of ``loss`` (the structure's), ``margin``
        s(y*) − s(y') and ||Φ(x, y*) − Φ(x, y')||²."""
        raise NotImplementedError

    @torch.no_grad()
    def step(self, structure, updater: Updater, batch, gold) -> StepStats:
        """Decode one instance and, if it is wrong, move the weights by tau * d."""
        pred = structure.argmax(batch)
        errors = structure.errors(gold, pred)
        if not errors:
            return StepStats(tokens=len(gold))
        delta = structure.delta(batch, gold, pred)
        margin = delta.dot(updater.weights.tables())
        tau, extra = self.tau(structure.loss(gold, pred), margin, delta.norm_sq())
        if tau > 0:
            updater.apply(delta, tau)
        stats = StepStats(tokens=len(gold), errors=errors, updates=int(tau > 0))
        stats.extra.update(extra)
        return stats


def check_bpm_runs(bpm_runs: int) -> int:
    """``bpm_runs`` as an int >= 0, else ValueError naming the config key."""
    if int(bpm_runs) != bpm_runs or bpm_runs < 0:
        raise ValueError(f"learner.bpm_runs must be an integer >= 0, got {bpm_runs}")
    return int(bpm_runs)
