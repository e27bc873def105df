"""The joint and cascade tasks end to end through the Hydra entry point.

A small synthetic CoNLL-2000 folder stands in for the real data; one run on a slice of the real
CoNLL-2000 is marked ``realdata``.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hydra_runs import compose_config, run_main

from structperc.data.document import Document
from structperc.data.label_chunk import with_pos
from structperc.features.part_features import token_columns

# (word, Penn POS, chunk) patterns of a toy grammar
NPS = [
    [("the", "DT", "B-NP"), ("cat", "NN", "I-NP")],
    [("a", "DT", "B-NP"), ("big", "JJ", "I-NP"), ("dog", "NN", "I-NP")],
    [("IBM", "NNP", "B-NP")],
    [("12", "CD", "B-NP"), ("firms", "NNS", "I-NP")],
]
VERBS = [("saw", "VBD", "B-VP"), ("likes", "VBZ", "B-VP"), ("quickly", "RB", "B-ADVP")]
PREPS = [("on", "IN", "B-PP"), ("with", "IN", "B-PP")]


def toy_sentences(n: int, seed: int) -> str:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        rows = [*rng.choice(NPS), rng.choice(VERBS), *rng.choice(NPS)]
        if rng.random() < 0.5:
            rows += [rng.choice(PREPS), *rng.choice(NPS)]
        rows.append((".", ".", "O"))
        out.append("\n".join(" ".join(r) for r in rows))
    return "\n\n".join(out) + "\n"


@pytest.fixture(scope="module")
def toy_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data")
    (root / "conll2000").mkdir()
    (root / "conll2000" / "train.txt").write_text(toy_sentences(30, 1))
    (root / "conll2000" / "test.txt").write_text(toy_sentences(15, 2))
    return root


def _run(tmp_path, data_dir, experiment, extra, monkeypatch) -> dict:
    out = tmp_path / experiment
    f1, results = run_main([f"+experiment={experiment}", *extra], data_dir, out, monkeypatch)
    assert f1 == pytest.approx(results["test"]["np_f1"])
    assert any((out / "tb").iterdir())
    return results


@pytest.mark.parametrize("experiment", ["conll00_joint", "conll00_cascade"])
def test_experiments_compose(experiment):
    cfg = compose_config([f"+experiment={experiment}"])
    assert cfg.task.name == experiment.split("_")[1] and cfg.data.name == "conll2000"
    assert cfg.data.train_docs == 447
    vp = compose_config([f"+experiment={experiment}", "learner=vp"]).learner
    assert vp._target_.endswith("perceptron.Perceptron") and vp.average


@pytest.mark.parametrize("learner", ["mmvp", "vp"])
def test_joint_run_on_toy_data(tmp_path, toy_dir, monkeypatch, learner):
    r = _run(
        tmp_path,
        toy_dir,
        "conll00_joint",
        [f"learner={learner}", "trainer.max_epochs=4"],
        monkeypatch,
    )
    assert r["task"] == "joint" and r["epochs"] == 4 and r["train_sentences"] == 30
    assert r["test"]["pos_accuracy"] > 90 and r["test"]["np_f1"] > 90, r["test"]
    assert r["history"][0]["backoff"] and not r["history"][1]["backoff"]
    lines = (tmp_path / "conll00_joint" / "test.pred.txt").read_text().split("\n")
    assert all(len(line.split()) == 5 for line in lines if line)
    assert r["learner"] == learner.upper()


def test_killed_joint_training_resumes_to_the_same_result(tmp_path, toy_dir, monkeypatch):
    whole = _run(tmp_path / "a", toy_dir, "conll00_joint", ["trainer.max_epochs=3"], monkeypatch)
    killed = ["trainer.max_epochs=2", "trainer.keep_checkpoints=true"]  # (as if killed)
    _run(tmp_path / "b", toy_dir, "conll00_joint", killed, monkeypatch)
    resumed = _run(
        tmp_path / "b",
        toy_dir,
        "conll00_joint",
        ["trainer.max_epochs=3", "trainer.resume=true"],
        monkeypatch,
    )
    assert resumed["resumed_from_epoch"] == 2 and resumed["epochs"] == 3
    assert resumed["test"] == whole["test"]
    assert [h["updates"] for h in resumed["history"]] == [h["updates"] for h in whole["history"]]


def test_cascade_run_on_toy_data(tmp_path, toy_dir, monkeypatch):
    r = _run(tmp_path, toy_dir, "conll00_cascade", ["trainer.max_epochs=5"], monkeypatch)
    assert r["task"] == "cascade"
    assert r["tagger"]["test"]["pos_accuracy"] > 90
    assert r["chunker"]["test_given_gold_pos"]["np_f1"] > 90
    assert set(r["test"]) >= {"pos_accuracy", "np_accuracy", "np_f1"}


def test_max_docs_and_train_docs(tmp_path, toy_dir, monkeypatch):
    r = _run(
        tmp_path,
        toy_dir,
        "conll00_joint",
        ["data.max_docs=12", "data.train_docs=5", "trainer.max_epochs=1"],
        monkeypatch,
    )
    assert r["train_sentences"] == 5 and r["test_sentences"] == 12


@pytest.mark.realdata
def test_joint_on_real_conll2000_slice(tmp_path, data_dir, monkeypatch):
    r = _run(
        tmp_path,
        data_dir,
        "conll00_joint",
        ["data.max_docs=60", "trainer.max_epochs=2", "trainer.eval_every=0"],
        monkeypatch,
    )
    assert r["test_sentences"] == 60
    assert r["test"]["pos_accuracy"] > 60 and r["test"]["np_f1"] > 30, r["test"]


def test_cascade_feeds_the_taggers_pos_to_the_chunker():
    doc = Document(tokens=["Dogs", "bark"], columns={"pos": ["NNS", "VBP"]}, tags=["B-NP", "O"])
    (fed,) = with_pos([doc], [["VERB", "VERB"]])
    assert token_columns(fed)["pos"] == ["VERB", "VERB"]
    assert token_columns(doc)["pos"] == ["NOUN", "VERB"]  # the gold document is untouched
    assert fed.tokens == doc.tokens and fed.tags == doc.tags
