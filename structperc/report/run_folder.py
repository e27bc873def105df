"""What a run folder holds, read for the report: nothing in it is run, only read.

    results.json        scores, timings, the per-epoch history, the settings (``hparams``)
    .hydra/config.yaml  the composed settings;  .hydra/overrides.yaml  the command's overrides
    tb/events.*         the TensorBoard scalars written while it trained (``tasks/training.py``)
    {dev,test}.pred.txt the predictions (``predictions.py``)
    model.json          the model, where the run saved one
    run.log             the log

A missing file leaves its part empty (the report says what is absent); a file that is there but
cannot be read is a ValueError naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from structperc.io import read_json
from structperc.report.predictions import Predicted, read_predictions

SPLITS = ("dev", "test")
# the tasks whose prediction files are token, columns, gold tag, predicted tag (the joint and
# cascade tasks write two tag pairs, POS and NP, and are not read)
TAG_PAIR_TASKS = ("tagging", "rerank")


@dataclass
class RunFolder:
    """The parts of a run folder the report shows."""

    path: Path
    results: dict
    config: dict = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)
    scalars: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    predictions: dict[str, list[Predicted]] = field(default_factory=dict)
    model: dict | None = None

    @property
    def has_model(self) -> bool:
        return self.model is not None

    @property
    def labels(self) -> list[str]:
        if self.results.get("labels"):
            return list(self.results["labels"])
        return list(self.model["labels"]) if self.model else []

    @property
    def corpus(self) -> dict:
        return (self.model or {}).get("info", {}).get("corpus") or {}

    @property
    def task(self) -> str:
        """The task that made the run (results.json's), "tagging" when it does not say."""
        return (
            self.results.get("task") or (self.results.get("hparams") or {}).get("task") or "tagging"
        )

    @property
    def command(self) -> str:
        """The command that made the run, as far as the folder tells."""
        return " ".join(["python -m structperc.run", *self.overrides])


def read_yaml(path: Path):
    """The YAML in ``path`` (safe loading: plain data); ValueError naming it when malformed."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: not valid YAML ({err})") from None


def read_scalars(tb_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value)] of every event file under ``tb_dir``, by step; a step written
    again (a resumed run) keeps the later value."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    found: dict[str, dict[int, tuple[float, float]]] = {}
    for events in sorted(tb_dir.rglob("events.out.tfevents.*")):
        acc = EventAccumulator(str(events), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags().get("scalars", []):
            points = found.setdefault(tag, {})
            for e in acc.Scalars(tag):
                if e.step not in points or points[e.step][0] <= e.wall_time:
                    points[e.step] = (e.wall_time, float(e.value))
    return {tag: sorted((s, v) for s, (_, v) in pts.items()) for tag, pts in found.items()}


def read_run(path: str | Path) -> RunFolder:
    """The run folder at ``path``; FileNotFoundError when it has no results.json."""
    path = Path(path)
    if not (path / "results.json").is_file():
        raise FileNotFoundError(
            f"{path}: no results.json: not a finished run folder (structperc.run writes it last)"
        )
    run = RunFolder(path, read_json(path / "results.json"))
    if (path / ".hydra" / "config.yaml").is_file():
        run.config = read_yaml(path / ".hydra" / "config.yaml") or {}
    if (path / ".hydra" / "overrides.yaml").is_file():
        run.overrides = [str(o) for o in read_yaml(path / ".hydra" / "overrides.yaml") or []]
    if (path / "tb").is_dir():
        run.scalars = read_scalars(path / "tb")
    if (path / "model.json").is_file():
        run.model = read_json(path / "model.json")
    skip = ("token", "_", run.corpus.get("label"))
    middle = [c for c in run.corpus.get("columns", []) if c not in skip]
    for split in SPLITS if run.task in TAG_PAIR_TASKS else ():
        file = path / f"{split}.pred.txt"
        if file.is_file():
            run.predictions[split] = read_predictions(file, middle or None)
    return run
