"""The face's reading of items into compact buffers (``sklearn/occurrences.py``) against the
matrix written out in full: every occurrence read first into Python lists, the dictionary in
order of first appearance, the rare names and the zero values left out.  Blocks of a few
occurrences (many flushes, values first met after some), several processes, a warm start's
grown dictionary and a hashed table all give that matrix."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("sklearn")

from structperc.sklearn import occurrences  # noqa: E402
from structperc.sklearn.attributes import AttributeDictionary  # noqa: E402
from structperc.sklearn.hashing import HashedAttributes, row_of  # noqa: E402
from structperc.sklearn.items import FeatureFormatError, item_attributes  # noqa: E402


def random_items(n: int, seed: int, numbers_from: int | None = None) -> list:
    """n sequences of 1-5 items: strings, bools, numbers (some 0, some not 1 only after
    ``numbers_from`` sequences), nested dicts and lists."""
    rng = np.random.default_rng(seed)
    X = []
    for s in range(n):
        seq = []
        for _ in range(int(rng.integers(1, 6))):
            item = {"w": f"w{rng.integers(40)}", "up": bool(rng.random() < 0.4)}
            if numbers_from is not None and s >= numbers_from and rng.random() < 0.3:
                item["x"] = float(rng.integers(0, 3)) / 2  # 0, 0.5 or 1
            if rng.random() < 0.3:
                item["ctx"] = {"p": f"p{rng.integers(5)}", "tags": [f"t{rng.integers(3)}"]}
            seq.append(item)
        X.append(seq)
    return X


def reference(X: list, min_freq: float = 0.0, names=None, rows=None, grow: bool = True):
    """(names, ids [M], offsets [N + 1], doc_offsets [D + 1], values [M] or None) of ``X``
    read whole: the dictionary ``names`` grown (``grow``) in order of first appearance (or
    ``rows``: a name's row), names new to it kept when seen more than ``min_freq`` times."""
    occurrences_ = [[item_attributes(item) for item in xseq] for xseq in X]
    old = list(names or [])
    order, count = list(old), {}
    for seq in occurrences_:
        for item_names, _ in seq:
            for name in item_names:
                if name not in count and name not in old:
                    order.append(name)
                count[name] = count.get(name, 0) + 1
    if rows is None:
        kept = [n for n in order if n in old or (grow and count.get(n, 0) > min_freq)]
        index = {n: i for i, n in enumerate(kept)}
    else:
        row_count = {}
        for name, c in count.items():
            row_count[rows(name)] = row_count.get(rows(name), 0) + c
        kept = None
        index = {n: rows(n) for n in order if row_count[rows(n)] > min_freq}
    ids, values, offsets, doc_offsets = [], [], [0], [0]
    for seq in occurrences_:
        for item_names, item_values in seq:
            for name, value in zip(item_names, item_values, strict=True):
                if name in index and value != 0:
                    ids.append(index[name])
                    values.append(value)
            offsets.append(len(ids))
        doc_offsets.append(len(offsets) - 1)
    values = None if all(v == 1 for v in values) else np.asarray(values, np.float32)
    return kept, ids, offsets, doc_offsets, values


def assert_matrix(found, expected) -> None:
    features, values = found
    _, ids, offsets, doc_offsets, expected_values = expected
    assert features.ids.dtype == torch.int32 and features.ids.tolist() == ids
    assert features.offsets.tolist() == offsets
    assert features.doc_offsets.tolist() == doc_offsets
    if expected_values is None:
        assert values is None
    else:
        assert np.array_equal(values.numpy(), expected_values)


@pytest.mark.parametrize("block", [3, 50, occurrences.BLOCK])
@pytest.mark.parametrize("min_freq", [0, 2])
def test_the_buffers_hold_the_whole_reading(monkeypatch, block, min_freq):
    monkeypatch.setattr(occurrences, "BLOCK", block)
    monkeypatch.setattr(occurrences, "RENUMBER_CHUNK", 7)  # renumbered in many pieces
    X = random_items(60, block + min_freq, numbers_from=40)  # values only in late blocks
    dictionary, *found = AttributeDictionary().grown(iter(X), min_freq=min_freq)
    expected = reference(X, min_freq)
    assert dictionary.names == expected[0]
    assert_matrix(found, expected)
    assert_matrix(dictionary.transform(X), reference(X, names=dictionary.names, grow=False))


@pytest.mark.parametrize("min_freq", [0, 1])
def test_a_grown_dictionary_keeps_its_ids_and_appends_the_new_names(min_freq):
    XA, XB = random_items(30, 1), random_items(30, 2, numbers_from=0)
    first = AttributeDictionary.fit(XA)
    grown, *found = first.grown(XB, min_freq=min_freq)
    expected = reference(XB, min_freq, names=first.names)
    assert grown.names[: len(first)] == first.names and grown.names == expected[0]
    assert_matrix(found, expected)


@pytest.mark.parametrize("min_freq", [0, 1])
def test_several_processes_read_what_one_reads(min_freq):
    X = random_items(1600, 3, numbers_from=800)
    start = AttributeDictionary(["w:w0", "unseen"])
    one = start.grown(X, min_freq=min_freq)
    three = start.grown(X, min_freq=min_freq, jobs=3)
    assert one[0].names == three[0].names
    assert_matrix(three[1:], reference(X, min_freq, names=start.names))
    hashed = HashedAttributes(12)
    expected = reference(X, min_freq, rows=lambda n: row_of(n, 12))
    for jobs in (1, 3):
        assert_matrix(hashed.grown(X, min_freq=min_freq, jobs=jobs)[1:], expected)


def test_a_bad_value_in_a_late_block_is_named(monkeypatch):
    monkeypatch.setattr(occurrences, "BLOCK", 4)
    X = random_items(20, 4)
    X[13][-1] = {**X[13][-1], "ctx": {"q": float("nan")}}
    t = len(X[13]) - 1
    with pytest.raises(
        FeatureFormatError, match=rf"^X\[13\]\[{t}\]: feature 'ctx:q' has the value nan"
    ):
        AttributeDictionary().grown(X)
