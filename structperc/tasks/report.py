"""What every task writes while and after it trains: TensorBoard curves, the log, results.json.

``EpochReporter`` is the ``on_epoch`` hook of ``train.fit`` that every task uses: TensorBoard
scalars ``train/*`` (word error, updates, epoch seconds, weight norm, the learner's numeric
extras) and, every ``every`` epochs, the evaluation split's metrics under the averaged weights
(``<split>/*``), some of which it also keeps in the epoch's history.  ``finish`` writes
``results.json`` (atomically) and the hyperparameters against the final metrics (the HPARAMS tab).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import torch

from structperc.eval.chunks import ChunkScores
from structperc.io import atomic_write_json
from structperc.learn.fitting import EpochLog
from structperc.model.updates import Updater
from structperc.monitor import Monitor

log = logging.getLogger("structperc")


class EpochReporter:
    """``on_epoch`` for ``train.fit``, in two phases so the first may run in a forked child
    (``train.OverlappedReports``): ``measure`` reads the weights, ``publish`` writes it out.

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


def chunk_scores(s: ChunkScores) -> dict:
    """conlleval's precision, recall, F1, token accuracy, chunk counts and per-type F1 (percent)
    for results.json, and the F1 over whole documents (``f1_document``) where it was scored."""
    out = {
        "f1": s.f1,
        "precision": s.precision,
        "recall": s.recall,
        "accuracy": s.accuracy,
        "n_gold": s.n_gold,
        "n_pred": s.n_pred,
        "n_correct": s.n_correct,
        "per_type": {t: ts.f1 for t, ts in s.per_type.items()},
    }
    if s.f1_document is not None:
        out["f1_document"] = s.f1_document
    return out


def finish(out_dir: Path, monitor: Monitor, results: dict, final: dict[str, float]) -> None:
    """Write ``results.json`` and the hyperparameters against the ``final`` metrics."""
    atomic_write_json(out_dir / "results.json", results)
    monitor.hparams(results.get("hparams", {}), final)
    monitor.close()
    log.info("results in %s", out_dir / "results.json")


def timed(fn, *args, **kw):
    """(fn(*args, **kw), seconds)."""
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0
