"""log Z and the marginals at weights so large that the scaled scans underflow.

The cause (found on WNUT-17 through ``structperc.sklearn.CRF(algorithm="lbfgs")``, which
stopped with ``ZeroDivisionError`` in the compiled forward pass): at an L-BFGS trial point the
largest transition weight was 749 while the transitions the data uses were near 0.  The scaled
forward algorithm shifts the transitions by their maximum and each token's scores by theirs,
apart from one another, so every product alpha_{t-1}(i) exp(A[i, j] - max A) exp(s_t(j) - m_t)
of a step was below e^-708, exactly 0 in float64, and so was the normaliser c_t the kernel then
divided by.  The torch scans (sequential, transition, the tree's scaled products) shared the
cause and clamped instead: finite, silently wrong values.  Each case here is made up with that
cause (a transition of 800 beside transitions of 0, scores of 1000); every scan must give what
enumerating every labeling gives.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from structperc.decode import marginals as scans
from structperc.decode.transition_scan import shared_transition_log_partition

REPRO = Path(__file__).resolve().parents[1] / ".." / "shared" / "repro"


def brute(S: torch.Tensor, A: torch.Tensor) -> tuple[float, torch.Tensor, torch.Tensor]:
    """log Z, node marginals [T, L] and transition expectations [L, L] of one chain with token
    scores S [T, L] and transitions A [L, L] (from, to), by enumerating every labeling."""
    T, L = S.shape
    paths = list(itertools.product(range(L), repeat=T))
    scores = torch.tensor(
        [
            float(sum(S[t, y[t]] for t in range(T)) + sum(A[y[t - 1], y[t]] for t in range(1, T)))
            for y in paths
        ],
        dtype=torch.float64,
    )
    logz = float(torch.logsumexp(scores, 0))
    p = torch.exp(scores - logz)
    node = torch.zeros(T, L, dtype=torch.float64)
    pairs = torch.zeros(L, L, dtype=torch.float64)
    for y, py in zip(paths, p, strict=True):
        for t in range(T):
            node[t, y[t]] += py
            if t:
                pairs[y[t - 1], y[t]] += py
    return logz, node, pairs


def underflowing_chain() -> tuple[torch.Tensor, torch.Tensor]:
    """Token 0 prefers label 0, token 1 label 1; only 0 -> 0 has a large transition (800), so
    with the transitions shifted by 800 every product of step 1 is below e^-708."""
    S = torch.tensor([[1000.0, 0.0, 0.0], [0.0, 1000.0, 0.0], [0.0, 3.0, 5.0]], dtype=torch.float64)
    A = torch.zeros(3, 3, dtype=torch.float64)
    A[0, 0] = 800.0
    A[2, 1] = -2.0
    return S, A


def random_chains(seed: int, B=3, T=5, L=3, scale=2000.0):
    g = torch.Generator().manual_seed(seed)
    S = torch.randn(B, T, L, generator=g, dtype=torch.float64) * scale
    A = torch.randn(L, L, generator=g, dtype=torch.float64) * scale
    return S, A


def edge_potentials(S: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    """structperc potentials [B, T, L, L] (from, to) of token scores [B, T, L] and A."""
    B, T, L = S.shape
    pot = torch.zeros(B, T, L, L, dtype=torch.float64)
    pot[:, 0, 0, :] = S[:, 0]
    pot[:, 1:] = A + S[:, 1:].unsqueeze(2)
    return pot


# -- the compiled kernels ------------------------------------------------------------------------


def kernel_inputs(S: torch.Tensor, labels):
    """The kernels' CSR inputs for one document whose token t fires feature t alone, node
    table W = S (so the token scores are S)."""
    T, L = S.shape
    doc_offsets = np.array([0, T], np.int64)
    ids = np.arange(T, dtype=np.int32)
    offsets = np.arange(T + 1, dtype=np.int64)
    values = np.ones(1, np.float32)
    return doc_offsets, ids, offsets, values, False, np.asarray(labels, np.int64)


@pytest.mark.parametrize("seed", [None, 0, 1, 2, 3])
def test_compiled_nll_gradient_equals_enumeration_when_products_underflow(seed):
    pytest.importorskip("numba")
    from structperc.native.crf_kernels import nll_gradient

    if seed is None:
        S, A = underflowing_chain()
    else:
        Sb, A = random_chains(seed, B=1)
        S = Sb[0]
    T, L = S.shape
    gold = [0, 1, 2, 0, 1][:T]
    doc_offsets, ids, offsets, values, weighted, labels = kernel_inputs(S, gold)
    grad_node, grad_trans = np.zeros((T, L)), np.zeros((L, L))
    node, trans = S.numpy().astype(np.float32), A.numpy().astype(np.float32)
    total, _ = nll_gradient(
        doc_offsets, ids, offsets, values, weighted, labels, node, trans, grad_node, grad_trans
    )
    S32, A32 = torch.from_numpy(node).double(), torch.from_numpy(trans).double()
    logz, p_node, p_pairs = brute(S32, A32)
    gold_score = sum(float(S32[t, gold[t]]) for t in range(T)) + sum(
        float(A32[gold[t - 1], gold[t]]) for t in range(1, T)
    )
    assert total == pytest.approx(logz - gold_score, rel=1e-12, abs=1e-9)
    want_node = p_node.numpy().copy()
    want_node[np.arange(T), gold] -= 1.0
    want_pairs = p_pairs.numpy().copy()
    for t in range(1, T):
        want_pairs[gold[t - 1], gold[t]] -= 1.0
    np.testing.assert_allclose(grad_node, want_node, atol=1e-9)
    np.testing.assert_allclose(grad_trans, want_pairs, atol=1e-9)


def test_compiled_marginals_and_sgd_epoch_survive_underflow():
    pytest.importorskip("numba")
    from structperc.native.crf_kernels import node_marginals, sgd_epoch

    S, A = underflowing_chain()
    T, L = S.shape
    doc_offsets, ids, offsets, values, weighted, labels = kernel_inputs(S, [0, 1, 2])
    node, trans = S.numpy().copy(), A.numpy().copy()
    out = np.zeros((T, L))
    node_marginals(doc_offsets, ids, offsets, values, weighted, node, trans, out)
    np.testing.assert_allclose(out, brute(S, A)[1].numpy(), atol=1e-12)
    state = np.array([1.0, 0.0])
    total, _, failed = sgd_epoch(
        np.array([0], np.int64), np.array([0, 1], np.int64), np.array([0], np.int64),
        doc_offsets, ids, offsets, values, weighted, labels, node, trans, state, 1e-3, 0.0,
        np.zeros(T * L), np.zeros(T * L, np.uint8), np.empty(T, np.int64), np.zeros(L * L),
    )  # fmt: skip
    assert not failed and math.isfinite(total) and np.isfinite(node).all()


# -- the torch scans ----------------------------------------------------------------------------


@pytest.mark.parametrize("scan", scans.SCANS)
@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_edge_scans_equal_enumeration_when_products_underflow(scan, seed):
    S, A = underflowing_chain() if seed is None else random_chains(seed, B=1)
    S = S.view(1, *S.shape[-2:])
    pot = edge_potentials(S, A)
    lengths = torch.tensor([S.shape[1]])
    logz, p_node, _ = brute(S[0], A)
    got = scans.log_partition(pot, lengths, scan)
    assert float(got[0]) == pytest.approx(logz, rel=1e-12)
    marg = scans.node_marginals(pot, lengths, scan)[0]
    torch.testing.assert_close(marg, p_node, atol=1e-9, rtol=0)


@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_transition_scan_equals_enumeration_when_products_underflow(seed):
    S, A = underflowing_chain() if seed is None else random_chains(seed, B=1)
    S = S.view(1, *S.shape[-2:]).clone().requires_grad_(True)
    A = A.clone().requires_grad_(True)
    T = S.shape[1]
    first = torch.zeros(1, T, dtype=torch.bool)
    first[0, 0] = True
    logz = shared_transition_log_partition(S, A, torch.tensor([T]), first)
    want, p_node, p_pairs = brute(S[0].detach(), A.detach())
    assert float(logz.detach()[0]) == pytest.approx(want, rel=1e-12)
    g_node, g_trans = torch.autograd.grad(logz.sum(), (S, A))
    torch.testing.assert_close(g_node[0], p_node, atol=1e-9, rtol=0)
    torch.testing.assert_close(g_trans, p_pairs, atol=1e-9, rtol=0)


def test_a_batch_rescans_only_its_underflowing_chains():
    """Ordinary chains beside underflowing ones: every chain of the batch equals enumeration."""
    g = torch.Generator().manual_seed(5)
    rows = [(torch.randn(1, 5, 3, generator=g, dtype=torch.float64), torch.zeros(3, 3))]
    rows.append(random_chains(0, B=1, T=5))
    rows.append((torch.randn(1, 5, 3, generator=g, dtype=torch.float64), torch.eye(3)))
    rows.append(random_chains(1, B=1, T=5))
    pot = torch.cat([edge_potentials(S, A.double()) for S, A in rows])
    lengths = torch.tensor([5, 5, 5, 5])
    want = [brute(S[0], A.double())[0] for S, A in rows]
    for scan in scans.SCANS:
        got = scans.log_partition(pot, lengths, scan)
        assert got.tolist() == pytest.approx(want, rel=1e-12), scan


# -- the face on the reproduction ----------------------------------------------------------------


@pytest.mark.realdata
def test_face_lbfgs_trains_the_shared_reproduction():
    """The 800 WNUT-17 sequences (hashed) on which L-BFGS stopped within 10 iterations."""
    path = REPRO / "lbfgs_zero_division.json.gz"
    if not path.exists():
        pytest.skip(f"the shared reproduction {path} is absent")
    pytest.importorskip("numba")
    from structperc.sklearn import CRF

    d = json.load(gzip.open(path, "rt"))
    crf = CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=12).fit(d["X"], d["y"])
    losses = [it["loss"] for it in crf.training_log_.iterations]
    assert len(losses) == 12 and all(math.isfinite(v) for v in losses)
    assert losses[-1] < losses[0]
