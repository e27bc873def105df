"""TensorBoard monitoring: per-epoch training and dev curves, hyperparameters at the end.

Scalars are grouped as ``train/*`` (word_error, updates, epoch_seconds, weight_norm) and
``dev/*`` (precision, recall, f1); ``add_hparams`` records the run's settings against its final
metrics, so the HPARAMS tab compares the jobs of a sweep.
"""

from __future__ import annotations

from pathlib import Path

from torch.utils.tensorboard import SummaryWriter


class Monitor:
    """A thin SummaryWriter wrapper writing into ``<run dir>/tb``; ``None`` dir disables it."""

    def __init__(self, log_dir: str | Path | None):
        self.writer = SummaryWriter(str(log_dir)) if log_dir is not None else None

    def scalars(self, step: int, values: dict[str, float]) -> None:
        if self.writer is None:
            return
        for name, value in values.items():
            if value is not None:
                self.writer.add_scalar(name, value, step)
        self.writer.flush()

    def hparams(self, hparams: dict, metrics: dict[str, float]) -> None:
        if self.writer is None:
            return
        clean = {
            k: v if isinstance(v, (int, float, str, bool)) else str(v) for k, v in hparams.items()
        }
        self.writer.add_hparams(clean, {f"hparam/{k}": v for k, v in metrics.items()}, run_name=".")
        self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
