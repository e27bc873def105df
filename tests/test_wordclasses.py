"""Word classes from unlabeled text (structperc/wordclasses, features/word_classes.py): the
CoNLL-style tokeniser, deterministic clusters, the cache and its keys, the lookup, and the
attribute family in the feature pipeline; all on tiny synthetic text, except two realdata checks
(the tokeniser against CoNLL-2003's own tokens, and the unlabeled folder's files)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("gensim", reason="pip install 'structperc[wordclasses]'")
pytest.importorskip("sklearn", reason="pip install 'structperc[wordclasses]'")

from hydra_runs import TOKEN_FEATURES, compose_config, run_main, write_synthetic_conll2003  # noqa: E402

from structperc.data.document import Document  # noqa: E402
from structperc.features.cache import feature_cache_key  # noqa: E402
from structperc.features.pipeline import LocalFeatures  # noqa: E402
from structperc.wordclasses import (  # noqa: E402
    WordClasses,
    WordClassSettings,
    conll_tokens,
    identity,
    load_word_classes,
    store,  # noqa: E402
)
from structperc.wordclasses.corpus import corpus_files  # noqa: E402

CITIES = ["Paris", "Berlin", "Rome", "Madrid", "Vienna", "Prague"]
NAMES = ["Smith", "Jones", "Brown", "Taylor", "Wilson", "Clark"]


def _write_corpus(folder: Path) -> Path:
    """Two tiny gzip files of sentences where cities and names fill their own slots."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(300):
        c, n = CITIES[i % 6], NAMES[(i * 5) % 6]
        lines.append(f"Mr. {n} flew to {c} on Monday, officials in {c} said.")
        lines.append(f'"{n} said he would stay in {c}," the agency reported.')
    for name, part in (("news.txt.gz", lines[::2]), ("wire.txt.gz", lines[1::2])):
        with gzip.GzipFile(folder / name, "wb", mtime=0) as f:  # the same bytes every time
            f.write(("\n".join(part) + "\n").encode())
    return folder


def _settings(folder: Path, cache: Path, **kw) -> WordClassSettings:
    base = dict(
        dir=str(folder),
        min_count=2,
        vector_size=8,
        window=2,
        epochs=2,
        kmeans=(2, 4),
        seed=0,
        cache_dir=str(cache),
    )
    return WordClassSettings(**(base | kw))


@pytest.fixture(scope="module")
def text(tmp_path_factory) -> Path:
    return _write_corpus(tmp_path_factory.mktemp("unlabeled"))


# ------------------------------------------------------------------------------------------
def test_tokens_follow_conll03():
    got = conll_tokens('He said "I don\'t know," the U.S. official (Mr. Smith) said.')
    assert got == [
        "He", "said", '"', "I", "do", "n't", "know", ",", '"', "the", "U.S.", "official",
        "(", "Mr.", "Smith", ")", "said", ".",
    ]  # fmt: skip
    assert conll_tokens("Reuters's O'Brien paid $1,000 on 1996-08-22... Can't") == [
        "Reuters", "'s", "O'Brien", "paid", "$", "1,000", "on", "1996-08-22", "...", "Ca", "n't",
    ]  # fmt: skip
    # Treebank and typographic quotes become CoNLL's straight ones
    assert conll_tokens("`` Hello '' \u201cthere\u201d") == ['"', "Hello", '"', '"', "there", '"']


@pytest.mark.realdata
def test_tokens_keep_conll03_sentences(data_dir):
    """A CoNLL-2003 training sentence joined by spaces comes back as its own tokens (the misses
    are list numbers such as ``2.``, which raw text ends sentences with)."""
    sentences, cur = [], []
    for line in open(data_dir / "conll2003" / "train.txt", encoding="utf-8"):
        parts = line.split()
        if not parts:
            if cur:
                sentences.append(cur)
            cur = []
        elif parts[0] != "-DOCSTART-":
            cur.append(parts[0])
    same = sum(conll_tokens(" ".join(s)) == s for s in sentences)
    assert same / len(sentences) > 0.94


@pytest.mark.realdata
def test_unlabeled_folder_has_its_corpora(data_dir):
    folder = data_dir / "unlabeled"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent (issue 34's unlabeled text)")
    files = corpus_files(folder, "all")
    assert "reuters21578.txt.gz" in [p.name for p in files]
    assert [p.name for p in corpus_files(folder, ["reuters21578"])] == ["reuters21578.txt.gz"]
    with pytest.raises(ValueError, match="no nosuch in"):
        corpus_files(folder, ["nosuch"])


@pytest.mark.realdata
def test_the_shipped_classes_are_those_the_main_job_names(data_dir):
    """``make run`` unpacks experiments/wordclasses/classes/ into the cache: each family file its
    settings name must be there under the same key, or the run would build it again (word2vec
    ~5 min, Brown m = 1000 ~48 min)."""
    import re

    root = Path(__file__).resolve().parent.parent
    folder = data_dir / "unlabeled"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent (issue 34's unlabeled text)")
    (main_features,) = re.findall(r"^MAIN_FEATURES := (.+)$", (root / "Makefile").read_text(), re.M)
    cfg = compose_config(["+experiment=conll03_nonlocal", *main_features.split()])
    settings = dict(cfg.features.word_classes) | {"dir": str(folder)}
    keys = identity(WordClassSettings.from_config(settings))
    # the class files; the vectors are read only to build a missing k-means file
    names = {f"{n}-{key}.json.gz" for n, key in keys.items() if n != "vectors"}
    assert names
    shipped = {p.name for p in (root / "experiments" / "wordclasses" / "classes").glob("*.gz")}
    assert names <= shipped, f"not shipped: {sorted(names - shipped)}"


# ------------------------------------------------------------------------------------------
def test_classes_are_deterministic_and_cached(text, tmp_path, monkeypatch):
    a = load_word_classes(_settings(text, tmp_path / "a"))
    b = load_word_classes(_settings(text, tmp_path / "b"))
    assert a.families == b.families and a.identity == b.identity
    assert a.attributes == ("wc2", "wc4")
    assert set(a.families["wc4"].values()) == {"0", "1", "2", "3"}
    # the second load reads the files: nothing is trained
    monkeypatch.setattr(store, "read_sentences", lambda *a, **k: pytest.fail("text read"))
    c = load_word_classes(_settings(text, tmp_path / "a"))
    assert c.families == a.families
    files = sorted(p.name.split("-")[0] for p in (tmp_path / "a").iterdir())
    assert files == ["kmeans2", "kmeans4", "vectors", "vectors"]  # .json + .safetensors


def test_cluster_counts_reuse_the_vectors(text, tmp_path, monkeypatch):
    load_word_classes(_settings(text, tmp_path))
    import structperc.wordclasses.vectors as vectors

    monkeypatch.setattr(vectors, "train_vectors", lambda *a, **k: pytest.fail("retrained"))
    more = load_word_classes(_settings(text, tmp_path, kmeans=(3,)))
    assert set(more.families["wc3"].values()) == {"0", "1", "2"}


def test_keys_change_with_settings_and_text(text, tmp_path):
    base = store.identity(_settings(text, tmp_path))
    assert store.identity(_settings(text, tmp_path / "elsewhere")) == base  # not the cache dir
    assert store.identity(_settings(text, tmp_path, seed=1))["vectors"] != base["vectors"]
    one = store.identity(_settings(text, tmp_path, corpora=("news",)))
    assert one["vectors"] != base["vectors"]
    changed = _write_corpus(tmp_path / "copy")
    assert store.identity(_settings(changed, tmp_path)) == base  # same content elsewhere
    with gzip.open(changed / "wire.txt.gz", "at", encoding="utf-8") as f:
        f.write("One more line.\n")
    assert store.identity(_settings(changed, tmp_path))["vectors"] != base["vectors"]


def test_settings_errors_name_the_setting(text, tmp_path):
    with pytest.raises(ValueError, match="unknown setting.*'clusters'"):
        WordClassSettings.from_config({"clusters": 5})
    with pytest.raises(ValueError, match="no family"):
        WordClassSettings.from_config({"kmeans": [], "brown": 0})
    with pytest.raises(ValueError, match="features.word_classes.corpora: no nosuch"):
        store.identity(_settings(text, tmp_path, corpora=("nosuch",)))
    with pytest.raises(FileNotFoundError, match="no unlabeled text"):
        store.identity(_settings(tmp_path, tmp_path))
    with pytest.raises(ValueError, match="50 clusters of .* words"):
        load_word_classes(_settings(text, tmp_path, kmeans=(50,)))


# ------------------------------------------------------------------------------------------
def test_lookup_exact_then_lower_then_title():
    classes = WordClasses(
        {"wc3": {"Paris": "1", "paris": "2", "the": "0"}, "bc": {"Paris": "0110", "the": "1"}},
        ["wc3", "bc2", "bc6"],
        {},
    )
    assert classes.classes("Paris") == {"wc3": "1", "bc2": "01", "bc6": "0110"}
    assert classes.classes("PARIS") == {"wc3": "2", "bc2": "01", "bc6": "0110"}
    assert classes.classes("The") == {"wc3": "0", "bc2": "1", "bc6": "1"}
    assert classes.classes("Zzyzx") == {"wc3": None, "bc2": None, "bc6": None}
    assert classes.columns(["the", "Zzyzx"]) == {
        "wc3": ["0", None],
        "bc2": ["1", None],
        "bc6": ["1", None],
    }
    again = WordClasses.from_state(json.loads(json.dumps(classes.state())))
    assert again.columns(["PARIS"]) == classes.columns(["PARIS"])
    with pytest.raises(ValueError, match="'wc7' has no family"):
        WordClasses({"wc3": {}}, ["wc7"], {})


def _docs() -> list[Document]:
    words = [["Mr.", "Smith", "flew", "to", "Paris", "."], ["ROME", "said", "Jones", "."]]
    tags = [["O", "B-PER", "O", "O", "B-LOC", "O"], ["B-LOC", "O", "B-PER", "O"]]
    return [
        Document(tokens=w, tags=t, sentence_starts=[0], columns={})
        for w, t in zip(words, tags, strict=True)
    ]


def _features(text: Path, cache: Path, **kw) -> LocalFeatures:
    cfg = {
        k: list(v) if isinstance(v, tuple) else v
        for k, v in vars(_settings(text, cache, **kw)).items()
    }
    return LocalFeatures(
        attributes=["w", "wl"], bigram_attributes=[], gazetteer="none", min_count=1,
        word_classes=cfg,
    )  # fmt: skip


def test_feature_pipeline_has_the_family(text, tmp_path):
    features = _features(text, tmp_path)
    names = {a for t in features.templates for a, _ in t}
    assert {"wc2", "wc4"} <= names
    docs = _docs()
    features.fit(docs)
    fm = features.transform(docs)
    plain = LocalFeatures(attributes=["w", "wl"], bigram_attributes=[], gazetteer="none")
    plain.fit(docs)
    assert features.num_features > plain.num_features
    meta, tensors = features.state()
    again = LocalFeatures.from_state(meta, tensors)
    assert again.word_classes.families == features.word_classes.families
    assert again.transform(docs).ids.tolist() == fm.ids.tolist()
    assert "word_classes" not in plain.state()[0]  # a model without them stays as it was
    cfg = {
        k: list(v) if isinstance(v, tuple) else v
        for k, v in vars(_settings(text, tmp_path)).items()
    }
    pairs = LocalFeatures(
        attributes=["w"], bigram_attributes=["wc4"], gazetteer="none", word_classes=cfg
    )
    assert (("wc4", -1), ("wc4", 0)) in pairs.templates


def test_template_preset_gives_the_named_attributes_features(text, tmp_path):
    """``kazama_wordclasses.tpl``: the features and feature ids of Table 1 + word classes."""
    cfg = {
        k: list(v) if isinstance(v, tuple) else v
        for k, v in vars(_settings(text, tmp_path)).items()
    }
    docs = _docs()
    for d in docs:  # the POS and chunk columns Table 1 reads
        d.columns = {"pos": ["NNP"] * len(d), "chunk": ["B-NP"] * len(d)}
    named = LocalFeatures(gazetteer="none", min_count=1, word_classes=cfg).fit(docs)
    preset = LocalFeatures(
        gazetteer="none", min_count=1, word_classes=cfg, template_file="kazama_wordclasses"
    ).fit(docs)
    assert len(preset.templates) == len(named.templates) == 130 + 2 * 5  # wc2, wc4 at 5 offsets
    assert np.array_equal(named.vocab.keys, preset.vocab.keys)
    a, b = named.transform(docs, training=True), preset.transform(docs, training=True)
    assert torch.equal(a.ids, b.ids) and torch.equal(a.offsets, b.offsets)
    with_classes = LocalFeatures(gazetteer="none", min_count=1, word_classes=cfg)
    without = LocalFeatures(gazetteer="none", min_count=1).fit(docs)
    assert with_classes.fit(docs).num_features > without.num_features  # the classes fire


def test_feature_cache_key_has_the_classes(text, tmp_path):
    cfg = {"attributes": ["w"], "min_count": 2}
    key = feature_cache_key(cfg, [], None)
    assert feature_cache_key(cfg | {"word_classes": None}, [], None) == key
    wc = {"dir": str(text), "min_count": 2, "vector_size": 8, "kmeans": [2]}
    with_wc = feature_cache_key(cfg | {"word_classes": wc}, [], None)
    assert with_wc != key
    assert feature_cache_key(cfg | {"word_classes": wc | {"kmeans": [3]}}, [], None) != with_wc
    elsewhere = wc | {"cache_dir": str(tmp_path / "x")}
    assert feature_cache_key(cfg | {"word_classes": elsewhere}, [], None) == with_wc


def test_state_is_compact_and_round_trips():
    classes = WordClasses(
        {"wc2": {"a": "0", "b": "1"}, "bc": {"b": "01", "c": "1"}}, ["wc2", "bc4"], {"x": "k"}
    )
    state = classes.state()
    assert state["words"] == "a b c" and state["families"] == {"wc2": "0 1 _", "bc": "_ 01 1"}
    again = WordClasses.from_state(json.loads(json.dumps(state, indent=2)))
    assert again.families == classes.families and again.identity == {"x": "k"}
    lists = {n: {"words": list(t), "values": list(t.values())} for n, t in classes.families.items()}
    first = {"attributes": ["wc2", "bc4"], "identity": {"x": "k"}, "families": lists}
    assert WordClasses.from_state(first).families == classes.families


def test_run_with_the_preset(text, tmp_path, monkeypatch):
    """``features=kazama_wordclasses`` composes with an experiment, a run builds the classes
    into their cache, and the saved model keeps them (a second run reads the cache)."""
    cfg = compose_config(["+experiment=conll03_local", "features=kazama_wordclasses"])
    assert cfg.features.word_classes.kmeans == [100, 500, 1000] and cfg.features.gazetteers == []
    (tmp_path / "data").mkdir()
    data = write_synthetic_conll2003(tmp_path / "data", {"train": 12, "dev": 4, "test": 4})
    wc = "features.word_classes."
    overrides = [
        "+experiment=conll03_local",
        "features=kazama_wordclasses",
        *TOKEN_FEATURES,
        f"{wc}dir={text}",
        f"{wc}min_count=2",
        f"{wc}vector_size=8",
        f"{wc}epochs=1",
        f"{wc}kmeans=[2,4]",
        f"{wc}cache_dir={tmp_path / 'classes'}",
        f"cache_dir={tmp_path / 'features'}",
        "trainer.max_epochs=2",
    ]
    _, results = run_main(overrides, data, tmp_path / "run", monkeypatch)
    assert results["hparams"]["features.word_classes"].startswith("{")
    model = json.loads((tmp_path / "run" / "model.json").read_text())
    assert model["features"]["word_classes"]["attributes"] == ["wc2", "wc4"]
    assert len(list((tmp_path / "classes").glob("kmeans*.json"))) == 2
    monkeypatch.setattr(store, "read_sentences", lambda *a, **k: pytest.fail("text read"))
    _, again = run_main(overrides, data, tmp_path / "again", monkeypatch)
    assert again["feature_cache_hit"] and again["dev"]["f1"] == results["dev"]["f1"]


@pytest.mark.slow
def test_brown_paths_prefix_attributes(text, tmp_path):
    """Brown clusters as a family of the store (tests/test_brown.py tests the merges)."""
    pytest.importorskip("numba", reason="pip install 'structperc[wordclasses]'")
    settings = _settings(text, tmp_path, kmeans=(), brown=4, brown_min_count=2)
    classes = load_word_classes(settings)
    assert classes.attributes == ("bc4", "bc6", "bc10", "bc20")
    paths = classes.families["bc"]
    assert set("".join(paths.values())) <= {"0", "1"} and "Paris" in paths
    assert len(set(paths.values())) == 4  # one path per cluster of the tree
    assert classes.classes("Paris")["bc4"] == paths["Paris"][:4]
    again = load_word_classes(
        _settings(text, tmp_path / "again", kmeans=(), brown=4, brown_min_count=2)
    )
    assert again.families == classes.families
