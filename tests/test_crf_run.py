"""The CRF through the Hydra entry point: +experiment=conll03_crf on a synthetic corpus (and a
slice of the real one), results.json like the perceptron runs, TensorBoard scalars, the sweep."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.utils import instantiate
from hydra_runs import ROOT, compose_config, run_main, write_synthetic_conll2003
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from structperc.crf.learner import CRF


@pytest.fixture(scope="module")
def synthetic_dir(tmp_path_factory) -> Path:
    sizes = {"train": 20, "dev": 8, "test": 8}
    return write_synthetic_conll2003(tmp_path_factory.mktemp("data"), sizes)


def _run(tmp_path: Path, data_dir: Path, extra: list[str], monkeypatch) -> tuple[dict, Path]:
    out = tmp_path / "run"
    overrides = ["+experiment=conll03_crf", f"cache_dir={tmp_path / 'cache'}", *extra]
    dev_f1, results = run_main(overrides, data_dir, out, monkeypatch)
    assert dev_f1 == pytest.approx(results["dev"]["f1"])
    return results, out


def test_the_experiment_composes_to_a_crf():
    cfg = compose_config(["+experiment=conll03_crf", "learner.sigma2=13"], hydra=True)
    learner = instantiate(cfg.learner)
    assert isinstance(learner, CRF) and learner.sigma2 == 13
    assert learner.optimizer == "lbfgs" and cfg.hydra.launcher._target_.endswith("JoblibLauncher")


@pytest.mark.parametrize("optimizer", ["lbfgs", "sgd"])
def test_synthetic_crf_run_writes_the_perceptron_fields(
    tmp_path, synthetic_dir, monkeypatch, optimizer
):
    results, out = _run(
        tmp_path,
        synthetic_dir,
        [
            "features.gazetteer=none",
            f"learner.optimizer={optimizer}",
            "learner.lr=0.2",
            "trainer.max_epochs=12",
            "trainer.eval_every=4",
            f"trainer.keep_checkpoints={optimizer == 'lbfgs'}",
        ],
        monkeypatch,
    )
    for key in ("epochs", "stopped_by", "train_seconds"):
        assert key in results
    for split in ("dev", "test"):
        for key in ("f1", "precision", "recall"):
            assert 0 <= results[split][key] <= 100
    assert results["test"]["f1"] > 80, results["test"]
    assert len(results["history"]) == results["epochs"]
    assert all("objective" in h for h in results["history"])
    assert "dev_f1" in results["history"][3]
    events = EventAccumulator(str(out / "tb"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"train/objective", "train/word_error", "dev/f1"} <= tags
    assert len(events.Scalars("train/objective")) == results["epochs"]
    assert len(events.Scalars("dev/f1")) == results["epochs"] // 4
    assert (out / "model.safetensors").is_file()
    # the CRF is checkpointed every iteration (trainer.resume=true goes on from the last); a
    # finished run removes its checkpoint unless trainer.keep_checkpoints=true
    if optimizer == "lbfgs":
        meta = json.loads((out / "checkpoint" / "checkpoint.json").read_text())
        assert meta["epoch"] == results["epochs"] and len(meta["history"]) == results["epochs"]
    else:
        assert not (out / "checkpoint").exists()


@pytest.mark.slow
def test_sigma2_sweep_runs_in_parallel(tmp_path, synthetic_dir):
    env = {**os.environ, "STRUCTPERC_DATA": str(synthetic_dir)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "structperc.run",
            "-m",
            "+experiment=conll03_crf",
            "learner.sigma2=13,800",
            f"data.dir={synthetic_dir}",
            "features.gazetteer=none",
            "trainer.max_epochs=3",
            "trainer.progress=false",
            "hydra.launcher.n_jobs=2",
            f"cache_dir={tmp_path / 'cache'}",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = sorted((tmp_path / "sweep").rglob("results.json"))
    assert len(found) == 2
    sigmas = sorted(json.loads(f.read_text())["hparams"]["learner.sigma2"] for f in found)
    assert sigmas == [13, 800]


@pytest.mark.realdata
def test_real_crf_smoke_run(tmp_path, data_dir, monkeypatch):
    results, _ = _run(
        tmp_path,
        data_dir,
        ["data.max_docs=20", "trainer.max_epochs=3", "write_predictions=false"],
        monkeypatch,
    )
    assert results["epochs"] == 3
    assert results["dev"]["f1"] > 0
