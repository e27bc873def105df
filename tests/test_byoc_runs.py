"""The whole pipeline on a corpus of one's own (``data=columns``): a synthetic NER corpus with
other entity types, written in IOBES, Latin-1, tab-separated, with a document line of its own,
trained from config alone by the averaged perceptron, the margin perceptron, the CRF and the
proposed algorithm (non-local features over those types); its model tags a file in the same
layout with no settings and writes it back in that scheme; and a plain tagging task (its POS
column) scored by token accuracy."""

from __future__ import annotations

import json

import pytest
from hydra_runs import compose_config, run_main, tag_cli, trained_run

from structperc.data.column_corpus import ColumnFormat
from structperc.data.synthetic import make_corpus
from structperc.eval.tokens import TokenScores
from structperc.inference.tagger import Tagger
from structperc.predict import tag_file

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
        "data.dev_holdout=4",  # no features.gazetteer=none: eng.list is CoNLL-2003's alone
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


def test_tagging_writes_the_corpus_encoding_unless_told_another(ner_model, tmp_path):
    """A Latin-1 corpus's model writes Latin-1 (``ñ`` one byte), or ``output_encoding``'s."""
    source = tmp_path / "in.txt"
    text = "<doc>\n\nPeña\tNNP\t_\tS-PERS\nvive\tVBZ\t_\tO\n"
    source.write_bytes(text.encode("latin-1"))
    tag_file(ner_model, source, tmp_path / "latin1.txt")
    assert b"Pe\xf1a\tNNP\t_\tS-PERS\t" in (tmp_path / "latin1.txt").read_bytes()
    done = tag_cli(
        f"model={ner_model}", f"input={source}", f"output={tmp_path / 'u8.txt'}",
        "output_encoding=utf-8",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Peña\tNNP" in (tmp_path / "u8.txt").read_text(encoding="utf-8")
    done = tag_cli(f"model={ner_model}", f"input={source}", "output=-", "output_encoding=ascii")
    assert done.returncode == 2 and not done.stdout
    assert "<stdout>:3: 'ñ' cannot be written in ascii" in done.stderr.splitlines()[-1]


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


def test_reranking_runs_on_it(corpus_dir, tmp_path, monkeypatch):
    """Re-ranking 1 (the margin perceptron's n-best lists, non-local features over the corpus's
    own types) from the same command line."""
    small = ["task.epochs=2", "task.n=5", "task.n_test=10", "task.folds=3"]
    given = [o for o in overrides(corpus_dir, *small) if o != "+experiment=conll03_local"]
    given += ["+experiment=conll03_rerank1", f"task.lists_dir={tmp_path / 'lists'}"]
    _, results = run_main(given, corpus_dir, tmp_path / "rerank", monkeypatch)
    test = results["test"]
    assert test["f1"] > 30 and set(test["per_type"]) <= set(TYPES.values())
    assert test["oracle_f1"]["1"] == pytest.approx(test["base_f1"])


def test_two_processes_give_the_run_of_one(ner_model, corpus_dir, tmp_path, monkeypatch):
    """trainer.processes=2 on the corpus: the model file of the one-process run."""
    given = overrides(corpus_dir, "trainer.processes=2")
    _, results = run_main(given, corpus_dir, tmp_path / "p2", monkeypatch)
    one = json.loads((ner_model / "results.json").read_text())
    assert results["test"]["f1"] == one["test"]["f1"] and results["epochs"] == one["epochs"]
    saved = (ner_model / "model.safetensors").read_bytes()
    assert (tmp_path / "p2" / "model.safetensors").read_bytes() == saved


@pytest.mark.parametrize(
    "experiment, columns, expected",
    [
        ("conll00_joint", "[token,pos,_,ner]", "a 'pos' column and the label column 'chunk'"),
        ("conll00_cascade", "[token,chunk,_,_]", "a 'pos' column and the label column 'chunk'"),
        ("conll00_tagchunk", "[token,pos,chunk,_]", "labels without chunk prefixes"),  # '_'s
    ],
)
def test_the_conll2000_tasks_name_what_they_need(
    corpus_dir, tmp_path, monkeypatch, experiment, columns, expected
):
    """Joint, cascade and tagchunk read CoNLL-2000's POS column and chunk tags: a corpus without
    them is one error naming what they need."""
    given = [o for o in overrides(corpus_dir) if o != "+experiment=conll03_local"]
    given += [f"+experiment={experiment}", f"data.columns={columns}"]
    with pytest.raises(ValueError, match=f"the {experiment[8:]} task reads .*{expected}"):
        run_main(given, corpus_dir, tmp_path / "run", monkeypatch)


@pytest.mark.parametrize(
    "given, expected",
    [
        (["+experiment=conll03_local"], "jackknife"),  # the list is CoNLL-2003's own
        (["+experiment=conll03_local", "data=columns"], "none"),
        (["+experiment=conll03_rerank1", "data=columns"], "none"),
        (["+experiment=conll03_local", "data=columns", "features.gazetteer=naive"], "naive"),
    ],
)
def test_eng_list_is_the_default_of_conll2003_alone(given, expected):
    assert compose_config(given).features.gazetteer == expected
