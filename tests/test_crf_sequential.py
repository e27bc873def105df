"""The sequential scan (``decode/sequential_scan.py``: the forward algorithm as torch-struct's
linear chain), the edges of packed rows from token scores (``crf/edges.py``), ``scan="auto"``.

(The brute-force checks of the sequential scan run in test_decode_marginals.py and
test_crf_learner.py, parametrised over every scan.)"""

from __future__ import annotations

import pytest
import torch
from test_crf_learner import objective_of, random_weights, toy_problem
from test_decode_marginals import random_chains
from torch_struct import LinearChain, LogSemiring

from structperc.crf.buckets import (
    make_buckets,
    pack_documents,
    packed_batch,
    packed_groups,
    row_tokens,
)
from structperc.crf.edges import RowLayout, row_nll
from structperc.crf.learner import CRF
from structperc.crf.objective import full_objective
from structperc.crf.sparse import TransposedIndex
from structperc.decode.marginals import nll
from structperc.decode.sequential_scan import SequentialLinearChain, backward_scan, forward_scan
from structperc.model.batch import make_batch
from structperc.model.weights import chain_potentials
from structperc.structures.chain import ChainStructure


@pytest.mark.parametrize("full", [True, False], ids=["full", "ragged"])
def test_sequential_chain_equals_torch_structs_linear_chain(full):
    """log Z and marginals of torch-struct's own scan, with and without padding, with the
    edges stored (to, from) or transposed in memory, and with garbage past each length."""
    for edges, lengths in random_chains(full):
        want = LinearChain(LogSemiring).sum(edges.clone(), lengths=lengths)
        want_m = LinearChain(LogSemiring).marginals(edges.clone(), lengths=lengths)
        transposed = edges.transpose(-1, -2).contiguous().transpose(-1, -2)
        dirty = edges.clone()
        for b, n in enumerate(lengths.tolist()):
            dirty[b, n - 1 :] = 50.0 * torch.randn_like(dirty[b, n - 1 :])
        for x in (edges.clone(), transposed, dirty):
            got = SequentialLinearChain(LogSemiring).sum(x.clone(), lengths=lengths)
            torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-10)
            got_m = SequentialLinearChain(LogSemiring).marginals(x.clone(), lengths=lengths)
            torch.testing.assert_close(got_m, want_m, rtol=0, atol=1e-12)


def test_scan_by_hand():
    """Two positions, two labels: log Z = logsumexp over the four pairs; the marginals are the
    pairs' probabilities; the gradient is scaled by the upstream g."""
    e = torch.tensor([[[[0.0, 1.0], [2.0, 3.0]]]], dtype=torch.float64)  # [1, 1, 2(to), 2(from)]
    logz, underflow, saved = forward_scan(e, torch.tensor([2]))
    assert not bool(underflow.any())
    assert float(logz[0]) == pytest.approx(float(torch.logsumexp(e.view(-1), 0)), abs=1e-14)
    mu = backward_scan(torch.tensor([2.0], dtype=torch.float64), saved)
    torch.testing.assert_close(mu, 2.0 * torch.softmax(e.view(-1), 0).view(1, 1, 2, 2))


def test_underflowing_scale_stays_finite():
    """An edge matrix whose scores spread by 1e5 (torch-struct's log-zero) gives finite log Z
    and marginals; entries at the zero get marginal 0."""
    NEG = -1e5
    # (to, from): 0 -> 0, then 0 -> 1 is the one path with a score above the zero
    e = torch.tensor([[[[0.0, NEG], [NEG, NEG]], [[NEG, NEG], [0.0, NEG]]]], dtype=torch.float64)
    lengths = torch.tensor([3])
    got = SequentialLinearChain(LogSemiring).sum(e.clone(), lengths=lengths).detach()
    assert float(got[0]) == pytest.approx(0.0, abs=1e-12)
    m = SequentialLinearChain(LogSemiring).marginals(e.clone(), lengths=lengths).detach()
    assert bool(torch.isfinite(m).all())
    assert float(m[0, 0, 0, 0]) == pytest.approx(1.0) and float(m[0, 1, 1, 0]) == pytest.approx(1.0)
    assert float(m.sum()) == pytest.approx(2.0)
    # no path at all above the zero: clamped, finite, not NaN
    dead = torch.tensor([[[[0.0, NEG], [NEG, NEG]], [[NEG, 0.0], [NEG, NEG]]]], dtype=torch.float64)
    z = SequentialLinearChain(LogSemiring).sum(dead.clone(), lengths=lengths).detach()
    assert bool(torch.isfinite(z).all()) and float(z[0]) < -700


@pytest.mark.parametrize(
    "lengths",
    [[1, 12, 3, 1, 7, 5, 2], [1] * 12, [14], [3, 1, 4, 2]],
    ids=["mixed", "all-one", "one", "short"],
)
def test_row_nll_equals_nll_of_chain_potentials(lengths):
    """crf/edges.py: the edges written from token scores give the nll and the gradient of
    the [B, T, L, L] potentials route through torch-struct's LinearChain, on plain batches and
    on packed rows (of 2^k + 1 tokens and of the longest document), with one-token documents."""
    features, labels, _ = toy_problem(8, lengths=lengths, L=4)
    L = 4
    gen = torch.Generator().manual_seed(3)
    scores0 = torch.randn(features.num_tokens, L + L * L, generator=gen, dtype=torch.float64)
    docs = list(range(features.num_docs))
    layouts = [(make_batch(features, docs), docs)]
    for capacity in (row_tokens(lengths) if max(lengths) > 1 else 1, max(max(lengths), 2)):
        rows = pack_documents(lengths, capacity)
        layouts.append((packed_batch(features, rows), [d for row in rows for d in row]))
    for batch, doc_order in layouts:
        order = torch.cat(
            [
                torch.arange(int(features.doc_offsets[d]), int(features.doc_offsets[d + 1]))
                for d in doc_order
            ]
        )
        y = labels[order]
        a = scores0[order].clone().requires_grad_()
        b = scores0[order].clone().requires_grad_()
        got = row_nll(a, RowLayout.of(batch, y, L))
        pot = chain_potentials(b[:, :L], b[:, L:].reshape(-1, L, L), batch)
        want = nll(pot, batch.lengths, batch.pad(y)).sum()
        assert float(got.detach()) == pytest.approx(float(want.detach()), rel=1e-12)
        got.backward()
        want.backward()
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-10, atol=1e-12)


def test_row_edges_gradcheck():
    features, labels, _ = toy_problem(4, lengths=[3, 1, 2], L=2)
    rows = pack_documents([3, 1, 2], 3)
    batch = packed_batch(features, rows)
    order = torch.cat(
        [
            torch.arange(int(features.doc_offsets[d]), int(features.doc_offsets[d + 1]))
            for row in rows
            for d in row
        ]
    )
    layout = RowLayout.of(batch, labels[order], 2)
    scores = torch.randn(len(order), 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda s: row_nll(s, layout), (scores,))


def test_sequential_packing_is_one_bucket_of_the_longest_rows():
    lengths = [5, 3, 9, 2, 2, 7, 1]
    (rows,) = packed_groups(lengths, budget=4, sequential=True)
    assert sorted(d for row in rows for d in row) == list(range(len(lengths)))
    assert max(sum(lengths[d] for d in row) for row in rows) <= 9  # the longest document
    assert len(packed_groups(lengths, budget=4)) > 1  # the tree scan's buckets


@pytest.mark.parametrize("edges", [True, False])
def test_sequential_objective_equals_scaled(edges):
    """The objective and gradient of the sequential scan (one bucket of packed rows) equal the
    tree scan's (buckets) within rounding."""
    features, labels, names = toy_problem(6, docs=10)
    weights = random_weights(12, names, edges=edges)
    f_s, n_s, g_s, e_s = objective_of(CRF(sigma2=2.0, scan="scaled"), weights, features, labels)
    seq = CRF(sigma2=2.0, scan="sequential")
    index = TransposedIndex.build(features.ids, features.offsets, weights.num_features)
    # packed buckets of 16 tokens (row_nll on gathered copies), and the one bucket of every row
    # that reads the lookup's scores in place (objective.whole_set_loss), evaluated twice: the
    # second evaluation reuses the bucket's workspace
    several = make_buckets(
        features, labels, 16, with_index=False, num_features=12, device="cpu", packed=True
    )
    one = make_buckets(
        features,
        labels,
        16,
        with_index=False,
        num_features=12,
        device="cpu",
        packed=True,
        sequential=True,
    )
    assert len(several) > 1 and len(one) == 1
    for buckets in (several, one, one):
        f_q, n_q, g_q, e_q = full_objective(seq, ChainStructure(weights), features, index, buckets)
        assert f_q == pytest.approx(f_s, rel=1e-12) and e_q == e_s
        for a, b in zip(g_q, g_s, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)
    assert (one[0].layout is not None) == edges  # the in-place path ran with edge features


def test_auto_scan(monkeypatch):
    from structperc.crf import learner as crf_learner

    assert CRF().scan == "auto"
    assert CRF().resolved(edges=True).scan == "sequential"
    assert CRF().resolved(edges=True, device=torch.device("cpu")).scan == "sequential"
    # a training set mapped from disk runs the compiled objective where numba is
    compiled = "compiled" if crf_learner.numba_available() else "sequential"
    assert CRF().resolved(edges=True, mapped=True).scan == compiled
    monkeypatch.setattr(crf_learner, "numba_available", lambda: False)
    assert CRF().resolved(edges=False, mapped=True).scan == "scaled"
    monkeypatch.undo()
    # without edge features the compiled objective (and SGD's compiled epochs) in memory too,
    # unless transition constraints are on (the kernels have none)
    assert CRF().resolved(edges=False).scan == compiled.replace("sequential", "scaled")
    assert CRF(optimizer="sgd").resolved(edges=False).scan == compiled.replace(
        "sequential", "scaled"
    )
    assert CRF().resolved(edges=False, constrained=True).scan == "scaled"
    assert CRF().resolved(edges=True, mapped=True, constrained=True).scan == "sequential"
    monkeypatch.setattr(crf_learner, "numba_available", lambda: False)
    assert CRF().resolved(edges=False).scan == "scaled"
    monkeypatch.undo()
    assert CRF(optimizer="sgd").resolved(edges=True).scan == "scaled"
    assert CRF(scan="log").resolved(edges=True).scan == "log"
    assert CRF(scan="sequential").resolved(edges=False).scan == "sequential"
    # an accelerator keeps the tree scan (log-depth steps; the sequential scan's are launches)
    assert CRF().resolved(edges=True, device="cuda").scan == "scaled"
    with pytest.raises(ValueError, match="unknown scan 'tree'"):
        CRF(scan="tree")._validate()


def test_the_compiled_objective_refuses_transition_constraints():
    """The kernels have no transition constraints: ``scan="compiled"`` with
    ``decoder.constraints`` is an error naming the way out (``auto`` takes a torch scan)."""
    from structperc.learn.fitting import FitSettings
    from structperc.model.updates import Updater
    from structperc.structures.chain import ChainData

    features, labels, _ = toy_problem(3, docs=4)
    weights = random_weights(12, ["O", "B-X", "I-X"], edges=False)
    structure = ChainStructure(weights, constraints="iob2")
    data = ChainData(features, labels)
    with pytest.raises(ValueError, match="no transition constraints"):
        CRF(scan="compiled").fit(structure, Updater(weights), data, FitSettings(max_epochs=1))


@pytest.mark.parametrize("edges", [True, False])
def test_lbfgs_training_lays_out_buckets_for_the_resolved_scan(edges, monkeypatch):
    """``LBFGSTraining`` lays out the buckets of the scan ``CRF.resolved`` chose: with edge
    features one bucket of rows for the sequential scan, without them the tree scan's buckets;
    an unresolved ``scan="auto"`` is refused.  (Where numba is absent: with it, auto takes
    the compiled objective, which has no buckets.)"""
    from structperc.crf import learner as crf_learner
    from structperc.crf.optimization import LBFGSTraining

    monkeypatch.setattr(crf_learner, "numba_available", lambda: False)

    features, labels, names = toy_problem(6, docs=30)
    weights = random_weights(12, names, edges=edges)
    crf, structure = CRF(dp_batch_tokens=16), ChainStructure(weights)
    with pytest.raises(ValueError, match="unknown scan 'auto'"):
        LBFGSTraining(crf, structure, features, labels, 0, "cpu", False)
    run = LBFGSTraining(crf.resolved(edges), structure, features, labels, 0, "cpu", False)
    if edges:
        assert len(run.buckets) == 1 and len(run.buckets[0].tokens) == features.num_tokens
    else:
        assert len(run.buckets) > 1
