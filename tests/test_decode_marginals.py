"""structperc.decode.marginals / scaled_scan: torch-struct log Z, marginals and path
log-probabilities by every scan against brute-force enumeration and the textbook forward
algorithm, batching, length-1 sequences and long documents."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles.chain import forward_loop
from torch_struct import LinearChain, LogSemiring

from structperc.decode.marginals import (
    SCANS,
    check_scan,
    from_log_potentials,
    labels_to_parts,
    log_partition,
    marginals,
    nll,
    node_marginals,
    path_log_probs,
    to_log_potentials,
)
from structperc.decode.scaled_scan import NEG, ScaledLinearChain, ScaledLogSemiring, pair_product
from structperc.decode.scores import path_scores

SETTINGS = settings(max_examples=50, deadline=None)


def score(pot: torch.Tensor, path: tuple[int, ...]) -> float:
    """s(y) of one sequence's potentials [T, L, L] (from, to): start row 0, then transitions."""
    s = float(pot[0, 0, path[0]])
    for t in range(1, len(path)):
        s += float(pot[t, path[t - 1], path[t]])
    return s


def all_paths(L: int, n: int) -> list[tuple[int, ...]]:
    return list(itertools.product(range(L), repeat=n))


def brute(pot: torch.Tensor, n: int) -> tuple[float, torch.Tensor, torch.Tensor]:
    """log Z, node marginals [n, L] and edge marginals [n, L, L] (row 0 of t = 0) by enumeration."""
    L = pot.shape[-1]
    paths = torch.tensor(all_paths(L, n))  # [P, n]
    scores = pot[0, 0, paths[:, 0]].double()  # [P]
    for t in range(1, n):
        scores = scores + pot[t, paths[:, t - 1], paths[:, t]]
    logz = float(torch.logsumexp(scores, 0))
    probs = (scores - logz).exp()  # [P]
    node = torch.zeros(n, L, dtype=torch.float64)
    edge = torch.zeros(n, L * L, dtype=torch.float64)
    edge[0].index_add_(0, paths[:, 0], probs)  # row 0: the start
    for t in range(n):
        node[t].index_add_(0, paths[:, t], probs)
        if t:
            edge[t].index_add_(0, paths[:, t - 1] * L + paths[:, t], probs)
    return logz, node, edge.view(n, L, L)


@st.composite
def problems(draw, max_T: int = 4):
    """Potentials [B, T, L, L] float64 (a standard normal draw) and lengths [B] with max T."""
    B = draw(st.integers(1, 3))
    T = draw(st.integers(1, max_T))
    L = draw(st.integers(2, 4))
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    pot = 2 * torch.randn(B, T, L, L, generator=gen, dtype=torch.float64)
    lengths = torch.randint(1, T + 1, (B,), generator=gen)
    lengths[draw(st.integers(0, B - 1))] = T
    return pot, lengths


# ---------------------------------------------------------------------------------------------
# against brute force
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scan", SCANS)
@SETTINGS
@given(problems())
def test_log_partition_and_marginals_match_enumeration(scan, problem):
    pot, lengths = problem
    logz = log_partition(pot, lengths, scan)
    edge = marginals(pot, lengths, scan)
    node = node_marginals(pot, lengths, scan)
    for b, n in enumerate(lengths.tolist()):
        want_z, want_node, want_edge = brute(pot[b], n)
        assert float(logz[b]) == pytest.approx(want_z, abs=1e-9)
        torch.testing.assert_close(node[b, :n], want_node, atol=1e-9, rtol=0)
        torch.testing.assert_close(edge[b, :n], want_edge, atol=1e-9, rtol=0)
        assert bool((node[b, n:] == 0).all()) and bool((edge[b, n:] == 0).all())


@SETTINGS
@given(problems())
def test_path_log_probs_are_a_distribution(problem):
    pot, lengths = problem
    B, T, L, _ = pot.shape
    for b, n in enumerate(lengths.tolist()):
        paths = torch.tensor(all_paths(L, n)).view(1, -1, n)
        paths = torch.cat([paths, paths.new_full((1, paths.shape[1], T - n), -1)], dim=2)
        lp = path_log_probs(pot[b : b + 1], lengths[b : b + 1], paths)[0]  # [L^n]
        want = torch.tensor([score(pot[b], p) for p in all_paths(L, n)], dtype=torch.float64)
        torch.testing.assert_close(lp, want - torch.logsumexp(want, 0), atol=1e-9, rtol=0)
        assert float(torch.logsumexp(lp, 0)) == pytest.approx(0.0, abs=1e-9)


@SETTINGS
@given(problems())
def test_padded_batch_equals_one_at_a_time(problem):
    pot, lengths = problem
    logz = log_partition(pot, lengths, "scaled")
    m = marginals(pot, lengths, "scaled")
    for b, n in enumerate(lengths.tolist()):
        one = pot[b : b + 1, :n]
        assert float(log_partition(one, lengths[b : b + 1])) == pytest.approx(float(logz[b]))
        torch.testing.assert_close(marginals(one, lengths[b : b + 1])[0], m[b, :n])


@SETTINGS
@given(problems())
def test_parts_score_paths_like_path_scores(problem):
    pot, lengths = problem
    B, T, L, _ = pot.shape
    gen = torch.Generator().manual_seed(0)
    labels = torch.randint(0, L, (B, T), generator=gen)
    labels[torch.arange(T) >= lengths[:, None]] = -1
    edges, _ = to_log_potentials(pot, lengths)
    parts = labels_to_parts(labels, lengths, L)
    via_parts = (parts * edges).sum((1, 2, 3))
    torch.testing.assert_close(via_parts, path_scores(pot, lengths, labels.unsqueeze(1))[:, 0])
    long = lengths >= 2
    if bool(long.any()) and T >= 2:
        ts = LinearChain.to_parts(labels[long].clamp(min=0), L, lengths=lengths[long])
        assert torch.equal(parts[long][:, : ts.shape[1]], ts)


# ---------------------------------------------------------------------------------------------
# orientation, folding, torch-struct 0.5 edge cases
# ---------------------------------------------------------------------------------------------
def test_orientation_is_to_from_and_start_is_folded_into_the_first_edge():
    L = 3
    pot = torch.zeros(1, 3, L, L, dtype=torch.float64)
    pot[0, 0, :, 2] = 5.0  # start in label 2
    pot[0, 1, 2, 0] = 7.0  # 2 -> 0 at t = 1
    pot[0, 2, 0, 1] = 11.0  # 0 -> 1 at t = 2
    edges, lengths = to_log_potentials(pot, torch.tensor([3]))
    assert edges.shape == (1, 2, L, L) and lengths.tolist() == [3]
    assert float(edges[0, 0, 0, 2]) == 12.0  # [to=0, from=2]: start 5 + transition 7
    assert float(edges[0, 1, 1, 0]) == 11.0  # [to=1, from=0]
    assert float(edges[0, 0, 1, 2]) == 5.0  # start only
    parts = labels_to_parts(torch.tensor([[2, 0, 1]]), lengths, L)
    assert torch.equal(LinearChain.from_parts(parts)[0], torch.tensor([[2, 0, 1]]))


def test_torch_struct_05_length_one_caveats_and_the_workaround():
    L = 3
    pot = torch.randn(2, 1, L, L, dtype=torch.float64)
    # torch-struct alone: a batch of length-1 sequences has no edges and fails ...
    with pytest.raises(ValueError):
        LinearChain().sum(torch.zeros(2, 0, L, L))
    # ... and a length-1 sequence in a longer batch loses its scores (log Z = log L)
    e = torch.randn(2, 2, L, L, dtype=torch.float64)
    masked = LinearChain().sum(e, lengths=torch.tensor([3, 1]))
    assert float(masked[1].detach()) == pytest.approx(math.log(L))
    # the adapter: exact for a batch of length-1 sequences and for one in a longer batch
    want = torch.logsumexp(pot[:, 0, 0], -1)
    torch.testing.assert_close(log_partition(pot, torch.tensor([1, 1])), want)
    mixed = torch.randn(2, 4, L, L, dtype=torch.float64)
    z = log_partition(mixed, torch.tensor([4, 1]))
    assert float(z[1]) == pytest.approx(float(torch.logsumexp(mixed[1, 0, 0], 0)))
    node = node_marginals(pot, torch.tensor([1, 1]))
    torch.testing.assert_close(node[:, 0], pot[:, 0, 0].softmax(-1))


def test_dummy_edge_of_a_length_one_sequence():
    L = 3
    pot = torch.randn(1, 1, L, L, dtype=torch.float64)
    edges, lengths = to_log_potentials(pot, torch.tensor([1]))
    assert edges.shape == (1, 1, L, L) and lengths.tolist() == [2]
    torch.testing.assert_close(edges[0, 0, 0], pot[0, 0, 0])
    assert bool((edges[0, 0, 1:] == NEG).all())


def test_from_log_potentials_round_trip():
    gen = torch.Generator().manual_seed(3)
    edges = torch.randn(2, 4, 3, 3, generator=gen, dtype=torch.float64)
    lengths = torch.tensor([5, 5])
    back, _ = to_log_potentials(from_log_potentials(edges), lengths)
    torch.testing.assert_close(back, edges)
    torch.testing.assert_close(
        log_partition(from_log_potentials(edges), lengths), LinearChain().sum(edges, lengths)
    )


def test_padding_garbage_is_ignored():
    gen = torch.Generator().manual_seed(4)
    pot = torch.randn(2, 5, 3, 3, generator=gen, dtype=torch.float64)
    lengths = torch.tensor([5, 2])
    dirty = pot.clone()
    dirty[1, 2:] = 1e30
    torch.testing.assert_close(log_partition(dirty, lengths), log_partition(pot, lengths))
    m = marginals(dirty, lengths)
    assert bool(torch.isfinite(m).all()) and bool((m[1, 2:] == 0).all())


# ---------------------------------------------------------------------------------------------
# long documents, large scores
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [1.0, 30.0, 100.0])
@pytest.mark.parametrize("scan", SCANS)
def test_long_documents_are_stable(scan, scale):
    gen = torch.Generator().manual_seed(5)
    T, L = 1500, 9
    pot = scale * torch.randn(2, T, L, L, generator=gen, dtype=torch.float64)
    lengths = torch.tensor([T, 1100])
    logz = log_partition(pot, lengths, scan)
    for b, n in enumerate(lengths.tolist()):
        want = forward_loop(pot[b], n)
        assert float(logz[b]) == pytest.approx(want, rel=1e-12, abs=1e-8)
    node = node_marginals(pot, lengths, scan)
    assert bool(torch.isfinite(node).all())
    torch.testing.assert_close(node[0].sum(-1), torch.ones(T, dtype=torch.float64))
    torch.testing.assert_close(node[1, :1100].sum(-1), torch.ones(1100, dtype=torch.float64))


def test_float32_long_document_is_close():
    gen = torch.Generator().manual_seed(6)
    T, L = 1200, 9
    pot = 5 * torch.randn(1, T, L, L, generator=gen, dtype=torch.float64)
    want = forward_loop(pot[0], T)
    got = float(log_partition(pot.float(), torch.tensor([T]), "scaled"))
    assert got == pytest.approx(want, rel=1e-5)


# ---------------------------------------------------------------------------------------------
# path scores: n-best lists, the gold loss, errors
# ---------------------------------------------------------------------------------------------
def test_missing_paths_score_minus_inf_and_nll_is_minus_gold_log_prob():
    gen = torch.Generator().manual_seed(7)
    pot = torch.randn(2, 3, 3, 3, generator=gen, dtype=torch.float64)
    lengths = torch.tensor([3, 2])
    paths = torch.tensor(
        [[[0, 1, 2], [2, 2, 2], [-1, -1, -1]], [[1, 0, -1], [-1, -1, -1], [2, 2, -1]]]
    )
    lp = path_log_probs(pot, lengths, paths)
    assert lp.shape == (2, 3)
    assert bool(torch.isneginf(lp[0, 2])) and bool(torch.isneginf(lp[1, 1]))
    assert bool(torch.isfinite(lp[0, :2]).all())
    gold = paths[:, 0]
    torch.testing.assert_close(nll(pot, lengths, gold), -lp[:, 0])


def test_path_log_probs_are_differentiable_and_detached_without_grad():
    pot = torch.randn(1, 4, 3, 3, dtype=torch.float64)
    paths = torch.tensor([[[0, 1, 2, 1]]])
    assert not path_log_probs(pot, torch.tensor([4]), paths).requires_grad
    p = pot.clone().requires_grad_(True)
    lp = path_log_probs(p, torch.tensor([4]), paths)
    (g,) = torch.autograd.grad(lp.sum(), p)
    # d log p(y) / d pot = indicator(y) - marginals
    ind = torch.zeros_like(pot)
    ind[0, 0, 0, 0] = ind[0, 1, 0, 1] = ind[0, 2, 1, 2] = ind[0, 3, 2, 1] = 1
    torch.testing.assert_close(g, ind - marginals(pot, torch.tensor([4])))


def test_errors_name_the_offending_value():
    pot = torch.zeros(1, 3, 2, 2)
    with pytest.raises(ValueError, match="not a label in 0..1"):
        path_scores(pot, torch.tensor([3]), torch.tensor([[[0, 5, 1]]]))
    with pytest.raises(ValueError, match=r"lengths must lie in 1..T = 1..3, got \[4\]"):
        log_partition(pot, torch.tensor([4]))
    with pytest.raises(ValueError, match="potentials must be"):
        log_partition(torch.zeros(3, 2, 2), torch.tensor([3]))
    with pytest.raises(ValueError, match="unknown scan 'max'"):
        check_scan("max")
    with pytest.raises(ValueError, match="unknown scan 'auto'"):
        log_partition(torch.zeros(1, 3, 2, 2), torch.tensor([3]), "auto")


def test_scaled_product_and_its_backward_equal_torch_structs_log_matmul():
    """ScaledLogSemiring.matmul (the written-out backward) = LogSemiring.matmul and autograd."""
    torch.manual_seed(0)
    a = (torch.randn(3, 5, 4, 6, dtype=torch.float64) * 4).requires_grad_(True)
    b = (torch.randn(3, 5, 6, 2, dtype=torch.float64) * 4).requires_grad_(True)
    want = LogSemiring.matmul(a, b)
    got = ScaledLogSemiring.matmul(a, b)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    g = torch.randn_like(want)
    torch.testing.assert_close(
        torch.autograd.grad(got, (a, b), g), torch.autograd.grad(want, (a, b), g)
    )
    assert torch.autograd.gradcheck(ScaledLogSemiring.matmul, (a[:1, :2], b[:1, :2]))
    chart = (torch.randn(1, 2, 8, 3, 3, dtype=torch.float64) * 4).requires_grad_(True)
    assert torch.autograd.gradcheck(pair_product, (chart,))
    # a product that underflows entirely is clamped to log(tiny) with gradient 0, not NaN
    big = torch.tensor([[[0.0, -1e5], [-1e5, -1e5]]], dtype=torch.float64)
    x = torch.stack([big, big.transpose(-1, -2)], dim=1).view(1, 1, 2, 2, 2)
    x = x.clone().requires_grad_(True)
    out = pair_product(x)
    (grad,) = torch.autograd.grad(out.sum(), x)
    assert bool(torch.isfinite(out).all()) and bool(torch.isfinite(grad).all())


def random_chains(full: bool):
    """torch-struct chains (edges [B, N-1, L, L] (to, from), lengths [B]) of several shapes,
    every chain full (``full``) or of random lengths, the first always full."""
    torch.manual_seed(2)
    for B, N, L in [(3, 9, 4), (5, 13, 3), (2, 2, 5), (4, 17, 9), (1, 33, 9), (6, 5, 2)]:
        edges = torch.randn(B, N - 1, L, L, dtype=torch.float64) * 3
        lengths = torch.full((B,), N) if full else torch.randint(2, N + 1, (B,))
        lengths[0] = N
        yield edges, lengths


@pytest.mark.parametrize("full", [True, False], ids=["full", "ragged"])
def test_scaled_linear_chain_equals_torch_structs_linear_chain(full):
    """Same log Z and marginals as torch-struct's own scan, with and without padding; the
    full-chart path (no padding) and the padded path agree too."""
    for edges, lengths in random_chains(full):
        want = LinearChain(LogSemiring).sum(edges.clone(), lengths=lengths)
        got = ScaledLinearChain(ScaledLogSemiring).sum(edges.clone(), lengths=lengths)
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-10)
        want_m = LinearChain(LogSemiring).marginals(edges.clone(), lengths=lengths)
        got_m = ScaledLinearChain(ScaledLogSemiring).marginals(edges.clone(), lengths=lengths)
        torch.testing.assert_close(got_m, want_m, rtol=0, atol=1e-12)
    # a chart that fills bin_N without padding, against the same chart with a padded tail
    edges = torch.randn(2, 8, 3, 3, dtype=torch.float64)
    padded = torch.cat([edges, torch.randn(2, 1, 3, 3, dtype=torch.float64)], dim=1)
    full_z = ScaledLinearChain(ScaledLogSemiring).sum(edges, lengths=torch.tensor([9, 9]))
    pad_z = ScaledLinearChain(ScaledLogSemiring).sum(padded, lengths=torch.tensor([9, 10]))
    torch.testing.assert_close(full_z[0], pad_z[0], rtol=1e-13, atol=0)
