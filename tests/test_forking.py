"""Forked children (``structperc.forking``) and ``trainer.processes`` > 1 in ``trainer.fit``:
BPM's single epochs side by side and each epoch's evaluation + checkpoint overlapping the next
epoch give bit-identical weights, histories and checkpoints to one process."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
import torch
from test_train import corpus, dev_f1  # noqa: F401 - the synthetic corpus fixture

from structperc import trainer as train_module
from structperc.checkpoint import Checkpoint
from structperc.forking import Child, ChildError, SharedTables, can_fork
from structperc.learn.fitting import FitSettings
from structperc.learn.margin import MarginPerceptron
from structperc.learn.perceptron import Perceptron
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.monitor import Monitor
from structperc.run import check_processes
from structperc.structures.chain import ChainData, ChainStructure
from structperc.tasks.training import EpochReporter
from structperc.trainer import fit

pytestmark = pytest.mark.skipif(not can_fork(), reason="forked children need Linux")

# ---------------------------------------------------------------- Child, SharedTables


def test_child_returns_what_its_function_returns_from_the_snapshot_at_the_fork():
    t = torch.arange(4.0)

    def late_sum():
        time.sleep(0.2)  # the parent has changed t by now: the child must still see 0..3
        return t.sum().item()

    child = Child(late_sum, name="sum")
    t.add_(100)
    assert child.result() == 6.0
    with pytest.raises(ChildError, match="already taken"):
        child.result()


def test_child_errors_name_the_work_and_carry_the_exception():
    def fail():
        raise ValueError("bad weights")

    with pytest.raises(ChildError, match=r"epoch 3's evaluation failed .*ValueError: bad weights"):
        Child(fail, name="epoch 3's evaluation").result()


def test_a_child_that_dies_is_reported_with_its_signal():
    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    with pytest.raises(
        ChildError, match="BPM run 2: the forked child was killed by signal SIGKILL"
    ):
        Child(die, name="BPM run 2").result()


def test_shared_tables_carry_a_childs_tables_to_the_parent():
    like = {"node": torch.zeros(3, 4), "edge": torch.zeros(2, 5, 5, dtype=torch.float64)}
    slot = SharedTables(like)
    values = {"node": torch.randn(3, 4), "edge": torch.randn(2, 5, 5, dtype=torch.float64)}
    Child(lambda: slot.copy_from(values), name="copy").result()
    for n, v in values.items():
        assert slot.tables[n].dtype == v.dtype and torch.equal(slot.tables[n], v)


def test_processes_must_be_a_positive_integer_and_are_capped_by_the_cores():
    assert check_processes(2, cores=4) == 2 and check_processes(3, cores=2) == 2
    assert check_processes(1, cores=1) == 1 and 1 <= check_processes(2) <= 2
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(ValueError, match="trainer.processes must be an integer >= 1"):
            check_processes(bad)


# ---------------------------------------------------------------- fit with processes > 1


def train(corpus, learner, processes, *, max_epochs=3, **kw):  # noqa: F811
    weights = ChainWeights(corpus["features"].num_features, corpus["labels"])
    updater = Updater(weights, average=learner.average)
    settings = FitSettings(max_epochs=max_epochs, patience=10, seed=3, progress=False)
    settings = FitSettings(**{**settings.__dict__, "processes": processes})
    structure = ChainStructure(weights)
    result = fit(learner, structure, updater, ChainData(corpus["X"], corpus["y"]), settings, **kw)
    return weights, updater, result


@pytest.fixture
def forks(monkeypatch) -> list[str]:
    """The names of the children ``train`` forks (so a test knows the forked path ran)."""
    names: list[str] = []

    def counting(fn, name):
        names.append(name)
        return Child(fn, name)

    monkeypatch.setattr(train_module, "Child", counting)
    return names


@pytest.mark.parametrize("runs", [2, 5])  # 5 runs on 2 workers: each slot is written again
def test_bpm_in_forked_children_is_bit_identical_to_the_serial_loop(corpus, runs, forks):  # noqa: F811
    tables = []
    for processes in (1, 2):
        learner = MarginPerceptron(C=2.0, bpm_runs=runs)
        weights, _, result = train(corpus, learner, processes, max_epochs=2)
        assert result.bpm_seconds > 0
        assert len(forks) == (0 if processes == 1 else runs)  # one child a BPM run
        tables.append(weights.tables())
    for n, t in tables[0].items():
        assert t.abs().sum() > 0 and torch.equal(t, tables[1][n]), n


def reporter(corpus, updater, weights, published, fail_at=None):  # noqa: F811
    def evaluate():
        if fail_at is not None and len(published) + 1 >= fail_at:
            raise RuntimeError("evaluation broke")
        return {"f1": dev_f1(corpus, weights), "precision": 0.0, "recall": 0.0}

    report = EpochReporter(Monitor(None), updater, 1, "dev", evaluate, ("f1",))
    publish = report.publish

    def recording(ep, measured):
        published.append((ep.epoch, dict(measured), dict(ep.extra)))
        publish(ep, measured)

    report.publish = recording
    return report


def fit_with_report(corpus, processes, tmp_path, **kw):  # noqa: F811
    weights = ChainWeights(corpus["features"].num_features, corpus["labels"])
    updater = Updater(weights, average=True)
    published: list = []
    checkpoint = Checkpoint(tmp_path / f"p{processes}", {"labels": corpus["labels"]})
    settings = FitSettings(max_epochs=4, patience=10, seed=1, progress=False, processes=processes)
    result = fit(
        Perceptron(average=True),
        ChainStructure(weights),
        updater,
        ChainData(corpus["X"], corpus["y"]),
        settings,
        on_epoch=reporter(corpus, updater, weights, published, **kw),
        checkpoint=checkpoint,
    )
    return weights, updater, result, published, checkpoint


def test_overlapped_evaluation_and_checkpoints_equal_the_serial_ones(corpus, tmp_path, forks):  # noqa: F811
    serial = fit_with_report(corpus, 1, tmp_path)
    assert forks == []
    forked = fit_with_report(corpus, 2, tmp_path)
    assert forks == [f"epoch {k}'s evaluation and checkpoint" for k in (1, 2, 3, 4)]
    (w1, u1, r1, p1, c1), (w2, _, r2, p2, c2) = serial, forked
    for n, t in w1.tables().items():
        assert torch.equal(t, w2.tables()[n])
    # every epoch published once, in order, with the same dev F1 and weight norm
    assert [p[0] for p in p2] == [1, 2, 3, 4] and p1 == p2
    assert all("dev_f1" in h.extra for h in r2.history)
    assert [h.extra for h in r1.history] == [h.extra for h in r2.history]

    def meta(c):
        m = json.loads((c.directory / "checkpoint.json").read_text())
        for h in m["history"]:
            h.pop("seconds")
        return m

    assert meta(c1) == meta(c2) and meta(c2)["history"][-1]["extra"]["dev_f1"] > 0
    # the checkpoint the child wrote restores the same state
    resumed = Updater(ChainWeights(corpus["features"].num_features, corpus["labels"]), True)
    assert c2.load(resumed)[0] == 4
    for n, t in u1.averaged_tables().items():
        assert torch.equal(t, resumed.averaged_tables()[n])


def test_an_evaluation_that_fails_in_the_child_stops_training(corpus, tmp_path):  # noqa: F811
    with pytest.raises(ChildError, match="epoch 2's evaluation and checkpoint failed.*broke"):
        fit_with_report(corpus, 2, tmp_path, fail_at=2)
