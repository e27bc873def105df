"""Tag-scheme helpers: validation, IOB1 -> IOB2, IOB2 <-> IOBES, entity spans."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from structperc.data.tags import (
    TagError,
    iob1_to_iob2,
    iob2_to_iobes,
    iobes_to_iob2,
    spans,
    split_tag,
)


@pytest.mark.parametrize(
    ("tag", "expected"),
    [("O", ("O", "")), ("B-PER", ("B", "PER")), ("I-MISC", ("I", "MISC")), ("B-A-B", ("B", "A-B"))],
)
def test_split_tag(tag, expected):
    assert split_tag(tag) == expected


@pytest.mark.parametrize("tag", ["", "X", "B", "BPER", "E-PER", "S-LOC", "o", "b-PER", "O-X"])
def test_split_tag_rejects_unknown(tag):
    with pytest.raises(TagError, match="expected O, B-TYPE or I-TYPE"):
        split_tag(tag)


@pytest.mark.parametrize("tag", ["B-", "I-"])
def test_split_tag_rejects_missing_type(tag):
    with pytest.raises(TagError, match="no type"):
        split_tag(tag)


def test_tag_error_is_value_error():
    assert issubclass(TagError, ValueError)


@pytest.mark.parametrize(
    ("iob1", "iob2"),
    [
        ([], []),
        (["O"], ["O"]),
        (["I-PER"], ["B-PER"]),  # I at the start
        (["I-PER", "I-PER"], ["B-PER", "I-PER"]),
        (["O", "I-LOC", "I-LOC", "O"], ["O", "B-LOC", "I-LOC", "O"]),  # I after O
        (["I-ORG", "I-LOC"], ["B-ORG", "B-LOC"]),  # I after another type
        (["I-LOC", "B-LOC", "I-LOC"], ["B-LOC", "B-LOC", "I-LOC"]),  # B separates same type
        (["O", "B-MISC", "I-MISC"], ["O", "B-MISC", "I-MISC"]),  # B after O stays B
        (["B-PER", "B-PER"], ["B-PER", "B-PER"]),
        (["I-PER", "O", "I-PER"], ["B-PER", "O", "B-PER"]),
    ],
)
def test_iob1_to_iob2(iob1, iob2):
    assert iob1_to_iob2(iob1) == iob2


def test_iob1_to_iob2_rejects_bad_tags():
    with pytest.raises(TagError):
        iob1_to_iob2(["O", "E-PER"])


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        ([], []),
        (["O", "O"], []),
        (["B-PER", "I-PER", "O"], [(0, 2, "PER")]),
        (["B-PER", "B-PER"], [(0, 1, "PER"), (1, 2, "PER")]),
        (["B-PER", "I-LOC"], [(0, 1, "PER"), (1, 2, "LOC")]),  # I after another type: new span
        (["O", "I-LOC", "I-LOC"], [(1, 3, "LOC")]),  # I after O starts a span, like conlleval
        (["I-ORG"], [(0, 1, "ORG")]),
        (["B-ORG", "I-ORG", "I-ORG"], [(0, 3, "ORG")]),  # span runs to the end
        (["B-A", "O", "B-A", "I-A", "B-B"], [(0, 1, "A"), (2, 4, "A"), (4, 5, "B")]),
    ],
)
def test_spans(tags, expected):
    assert spans(tags) == expected


tag_lists = st.lists(st.sampled_from(["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]), max_size=12)


@given(tag_lists)
def test_conversion_keeps_spans_and_is_idempotent(tags):
    iob2 = iob1_to_iob2(tags)
    assert spans(iob2) == spans(tags)
    assert iob1_to_iob2(iob2) == iob2
    # In IOB2 every span starts with B-.
    assert all(iob2[start].startswith("B-") for start, _, _ in spans(iob2))


@pytest.mark.parametrize(
    ("iob2", "iobes"),
    [
        ([], []),
        (["B-NP"], ["S-NP"]),
        (["B-NP", "I-NP", "B-VP", "O"], ["B-NP", "E-NP", "S-VP", "O"]),
        (["B-NP", "I-NP", "I-NP", "B-NP"], ["B-NP", "I-NP", "E-NP", "S-NP"]),
        (["B-NP", "B-NP", "I-NP"], ["S-NP", "B-NP", "E-NP"]),
    ],
)
def test_iob2_to_iobes(iob2, iobes):
    assert iob2_to_iobes(iob2) == iobes
    assert iobes_to_iob2(iobes) == iob2


@given(tag_lists)
def test_iobes_round_trip_keeps_the_spans(tags):
    iob2 = iob1_to_iob2(tags)
    iobes = iob2_to_iobes(iob2)
    assert iobes_to_iob2(iobes) == iob2
    assert iobes_to_iob2(iob2) == iob2  # safe on IOB2
    assert all(t == "O" or t[:2] in ("B-", "I-", "E-", "S-") for t in iobes)
    # each span: S-X alone, or B-X ... E-X
    for start, end, kind in spans(iob2):
        want = (
            [f"S-{kind}"]
            if end - start == 1
            else [f"B-{kind}", *[f"I-{kind}"] * (end - start - 2), f"E-{kind}"]
        )
        assert iobes[start:end] == want


def test_iobes_to_iob2_leaves_other_tag_sets_alone():
    pos = ["NNP", "-LRB-", "SYM", "EX", "$"]
    assert iobes_to_iob2(pos) == pos
