"""The label-chunk DP against brute force and Figure 1; batched equals one sentence at a time."""

from __future__ import annotations

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles.label_chunk import (
    brute_force,
    enumerate_structures,
    figure1,
    part_score,
)

from structperc.data.label_chunk import LabelChunk
from structperc.decode.label_chunk import LabelChunkPotentials, decode, structure_scores


@st.composite
def potentials(draw, max_b: int = 3, max_t: int = 4):
    """Random part scores: B in [1, 3], T in [1, 4], C in [1, 2], P in [1, 3]; maybe O-O = -inf."""
    B, T = draw(st.integers(1, max_b)), draw(st.integers(1, max_t))
    C, P = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    lengths = torch.randint(1, T + 1, (B,), generator=gen)
    lengths[0] = T

    def r(*shape):
        return torch.randn(*shape, generator=gen)

    edge = r(B, T, C, C)
    if C > 1 and draw(st.booleans()):
        edge[:, :, 0, 0] = float("-inf")
    return LabelChunkPotentials(r(B, T, C, P), r(B, T, C, P, P), r(B, T, T, C), edge, lengths)


def sentence(y: LabelChunk, b: int, n: int) -> LabelChunk:
    return LabelChunk(y.pos[b, :n], y.chunk[b, :n], y.start[b, :n])


def test_enumeration_counts_every_structure():
    # compositions of n into k chunks (C(n-1, k-1)) x C^k chunk tags x P^n POS tags
    n, C, P = 4, 2, 3
    expected = sum(math.comb(n - 1, k - 1) * C**k for k in range(1, n + 1)) * P**n
    assert sum(1 for _ in enumerate_structures(n, C, P)) == expected


@settings(max_examples=50, deadline=None)
@given(potentials())
def test_dp_equals_brute_force_and_figure1(pot):
    best, scores = decode(pot)
    rescored = structure_scores(pot, best)
    for b in range(pot.lengths.shape[0]):
        n = int(pot.lengths[b])
        y = sentence(best, b, n)
        brute, argmax = brute_force(pot, b)
        fig_score, fig_y = figure1(pot, b)
        assert math.isclose(float(scores[b]), brute, rel_tol=1e-5, abs_tol=1e-5)
        assert math.isclose(fig_score, brute, rel_tol=1e-5, abs_tol=1e-5)
        assert math.isclose(part_score(pot, b, y), brute, rel_tol=1e-5, abs_tol=1e-5)
        assert math.isclose(part_score(pot, b, fig_y), brute, rel_tol=1e-5, abs_tol=1e-5)
        assert math.isclose(float(rescored[b]), brute, rel_tol=1e-5, abs_tol=1e-5)
        assert any(torch.equal(y.start, a.start) and torch.equal(y.pos, a.pos) for a in argmax)
        assert all(y.pos >= 0) and all(y.chunk >= 0) and bool(y.start[0])
        assert (best.pos[b, n:] == -1).all() and not best.start[b, n:].any()


@settings(max_examples=25, deadline=None)
@given(potentials(max_b=4, max_t=9))
def test_batched_equals_one_at_a_time(pot):
    best, scores = decode(pot)
    for b in range(pot.lengths.shape[0]):
        n = int(pot.lengths[b])
        one = LabelChunkPotentials(
            pot.pos_node[b : b + 1, :n],
            pot.pos_edge[b : b + 1, :n],
            pot.chunk_node[b : b + 1, :n, :n],
            pot.chunk_edge[b : b + 1, :n],
            pot.lengths[b : b + 1],
        )
        y1, s1 = decode(one)
        assert torch.allclose(s1[0], scores[b], atol=1e-5)
        assert sentence(y1, 0, n).equal(sentence(best, b, n))


def test_length_one_and_forbidden_outside_pairs():
    pot = LabelChunkPotentials(
        torch.tensor([[[[0.0, 1.0]], [[2.0, 0.5]]]]).view(1, 1, 2, 2),
        torch.zeros(1, 1, 2, 2, 2),
        torch.zeros(1, 1, 1, 2),
        torch.zeros(1, 1, 2, 2),
        torch.tensor([1]),
    )
    y, s = decode(pot)
    assert float(s[0]) == 2.0 and y.chunk.tolist() == [[1]] and y.pos.tolist() == [[0]]
    # O O as two O chunks is forbidden: the best must be one O chunk (or use NP)
    T = 3
    node = torch.zeros(1, T, 2, 1)
    node[..., 0, 0] = 1.0  # O tokens score 1
    span = torch.zeros(1, T, T, 2)
    span[0, torch.arange(T), torch.arange(T), 0] = 5.0  # one-token O chunks are attractive
    edge = torch.zeros(1, T, 2, 2)
    edge[:, :, 0, 0] = float("-inf")
    y, s = decode(
        LabelChunkPotentials(node, torch.zeros(1, T, 2, 1, 1), span, edge, torch.tensor([T]))
    )
    tags = y.chunk[0].tolist()
    starts = y.start[0].tolist()
    assert not any(tags[t] == 0 and tags[t - 1] == 0 and starts[t] for t in range(1, T))
