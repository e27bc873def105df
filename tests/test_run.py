"""End-to-end runs through the Hydra entry point and the prediction command.

A synthetic corpus written as CoNLL-2003 files stands in for the real data, so these run
everywhere; one smoke run on a slice of the real CoNLL-2003 is marked ``realdata``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hydra_runs import compose_config, run_main, write_synthetic_conll2003
from test_structures import iob2_valid

from structperc.io import load_tensors
from structperc.model.files import load_model
from structperc.predict import tag_file


@pytest.fixture(scope="module")
def synthetic_dir(tmp_path_factory) -> Path:
    sizes = {"train": 30, "dev": 10, "test": 10}
    return write_synthetic_conll2003(tmp_path_factory.mktemp("data"), sizes)


def _run(
    tmp_path: Path, data_dir: Path, extra: list[str], monkeypatch, out_name: str = "run"
) -> tuple[dict, Path]:
    experiment = (
        [] if any(o.startswith("+experiment=") for o in extra) else ["+experiment=conll03_local"]
    )
    out = tmp_path / out_name
    overrides = [*experiment, f"cache_dir={tmp_path / 'cache'}", *extra]
    dev_f1, results = run_main(overrides, data_dir, out, monkeypatch)
    assert dev_f1 == pytest.approx(results["dev"]["f1"])
    return results, out


def test_synthetic_run_writes_everything(tmp_path, synthetic_dir, monkeypatch):
    results, out = _run(
        tmp_path,
        synthetic_dir,
        ["features.gazetteer=none", "trainer.max_epochs=4", "learner=averaged"],
        monkeypatch,
    )
    for key in ("epochs", "stopped_by", "train_seconds"):
        assert key in results
    for split in ("dev", "test"):
        for key in ("f1", "precision", "recall"):
            assert 0 <= results[split][key] <= 100
    assert results["test"]["f1"] > 90, results["test"]
    assert results["stopped_by"] in ("converged", "max_epochs")
    assert len(results["history"]) == results["epochs"]
    assert (out / "model.safetensors").is_file() and (out / "model.json").is_file()
    assert any((out / "tb").iterdir())
    pred_lines = (out / "test.pred.txt").read_text().splitlines()
    assert sum(line.startswith("-DOCSTART-") for line in pred_lines) == 10
    assert all(len(line.split()) == 5 for line in pred_lines if line)
    # the second run hits the feature cache
    again, _ = _run(
        tmp_path, synthetic_dir, ["features.gazetteer=none", "trainer.max_epochs=1"], monkeypatch
    )
    assert again["feature_cache_hit"] is True


def test_predict_tags_a_file_like_the_run(tmp_path, synthetic_dir, monkeypatch):
    results, out = _run(
        tmp_path, synthetic_dir, ["features.gazetteer=none", "trainer.max_epochs=3"], monkeypatch
    )
    target = tmp_path / "tagged.txt"
    scores = tag_file(out, synthetic_dir / "conll2003" / "test.txt", target)
    assert scores.f1 == pytest.approx(results["test"]["f1"])
    tagged = target.read_text().splitlines()
    run_pred = (out / "test.pred.txt").read_text().splitlines()
    assert tagged == run_pred
    weights, features, info = load_model(out)
    assert info["results"]["test"]["f1"] == pytest.approx(results["test"]["f1"])


def test_predict_command_line(tmp_path, synthetic_dir, monkeypatch):
    _, out = _run(
        tmp_path, synthetic_dir, ["features.gazetteer=none", "trainer.max_epochs=1"], monkeypatch
    )
    target = tmp_path / "cli.txt"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "structperc.predict",
            f"model={out}",
            f"input={synthetic_dir / 'conll2003' / 'dev.txt'}",
            f"output={target}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "FB1" in proc.stdout
    assert target.read_text().count("-DOCSTART-") == 10


def test_bad_learner_name_is_a_clear_error():
    with pytest.raises(Exception, match="learner"):
        compose_config(["+experiment=conll03_local", "learner=nonsense"])


@pytest.mark.realdata
def test_real_smoke_run(tmp_path, data_dir, monkeypatch):
    results, _ = _run(
        tmp_path,
        data_dir,
        ["data.max_docs=20", "trainer.max_epochs=2", "write_predictions=false"],
        monkeypatch,
    )
    assert results["epochs"] == 2
    assert results["dev"]["f1"] > 10  # an untrained model scores 0


@pytest.mark.parametrize(
    "learner",
    [["learner=averaged"], ["learner=crf", "learner.optimizer=sgd", "learner.tol=0"]],
    ids=["averaged", "crf_sgd"],
)
def test_killed_training_resumes_to_the_same_model(learner, tmp_path, synthetic_dir, monkeypatch):
    common = ["features.gazetteer=none", *learner, "write_predictions=false"]
    _run(tmp_path, synthetic_dir, [*common, "trainer.max_epochs=4"], monkeypatch, "straight")
    # a run "killed" after epoch 2: its last checkpoint is epoch 2's (a finished run removes
    # its checkpoints unless told to keep them: a killed one never gets there)
    _run(
        tmp_path,
        synthetic_dir,
        [*common, "trainer.max_epochs=2", "trainer.keep_checkpoints=true"],
        monkeypatch,
        "killed",
    )
    assert not (tmp_path / "straight" / "checkpoint").exists()
    resumed, out = _run(
        tmp_path,
        synthetic_dir,
        [*common, "trainer.max_epochs=4", "trainer.resume=true"],
        monkeypatch,
        "killed",
    )
    assert resumed["resumed_from_epoch"] == 2 and resumed["epochs"] == 4
    assert [h["epoch"] for h in resumed["history"]] == [1, 2, 3, 4]
    a = load_tensors(tmp_path / "straight" / "model.safetensors")
    b = load_tensors(out / "model.safetensors")
    # sparse files: the non-zero entries' flat index and values of each table
    names = [f"weights.{t}.{part}" for t in ("node", "edge") for part in ("index", "values")]
    assert set(names) <= set(a) and a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name


def test_nonlocal_run_trains_saves_and_predicts(tmp_path, synthetic_dir, monkeypatch):
    results, out = _run(
        tmp_path,
        synthetic_dir,
        [
            "+experiment=conll03_nonlocal",
            "features.gazetteer=none",
            "trainer.max_epochs=2",
            "learner.n=5",
            "learner.bpm_runs=2",
            "decoder.n_test=8",
        ],
        monkeypatch,
    )
    hist = results["history"]
    assert len(hist) == 2
    assert 0 < results["bpm_seconds"] and 0 < results["train_seconds"]
    assert results["job_seconds"] > results["bpm_seconds"] + results["train_seconds"]
    assert all(h["updates"] == h.get("updates_a", 0) + h.get("updates_b", 0) for h in hist)
    assert results["test"]["f1"] > 50
    weights, _, info = load_model(out)
    assert "document_features" in info and weights.global_.weight.abs().sum() > 0
    scores = tag_file(out, synthetic_dir / "conll2003" / "test.txt", tmp_path / "t.txt")
    assert scores.f1 == pytest.approx(results["test"]["f1"])


def test_processes_2_gives_the_run_of_one_process(tmp_path, synthetic_dir, monkeypatch):
    """trainer.processes=2: BPM runs side by side, evaluation and checkpoint overlapping the
    next epoch; the same results, history and model files as one process."""
    common = [
        "+experiment=conll03_nonlocal",
        "features.gazetteer=none",
        "features.gazetteers=[]",
        "trainer.max_epochs=3",
        "learner.n=5",
        "learner.bpm_runs=3",
        "decoder.n_test=8",
    ]
    runs = {}
    for p in (1, 2):
        runs[p] = _run(
            tmp_path, synthetic_dir, [*common, f"trainer.processes={p}"], monkeypatch, f"p{p}"
        )
    (one, out1), (two, out2) = runs[1], runs[2]
    assert (one["epochs"], one["stopped_by"]) == (two["epochs"], two["stopped_by"])
    assert one["dev"]["f1"] == two["dev"]["f1"] and one["test"]["f1"] == two["test"]["f1"]
    strip = [{k: v for k, v in h.items() if k != "seconds"} for h in one["history"]]
    assert strip == [{k: v for k, v in h.items() if k != "seconds"} for h in two["history"]]
    assert all("dev_f1" in h for h in two["history"])
    a, b = load_tensors(out1 / "model.safetensors"), load_tensors(out2 / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_margin_perceptron_with_bpm_starts_from_the_average_of_single_epochs(
    tmp_path, synthetic_dir, monkeypatch
):
    common = ["features.gazetteer=none", "learner=margin", "learner.C=5", "trainer.eval_every=0"]
    bpm, _ = _run(
        tmp_path,
        synthetic_dir,
        [*common, "learner.bpm_runs=3", "trainer.max_epochs=2"],
        monkeypatch,
        "bpm",
    )
    plain, _ = _run(tmp_path, synthetic_dir, [*common, "trainer.max_epochs=2"], monkeypatch)
    assert bpm["bpm_seconds"] > 0 == plain["bpm_seconds"]
    assert bpm["hparams"]["learner.bpm_runs"] == 3
    # BPM starts training from trained weights: fewer mistakes in the first epoch
    assert bpm["history"][0]["word_error"] < plain["history"][0]["word_error"]


def test_iob2_constraints_are_a_decoder_setting_saved_with_the_model(
    tmp_path, synthetic_dir, monkeypatch
):
    results, out = _run(
        tmp_path,
        synthetic_dir,
        ["features.gazetteer=none", "trainer.max_epochs=1", "decoder.constraints=iob2"],
        monkeypatch,
    )
    assert results["hparams"]["decoder.constraints"] == "iob2"
    _, _, info = load_model(out)
    assert info["constraints"] == "iob2"
    lines = [ln.split() for ln in (out / "dev.pred.txt").read_text().splitlines() if ln]
    tags = [ln[-1] for ln in lines if not ln[0].startswith("-DOCSTART-")]
    assert iob2_valid(tags)


def test_transition_matrix_model_trains_saves_and_predicts(tmp_path, synthetic_dir, monkeypatch):
    results, out = _run(
        tmp_path,
        synthetic_dir,
        ["features.gazetteer=none", "trainer.max_epochs=3", "features.edges=false"],
        monkeypatch,
    )
    weights, _, _ = load_model(out)
    assert not weights.edges and weights.tables()["edge"].shape == (1, 81)
    assert results["test"]["f1"] > 80
    scores = tag_file(out, synthetic_dir / "conll2003" / "test.txt", tmp_path / "tagged.txt")
    assert scores.f1 == pytest.approx(results["test"]["f1"])
