"""Exact n-best decoding against brute-force enumeration, with and without IOB2 constraints."""

from __future__ import annotations

import itertools

import hypothesis.strategies as st
import pytest
import torch
from hypothesis import given, settings
from oracles.chain import enumerate_paths, path_score

from structperc.decode.constraints import allowed_transitions, constrain
from structperc.decode.nbest import (
    BEAM_FROM_N,
    algorithm,
    kbest_beam,
    kbest_dp,
    nbest,
    nbest_batched,
    two_best,
)
from structperc.decode.sidetracks import kbest_sidetracks
from structperc.decode.viterbi import viterbi

NEG = float("-inf")


@st.composite
def chains(draw, max_b=3, max_t=5, max_l=3, integer=False):
    B = draw(st.integers(1, max_b))
    T = draw(st.integers(1, max_t))
    L = draw(st.integers(1, max_l))
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    if integer:
        pot = torch.randint(-2, 3, (B, T, L, L), generator=gen).double()
    else:
        pot = torch.randn(B, T, L, L, generator=gen, dtype=torch.float64)
    lengths = torch.randint(1, T + 1, (B,), generator=gen)
    lengths[0] = T
    return pot, lengths


def _check_against_brute_force(pot, lengths, paths, scores, n, exact_paths):
    B = pot.shape[0]
    for b in range(B):
        length = int(lengths[b])
        truth = [sp for sp in enumerate_paths(pot[b], length) if sp[0] > NEG]
        got = []
        for k in range(n):
            if k < len(truth):
                assert scores[b, k].item() == pytest.approx(truth[k][0], abs=1e-9)
                path = paths[b, k, :length].tolist()
                assert path_score(pot[b], path) == pytest.approx(truth[k][0], abs=1e-9)
                assert (paths[b, k, length:] == -1).all()
                if exact_paths:
                    assert tuple(path) == truth[k][1]
                got.append(tuple(path))
            else:  # padding that no caller can mistake for a path
                assert scores[b, k].item() == NEG
                assert (paths[b, k] == -1).all()
        assert len(set(got)) == len(got), "n-best paths must be distinct"


KBEST = pytest.mark.parametrize(
    "kbest", [kbest_dp, kbest_beam, kbest_sidetracks], ids=["dp", "beam", "sidetracks"]
)


@KBEST
@settings(max_examples=50, deadline=None)
@given(chain=chains(), n=st.integers(1, 12))
def test_kbest_equals_enumeration(kbest, chain, n):
    pot, lengths = chain
    pot = pot + 1e-6 * torch.rand_like(pot)  # jitter: no ties, so paths are unique
    paths, scores = kbest(pot, lengths, n)
    _check_against_brute_force(pot, lengths, paths, scores, n, exact_paths=True)


@KBEST
@settings(max_examples=50, deadline=None)
@given(chain=chains(integer=True), n=st.integers(1, 12))
def test_kbest_scores_exact_with_ties(kbest, chain, n):
    pot, lengths = chain
    paths, scores = kbest(pot, lengths, n)
    _check_against_brute_force(pot, lengths, paths, scores, n, exact_paths=False)
    again = kbest(pot, lengths, n)
    assert torch.equal(again[0], paths) and torch.equal(again[1], scores)  # deterministic


@pytest.mark.parametrize("other", [kbest_beam, kbest_sidetracks], ids=["beam", "sidetracks"])
@settings(max_examples=30, deadline=None)
@given(chain=chains(max_b=4, max_t=6, max_l=4), n=st.integers(1, 40))
def test_other_algorithms_equal_the_recursion(other, chain, n):
    pot, lengths = chain
    pot = pot + 1e-6 * torch.rand_like(pot)
    a, b = other(pot, lengths, n), kbest_dp(pot, lengths, n)
    assert torch.equal(a[0], b[0])
    assert torch.equal(torch.isneginf(a[1]), torch.isneginf(b[1]))
    assert torch.allclose(a[1].nan_to_num(neginf=0), b[1].nan_to_num(neginf=0), atol=1e-12)


@pytest.mark.parametrize("n", [3, 20, 100])
def test_sidetracks_on_long_documents_agree_with_the_beam(n):
    """Long sequences: deviations far from the end, prefixes that walk back a long way."""
    gen = torch.Generator().manual_seed(n)
    pot = torch.randn(3, 300, 9, 9, generator=gen, dtype=torch.float64)
    lengths = torch.tensor([300, 123, 1])
    a, b = kbest_sidetracks(pot, lengths, n), kbest_beam(pot, lengths, n)
    assert torch.equal(a[0], b[0]) and torch.allclose(a[1], b[1])


def test_beam_on_long_documents_agrees_with_the_recursion():
    gen = torch.Generator().manual_seed(3)
    pot = torch.randn(3, 300, 9, 9, generator=gen, dtype=torch.float64)
    lengths = torch.tensor([300, 123, 1])
    n = BEAM_FROM_N * 2
    a, b = kbest_beam(pot, lengths, n), kbest_dp(pot, lengths, n)
    assert torch.equal(a[0], b[0]) and torch.allclose(a[1], b[1])


@settings(max_examples=50, deadline=None)
@given(chains())
def test_two_best_equals_enumeration(chain):
    pot, lengths = chain
    pot = pot + 1e-6 * torch.rand_like(pot)
    paths, scores = two_best(pot, lengths)
    _check_against_brute_force(pot, lengths, paths, scores, 2, exact_paths=True)


@settings(max_examples=50, deadline=None)
@given(chains(integer=True))
def test_two_best_scores_exact_with_ties(chain):
    pot, lengths = chain
    paths, scores = two_best(pot, lengths)
    _check_against_brute_force(pot, lengths, paths, scores, 2, exact_paths=False)


@settings(max_examples=30, deadline=None)
@given(chains(max_l=4), st.integers(1, 8))
def test_constrained_nbest_equals_enumeration(chain, n):
    pot, lengths = chain
    L = pot.shape[-1]
    labels = ["O", "B-X", "I-X", "I-Y"][:L]
    start, trans = allowed_transitions(labels, "iob2")
    pot = constrain(pot + 1e-6 * torch.rand_like(pot), start, trans)
    for fn in (
        lambda p, l: kbest_dp(p, l, n),
        lambda p, l: kbest_beam(p, l, n),
        lambda p, l: kbest_sidetracks(p, l, n),
        lambda p, l: nbest(p, l, n),
    ):
        paths, scores = fn(pot, lengths)
        _check_against_brute_force(pot, lengths, paths, scores, n, exact_paths=True)
        for b in range(pot.shape[0]):
            for k in range(n):
                path = [labels[i] for i in paths[b, k].tolist() if i >= 0]
                for prev, cur in zip(["O", *path], path, strict=False):
                    if cur.startswith("I-"):
                        assert prev[2:] == cur[2:] and prev != "O"


@settings(max_examples=30, deadline=None)
@given(chains(max_b=4, max_t=6), st.integers(1, 6))
def test_batched_equals_one_at_a_time(chain, n):
    pot, lengths = chain
    pot = pot + 1e-6 * torch.rand_like(pot)
    paths, scores = nbest(pot, lengths, n)
    for b in range(pot.shape[0]):
        length = int(lengths[b])
        p1, s1 = nbest(pot[b : b + 1, :length], lengths[b : b + 1], n)
        assert torch.allclose(s1[0], scores[b], atol=1e-9, equal_nan=False) or torch.equal(
            torch.isneginf(s1[0]), torch.isneginf(scores[b])
        )
        assert torch.equal(p1[0], paths[b, :, :length])


@pytest.mark.parametrize("n", [1, 2, 3, 20, BEAM_FROM_N])
def test_first_path_is_viterbi_on_long_sequences(n):
    gen = torch.Generator().manual_seed(n)
    pot = torch.randn(3, 400, 9, 9, generator=gen)
    lengths = torch.tensor([400, 250, 1])
    vpaths, vscores = viterbi(pot, lengths)
    paths, scores = nbest(pot, lengths, n)
    assert torch.equal(paths[:, 0], vpaths)
    assert torch.allclose(scores[:, 0], vscores, rtol=1e-5)
    if n > 1:
        assert (scores[:, 1:] <= scores[:, :-1]).all()


def test_n_larger_than_the_number_of_paths():
    pot = torch.randn(1, 2, 2, 2)
    paths, scores = nbest(pot, torch.tensor([2]), 7)
    assert torch.isfinite(scores[0, :4]).all() and torch.isneginf(scores[0, 4:]).all()
    assert (paths[0, 4:] == -1).all()
    assert len({tuple(p) for p in paths[0, :4].tolist()}) == 4


def test_batched_memory_budget_splits_but_agrees():
    gen = torch.Generator().manual_seed(0)
    pot = torch.randn(5, 30, 4, 4, generator=gen)
    lengths = torch.tensor([30, 12, 1, 29, 7])
    whole = nbest(pot, lengths, 16)
    split = nbest_batched(pot, lengths, 16, memory_budget=30 * 4 * 16 * 4 * 2)
    assert torch.equal(whole[0], split[0]) and torch.equal(whole[1], split[1])


def test_bad_n():
    with pytest.raises(ValueError, match="n must be"):
        nbest(torch.zeros(1, 2, 2, 2), torch.tensor([2]), 0)


def test_enumeration_helper_sorted():
    pot = torch.randn(3, 2, 2, dtype=torch.float64)
    scored = enumerate_paths(pot, 3)
    assert len(scored) == 8
    assert all(a[0] >= b[0] for a, b in itertools.pairwise(scored))


def test_the_algorithm_nbest_picks():
    one, many = torch.zeros(1, 5, 3, 3), torch.zeros(16, 5, 3, 3)
    assert algorithm(one, 2) == algorithm(many, 2) == "two_best"
    assert algorithm(one, 20) == algorithm(many, 20) == "kbest_sidetracks"
    assert algorithm(one, BEAM_FROM_N) == "kbest_sidetracks"  # one sequence: up to 256
    assert algorithm(many, BEAM_FROM_N) == "kbest_beam"  # batches: the beam from BEAM_FROM_N
    assert algorithm(one, 6400) == "kbest_beam"
