"""The skeleton every task's training shares: a run folder's TensorBoard writer, the per-epoch
reports, the checkpoints, ``trainer.fit`` and the final averaging, and results.json.

``TrainingRun(out_dir, group)`` opens the folder; ``run.fit(learner, structure, updater, data,
settings, evaluation=..., checkpoint=...)`` trains one model into it (a task may train several,
as the cascade does its tagger and chunker), reporting every epoch through an ``EpochReporter``;
``run.finish(results, final)`` writes results.json and the hyperparameters against the final
metrics.  The training loop's names (``FitSettings``, ``FitResult``, ``EpochLog`` of
``learn/fitting.py``, ``trainer.fit``) come into the tasks through this module alone.

``EpochReporter`` is the ``on_epoch`` hook of ``trainer.fit``: TensorBoard scalars ``train/*``
(word error, updates, epoch seconds, weight norm, the learner's numeric extras) and, every
``every`` epochs, the evaluation split's metrics under the averaged weights (``<split>/*``),
some of which it also keeps in the epoch's history.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from structperc.checkpoint import Checkpoint
from structperc.data.document import Document
from structperc.distributed import SERIAL, Group
from structperc.learn.fitting import EpochLog, FitResult, FitSettings
from structperc.model.updates import Updater
from structperc.monitor import Monitor
from structperc.tasks.report import finish
from structperc.trainer import fit

__all__ = [
    "EpochLog",
    "EpochReporter",
    "Evaluation",
    "FitResult",
    "FitSettings",
    "ModelSettings",
    "RunSettings",
    "TrainingRun",
    "fit",
    "history_rows",
]

log = logging.getLogger("structperc")


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """What the settings of a task that trains its models with one learner hold in common (its
    frozen dataclass adds its own): the corpus's splits, the learner (trained in place), the
    training loop's settings (``fit``), the decoding batch, whether to write the predictions,
    and the run's settings for results.json and TensorBoard (``hparams``)."""

    corpus: dict[str, list[Document]]
    learner: object
    fit: FitSettings
    batch_size: int = 64
    write_predictions: bool = True
    hparams: dict = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ModelSettings(RunSettings):
    """What the settings of a task that trains one model hold in common: ``RunSettings``, and
    evaluate every ``eval_every`` epochs (0: never), a checkpoint after every epoch and whether
    to resume from it (``TrainingRun.fit_model``)."""

    eval_every: int = 1
    checkpoint: bool = True
    resume: bool = False


@dataclass(frozen=True)
class Evaluation:
    """What a run evaluates while it trains: ``evaluate()``'s metrics of the current weights on
    ``split`` (scalars ``<split>/<metric>``) every ``every`` epochs (0: never), ``record`` kept
    in the epoch's history as ``<split>_<metric>``.  ``forkable``: ``evaluate`` changes nothing
    outside what it returns, so it may run in a forked child (False where it keeps state, e.g.
    the best epoch's weights)."""

    split: str
    evaluate: Callable[[], dict[str, float]]
    record: tuple[str, ...]
    every: int = 1
    forkable: bool = True


class TrainingRun:
    """One run folder's training and results; on several ranks (``group``) rank 0 alone writes
    TensorBoard events and evaluates during training."""

    def __init__(self, out_dir: Path, group: Group = SERIAL):
        out_dir.mkdir(parents=True, exist_ok=True)
        self.out_dir, self.group = out_dir, group
        self.monitor = Monitor(out_dir / "tb" if group.is_main else None)

    def fit(
        self,
        learner,
        structure,
        updater: Updater,
        data,
        settings: FitSettings,
        *,
        evaluation: Evaluation | None = None,
        on_epoch: Callable[[EpochLog], None] | None = None,
        on_epoch_start: Callable[[int], dict] | None = None,
        checkpoint: dict | None = None,
        resume: bool = False,
    ) -> FitResult:
        """``trainer.fit`` of ``learner`` on ``data``, then the averaged weights in place.

        ``evaluation``: reported every epoch by an ``EpochReporter`` (else ``on_epoch``, the
        caller's own hook); ``checkpoint``: the model's signature (e.g. its labels) to keep a
        checkpoint after every epoch under ``out_dir/checkpoint`` (None: none);
        ``resume``: continue from that checkpoint."""
        if evaluation is not None:
            on_epoch = EpochReporter(
                self.monitor,
                updater,
                evaluation.every if self.group.is_main else 0,
                evaluation.split,
                evaluation.evaluate,
                evaluation.record,
                evaluation.forkable,
            )
        checkpoints = (
            None if checkpoint is None else Checkpoint(self.out_dir / "checkpoint", checkpoint)
        )
        result = fit(
            learner,
            structure,
            updater,
            data,
            settings,
            on_epoch=on_epoch,
            on_epoch_start=on_epoch_start,
            checkpoint=checkpoints,
            resume=resume,
            group=self.group,
        )
        updater.finalize()
        return result

    def fit_model(
        self,
        settings: ModelSettings,
        structure,
        updater: Updater,
        data,
        *,
        evaluation: Evaluation,
        signature: dict,
        on_epoch_start: Callable[[int], dict] | None = None,
    ) -> FitResult:
        """``fit`` as ``settings`` say: their learner and training loop, ``evaluation`` every
        ``settings.eval_every`` epochs, a checkpoint signed ``signature`` (the model's labels)
        when ``settings.checkpoint``, resumed when ``settings.resume``."""
        return self.fit(
            settings.learner,
            structure,
            updater,
            data,
            settings.fit,
            evaluation=replace(evaluation, every=settings.eval_every),
            on_epoch_start=on_epoch_start,
            checkpoint=signature if settings.checkpoint else None,
            resume=settings.resume,
        )

    def finish(self, results: dict, final: dict[str, float]) -> dict:
        """Write ``results`` (results.json) and the hyperparameters against the ``final``
        metrics; returns ``results``."""
        finish(self.out_dir, self.monitor, results, final)
        return results


class EpochReporter:
    """``on_epoch`` for ``trainer.fit``, in two phases so the first may run in a forked child
    (``trainer.OverlappedReports``): ``measure`` reads the weights, ``publish`` writes it out.

    Args:
        monitor: the run's TensorBoard writer.
        updater: evaluation runs inside ``updater.averaged()``.
        every: evaluate after every ``every`` epochs (0: never during training).
        split: the evaluation split's name ("dev", "test"): scalars ``<split>/<metric>``.
        evaluate: the metrics of the current weights on that split.
        record: metrics kept in the epoch's history as ``<split>_<metric>``.
        forkable: ``evaluate`` changes nothing outside what it returns, so it may run in a
            forked child (False where it keeps state, e.g. the best epoch's weights).
    """

    def __init__(
        self,
        monitor: Monitor,
        updater: Updater,
        every: int,
        split: str,
        evaluate: Callable[[], dict[str, float]],
        record: tuple[str, ...],
        forkable: bool = True,
    ):
        self.monitor, self.updater, self.every = monitor, updater, every
        self.split, self.evaluate, self.record = split, evaluate, record
        self.forkable = forkable

    def measure(self, ep: EpochLog) -> dict[str, float]:
        """The weight norm and, every ``every`` epochs, the split's metrics (also kept in
        ``ep.extra``): the scalars of the weights as they are now."""
        tables = self.updater.weights.tables().values()
        values = {"train/weight_norm": float(torch.stack([t.norm() for t in tables]).norm())}
        if self.every and ep.epoch % self.every == 0:
            with self.updater.averaged():
                metrics = self.evaluate()
            values.update({f"{self.split}/{k}": v for k, v in metrics.items()})
            for k in self.record:
                ep.extra[f"{self.split}_{k}"] = metrics[k]
        return values

    def publish(self, ep: EpochLog, measured: dict[str, float]) -> None:
        """TensorBoard scalars and the log line of ``ep``."""
        recorded = {f"{self.split}_{k}" for k in self.record}
        values = {
            "train/word_error": ep.word_error,
            "train/updates": ep.updates,
            "train/epoch_seconds": ep.seconds,
        }
        # learner-specific numbers (the CRF's objective, step, ...) as train/<name>
        values.update(
            {
                f"train/{k}": v
                for k, v in ep.extra.items()
                if isinstance(v, int | float) and k not in recorded
            }
        )
        values.update(measured)
        msg = (
            f"epoch {ep.epoch}: word error {ep.word_error:.5f}, "
            f"{ep.updates} updates, {ep.seconds:.1f}s"
        )
        for k in self.record:
            if f"{self.split}/{k}" in measured:  # an evaluation epoch
                msg += f", {self.split} {k} {measured[f'{self.split}/{k}']:.2f}"
        self.monitor.scalars(ep.epoch, values)
        log.info(msg)

    def __call__(self, ep: EpochLog) -> None:
        self.publish(ep, self.measure(ep))


def history_rows(logs: list[EpochLog]) -> list[dict]:
    """The per-epoch history of results.json."""
    return [
        {"epoch": h.epoch, "word_error": h.word_error, "updates": h.updates, "seconds": h.seconds}
        | h.extra
        for h in logs
    ]
