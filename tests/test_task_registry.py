"""A task is two files: a module that registers it and its ``conf/task/<name>.yaml``.

The toy task here is written into a temporary folder, outside the package (its module on
``sys.path``, its yaml in a config folder added by ``hydra.searchpath``), and runs through
``run.main_from_config`` like the project's own tasks.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra_runs import ROOT, one_line_failure, run_main, write_synthetic_conll2003

from structperc.tasks import registry

TOY_MODULE = '''
"""Each word's most frequent training tag: a task in one module."""

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from structperc.distributed import SERIAL, Group
from structperc.tasks.inputs import load_data
from structperc.tasks.registry import task
from structperc.tasks.training import TrainingRun


@dataclass(frozen=True)
class ToySettings:
    corpus: dict
    unseen: str
    hparams: dict = field(default_factory=dict)


def toy_settings(config) -> ToySettings:
    return ToySettings(load_data(config), config.cfg.task.unseen, config.hparams())


@task("toy", build=toy_settings, headline=("dev.accuracy", "test.accuracy"))
def run_toy(settings: ToySettings, out_dir: Path, group: Group = SERIAL) -> dict:
    counts = defaultdict(Counter)
    for doc in settings.corpus["train"]:
        for word, tag in zip(doc.tokens, doc.tags):
            counts[word][tag] += 1
    results = {"task": "toy", "hparams": settings.hparams}
    for split in ("dev", "test"):
        pairs = [
            (tag, counts[word].most_common(1)[0][0] if word in counts else settings.unseen)
            for doc in settings.corpus[split]
            for word, tag in zip(doc.tokens, doc.tags)
        ]
        results[split] = {"accuracy": 100.0 * sum(g == p for g, p in pairs) / len(pairs)}
    final = {f"{s}_accuracy": results[s]["accuracy"] for s in ("dev", "test")}
    return TrainingRun(out_dir, group).finish(results, final)
'''

TOY_YAML = """\
name: toy
module: toy_task
unseen: O   # the tag of a word never seen in training
"""


@pytest.fixture
def toy_task(tmp_path, monkeypatch) -> Path:
    """The toy task's module and yaml in ``tmp_path``; returns its config folder.  The registry
    and ``sys.modules`` are restored afterwards."""
    (tmp_path / "toy_task.py").write_text(TOY_MODULE)
    (tmp_path / "conf" / "task").mkdir(parents=True)
    (tmp_path / "conf" / "task" / "toy.yaml").write_text(TOY_YAML)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_TASKS", dict(registry._TASKS))
    yield tmp_path / "conf"
    sys.modules.pop("toy_task", None)


def test_a_task_of_two_files_runs_through_run_py(tmp_path, toy_task, monkeypatch):
    (tmp_path / "data").mkdir()
    data = write_synthetic_conll2003(tmp_path / "data", {"train": 20, "dev": 5, "test": 5})
    overrides = [f"hydra.searchpath=[file://{toy_task}]", "task=toy", "task.unseen=O"]
    score, results = run_main(overrides, data, tmp_path / "run", monkeypatch)
    assert "toy" in registry.registered()
    assert results["task"] == "toy" and 50 < results["dev"]["accuracy"] <= 100
    assert score == results["dev"]["accuracy"]  # the headline the task declared
    assert results["hparams"]["task.name"] == "toy" and results["hparams"]["task.unseen"] == "O"
    assert "task.module" not in results["hparams"]  # code, not a setting
    assert any((tmp_path / "run" / "tb").iterdir())


def test_every_task_of_conf_task_is_registered_by_its_module():
    from hydra_runs import compose_config

    from structperc.run import task_of
    from structperc.tasks.registry import lookup

    names = sorted(p.stem for p in (ROOT / "conf" / "task").glob("*.yaml"))
    for name in names:
        task = task_of(compose_config([f"task={name}"]))
        assert task.name == name and lookup(name) is task
    assert {n for n in names if lookup(n).distributed} == {"tagging", "joint"}


def test_the_headline_is_the_first_metric_present():
    task = registry.Task("t", dict, dict, ("dev.f1", "test.f1"))
    assert task.headline_of({"dev": {"f1": 90}, "test": {"f1": 80}}) == 90.0
    assert task.headline_of({"test": {"f1": 80}}) == 80.0
    assert task.headline_of({}) == 0.0  # a rerank fold job: no scores
    nan = registry.Task("t", dict, dict, ("dev.f1",), missing=float("nan"))
    assert nan.headline_of({"test": {"f1": 80}}) != nan.headline_of({"test": {"f1": 80}})


def test_a_name_registered_by_two_modules_is_refused(monkeypatch):
    monkeypatch.setattr(registry, "_TASKS", dict(registry._TASKS))

    def drive(settings, out_dir, group):
        return {}

    def other(settings, out_dir, group):
        return {}

    other.__module__ = "elsewhere"
    registry.task("twice", build=dict, headline=("test.f1",))(drive)
    registry.task("twice", build=dict, headline=("test.f1",))(drive)  # a reload: the same module
    with pytest.raises(ValueError, match="registered twice"):
        registry.task("twice", build=dict, headline=("test.f1",))(other)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (
            "task.name=nonsense",
            "task.name must be one of cascade, joint, rerank, tagchunk, tagging",
        ),
        ("task.module=no_such_module", "task.module=no_such_module: No module named"),
    ],
)
def test_an_unknown_task_is_one_line(tmp_path, override, expected):
    done = subprocess.run(
        [sys.executable, "-c", "from structperc.run import main; main()",
         "+experiment=conll03_local", override, f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=ROOT, capture_output=True, text=True,
        env={k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"},
    )  # fmt: skip
    one_line_failure(done, "structperc-train: error:", expected)
