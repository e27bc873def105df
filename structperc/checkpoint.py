"""Per-epoch training checkpoints, so a killed run resumes where it stopped.

A checkpoint is ``checkpoint.safetensors`` (the weight tables and the averaging sums) plus
``checkpoint.json`` (epoch, convergence state, per-epoch history, shapes), each written
atomically; the JSON is written last and names the epoch, so a crash between the two files leaves
the previous, consistent pair readable.  Resuming with the same seed replays the same document
order for the remaining epochs (the order depends only on seed and epoch), so the resumed run ends
with exactly the weights of an uninterrupted one.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from structperc.io import atomic_save_tensors, atomic_write_json, load_tensors, read_json
from structperc.model.updates import Updater
from structperc.train import Convergence, EpochLog

TENSORS, META = "checkpoint.safetensors", "checkpoint.json"


def save_checkpoint(
    directory: Path, updater: Updater, convergence: Convergence, history: list[EpochLog]
) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {f"weights.{n}": t for n, t in updater.weights.tables().items()}
    tensors.update({f"updater.{k}": v for k, v in updater.state().items()})
    atomic_save_tensors(directory / TENSORS, tensors)
    atomic_write_json(
        directory / META,
        {
            "epoch": history[-1].epoch if history else 0,
            "convergence": convergence.state(),
            "history": [asdict(h) for h in history],
            "shapes": {n: list(t.shape) for n, t in updater.weights.tables().items()},
            "labels": updater.weights.labels,
        },
    )


def load_checkpoint(
    directory: Path, updater: Updater, convergence: Convergence
) -> tuple[int, list[EpochLog]]:
    """Restore weights, averaging sums and convergence state; returns (epoch, history)."""
    meta = read_json(directory / META)
    tables = updater.weights.tables()
    shapes = {n: list(t.shape) for n, t in tables.items()}
    if meta["shapes"] != shapes or meta["labels"] != updater.weights.labels:
        raise ValueError(
            f"{directory / META}: checkpoint of a different model (shapes {meta['shapes']}, "
            f"labels {meta['labels']}); expected shapes {shapes}, labels "
            f"{updater.weights.labels}. Remove it or run without trainer.resume=true."
        )
    tensors = load_tensors(directory / TENSORS)
    for n, t in tables.items():
        t.data.copy_(tensors[f"weights.{n}"])
    updater.load_state({k[8:]: v for k, v in tensors.items() if k.startswith("updater.")})
    convergence.load_state(meta["convergence"])
    return int(meta["epoch"]), [EpochLog(**h) for h in meta["history"]]
