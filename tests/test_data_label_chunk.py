"""The label-chunk structure: Table 2's parts, CoNLL conversion, Table 3's POS collapse, loss."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles.label_chunk import parts

from structperc.data.document import Document
from structperc.data.label_chunk import (
    CHUNK_TAGS,
    POS_TAGS,
    LabelChunk,
    chunks,
    collapse_pos,
    from_document,
    from_tags,
    hamming,
    np_tags,
    to_tags,
)

# Shimizu & Haas (2006) Tables 1 and 4
TOKENS = "U.K. base rates are at their highest level in eight years .".split()
PENN = "JJ NN NNS VBP IN PRP$ JJS NN IN CD NNS .".split()
CHUNK = "B-NP I-NP I-NP B-VP B-PP B-NP I-NP I-NP B-PP B-NP I-NP O".split()
COLLAPSED = "JADJ NOUN NOUN VERB OTHER OTHER JADJ NOUN OTHER OTHER NOUN OTHER".split()
NP = "B I I O O B I I O B I O".split()


def _parts_table2() -> set[tuple]:
    """Table 2 of the paper, with its chunk tag I written NP and tags as ids."""
    c = {"I": CHUNK_TAGS.index("NP"), "O": CHUNK_TAGS.index("O")}
    p = {t: POS_TAGS.index(t) for t in POS_TAGS}
    rows = [
        ("pos_node", "I", "JADJ", 0),
        ("pos_edge", "I", "JADJ", "NOUN", 0, 1),
        ("pos_node", "I", "NOUN", 1),
        ("pos_edge", "I", "NOUN", "NOUN", 1, 2),
        ("pos_node", "I", "NOUN", 2),
        ("chunk_node", "I", 0, 2),
        ("chunk_edge", "I", "O", 2, 3),
        ("pos_node", "O", "VERB", 3),
        ("pos_edge", "O", "VERB", "OTHER", 3, 4),
        ("pos_node", "O", "OTHER", 4),
        ("chunk_node", "O", 3, 4),
        ("chunk_edge", "O", "I", 4, 5),
        ("pos_node", "I", "OTHER", 5),
        ("pos_edge", "I", "OTHER", "JADJ", 5, 6),
        ("pos_node", "I", "JADJ", 6),
        ("pos_edge", "I", "JADJ", "NOUN", 6, 7),
        ("pos_node", "I", "NOUN", 7),
        ("chunk_node", "I", 5, 7),
        ("chunk_edge", "I", "O", 7, 8),
        ("pos_node", "O", "OTHER", 8),
        ("chunk_node", "O", 8, 8),
        ("chunk_edge", "O", "I", 8, 9),
        ("pos_node", "I", "OTHER", 9),
        ("pos_edge", "I", "OTHER", "NOUN", 9, 10),
        ("pos_node", "I", "NOUN", 10),
        ("chunk_node", "I", 9, 10),
        ("chunk_edge", "I", "O", 10, 11),
        ("pos_node", "O", "OTHER", 11),
        ("chunk_node", "O", 11, 11),
    ]
    out = set()
    for row in rows:
        kind, *rest = row
        if kind == "pos_node":
            out.add((kind, c[rest[0]], p[rest[1]], rest[2]))
        elif kind == "pos_edge":
            out.add((kind, c[rest[0]], p[rest[1]], p[rest[2]], rest[3], rest[4]))
        elif kind == "chunk_node":
            out.add((kind, c[rest[0]], rest[1], rest[2]))
        else:
            out.add((kind, c[rest[0]], c[rest[1]], rest[2], rest[3]))
    return out


def test_collapse_follows_table_4():
    assert [collapse_pos(t) for t in PENN] == COLLAPSED
    assert [collapse_pos(t) for t in COLLAPSED] == COLLAPSED  # idempotent
    assert collapse_pos("RBR") == "RBP" and collapse_pos("VBZ") == "VERB"
    assert collapse_pos("MD") == "OTHER" and collapse_pos("NNPS") == "NOUN"


def test_np_tags_keep_only_noun_phrases():
    assert np_tags(CHUNK) == [t if t == "O" else f"{t}-NP" for t in NP]


def test_table2_parts_from_conll_columns():
    doc = Document(tokens=TOKENS, columns={"pos": PENN}, tags=CHUNK)
    y = from_document(doc)
    assert set(parts(y)) == _parts_table2()
    assert len(parts(y)) == len(_parts_table2())
    assert chunks(y) == [(0, 2, 1), (3, 4, 0), (5, 7, 1), (8, 8, 0), (9, 10, 1), (11, 11, 0)]
    pos, np = to_tags(y)
    assert pos == COLLAPSED and np == np_tags(CHUNK)


@st.composite
def tag_sequences(draw):
    n = draw(st.integers(1, 8))
    pos = draw(st.lists(st.sampled_from(POS_TAGS), min_size=n, max_size=n))
    np, prev = [], "O"
    for _ in range(n):
        choices = ["O", "B-NP"] + (["I-NP"] if prev != "O" else [])
        prev = draw(st.sampled_from(choices))
        np.append(prev)
    return pos, np


@settings(max_examples=50, deadline=None)
@given(tag_sequences())
def test_tags_round_trip(seq):
    pos, np = seq
    y = from_tags(pos, np)
    assert to_tags(y) == (pos, np)
    assert bool(y.start[0])
    # O chunks are maximal: no chunk boundary between two O tokens
    for t in range(1, len(np)):
        if np[t] == "O" and np[t - 1] == "O":
            assert not bool(y.start[t])
    assert hamming(y, y) == (0, 0)


def test_i_after_o_starts_a_chunk():
    y = from_tags(["NOUN", "NOUN"], ["O", "I-NP"])
    assert to_tags(y)[1] == ["O", "B-NP"]


def test_hamming_counts_pos_and_np_tags():
    gold = from_tags(["NOUN", "NOUN", "VERB"], ["B-NP", "I-NP", "O"])
    pred = from_tags(["NOUN", "VERB", "VERB"], ["B-NP", "B-NP", "O"])
    assert hamming(gold, pred) == (1, 1)
    assert not gold.equal(pred)
    same_o = LabelChunk(gold.pos, gold.chunk, torch.tensor([True, False, True]))
    assert gold.equal(same_o)
