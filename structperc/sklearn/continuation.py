"""Continuing a fitted model on new data: what ``CRF(warm_start=True).fit`` and
``CRF.partial_fit`` start from.

A continued training starts from the fitted model, its tables grown for the attributes and
labels the new data adds (``model/growth.py``: the old entries kept where they were, the new
ones 0), and restores the learner's state where the model kept one (``model.py``) and the
learner uses it:

- An averaging learner (``ap``; ``pa``, ``margin``, ``mmvp`` with ``averaging``) keeps its
  own weights w, the lazy sums u (u += c d for an update d made after c instances) and the
  count c of instances seen (Collins 2002; ``model/updates.py``).  ``average="continue"``
  continues all three, so that the model after the new training predicts with

      w - u / c  =  (1 / c) sum_{k=1..c} w_k,

  the average of the weight vectors after every instance of *both* trainings: the model of
  one training that ran the first training's epochs and then the second's, in their orders.
  Epochs keep their numbers (the next after the model's last, ``info["epoch"]``; an epoch's
  shuffled order is seeded by (random_state, epoch)), so m calls of ``partial_fit(X, y)``
  give the model of ``fit(X, y)`` with ``max_iterations=m``, as long as fit's stopping rule
  does not end it sooner.  ``average="restart"`` starts from the model's (averaged) weights
  and averages the new training's instances only (scikit-learn's SGD does so on a warm
  ``fit``).  Continuing fits more data for the same task; where the task changed, the old
  weight vectors outvote the new ones for as long as they are the majority of the average:
  a CoNLL-2003 model trained with MISC tagged O, continued on the data with MISC for as many
  epochs again, still predicted no MISC at all with the continued average, and came within
  0.7 of the MISC F1 of a model trained with MISC from the start with the restarted one
  (experiments/warm_start/).  So ``average="auto"`` (the estimator's default) restarts when
  the new data brings labels the model does not have, and continues otherwise.
- AROW continues its per-weight variances (new weights start at ``variance``).
- ``lbfgs`` and ``l2sgd`` start from the model's weights with a fresh optimiser: the
  objective is that of the new data alone, whose optimum does not depend on the start; a
  start near it takes fewer iterations.  With CRFsuite's observed support the weights of the
  (attribute, label) pairs the new data does not show are 0, as at that optimum.
- A learner that cannot use the kept state (none kept: the model was fitted without
  ``warm_start``; an averaged model continued by a learner that does not average; AROW after
  another learner) starts from the model's (predicting) weights, and an averaging learner
  averages from there, as with ``average="restart"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from structperc.learn.arow import AROW
from structperc.learn.base import Learner
from structperc.model.growth import grown_label_columns, grown_label_pairs
from structperc.model.updates import Updater
from structperc.sklearn.model import FittedModel


@dataclass
class Start:
    """What a continued training starts from: the tables (node [A, L], edge [1, L*L]), the
    averaging state (``Updater.state``'s keys; empty: averaging starts afresh), the learner's
    own state (``Learner.state``'s; empty: fresh) and the number of the last epoch trained.

    ``trainer.fit`` receives it as the checkpoint it resumes (``exists``, ``load``, ``save``),
    so that its own resume restores all of it after the learner's ``start``.
    """

    tables: dict[str, Tensor]
    updater: dict[str, Tensor] = field(default_factory=dict)
    learner: dict[str, Tensor] = field(default_factory=dict)
    epoch: int = 0
    directory: str = "the fitted model"  # (what fit's log line calls it)

    def exists(self) -> bool:
        return True

    @torch.no_grad()
    def load(self, updater: Updater, learner: Learner | None = None) -> tuple[int, dict, list]:
        """Install the start into ``updater`` (and ``learner``); (the last epoch, a fresh
        convergence state, no past epochs)."""
        for name, table in updater.weights.tables().items():
            table.copy_(self.tables[name].to(table.device))
        if self.updater and updater.average:
            device = updater.weights.tables()["node"].device
            updater.load_state({k: v.to(device) for k, v in self.updater.items()})
        if learner is not None and self.learner:
            learner.load_state(self.learner)
        return self.epoch, {"previous": None, "streak": 0}, []

    def save(self, *args, **kwargs) -> None:
        """(a continued training keeps no checkpoint between its epochs)"""


AVERAGES = ("auto", "continue", "restart")  # what a continued training does with the average


def continued_start(
    model: FittedModel,
    num_attributes: int,
    labels: list[str],
    learner: Learner,
    average: str = "auto",
) -> Start:
    """The start of training ``learner`` on from ``model`` over ``num_attributes`` attributes
    and ``labels`` (the model's first, in order), the average continued or restarted as
    ``average`` says (one of ``AVERAGES``: module docstring)."""
    if average not in AVERAGES:
        raise ValueError(f"warm_average must be one of {AVERAGES}, got {average!r}")
    A, L = num_attributes, len(labels)
    state = model.state

    def node(table: Tensor, fill: float = 0.0) -> Tensor:  # [A0, L0] -> [A, L]
        return grown_label_columns(table, A, L, fill)

    def edge(table: Tensor, fill: float = 0.0) -> Tensor:  # [1, L0 * L0] -> [1, L * L]
        return grown_label_pairs(table.reshape(1, -1), 1, L, fill)

    if average == "auto":
        average = "restart" if len(labels) > len(model.labels) else "continue"
    averaged = "updater.seen" in state
    if learner.online and learner.average and averaged and average == "continue":
        tables = {"node": node(state["weights.node"]), "edge": edge(state["weights.edge"])}
        updater = {
            "sums.node": node(state["updater.sums.node"]),
            "sums.edge": edge(state["updater.sums.edge"]),
            "seen": state["updater.seen"],
        }
    else:
        tables = {"node": node(model.node), "edge": edge(model.edge)}
        updater = {}
    own = {}
    if type(learner) is AROW and "learner.variance.node" in state:
        own = {
            "variance.node": node(state["learner.variance.node"], learner.variance),
            "variance.edge": edge(state["learner.variance.edge"], learner.variance),
        }
    epoch = int(model.info.get("epoch", 0)) if learner.online else 0
    return Start(tables, updater, own, epoch)


def kept_state(updater: Updater, learner: Learner) -> dict[str, Tensor]:
    """The training state to keep in the model (``model.py``) before the averaged weights are
    installed: the learner's weights and the averaging sums where it averages, its own state."""
    out: dict[str, Tensor] = {}
    if updater.average:
        out.update({f"weights.{n}": t.clone() for n, t in updater.weights.tables().items()})
        out.update({f"updater.{k}": v.clone() for k, v in updater.state().items()})
    out.update({f"learner.{k}": v.clone() for k, v in learner.state().items()})
    return out
