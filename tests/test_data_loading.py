"""Corpus loading (local folder, env var, hub fallback) and the synthetic corpus."""

from __future__ import annotations

import logging
import re
from collections import Counter, defaultdict

import datasets
import pytest

from structperc.data import (
    Document,
    has_docstart,
    load_corpus,
    make_corpus,
    resolve_data_dir,
    spans,
    to_dataset,
    to_documents,
)
from structperc.data.loading import CONFIG_KEY, ENV_VAR

TRAIN03 = """\
-DOCSTART- -X- O O

EU NNP I-NP I-ORG
rejects VBZ I-VP O

Peter NNP I-NP I-PER

-DOCSTART- -X- O O

Bonn NNP I-NP I-LOC
"""
DEV03 = "-DOCSTART- -X- O O\n\nGerman JJ I-NP I-MISC\n"
TEST03 = "-DOCSTART- -X- -X- O\n\nParis NNP I-NP I-LOC\n"
TRAIN00 = "He PRP B-NP\nreckons VBZ B-VP\n\nConfidence NN B-NP\n"
TEST00 = "Rockwell NNP B-NP\n"


@pytest.fixture(autouse=True)
def no_env(monkeypatch):
    """Every test starts without $STRUCTPERC_DATA; tests that need it set it."""
    monkeypatch.delenv(ENV_VAR, raising=False)


@pytest.fixture
def local(tmp_path):
    """A data folder with tiny conll2003 and conll2000 corpora."""
    root = tmp_path / "data"
    for name, files in {
        "conll2003": {"train": TRAIN03, "dev": DEV03, "test": TEST03},
        "conll2000": {"train": TRAIN00, "test": TEST00},
    }.items():
        (root / name).mkdir(parents=True)
        for split, text in files.items():
            (root / name / f"{split}.txt").write_text(text)
    return root


def no_hub(monkeypatch):
    def fail(path, *args, **kwargs):
        raise ConnectionError(f"cannot reach the hub for {path}")

    monkeypatch.setattr(datasets, "load_dataset", fail)


# --- resolve_data_dir ---------------------------------------------------------------------------


def test_resolve_data_dir(tmp_path, monkeypatch):
    configured, env = tmp_path / "configured", tmp_path / "env"
    configured.mkdir()
    env.mkdir()
    assert resolve_data_dir(None) is None
    assert resolve_data_dir(tmp_path / "missing") is None
    assert resolve_data_dir(str(configured)) == configured
    monkeypatch.setenv(ENV_VAR, str(env))
    assert resolve_data_dir(configured) == env  # the environment wins
    assert resolve_data_dir(None) == env
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "missing"))
    assert resolve_data_dir(configured) == configured  # a wrong env var is ignored
    assert resolve_data_dir(None) is None


# --- local folder -------------------------------------------------------------------------------


def test_load_local_conll2003(local, monkeypatch):
    no_hub(monkeypatch)
    corpus = load_corpus("conll2003", local)
    assert list(corpus) == ["train", "dev", "test"]
    train = corpus["train"]
    assert [d.tokens for d in train] == [["EU", "rejects", "Peter"], ["Bonn"]]
    assert train[0].tags == ["B-ORG", "O", "B-PER"]
    assert train[0].columns == {"pos": ["NNP", "VBZ", "NNP"], "chunk": ["B-NP", "B-VP", "B-NP"]}
    assert train[0].sentence_starts == [0, 2]
    assert train[0].source == f"{local / 'conll2003' / 'train.txt'}:3"
    assert all(isinstance(d, Document) and has_docstart(d) for d in train)
    assert corpus["dev"][0].tags == ["B-MISC"]
    assert corpus["test"][0].tags == ["B-LOC"]


def test_load_local_conll2000_splits_and_max_docs(local):
    corpus = load_corpus("conll2000", str(local))
    assert list(corpus) == ["train", "test"]
    assert [d.tokens for d in corpus["train"]] == [["He", "reckons"], ["Confidence"]]
    assert corpus["train"][0].columns == {"pos": ["PRP", "VBZ"]}
    assert not has_docstart(corpus["train"][0])
    assert load_corpus("conll2000", local, splits=["test"]).keys() == {"test"}
    small = load_corpus("conll2003", local, max_docs=1)
    assert [len(v) for v in small.values()] == [1, 1, 1]
    assert small["train"][0].tokens == ["EU", "rejects", "Peter"]


def test_env_var_overrides_configured_folder(local, tmp_path, monkeypatch):
    """The data folder is resolved once (``resolve_data_dir``); ``load_corpus`` reads the one
    it is given."""
    empty = tmp_path / "empty"
    (empty / "conll2000").mkdir(parents=True)  # would fail: no split files
    monkeypatch.setenv(ENV_VAR, str(local))
    assert load_corpus("conll2000", resolve_data_dir(empty))["test"][0].tokens == ["Rockwell"]
    with pytest.raises(FileNotFoundError, match="train.txt: no such file"):
        load_corpus("conll2000", empty)


def test_missing_split_file_is_reported(local):
    (local / "conll2003" / "dev.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"dev\.txt"):
        load_corpus("conll2003", local)


def test_bad_names(local):
    with pytest.raises(ValueError, match="unknown corpus"):
        load_corpus("ontonotes", local)
    with pytest.raises(ValueError, match="no split"):
        load_corpus("conll2000", local, splits=["dev"])


def test_dataset_round_trip_keeps_everything():
    docs = [
        Document(["a", "b"], {"pos": ["DT", "NN"], "chunk": ["B-NP", "I-NP"]}, ["O", "B-X"], [0]),
        Document(["c"], {"pos": ["NN"]}, None, [0], "f:3"),
    ]
    table = to_dataset(docs)
    assert table.column_names == ["tokens", "pos", "chunk", "tags", "sentence_starts", "source"]
    assert to_documents(table) == docs
    assert to_documents(to_dataset([])) == []


# --- hub fallback -------------------------------------------------------------------------------

POS = ['"', "''", "#", "$", "(", ")", ",", ".", ":", "``", "CC", "CD", "DT", "NN", "NNP", "VBZ"]
CHUNK = ["O", "B-ADJP", "I-ADJP", "B-NP", "I-NP", "B-PP", "I-PP", "B-VP", "I-VP"]
NER = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]


def fake_hub(rows: dict[str, list[dict]], with_ner: bool = True) -> datasets.DatasetDict:
    """A DatasetDict shaped like the hub's: ClassLabel ids, one sentence per row."""
    spec = {
        "id": datasets.Value("string"),
        "tokens": datasets.Sequence(datasets.Value("string")),
        "pos_tags": datasets.Sequence(datasets.ClassLabel(names=POS)),
        "chunk_tags": datasets.Sequence(datasets.ClassLabel(names=CHUNK)),
    }
    if with_ner:
        spec["ner_tags"] = datasets.Sequence(datasets.ClassLabel(names=NER))
    features = datasets.Features(spec)

    def encode(row):
        out = {"id": row["id"], "tokens": row["tokens"]}
        for key, names in (("pos_tags", POS), ("chunk_tags", CHUNK), ("ner_tags", NER)):
            if key in spec:
                out[key] = [names.index(t) for t in row[key]]
        return out

    return datasets.DatasetDict(
        {
            split: datasets.Dataset.from_list([encode(r) for r in split_rows], features=features)
            for split, split_rows in rows.items()
        }
    )


def sentence(i, tokens, pos, chunk, ner=None):
    row = {"id": str(i), "tokens": tokens, "pos_tags": pos, "chunk_tags": chunk}
    if ner is not None:
        row["ner_tags"] = ner
    return row


HUB03 = {
    "train": [
        sentence(0, ["EU", "rejects"], ["NNP", "VBZ"], ["B-NP", "B-VP"], ["B-ORG", "O"]),
        sentence(1, ["Peter", "Blackburn"], ["NNP", "NNP"], ["B-NP", "I-NP"], ["B-PER", "I-PER"]),
        sentence(2, [], [], [], []),  # old hub versions end with an empty example
    ],
    "validation": [sentence(0, ["Bonn"], ["NNP"], ["I-NP"], ["I-LOC"])],  # IOB1: converted
    "test": [sentence(0, ["Paris"], ["NNP"], ["B-NP"], ["B-LOC"])],
}


def test_hub_fallback_conll2003(tmp_path, monkeypatch, caplog):
    calls = []

    def load_dataset(path, *args, **kwargs):
        calls.append(path)
        return fake_hub(HUB03)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    with caplog.at_level(logging.WARNING, logger="structperc.data.loading"):
        corpus = load_corpus("conll2003", tmp_path / "nowhere")
    assert calls == ["eriktks/conll2003"]  # found at the first try
    assert "DOCSTART" in caplog.text and "single sentence" in caplog.text
    train = corpus["train"]
    assert [d.tokens for d in train] == [["EU", "rejects"], ["Peter", "Blackburn"]]
    assert train[1].tags == ["B-PER", "I-PER"]
    assert train[1].columns == {"pos": ["NNP", "NNP"], "chunk": ["B-NP", "I-NP"]}
    assert train[1].sentence_starts == [0]
    assert train[1].source == "eriktks/conll2003/train:1"
    assert not has_docstart(train[0])
    dev = corpus["dev"]  # read from the hub's "validation" split
    assert dev[0].tags == ["B-LOC"] and dev[0].columns["chunk"] == ["B-NP"]
    assert load_corpus("conll2003", None, max_docs=1, splits=["train"])["train"][0].tokens == [
        "EU",
        "rejects",
    ]


def test_hub_fallback_conll2000_tries_next_repo(monkeypatch):
    rows = {
        "train": [sentence(0, ["He", "reckons"], ["NNP", "VBZ"], ["B-NP", "B-VP"])],
        "test": [sentence(0, ["Rockwell"], ["NNP"], ["B-NP"])],
    }

    calls = []

    def load_dataset(path, *args, **kwargs):
        calls.append((path, kwargs.get("revision")))
        if path == "eriktks/conll2000":
            raise RuntimeError("Dataset scripts are no longer supported, but found conll2000.py")
        return fake_hub(rows, with_ner=False)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    corpus = load_corpus("conll2000", None)
    assert corpus["train"][0].tags == ["B-NP", "B-VP"]
    assert corpus["train"][0].columns == {"pos": ["NNP", "VBZ"]}
    assert corpus["test"][0].source == "conll2000/test:0"
    parquet = "refs/convert/parquet"
    assert calls == [
        ("eriktks/conll2000", None),
        ("eriktks/conll2000", parquet),
        ("conll2000", None),
    ]


def test_no_local_data_and_no_hub(tmp_path, monkeypatch):
    no_hub(monkeypatch)
    folder = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError) as info:
        load_corpus("conll2003", folder)
    message = str(info.value)
    assert str(folder / "conll2003") in message
    assert ENV_VAR in message and CONFIG_KEY in message
    assert "cannot reach the hub" in message and "refs/convert/parquet" in message
    assert info.value.__cause__ is None and info.value.__suppress_context__


# --- synthetic corpus ---------------------------------------------------------------------------


def test_synthetic_corpus_is_deterministic_and_well_formed():
    docs = make_corpus(20, seed=3)
    assert docs == make_corpus(20, seed=3)
    assert docs != make_corpus(20, seed=4)
    assert len(docs) == 20
    kinds = Counter()
    for doc in docs:
        n = len(doc)
        assert len(doc.sentence_starts) >= 3 and doc.sentence_starts[0] == 0
        assert len(doc.columns["pos"]) == len(doc.columns["chunk"]) == len(doc.tags) == n
        found = spans(doc.tags)
        assert all(doc.tags[start].startswith("B-") for start, _, _ in found)  # IOB2
        for start, end, kind in found:
            kinds[kind] += 1
            assert all(w[0].isupper() for w in doc.tokens[start:end])
        surnames = Counter(doc.tokens[e - 1] for _, e, kind in found if kind == "PER")
        assert surnames.most_common(1)[0][1] >= 2  # the main person recurs
        assert has_docstart(doc)
    assert set(kinds) == {"PER", "LOC", "ORG", "MISC"}


def _features(tokens, i, prev_tag):
    word = tokens[i]
    shape = re.sub("[A-Z]+", "X", re.sub("[a-z]+", "x", re.sub("[0-9]+", "d", word)))
    prev_word = tokens[i - 1] if i else "<s>"
    next_word = tokens[i + 1] if i + 1 < len(tokens) else "</s>"
    return [f"w={word}", f"s={shape}", f"p={prev_word}", f"n={next_word}", f"t={prev_tag}"]


def _tag(weights, tagset, tokens):
    out, prev = [], "O"
    for i in range(len(tokens)):
        feats = _features(tokens, i, prev)
        prev = max(tagset, key=lambda t: (sum(weights[f, t] for f in feats), t))
        out.append(prev)
    return out


def test_synthetic_corpus_is_learnable():
    """A greedy perceptron on word/shape features gets entity F1 > 0.9 on a fresh seed."""
    train, test = make_corpus(40, seed=0), make_corpus(20, seed=1)
    tagset = sorted({t for d in train for t in d.tags})
    weights: defaultdict[tuple[str, str], float] = defaultdict(float)
    for _ in range(3):
        for doc in train:
            guess = _tag(weights, tagset, doc.tokens)
            for i, (g, t) in enumerate(zip(guess, doc.tags, strict=True)):
                if g != t:
                    for f in _features(doc.tokens, i, doc.tags[i - 1] if i else "O"):
                        weights[f, t] += 1.0
                        weights[f, g] -= 1.0
    gold = {(k, s) for k, d in enumerate(test) for s in spans(d.tags)}
    pred = {(k, s) for k, d in enumerate(test) for s in spans(_tag(weights, tagset, d.tokens))}
    correct = len(gold & pred)
    f1 = 2 * correct / (len(gold) + len(pred))
    assert f1 > 0.9, f1


# --- the real folder ----------------------------------------------------------------------------


@pytest.mark.realdata
def test_real_data_through_env_var(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(data_dir))
    assert resolve_data_dir(tmp_path) == data_dir
    corpus = load_corpus("conll2003", resolve_data_dir(tmp_path / "ignored"), max_docs=3)
    assert [len(v) for v in corpus.values()] == [3, 3, 3]
    first = corpus["train"][0]
    assert first.tokens[:2] == ["EU", "rejects"] and first.tags[:2] == ["B-ORG", "O"]
    assert first.source.endswith("conll2003/train.txt:3")
    assert len(first.sentence_starts) > 1 and has_docstart(first)


@pytest.mark.realdata
def test_real_conll2000_through_load_corpus(data_dir):
    corpus = load_corpus("conll2000", data_dir, splits=["test"])
    assert len(corpus["test"]) == 2_012
    assert sum(map(len, corpus["test"])) == 47_377
