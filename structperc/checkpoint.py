"""Per-epoch training checkpoints, so a killed run resumes where it stopped.

A checkpoint is ``checkpoint.<epoch>.safetensors`` (the weight tables, the averaging sums and
the learner's own state, e.g. AROW's variances: ``Learner.state``) plus ``checkpoint.json``
(epoch, convergence state, per-epoch history, table shapes, the model's signature, e.g. its
labels, and the name of its tensor file), each written atomically; the JSON
is written last and names the tensor file of its epoch, so a crash between the two files leaves
the previous, consistent pair readable; older tensor files are removed after the JSON.  Resuming
with the same seed replays the same document order for the remaining epochs (the order depends
only on seed and epoch), so the resumed run ends with exactly the weights of an uninterrupted one.
``trainer.fit`` saves and loads them; this module only reads and writes the files.
"""

from __future__ import annotations

from pathlib import Path

from torch import Tensor

from structperc.io import atomic_save_tensors, atomic_write_json, load_tensors, read_json
from structperc.model.updates import Updater

TENSORS, META = "checkpoint.safetensors", "checkpoint.json"  # (TENSORS: older checkpoints)


class Checkpoint:
    """The checkpoint folder of one run.

    Args:
        directory: where the two files go (``<run dir>/checkpoint``).
        signature: JSON-able facts of the model that must match on resume (e.g. its labels).
    """

    def __init__(self, directory: str | Path, signature: dict | None = None):
        self.directory = Path(directory)
        self.signature = dict(signature or {})

    def exists(self) -> bool:
        return (self.directory / META).is_file()

    def save(
        self,
        updater: Updater,
        convergence: dict,
        history: list[dict],
        learner_state: dict[str, Tensor] | None = None,
    ) -> None:
        """The tables and averaging sums of ``updater``, the learner's own tensors
        (``Learner.state``), the convergence state and history."""
        self.directory.mkdir(parents=True, exist_ok=True)
        tables = updater.weights.tables()
        tensors = {f"weights.{n}": t for n, t in tables.items()}
        tensors.update({f"updater.{k}": v for k, v in updater.state().items()})
        tensors.update({f"learner.{k}": v for k, v in (learner_state or {}).items()})
        epoch = history[-1]["epoch"] if history else 0
        name = f"checkpoint.{epoch}.safetensors"
        atomic_save_tensors(self.directory / name, tensors)
        atomic_write_json(
            self.directory / META,
            {
                "epoch": epoch,
                "convergence": convergence,
                "history": history,
                "shapes": {n: list(t.shape) for n, t in tables.items()},
                "signature": self.signature,
                "tensors": name,
            },
        )
        for old in self.directory.glob("checkpoint*.safetensors"):
            if old.name != name:
                old.unlink(missing_ok=True)

    def load(self, updater: Updater, learner=None) -> tuple[int, dict, list[dict]]:
        """Restore weights and averaging sums into ``updater`` and the learner's own state into
        ``learner`` (``Learner.load_state``; None: not read); (epoch, convergence, history)."""
        meta = read_json(self.directory / META)
        tables = updater.weights.tables()
        shapes = {n: list(t.shape) for n, t in tables.items()}
        # checkpoints written before the signature was introduced name the labels only
        signature = meta.get("signature", {"labels": meta.get("labels")})
        if meta["shapes"] != shapes or signature != self.signature:
            raise ValueError(
                f"{self.directory / META}: checkpoint of a different model (shapes "
                f"{meta['shapes']}, {signature}); expected shapes {shapes}, "
                f"{self.signature}. Remove it or run without trainer.resume=true."
            )
        tensors = load_tensors(self.directory / meta.get("tensors", TENSORS))
        for n, t in tables.items():
            t.data.copy_(tensors[f"weights.{n}"])
        updater.load_state({k[8:]: v for k, v in tensors.items() if k.startswith("updater.")})
        if learner is not None:
            learner.load_state({k[8:]: v for k, v in tensors.items() if k.startswith("learner.")})
        return int(meta["epoch"]), meta["convergence"], meta["history"]
