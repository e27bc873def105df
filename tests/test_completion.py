"""Partially labelled training data completed by a saved model (``trainer.complete_with``,
``tasks/completion.py``): the completion keeps every known label and fills every open one with
the model's best labeling under the known labels; a run with it trains the model a run on the
completed file trains; it is recorded; a folder without a model and a task that does not take it
are errors naming the setting."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch
from hydra_runs import TOKEN_FEATURES, compose_config, run_main, trained_run

from structperc.data.conll import read_conll, write_conll
from structperc.data.partial import has_partial, is_partial
from structperc.data.synthetic import make_corpus
from structperc.inference.tagger import Tagger
from structperc.model.files import load_model, model_digest
from structperc.run import main_from_config
from structperc.tasks.completion import Completion

COMMON = ["+experiment=conll03_local", *TOKEN_FEATURES, "data.scheme=iob2", "cache_dir=null"]


def write_corpus(folder: Path, hide: float = 0.0, seed: int = 0) -> Path:
    """A synthetic CoNLL-2003 folder (30 training documents, 8 dev, 8 test), each training
    label replaced by ``?`` with probability ``hide``; returns the data folder."""
    (folder / "conll2003").mkdir(parents=True)
    gen = random.Random(seed)
    for split, n, s in (("train", 30, 1), ("dev", 8, 2), ("test", 8, 3)):
        docs = make_corpus(n, seed=s)
        if split == "train":
            for doc in docs:
                doc.tags = ["?" if gen.random() < hide else t for t in doc.tags]
        write_conll(folder / "conll2003" / f"{split}.txt", docs)
    return folder


@pytest.fixture(scope="module")
def full_run(tmp_path_factory) -> Path:
    """The averaged perceptron on the fully labelled corpus (the completing model)."""
    data = write_corpus(tmp_path_factory.mktemp("full"))
    return trained_run(tmp_path_factory, data, "full", [*COMMON, "trainer.max_epochs=3"])


@pytest.fixture(scope="module")
def partial_data(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("partial"), hide=0.5)


def test_completion_keeps_the_known_labels_and_fills_the_open_ones(full_run, partial_data):
    docs = read_conll(partial_data / "conll2003" / "train.txt", scheme="iob2")
    assert sum(has_partial(d.tags) for d in docs) == len(docs)
    done = Completion.load(full_run).complete(docs)
    constrained = Tagger.load(full_run).tag_documents(docs, constraints=[d.tags for d in docs])
    for before, after, want in zip(docs, done, constrained, strict=True):
        assert not has_partial(after.tags)
        assert after.tags == want  # the model's best labeling under the known labels
        for given, label in zip(before.tags, after.tags, strict=True):
            assert is_partial(given) or given == label  # every known label kept
        assert has_partial(before.tags)  # the input is left as it was
        assert after.tokens == before.tokens and after.source == before.source


def test_a_run_with_the_completion_trains_the_model_of_the_completed_file(
    full_run, partial_data, tmp_path, monkeypatch, caplog
):
    """trainer.complete_with on the partial corpus gives the weights of a run on a file of the
    completed labels (same seed), and records the completing model."""
    epochs = "trainer.max_epochs=2"
    completing = [f"trainer.complete_with={full_run}"]
    with caplog.at_level("INFO", logger="structperc.tasks.completion"):
        _, results = run_main(
            [*COMMON, epochs, *completing], partial_data, tmp_path / "a", monkeypatch
        )
    assert "open tokens of 30 documents filled" in caplog.text
    docs = read_conll(partial_data / "conll2003" / "train.txt", scheme="iob2")
    written = tmp_path / "completed"
    (written / "conll2003").mkdir(parents=True)
    write_conll(written / "conll2003" / "train.txt", Completion.load(full_run).complete(docs))
    for split in ("dev", "test"):
        text = (partial_data / "conll2003" / f"{split}.txt").read_text()
        (written / "conll2003" / f"{split}.txt").write_text(text)
    run_main([*COMMON, epochs], written, tmp_path / "b", monkeypatch)
    a, _, info = load_model(tmp_path / "a")
    b, _, _ = load_model(tmp_path / "b")
    for name, table in a.tables().items():
        assert torch.equal(table, b.tables()[name]), name
    assert float(a.tables()["node"].abs().sum()) > 0
    assert results["complete_with"] == str(full_run.resolve())
    assert info["completed_by"] == {
        "folder": str(full_run.resolve()),
        "model_sha256": model_digest(full_run),
    }


def test_a_folder_without_a_model_or_another_task_is_an_error(tmp_path, full_run):
    with pytest.raises(FileNotFoundError, match="trainer.complete_with=.*no model.json there"):
        Completion.load(tmp_path)
    cfg = compose_config(["+experiment=conll00_joint", f"trainer.complete_with={full_run}"])
    with pytest.raises(ValueError, match="task=joint does not take it"):
        main_from_config(cfg, tmp_path / "out")


def test_a_training_set_read_from_disk_is_an_error_naming_the_way_out(full_run, tmp_path):
    from structperc.data.document_store import DocumentStore

    store = DocumentStore.write(tmp_path / "store", make_corpus(3, seed=6))
    with pytest.raises(ValueError, match="read from disk .*data.stream=false"):
        Completion.load(full_run).complete(store)


def test_fully_labelled_data_is_left_as_it_is(full_run):
    docs = make_corpus(3, seed=5)
    assert Completion.load(full_run).complete(docs) is docs
