"""The whole pipeline on a corpus of one's own (``data=columns``): a synthetic NER corpus with
other entity types, written in IOBES, Latin-1, tab-separated, with a document line of its own,
trained from config alone by the averaged perceptron, the margin perceptron, the CRF and the
proposed algorithm (non-local features over those types); its model tags a file in the same
layout with no settings and writes it back in that scheme; and a plain tagging task (its POS
column) scored by token accuracy."""

from __future__ import annotations

import json

import pytest
from hydra_runs import run_main, trained_run

from structperc.data.column_corpus import ColumnFormat
from structperc.data.synthetic import make_corpus
from structperc.eval.tokens import TokenScores
from structperc.predict import tag_file
from structperc.tagger import Tagger

TYPES = {"PER": "PERS", "LOC": "LUG", "ORG": "ORGANIZACION", "MISC": "OTROS"}
FORMAT = ColumnFormat(
    ("token", "pos", "_", "ner"), scheme="iobes", separator="tab", documents="<doc>"
)


def spanish_like(n: int, seed: int):
    """Synthetic documents with the types renamed (TYPES)."""
    docs = make_corpus(n, seed=seed)
    for d in docs:
        d.tags = [t if t == "O" else t[:2] + TYPES[t[2:]] for t in d.tags]
        d.columns = {"pos": d.columns["pos"]}
    return docs


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("byoc")
    for split, (n, seed) in {"train": (24, 1), "test": (8, 3)}.items():
        path = root / f"{split}.utf8"
        FORMAT.write(path, spanish_like(n, seed))
        (root / f"{split}.txt").write_bytes(path.read_text().encode("latin-1"))
    return root


def overrides(corpus_dir, *more: str) -> list[str]:
    """A user's command line: the corpus from config alone, the scheme and types told."""
    return [
        "+experiment=conll03_local",
        "data=columns",
        f"data.train={corpus_dir}/train.txt",
        f"data.test={corpus_dir}/test.txt",
        "data.columns=[token,pos,_,ner]",
        "data.separator=tab",
        "data.encoding=latin-1",
        "data.documents='<doc>'",  # (Hydra's quotes)
        "data.dev_holdout=4",
        "features.gazetteer=none",
        "trainer.max_epochs=2",
        *more,
    ]


@pytest.fixture(scope="module")
def ner_model(tmp_path_factory, corpus_dir):
    return trained_run(tmp_path_factory, corpus_dir, "ner", overrides(corpus_dir))


def test_a_users_ner_corpus_trains_and_records_its_format(ner_model):
    results = json.loads((ner_model / "results.json").read_text())
    assert results["test"]["f1"] > 50 and set(results["test"]["per_type"]) <= set(TYPES.values())
    assert results["dev"]["n_gold"] > 0  # the held-out slice of train
    corpus = json.loads((ner_model / "model.json").read_text())["info"]["corpus"]
    assert corpus["scheme"] == "iobes" and corpus["encoding"] == "iso8859-1"
    assert corpus["columns"] == ["token", "pos", "_", "ner"] and corpus["documents"] == "<doc>"


def test_its_model_tags_a_file_in_the_same_layout_with_no_settings(ner_model, corpus_dir, tmp_path):
    scores = tag_file(ner_model, corpus_dir / "test.txt", tmp_path / "out.txt")
    assert scores.f1 > 50
    lines = [ln.split("\t") for ln in (tmp_path / "out.txt").read_text().splitlines()]
    rows = [ln for ln in lines if len(ln) > 1]
    assert {len(r) for r in rows} == {5} and any(r[-1].startswith(("S-", "E-")) for r in rows)
    assert all(r[2] == "_" for r in rows)  # the skipped column, as a placeholder
    # without the label column: input to tag
    tagger = Tagger.load(ner_model)
    docs = tagger.read(corpus_dir / "test.txt")
    bare = tmp_path / "bare.txt"
    FORMAT.write(bare, [type(d)(d.tokens, d.columns, None, d.sentence_starts) for d in docs])
    (tmp_path / "bare.latin1").write_bytes(bare.read_text().encode("latin-1"))
    assert tag_file(ner_model, tmp_path / "bare.latin1", tmp_path / "bare.out") is None


PROPOSED = ["learner=proposed", "learner.C=10", "learner.n=3", "learner.bpm_runs=0"]


@pytest.mark.parametrize(
    "learner",
    [
        ["learner=margin", "learner.C=10"],
        ["+experiment=conll03_crf", "trainer.max_epochs=3"],
        [
            "learner=proposed",
            "learner.C=10",
            "learner.n=3",
            "decoder.n_test=5",
            "learner.bpm_runs=0",
        ],
    ],
    ids=["margin", "crf", "proposed"],
)
def test_every_learner_family_trains_on_it(corpus_dir, tmp_path, monkeypatch, learner):
    given = overrides(corpus_dir, *learner)
    if "+experiment=conll03_crf" in learner:
        given = [o for o in given if o != "+experiment=conll03_local"]
    _, results = run_main(given, corpus_dir, tmp_path / "run", monkeypatch)
    assert results["test"]["f1"] > 30, results["test"]
    assert set(results["labels"]) - {"O"} <= {p + t for p in ("B-", "I-") for t in TYPES.values()}


def test_a_plain_tagging_task_is_scored_by_token_accuracy(corpus_dir, tmp_path, monkeypatch):
    given = overrides(corpus_dir, "data.columns=[token,pos,_,_]", "features=token_tagger")
    _, results = run_main(given, corpus_dir, tmp_path / "pos", monkeypatch)
    test = results["test"]
    assert "f1" not in test and test["accuracy"] > 50
    assert set(test["per_label"]) >= {"NNP"} and test["per_label"]["NNP"]["f1"] > 0
    scores = tag_file(tmp_path / "pos", corpus_dir / "test.txt", tmp_path / "out.txt")
    assert isinstance(scores, TokenScores) and scores.accuracy == pytest.approx(test["accuracy"])
