"""Gazetteers from the user's files: both formats, case-folding per list, the leak jackknife,
each list its own attribute family, kept in the model."""

from __future__ import annotations

import pytest
import torch

from structperc.data.document import Document
from structperc.features.gazetteer_files import GazetteerFile, read_entries, read_families
from structperc.features.pipeline import LocalFeatures


def doc(words: str, tags: str | None = None) -> Document:
    tokens = words.split()
    return Document(tokens, {}, tags.split() if tags else ["O"] * len(tokens))


@pytest.fixture
def lists(tmp_path):
    typed = tmp_path / "places.list"
    typed.write_text("\ufeffLOC New York\nLOC Paris\nORG Acme Corp\n", encoding="utf-8")
    per_type = tmp_path / "people.txt"
    per_type.write_text("Ada Lovelace\n\nalan turing\n", encoding="latin-1")
    return typed, per_type


def test_both_formats_read_into_types_and_name_their_attributes(lists):
    typed, per_type = lists
    assert read_entries(GazetteerFile(str(typed))) == {
        "LOC": {("New", "York"), ("Paris",)},
        "ORG": {("Acme", "Corp")},
    }
    spec = GazetteerFile(str(per_type), format="per_type", type="PER", encoding="latin-1")
    assert read_entries(spec) == {"PER": {("Ada", "Lovelace"), ("alan", "turing")}}
    families = read_families(
        [str(typed), {"path": str(per_type), "format": "per_type", "name": "who", "type": "PER"}]
    )
    assert [list(f.attributes) for f in families] == [["places.LOC", "places.ORG"], ["who.PER"]]


def test_bad_lists_and_settings_are_one_line_errors(tmp_path, lists):
    bad = tmp_path / "bad.list"
    bad.write_text("LOC Paris\nRome\n")
    with pytest.raises(ValueError, match=rf"^{bad}:2: expected 'TYPE word \[word ...\]'"):
        read_entries(GazetteerFile(str(bad)))
    with pytest.raises(ValueError, match=r"gazetteer_files\[0\]: format 'csv', expected one of"):
        read_families([{"path": str(lists[0]), "format": "csv"}])
    with pytest.raises(ValueError, match=r"gazetteer_files\[0\]: unknown keys \['lower'\]"):
        read_families([{"path": str(lists[0]), "lower": True}])
    with pytest.raises(FileNotFoundError, match=r"gazetteer_files\[0\]: no such file"):
        read_families([str(tmp_path / "absent.list")])
    with pytest.raises(ValueError, match="two lists named"):
        read_families([str(lists[0]), str(lists[0])])


def test_casefold_per_list_and_matches_as_b_i(lists):
    typed, per_type = lists
    text = [doc("ALAN TURING went to new york and Paris")]
    exact, folded = read_families(
        [
            str(typed),
            {"path": str(per_type), "format": "per_type", "type": "PER", "casefold": True},
        ]
    )
    (cols,) = exact.columns(text, training=False, folds=2)
    assert cols["places.LOC"] == [None] * 7 + ["B"]  # "new york": no match without casefold
    (cols,) = folded.columns(text, training=False, folds=2)
    assert cols["people.PER"] == ["B", "I"] + [None] * 6


def test_the_jackknife_matches_a_training_document_only_with_other_folds_entities(tmp_path):
    path = tmp_path / "train_names.list"
    path.write_text("PER John Smith\nPER Mary\n")
    train = [
        doc("John Smith spoke", "B-PER I-PER O"),  # fold 0
        doc("Mary and John Smith", "B-PER O B-PER I-PER"),  # fold 1
    ]
    (family,) = read_families([{"path": str(path), "jackknife": True}])
    cols = family.columns(train, training=True, folds=2)
    # doc 0 sees only entries seen as PER in fold 1 (both); doc 1 only those of fold 0 (John Smith)
    assert cols[0]["train_names.PER"] == ["B", "I", None]
    assert cols[1]["train_names.PER"] == [None, None, "B", "I"]
    (cols,) = family.columns(train[1:], training=False, folds=2)  # dev/test: the whole list
    assert cols["train_names.PER"] == ["B", None, "B", "I"]


def test_families_feed_templates_and_named_attributes_and_travel_with_the_model(lists):
    typed, _ = lists
    train = [doc("I saw Paris and New York"), doc("Paris is big")]
    features = LocalFeatures(
        gazetteer="none",
        min_count=1,
        templates=["places.*[0]", "places.LOC[-1]/w[0]"],
        gazetteer_files=[str(typed)],
    ).fit(train)
    names = {features.vocab.feature_string(f) for f in range(features.num_features)}
    after_b = {f"places.LOC[-1]|w[0]=B|{w}" for w in ("and", "York", "is")}
    assert names == {"places.LOC[0]=B", "places.LOC[0]=I", *after_b}  # no ORG match: no feature
    meta, tensors = features.state()
    assert meta["gazetteer_files"][0]["entries"]["LOC"] == ["New York", "Paris"]
    assert len(meta["gazetteer_files"][0]["sha256"]) == 64
    typed.unlink()  # a saved model needs no list
    loaded = LocalFeatures.from_state(meta, tensors)
    assert torch.equal(loaded.transform(train).ids, features.transform(train).ids)
    assert loaded.input_columns() == set()
    named = LocalFeatures(
        attributes=["w"],
        bigram_attributes=[],
        gazetteer="none",
        window=1,
        min_count=1,
        gazetteer_files=[{"path": str(lists[1]), "format": "per_type", "type": "PER"}],
    )
    assert [t for t in named.templates if any(a.startswith("people") for a, _ in t)] == [
        (("people.PER", -1),),
        (("people.PER", 0),),
        (("people.PER", 1),),
        (("people.PER", -2), ("people.PER", -1)),
        (("people.PER", -1), ("people.PER", 0)),
        (("people.PER", 0), ("people.PER", 1)),
    ]
