"""What every task writes while and after it trains: TensorBoard curves, the log, results.json.

``epoch_reporter`` is the ``on_epoch`` hook of ``train.fit`` that every task uses: TensorBoard
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
from structperc.model.updates import Updater
from structperc.monitor import Monitor
from structperc.train import EpochLog

log = logging.getLogger("structperc")


def epoch_reporter(
    monitor: Monitor,
    updater: Updater,
    every: int,
    split: str,
    evaluate: Callable[[], dict[str, float]],
    record: tuple[str, ...],
) -> Callable[[EpochLog], None]:
    """``on_epoch`` for ``train.fit``.

    Args:
        monitor: the run's TensorBoard writer.
        updater: evaluation runs inside ``updater.averaged()``.
        every: evaluate after every ``every`` epochs (0: never during training).
        split: the evaluation split's name ("dev", "test"): scalars ``<split>/<metric>``.
        evaluate: the metrics of the current weights on that split.
        record: metrics kept in the epoch's history as ``<split>_<metric>``.
    """

    def on_epoch(ep: EpochLog) -> None:
        tables = updater.weights.tables().values()
        values = {
            "train/word_error": ep.word_error,
            "train/updates": ep.updates,
            "train/epoch_seconds": ep.seconds,
            "train/weight_norm": float(torch.stack([t.norm() for t in tables]).norm()),
        }
        # learner-specific numbers (the CRF's objective, step, ...) as train/<name>
        values.update({f"train/{k}": v for k, v in ep.extra.items() if isinstance(v, int | float)})
        msg = (
            f"epoch {ep.epoch}: word error {ep.word_error:.5f}, "
            f"{ep.updates} updates, {ep.seconds:.1f}s"
        )
        if every and ep.epoch % every == 0:
            with updater.averaged():
                metrics = evaluate()
            values.update({f"{split}/{k}": v for k, v in metrics.items()})
            for k in record:
                ep.extra[f"{split}_{k}"] = metrics[k]
                msg += f", {split} {k} {metrics[k]:.2f}"
        monitor.scalars(ep.epoch, values)
        log.info(msg)

    return on_epoch


def history_rows(logs: list[EpochLog]) -> list[dict]:
    """The per-epoch history of results.json."""
    return [
        {"epoch": h.epoch, "word_error": h.word_error, "updates": h.updates, "seconds": h.seconds}
        | h.extra
        for h in logs
    ]


def chunk_scores(s: ChunkScores) -> dict:
    """Precision, recall, F1, token accuracy and per-type F1 (percent) for results.json."""
    return {
        "f1": s.f1,
        "precision": s.precision,
        "recall": s.recall,
        "accuracy": s.accuracy,
        "per_type": {t: ts.f1 for t, ts in s.per_type.items()},
    }


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
