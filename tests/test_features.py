"""Tests for structperc.features: attributes, gazetteer, templates, vocabulary, cache, files."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from structperc.data.document import Document
from structperc.data.synthetic import make_corpus
from structperc.features.attributes import FLAGS, LEXICAL, TABLE1, token_attributes
from structperc.features.cache import cache_key, cached_features
from structperc.features.extract import KEY_SHIFT, FeatureMatrix
from structperc.features.gazetteer import (
    EntryIndex,
    gazetteer_columns,
    jackknife_entries,
    read_gazetteer,
)
from structperc.features.pipeline import LocalFeatures
from structperc.features.templates import make_templates, template_name
from structperc.model.batch import make_batch
from structperc.model.files import load_model, save_model
from structperc.model.weights import ChainWeights


def doc(text: str, tags: str | None = None, pos: str | None = None) -> Document:
    tokens = text.split()
    columns = {"pos": pos.split()} if pos else {}
    return Document(tokens=tokens, columns=columns, tags=tags.split() if tags else None)


def feature_names(lf: LocalFeatures, fm: FeatureMatrix, token: int) -> set[str]:
    """The readable features (``w[-1]=x``, ``wl[0]|wl[1]=a|b``, ``bias``) of one token."""
    names = set()
    ids = fm.ids[int(fm.offsets[token]) : int(fm.offsets[token + 1])].tolist()
    for i in ids:
        key = int(lf.vocab.keys[i])
        template = lf.templates[key >> KEY_SHIFT]
        code = key & ((1 << KEY_SHIFT) - 1)
        if not template:
            names.add("bias")
        elif len(template) == 1:
            ((a, o),) = template
            names.add(f"{a}[{o}]={lf.vocab.values[a][code]}")
        else:
            (a1, _), (a2, _) = template
            c1, c2 = divmod(code, max(len(lf.vocab.values[a2]), 1))
            names.add(
                f"{template_name(template)}={lf.vocab.values[a1][c1]}|{lf.vocab.values[a2][c2]}"
            )
    assert len(names) == len(ids)  # no feature twice at a token
    return names


def doc_features(lf: LocalFeatures, fm: FeatureMatrix, d: int) -> list[set[str]]:
    lo, hi = int(fm.doc_offsets[d]), int(fm.doc_offsets[d + 1])
    return [feature_names(lf, fm, t) for t in range(lo, hi)]


# ---------------------------------------------------------------- attributes


@pytest.mark.parametrize(
    "word, fired",
    [
        ("96", {"2d"}),
        ("1996", {"4d"}),
        ("A8", {"d&a", "ic", "ac"}),
        ("12-3", {"d&-"}),
        ("1/2", {"d&/"}),
        ("1,000", {"d&,"}),
        ("1.5", {"d&."}),
        ("123", {"n"}),
        ("7", {"n"}),
        ("12345", {"n"}),
        ("Smith", {"ic"}),
        ("EU", {"ic", "ac"}),
        ("the", {"l"}),
        ("J.", {"ic", "ac", "cp"}),
        ("Jr.", {"ic"}),
        ("-", set()),
        ("mcDonald", set()),
    ],
)
def test_word_form_flags(word, fired):
    cols = token_attributes(Document(tokens=[word]), FLAGS)
    assert {name for name in FLAGS if cols[name][0] is not None} == fired
    assert all(cols[name][0] in (None, "1") for name in FLAGS)


def test_lexical_attributes_prefixes_and_suffixes():
    d = Document(
        tokens=["Smith", "at", "x"],
        columns={"pos": ["NNP", "IN", "SYM"], "chunk": ["B-NP", "B-PP", "O"]},
    )
    cols = token_attributes(d, LEXICAL)
    assert cols["w"] == ["Smith", "at", "x"]
    assert cols["wl"] == ["smith", "at", "x"]
    assert cols["pos"] == ["NNP", "IN", "SYM"]
    assert cols["chk"] == ["B-NP", "B-PP", "O"]
    assert [cols[f"p{n}"][0] for n in range(1, 5)] == ["S", "Sm", "Smi", "Smit"]
    assert [cols[f"s{n}"][0] for n in range(1, 5)] == ["h", "th", "ith", "mith"]
    # only when the word is at least that long
    assert [cols[f"p{n}"][1] for n in range(1, 5)] == ["a", "at", None, None]
    assert [cols[f"s{n}"][1] for n in range(1, 5)] == ["t", "at", None, None]
    assert [cols[f"p{n}"][2] for n in range(1, 5)] == ["x", None, None, None]
    # missing columns do not fire
    bare = token_attributes(Document(tokens=["a", "b"]), ("pos", "chk"))
    assert bare == {"pos": [None, None], "chk": [None, None]}


def test_unknown_attribute_is_an_error():
    with pytest.raises(ValueError, match="unknown token attribute"):
        token_attributes(Document(tokens=["a"]), ("w", "nope"))
    with pytest.raises(ValueError, match="unknown attributes"):
        LocalFeatures(attributes=("w", "nope"), gazetteer="none")


# ---------------------------------------------------------------- gazetteer


def test_read_gazetteer(tmp_path):
    path = tmp_path / "list.txt"
    path.write_text("ORG New York Times\nLOC New York\n\nORG Acme\nLOC  Paris \n", encoding="utf-8")
    assert read_gazetteer(path) == {
        "ORG": {("New", "York", "Times"), ("Acme",)},
        "LOC": {("New", "York"), ("Paris",)},
    }
    bad = tmp_path / "bad.txt"
    bad.write_text("ORG Acme\nLOC\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.txt:2"):
        read_gazetteer(bad)


@pytest.mark.parametrize(
    "tokens, tags",
    [
        # longest entry at a start wins over a shorter one
        ("the New York City office", "O B I I O"),
        # "New York" is taken first, so the overlapping "York Times" is not matched
        ("New York Times", "B I O"),
        ("York Times", "B I"),
        # a longer entry that runs past the end, then the shorter one
        ("in New York", "O B I"),
        # adjacent matches each start with B
        ("New New York", "B B I"),
        # entries are case-sensitive token tuples; a prefix of an entry is no match
        ("new york City", "O O O"),
        ("", ""),
    ],
)
def test_greedy_longest_match(tokens, tags):
    index = EntryIndex({("New",), ("New", "York"), ("New", "York", "City"), ("York", "Times")})
    assert index.match(tokens.split()) == tags.split()


def test_gazetteer_columns_per_type():
    docs = [doc("Acme hired Smith"), doc("Smith left")]
    org = EntryIndex({("Acme",)})
    per = EntryIndex({("Smith",)})
    cols = gazetteer_columns(
        docs, [{"ORG": org, "PER": per}, {"ORG": org}], {"go": "ORG", "gp": "PER"}
    )
    assert cols[0] == {"go": ["B", "O", "O"], "gp": ["O", "O", "B"]}
    assert cols[1] == {"go": ["O", "O"], "gp": ["O", "O"]}  # no PER index: nothing matches


TRAIN_GAZ = [
    doc("Acme hired John", "B-ORG O B-PER"),  # fold 0
    doc("Globex hired John", "B-ORG O B-PER"),  # fold 1
    doc("Initech Corp hired Acme", "B-ORG I-ORG O O"),  # fold 0
]
ENTRIES = {
    "ORG": {("Acme",), ("Globex",), ("Initech", "Corp"), ("Nowhere",), ("John",)},
    "PER": {("John",)},
}


def test_jackknife_entries():
    folds = jackknife_entries(TRAIN_GAZ, ENTRIES, folds=2)
    assert len(folds) == 2
    # Acme and Initech Corp are ORG entities only in fold 0: absent there, present in fold 1
    assert folds[0]["ORG"] == {("Globex",)}
    assert folds[1]["ORG"] == {("Acme",), ("Initech", "Corp")}
    # John is a PER in both folds: present in both; as an ORG entry it never occurs as an ORG
    assert folds[0]["PER"] == folds[1]["PER"] == {("John",)}
    # never seen as an entity in training: dropped everywhere
    assert all(("Nowhere",) not in f["ORG"] for f in folds)


@pytest.fixture
def gazetteer_file(tmp_path):
    path = tmp_path / "gaz.txt"
    lines = [f"{t} {' '.join(e)}" for t, es in ENTRIES.items() for e in sorted(es)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_pipeline_jackknife_on_training_full_list_elsewhere(gazetteer_file):
    lf = LocalFeatures(
        attributes=("w",),
        gazetteer="jackknife",
        gazetteer_path=str(gazetteer_file),
        gazetteer_types={"go": "ORG", "gp": "PER"},
        gazetteer_folds=2,
    )
    train = lf._columns(TRAIN_GAZ, training=True)
    # doc 0 and doc 2 are fold 0, where Acme / Initech Corp are unknown; doc 1 is fold 1
    assert train["go"] == ["O", "O", "O"] + ["O", "O", "O"] + ["O", "O", "O", "O"]
    assert train["gp"] == ["O", "O", "B"] + ["O", "O", "B"] + ["O", "O", "O", "O"]
    dev = lf._columns(TRAIN_GAZ, training=False)
    assert dev["go"] == ["B", "O", "B"] + ["B", "O", "B"] + ["B", "I", "O", "B"]
    naive = LocalFeatures(
        attributes=("w",),
        gazetteer="naive",
        gazetteer_path=str(gazetteer_file),
        gazetteer_types={"go": "ORG"},
    )
    assert naive._columns(TRAIN_GAZ, training=True)["go"] == dev["go"]


def test_pipeline_settings_errors(tmp_path):
    with pytest.raises(ValueError, match="gazetteer must be one of"):
        LocalFeatures(gazetteer="oracle")
    with pytest.raises(ValueError, match="gazetteer_path is required"):
        LocalFeatures(gazetteer="naive")
    with pytest.raises(FileNotFoundError):
        LocalFeatures(gazetteer="naive", gazetteer_path=str(tmp_path / "missing.txt"))


# ---------------------------------------------------------------- templates


def test_templates_count_and_names():
    t = make_templates(("w", "pos"), 2, ("pos",))
    assert len(t) == 1 + 2 * 5 + 3
    assert t[0] == ()
    assert [template_name(x) for x in t[:3]] == ["bias", "w[-2]", "w[-1]"]
    assert template_name(t[-1]) == "pos[0]|pos[1]"
    assert [template_name(x) for x in t[-3:]] == [
        "pos[-2]|pos[-1]",
        "pos[-1]|pos[0]",
        "pos[0]|pos[1]",
    ]
    # Table 1 without a gazetteer: 24 attributes x 5 offsets, bias, 3 bigram attributes x 3
    assert len(LocalFeatures(gazetteer="none").templates) == 1 + len(TABLE1) * 5 + 3 * 3
    assert len(TABLE1) == 24


def test_templates_with_gazetteer(gazetteer_file):
    lf = LocalFeatures(gazetteer="naive", gazetteer_path=str(gazetteer_file))
    # 24 + go, gp, gm, gl unigrams; wl, pos, chk, go, gp, gm, gl bigrams
    assert len(lf.templates) == 1 + 28 * 5 + 7 * 3
    names = {template_name(t) for t in lf.templates}
    assert {"go[0]", "gm[2]", "gp[-1]|gp[0]"} <= names


# ---------------------------------------------------------------- vocabulary


def words_only(window: int = 0, min_count: int = 2, bigrams=(), **kw) -> LocalFeatures:
    return LocalFeatures(
        attributes=("w",),
        window=window,
        bigram_attributes=bigrams,
        gazetteer="none",
        min_count=min_count,
        **kw,
    )


def test_min_count_cutoff():
    train = [doc("a b"), doc("a c c")]
    lf = words_only(min_count=2).fit(train)
    # bias (5 times), w=a (twice), w=c (twice) kept; w=b (once) dropped
    assert lf.num_features == 3
    fm = lf.transform(train)
    assert doc_features(lf, fm, 0) == [{"bias", "w[0]=a"}, {"bias"}]
    assert doc_features(lf, fm, 1) == [{"bias", "w[0]=a"}, {"bias", "w[0]=c"}, {"bias", "w[0]=c"}]
    lf1 = words_only(min_count=1).fit(train)
    assert lf1.num_features == 4
    assert doc_features(lf1, lf1.transform(train), 0)[1] == {"bias", "w[0]=b"}
    lf3 = words_only(min_count=3).fit(train)
    assert lf3.num_features == 1  # only the bias


def test_window_features_do_not_cross_documents():
    train = [doc("x y"), doc("z q")]
    lf = words_only(window=1, min_count=1, bigrams=("w",)).fit(train)
    fm = lf.transform(train)
    assert doc_features(lf, fm, 0) == [
        {"bias", "w[0]=x", "w[1]=y", "w[0]|w[1]=x|y"},
        {"bias", "w[0]=y", "w[-1]=x", "w[-1]|w[0]=x|y"},
    ]
    assert doc_features(lf, fm, 1) == [
        {"bias", "w[0]=z", "w[1]=q", "w[0]|w[1]=z|q"},
        {"bias", "w[0]=q", "w[-1]=z", "w[-1]|w[0]=z|q"},
    ]
    # and nothing crossing the boundary made it into the vocabulary
    # bias, w[0] x4, w[-1] x2, w[1] x2, w[-1]|w[0] x2, w[0]|w[1] x2 (w[-2]|w[-1] never fires)
    assert lf.num_features == 1 + 4 + 2 + 2 + 2 + 2


def test_boundary_values_mark_the_document_ends():
    train = [doc("x y z"), doc("q")]
    lf = words_only(window=2, min_count=1, bigrams=("w",), boundary=True).fit(train)
    fm = lf.transform(train)
    first, second, third = doc_features(lf, fm, 0)
    assert {"w[-2]=_B-2", "w[-1]=_B-1", "w[-2]|w[-1]=_B-2|_B-1", "w[-1]|w[0]=_B-1|x"} <= first
    assert {"w[-2]=_B-1", "w[-1]=x", "w[2]=_B+1"} <= second
    assert {"w[1]=_B+1", "w[2]=_B+2", "w[0]|w[1]=z|_B+1"} <= third
    (only,) = doc_features(lf, fm, 1)  # a one-token document: boundaries on both sides
    assert {"w[-2]=_B-2", "w[-1]=_B-1", "w[1]=_B+1", "w[2]=_B+2", "w[0]=q"} <= only
    meta, tensors = lf.state()  # the setting travels with the vocabulary
    back = LocalFeatures.from_state(json.loads(json.dumps(meta)), tensors)
    assert_same_matrix(back.transform(train), fm)


def test_flag_off_value_makes_a_feature_of_a_flag_that_does_not_hold():
    d = doc("Smith ran")
    assert token_attributes(d, ("ic",))["ic"] == ["1", None]
    assert token_attributes(d, ("ic",), flag_off="0")["ic"] == ["1", "0"]
    lf = LocalFeatures(
        attributes=("ic",),
        window=0,
        bigram_attributes=(),
        gazetteer="none",
        min_count=1,
        flag_off=0,
    )  # YAML hands over an int
    fm = lf.fit([d]).transform([d])
    assert doc_features(lf, fm, 0) == [{"bias", "ic[0]=1"}, {"bias", "ic[0]=0"}]


def test_transform_each_document_alone_equals_together():
    train = [doc("a b a c"), doc("b a"), doc("c")]
    lf = words_only(window=2, min_count=1, bigrams=("w",)).fit(train)
    together = lf.transform(train)
    for d in range(len(train)):
        alone = lf.transform([train[d]])
        a, b = make_batch(together, [d]), make_batch(alone, [0])
        assert torch.equal(a.ids, b.ids) and torch.equal(a.offsets, b.offsets)


def test_transform_unseen_words_give_no_ids():
    lf = words_only(window=1, min_count=1).fit([doc("a b"), doc("b a")])
    fm = lf.transform([doc("a zzz b")])
    feats = doc_features(lf, fm, 0)
    assert all(not any(f.endswith("=zzz") for f in fs) for fs in feats)
    assert feats[1] == {"bias", "w[-1]=a", "w[1]=b"}  # only the neighbours speak for it
    assert feats[0] == {"bias", "w[0]=a"}  # its right neighbour is unseen: no w[1] feature
    assert feats[2] == {"bias", "w[0]=b"}  # its left neighbour is unseen: no w[-1] feature
    assert fm.ids.dtype == torch.int32 and fm.offsets.dtype == torch.int64
    assert fm.doc_offsets.tolist() == [0, 3]
    # an empty vocabulary (min_count too high) gives no ids at all
    empty = words_only(min_count=100).fit([doc("a")])
    assert empty.num_features == 0
    fm0 = empty.transform([doc("a b")])
    assert fm0.ids.numel() == 0 and fm0.offsets.tolist() == [0, 0, 0]


# ---------------------------------------------------------------- persistence


@pytest.fixture
def synthetic():
    return make_corpus(10, seed=3), make_corpus(4, seed=4)


@pytest.fixture
def synthetic_gazetteer(tmp_path, synthetic):
    from structperc.data.tags import spans

    train, _ = synthetic
    lines = {f"{typ} {' '.join(d.tokens[s:e])}" for d in train for s, e, typ in spans(d.tags)}
    path = tmp_path / "synthetic.lst"
    path.write_text("\n".join(sorted(lines)) + "\n", encoding="utf-8")
    return path


def fitted_synthetic(synthetic, gazetteer_path) -> LocalFeatures:
    train, _ = synthetic
    lf = LocalFeatures(
        gazetteer="jackknife", gazetteer_path=str(gazetteer_path), gazetteer_folds=3, min_count=2
    )
    return lf.fit(train)


def assert_same_matrix(a: FeatureMatrix, b: FeatureMatrix) -> None:
    for name, t in a.tensors().items():
        assert torch.equal(t, b.tensors()[name]), name


def test_state_round_trip_gives_identical_transform(synthetic, synthetic_gazetteer):
    train, dev = synthetic
    lf = fitted_synthetic(synthetic, synthetic_gazetteer)
    assert lf.num_features > 100
    meta, tensors = lf.state()
    meta = json.loads(json.dumps(meta))  # it must survive JSON
    back = LocalFeatures.from_state(meta, {k: v.clone() for k, v in tensors.items()})
    assert back.templates == lf.templates
    assert back.entries == lf.entries
    assert np.array_equal(back.vocab.keys, lf.vocab.keys)
    assert_same_matrix(back.transform(dev), lf.transform(dev))
    assert_same_matrix(back.transform(train, training=True), lf.transform(train, training=True))
    # the jackknife matters on the training documents (else this test checks less than it says)
    assert not torch.equal(lf.transform(train, training=True).ids, lf.transform(train).ids)


def test_feature_cache_hit_and_miss(tmp_path, synthetic, synthetic_gazetteer):
    train, dev = synthetic
    calls = []

    def build_with(min_count):
        def build():
            calls.append(min_count)
            lf = LocalFeatures(
                gazetteer="naive", gazetteer_path=str(synthetic_gazetteer), min_count=min_count
            ).fit(train)
            mats = {"train": lf.transform(train, training=True), "dev": lf.transform(dev)}
            meta, tensors = lf.state()
            return meta, tensors, mats

        return build

    cache = tmp_path / "cache"
    key = {"features": {"min_count": 2, "gazetteer": "naive"}, "files": ["a", 1, 2]}
    meta1, vocab1, mats1, hit1 = cached_features(cache, key, build_with(2))
    assert not hit1 and calls == [2]
    meta2, vocab2, mats2, hit2 = cached_features(cache, dict(key), build_with(2))
    assert hit2 and calls == [2]  # not rebuilt
    assert meta2 == json.loads(json.dumps(meta1))
    assert vocab2.keys() == vocab1.keys()
    for k in vocab1:
        assert torch.equal(vocab1[k], vocab2[k])
    assert set(mats2) == {"train", "dev"}
    for s in mats1:
        assert_same_matrix(mats1[s], mats2[s])
    # the features rebuilt from the cached state transform new text the same way
    lf_cached = LocalFeatures.from_state(meta2, vocab2)
    lf_built = LocalFeatures.from_state(meta1, vocab1)
    assert_same_matrix(lf_cached.transform(dev), lf_built.transform(dev))
    # any change of the key is a miss
    changed = {**key, "features": {"min_count": 1, "gazetteer": "naive"}}
    assert cache_key(changed) != cache_key(key)
    _, _, mats3, hit3 = cached_features(cache, changed, build_with(1))
    assert not hit3 and calls == [2, 1]
    assert mats3["train"].ids.numel() > mats1["train"].ids.numel()  # min_count 1 keeps more
    # no cache directory: always built
    *_, hit4 = cached_features(None, key, build_with(2))
    assert not hit4 and calls == [2, 1, 2]


def test_model_save_load_round_trip(tmp_path, synthetic, synthetic_gazetteer):
    train, dev = synthetic
    lf = fitted_synthetic(synthetic, synthetic_gazetteer)
    labels = ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER"]
    weights = ChainWeights(lf.num_features, labels)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for t in weights.tables().values():
            t.copy_(torch.randint(-3, 4, t.shape, generator=gen).float())
    save_model(tmp_path / "model", weights, lf, {"note": "x"})
    w2, lf2, info = load_model(tmp_path / "model")
    assert info == {"note": "x"} and w2.labels == labels
    for n, t in weights.tables().items():
        assert torch.equal(w2.tables()[n], t)
    fm, fm2 = lf.transform(dev), lf2.transform(dev)
    assert_same_matrix(fm, fm2)
    docs = list(range(len(dev)))
    pot = weights.potentials(make_batch(fm, docs))
    assert pot.abs().sum() > 0
    assert torch.equal(w2.potentials(make_batch(fm2, docs)), pot)
    # not a model directory / wrong format
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path)
    meta = json.loads((tmp_path / "model" / "model.json").read_text())
    meta["format"] = "other/9"
    (tmp_path / "model" / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="format"):
        load_model(tmp_path / "model")


def test_model_files_store_only_the_non_zero_weights_and_old_dense_files_load(
    tmp_path, synthetic, synthetic_gazetteer
):
    from safetensors.torch import load_file, save_file

    from structperc.io import file_digest

    lf = fitted_synthetic(synthetic, synthetic_gazetteer)
    labels = ["O", "B-LOC", "I-LOC"]
    weights = ChainWeights(lf.num_features, labels)
    with torch.no_grad():  # a few non-zero entries, as training leaves most of a table
        weights.tables()["node"][3, 1] = 2.5
        weights.tables()["node"][7] = -1.0
        weights.tables()["edge"][5, 4] = 0.25
    save_model(tmp_path / "sparse", weights, lf)
    stored = load_file(tmp_path / "sparse" / "model.safetensors")
    assert stored["weights.node.index"].tolist() == [3 * 3 + 1, 7 * 3, 7 * 3 + 1, 7 * 3 + 2]
    assert stored["weights.edge.values"].tolist() == [0.25]
    w2, _, _ = load_model(tmp_path / "sparse")
    for n, t in weights.tables().items():
        assert torch.equal(w2.tables()[n], t)
    # format 1 wrote every table dense; such a model still loads
    dense = {k: v for k, v in stored.items() if not k.startswith("weights.")}
    dense.update({f"weights.{n}": t.detach().contiguous() for n, t in weights.tables().items()})
    old = tmp_path / "dense"
    old.mkdir()
    save_file(dense, old / "model.safetensors")
    meta = json.loads((tmp_path / "sparse" / "model.json").read_text())
    del meta["tables"]
    meta["format"] = "structperc.chain/1"
    meta["tensors"] = {"file": "model.safetensors", **file_digest(old / "model.safetensors")}
    (old / "model.json").write_text(json.dumps(meta))
    w3, _, _ = load_model(old)
    for n, t in weights.tables().items():
        assert torch.equal(w3.tables()[n], t)
    assert (old / "model.safetensors").stat().st_size > 5 * (
        tmp_path / "sparse" / "model.safetensors"
    ).stat().st_size


def word_trigrams() -> LocalFeatures:
    """Words at offset 0 and the word trigram templates, nothing else."""
    return LocalFeatures(
        attributes=("w",),
        window=0,
        bigram_attributes=(),
        trigram_attributes=("w",),
        gazetteer="none",
        min_count=1,
    )


def test_trigram_templates_fire_inside_the_document_and_share_ids():
    lf = word_trigrams()
    names = [template_name(t) for t in lf.templates]
    assert names[-4:] == ["w[-2]|w[-1]|w[0]", "w[-1]|w[0]|w[1]", "w[0]|w[1]|w[2]", "w[1]|w[2]"]
    train = [doc("a b c a b c")]
    X = lf.fit(train).transform(train)
    per_token = [X.ids[X.offsets[i] : X.offsets[i + 1]].tolist() for i in range(6)]
    # bias + w[0] + the trigram templates whose positions lie inside the document
    assert [len(t) for t in per_token] == [4, 5, 6, 6, 4, 3]
    # "a b c" ending at tokens 2 and 5 is one feature; "b c a" / "c a b" are others
    assert per_token[2][2] == per_token[5][2]
    assert len(set(per_token[2][2:])) == 4


def test_a_trigram_of_too_many_values_is_refused():
    lf = word_trigrams()
    lf.fit([doc("a b c")])
    lf.vocab.values["w"] = [str(i) for i in range(20_000)]  # as if: 20,000^3 > 2^42 codes
    with pytest.raises(ValueError, match="exceed the 2\\^42 feature keys"):
        lf.transform([doc("a b c")])


def test_feature_cache_key_follows_file_content_not_place_or_time(tmp_path):
    import os
    import shutil

    from structperc.features import cache as cache_module
    from structperc.features.cache import feature_cache_key

    a = tmp_path / "a" / "train.txt"
    a.parent.mkdir()
    a.write_text("EU NNP B-NP B-ORG\n")
    key = feature_cache_key({"min_count": 2}, [a], None)
    # a fresh copy elsewhere, with another modification time: the same key
    b = tmp_path / "b" / "train.txt"
    b.parent.mkdir()
    shutil.copy(a, b)
    os.utime(b, (1_000_000, 1_000_000))
    assert feature_cache_key({"min_count": 2}, [b], None) == key
    # one tag changed (same size) and the modification time put back: another key, in a
    # process that has not hashed the file yet (a process hashes a file once per size and time)
    stat = a.stat()
    a.write_text("EU NNP B-NP B-LOC\n")
    os.utime(a, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    cache_module._sha256.cache_clear()
    assert feature_cache_key({"min_count": 2}, [a], None) != key


def test_feature_cache_separates_cuts_of_the_same_files(tmp_path, synthetic):
    """A corpus cut after reading (``data.train_docs``) shares its files' key parts with the
    whole corpus; the documents it holds must still give another cache entry."""
    from structperc.features.cache import extract_features

    train, dev = synthetic
    key = {"features": {"min_count": 1}, "files": ["same", 1, "x"], "max_docs": None}

    def extract(docs):
        lf = LocalFeatures(gazetteer="none", min_count=1)
        return extract_features(lf, {"train": docs, "dev": dev}, tmp_path / "cache", key)

    _, cut, _, hit_cut = extract(train[:3])
    _, full, _, hit_full = extract(train)
    assert not hit_cut and not hit_full  # the whole corpus does not reuse the cut's matrices
    assert full["train"].num_docs == len(train) and cut["train"].num_docs == 3
    _, again, _, hit_again = extract(train)
    assert hit_again and again["train"].num_docs == len(train)


def test_feature_cache_hit_keeps_the_callers_edges_setting(tmp_path, synthetic):
    """``edges`` is not in the key (it does not change the feature ids): a hit on an entry that
    a run with edge features built must still give a run with ``features.edges=false`` node
    features only, and the other way round."""
    from structperc.features.cache import extract_features

    train, dev = synthetic
    key = {"features": {"min_count": 1}, "files": ["same", 1, "x"], "max_docs": None}
    for first, second in ((True, False), (False, True)):
        cache = tmp_path / f"cache_{first}"
        lf = LocalFeatures(gazetteer="none", min_count=1, edges=first)
        built, _, _, hit = extract_features(lf, {"train": train, "dev": dev}, cache, key)
        assert not hit and built.edges is first
        lf = LocalFeatures(gazetteer="none", min_count=1, edges=second)
        got, _, _, hit = extract_features(lf, {"train": train, "dev": dev}, cache, key)
        assert hit and got.edges is second and got.num_features == built.num_features
