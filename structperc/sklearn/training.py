"""One training of the scikit-learn face's model: a learner, the chain, ``trainer.fit``.

``train_chain`` is what one process runs, alone or as one rank of a group
(``parallel.py``): the chain structure over CRFsuite's tables (``ChainWeights(edges=False)``),
an ``Updater``, ``trainer.fit`` (the epochs of an online learner, iterative parameter mixing over
the ranks; the CRF's own optimisation, its objective summed over the ranks), then the averaged
weights installed.  Each epoch (L-BFGS iteration) goes into the training log, with the accuracy
on held-out sequences where there are some (rank 0 alone evaluates).  A continued training
starts from a ``continuation.Start`` (through ``trainer.fit``'s resume), and the training state
a later one would continue from is returned where asked (``continuation.kept_state``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from structperc.distributed import SERIAL, Group
from structperc.learn.base import Learner
from structperc.learn.fitting import EpochLog, FitSettings
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.sklearn.continuation import Start, kept_state
from structperc.structures.chain import ChainData, ChainStructure
from structperc.trainer import fit


@dataclass
class TrainingLog:
    """How training went (``CRF.training_log_``).

    iterations: one dict per epoch (L-BFGS iteration, SGD epoch): ``num``, ``loss`` (the CRF's
        objective; the online learners' mislabeled tokens), ``error`` (mislabeled tokens per
        token before each update), ``time`` (seconds), ``dev_accuracy`` with held-out data.
    stopped_by: "converged", "max_epochs", "no_progress" (``learn/fitting.FitResult``).
    seconds: training time.
    """

    iterations: list[dict] = field(default_factory=list)
    stopped_by: str = ""
    seconds: float = 0.0

    @property
    def last_iteration(self) -> dict | None:
        return self.iterations[-1] if self.iterations else None


def epoch_entry(ep: EpochLog) -> dict:
    return {
        "num": ep.epoch,
        "loss": float(ep.extra.get("objective", ep.errors)),
        "error": ep.word_error,
        "time": ep.seconds,
    }


def train_chain(
    learner: Learner,
    weights: ChainWeights,
    data: ChainData,
    settings: FitSettings,
    dev: ChainData | None = None,
    group: Group = SERIAL,
    start: Start | None = None,
    keep_state: bool = False,
) -> tuple[TrainingLog, dict]:
    """Train ``weights`` in place on ``data`` (this rank's part of it on a parallel ``group``);
    the averaged weights are installed at the end.  ``dev``: sequences with gold labels whose
    token accuracy each epoch's log entry reports (rank 0).  ``start``: where a continued
    training starts (None: from zero).  Returns the log and, with ``keep_state``, the training
    state to keep in the model (else {})."""
    structure = ChainStructure(weights)
    updater = Updater(weights, average=learner.average)
    log = TrainingLog()

    def on_epoch(ep: EpochLog) -> None:
        entry = epoch_entry(ep)
        if dev is not None and group.is_main:
            with updater.averaged():
                predicted = structure.predict(dev, device=settings.device)
            right = sum(
                int((dev.gold(d) == dev.gold(d).new_tensor(p)).sum())
                for d, p in enumerate(predicted)
            )
            entry["dev_accuracy"] = right / max(dev.num_tokens, 1)
        log.iterations.append(entry)

    resume = {"checkpoint": start, "resume": True} if start is not None else {}
    result = fit(
        learner, structure, updater, data, settings, on_epoch=on_epoch, group=group, **resume
    )
    state = kept_state(updater, learner) if keep_state else {}
    updater.finalize()
    log.stopped_by, log.seconds = result.stopped_by, result.train_seconds
    return log, state
