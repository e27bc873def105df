"""structperc.crf: sparse lookups, the objective against brute force and finite differences,
L-BFGS and scaled SGD, and training on toy problems."""

from __future__ import annotations

import itertools
import math
import os
import re
import signal
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from structperc.checkpoint import Checkpoint
from structperc.crf.buckets import (
    length_buckets,
    make_buckets,
    pack_documents,
    packed_batch,
    packed_groups,
    row_tokens,
)
from structperc.crf.learner import CRF
from structperc.crf.objective import full_objective
from structperc.crf.optimization import LBFGS, ScaledSGD
from structperc.crf.sparse import TransposedIndex, lookup
from structperc.decode.scores import path_scores
from structperc.features.extract import FeatureMatrix
from structperc.learn.fitting import FitSettings
from structperc.model.batch import make_batch
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights, bag_sums, chain_potentials, offsets_like
from structperc.structures.chain import ChainData, ChainStructure
from structperc.trainer import fit

ROOT = Path(__file__).resolve().parent.parent


def toy_problem(
    seed: int = 0, docs: int = 6, F_: int = 12, L: int = 3, lengths=None, learnable=False
) -> tuple[FeatureMatrix, torch.Tensor, list[str]]:
    """Random CSR features (1-4 ids per token, repeats allowed) and labels [N].

    With ``learnable`` the label of a token is its first feature id mod L.
    """
    gen = torch.Generator().manual_seed(seed)
    if lengths is None:
        lengths = torch.randint(1, 6, (docs,), generator=gen).tolist()
        lengths[0] = 1  # always a length-1 document
    N = sum(lengths)
    counts = torch.randint(1, 5, (N,), generator=gen)
    offsets = torch.zeros(N + 1, dtype=torch.long)
    torch.cumsum(counts, 0, out=offsets[1:])
    ids = torch.randint(0, F_, (int(offsets[-1]),), generator=gen, dtype=torch.int32)
    ids[:F_] = torch.arange(F_, dtype=torch.int32)  # every feature occurs
    doc_offsets = torch.zeros(len(lengths) + 1, dtype=torch.long)
    torch.cumsum(torch.tensor(lengths), 0, out=doc_offsets[1:])
    if learnable:
        labels = ids[offsets[:-1]].long() % L
    else:
        labels = torch.randint(0, L, (N,), generator=gen)
    return FeatureMatrix(ids, offsets, doc_offsets), labels, [f"y{i}" for i in range(L)]


def random_weights(
    F_: int, labels: list[str], seed: int = 1, scale: float = 0.5, edges: bool = True
) -> ChainWeights:
    w = ChainWeights(F_, labels, edges).double()
    gen = torch.Generator().manual_seed(seed)
    for t in w.tables().values():
        t.copy_(scale * torch.randn(t.shape, generator=gen, dtype=t.dtype))
    return w


def enumerated(weights, features, d: int) -> tuple[list[tuple], torch.Tensor, torch.Tensor]:
    """Every labeling of document ``d``, its score s(x, y) and the potentials' gold score g."""
    batch = make_batch(features, [d])
    pot = weights.potentials(batch)[0].double()  # [T, L, L]
    n = int(batch.lengths[0])
    paths = list(itertools.product(range(weights.num_labels), repeat=n))
    s = [
        float(pot[0, 0, p[0]]) + sum(float(pot[t, p[t - 1], p[t]]) for t in range(1, n))
        for p in paths
    ]
    return paths, torch.tensor(s, dtype=torch.float64), pot


def gold_of(features, labels, d: int) -> torch.Tensor:
    return labels[int(features.doc_offsets[d]) : int(features.doc_offsets[d + 1])]


def brute_objective(weights, features, labels, sigma2) -> float:
    """sum_d -log p(y*_d | x_d) + ||w||^2 / (2 sigma2), by enumerating every labeling."""
    total = 0.0
    for d in range(features.num_docs):
        _, s, pot = enumerated(weights, features, d)
        gold = gold_of(features, labels, d).view(1, 1, -1)
        g = float(path_scores(pot[None], torch.tensor([pot.shape[0]]), gold)[0, 0])
        total += float(torch.logsumexp(s, 0)) - g
    sq = sum(float((t * t).sum()) for t in weights.tables().values())
    return total + sq / (2 * sigma2)


def brute_posterior_errors(weights, features, labels) -> int:
    """Tokens whose most probable label, p(y_t | x) summed over every labeling, is not gold."""
    errors = 0
    for d in range(features.num_docs):
        paths, s, _ = enumerated(weights, features, d)
        marginals = torch.zeros(len(paths[0]), weights.num_labels, dtype=torch.float64)
        for path, p in zip(paths, torch.softmax(s, 0).tolist(), strict=True):
            marginals[range(len(path)), list(path)] += p
        errors += int((marginals.argmax(1) != gold_of(features, labels, d)).sum())
    return errors


def objective_of(learner, weights, features, labels, budget=16, packed=False):
    index = TransposedIndex.build(features.ids, features.offsets, weights.num_features)
    buckets = make_buckets(
        features,
        labels,
        budget,
        with_index=False,
        num_features=weights.num_features,
        device="cpu",
        packed=packed,
    )
    crf = torch_resolved(learner, weights.edges)  # as CRF.fit does, once
    return full_objective(crf, ChainStructure(weights), features, index, buckets)


def torch_resolved(learner: CRF, edges: bool) -> CRF:
    """``learner.resolved`` as on a machine without numba: ``scan="auto"`` takes the torch
    scans these tests check (with numba it takes the compiled objective, which
    ``test_native.py`` and ``test_edge_crf_kernel.py`` check against them)."""
    crf = learner.resolved(edges)
    if learner.scan == "auto" and crf.scan == "compiled":
        return replace(learner, scan="sequential" if edges else "scaled")
    return crf


@pytest.fixture(autouse=True)
def torch_scans(monkeypatch):
    """Every CRF of this file resolves ``scan="auto"`` to a torch scan (``torch_resolved``)."""
    from structperc.crf import learner as crf_learner

    monkeypatch.setattr(crf_learner, "numba_available", lambda: False)


# ---------------------------------------------------------------------------------------------
# lookups and potentials
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("covers_all", [True, False])
def test_lookup_matches_embedding_bag_forward_and_backward(covers_all):
    features, _, labels = toy_problem(2, F_=10)
    F_ = 10 if covers_all else 14  # 4 features never occur: a sparse gradient
    table = torch.randn(F_, 4, dtype=torch.float64, requires_grad=True)
    ids, offsets = features.ids, features.offsets
    index = TransposedIndex.build(ids, offsets, F_)
    assert index.covers_all == covers_all
    ref_table = table.detach().clone().requires_grad_(True)
    out = lookup(table, ids, offsets, index)
    ref = F.embedding_bag(ids.long(), ref_table, offsets, mode="sum", include_last_offset=True)
    torch.testing.assert_close(out, ref)
    g = torch.randn_like(out)
    out.backward(g)
    ref.backward(g)
    got = table.grad.to_dense() if table.grad.is_sparse else table.grad
    assert table.grad.is_sparse != covers_all
    torch.testing.assert_close(got, ref_table.grad)


@pytest.mark.parametrize("ids_dtype", [torch.int32, torch.int64])
def test_bag_sums_take_offsets_in_the_ids_type(ids_dtype):
    """int32 ids with int64 offsets would make embedding_bag copy all ids to int64 first."""
    ids = torch.tensor([3, 1, 1, 0, 2, 3], dtype=ids_dtype)
    offsets = torch.tensor([0, 2, 2, 6])  # int64, as FeatureMatrix keeps them; one empty row
    aligned = offsets_like(ids, offsets)
    assert aligned.dtype == ids_dtype and aligned.tolist() == offsets.tolist()
    table = torch.arange(8.0).view(4, 2)
    expected = torch.stack([table[3] + table[1], torch.zeros(2), table[[1, 0, 2, 3]].sum(0)])
    torch.testing.assert_close(bag_sums(table, ids, offsets), expected)


@pytest.mark.parametrize("chunk", [1, 7, 1 << 22])
def test_transposed_index_lists_each_features_tokens_in_order(chunk):
    """X^T by the chunked counting sort = a loop over the CSR rows, for any chunk size."""
    features, _, _ = toy_problem(9, docs=8, F_=15)
    ids, offsets = features.ids, features.offsets
    index = TransposedIndex.build(ids, offsets, 17, chunk=chunk)  # features 15, 16 never occur
    expected: dict[int, list[int]] = {}
    for token in range(len(offsets) - 1):
        for f in ids[offsets[token] : offsets[token + 1]].tolist():
            expected.setdefault(f, []).append(token)
    assert index.rows.tolist() == sorted(expected)
    assert index.tokens.dtype == index.offsets.dtype == torch.int32
    got = {
        int(f): index.tokens[index.offsets[u] : index.offsets[u + 1]].tolist()
        for u, f in enumerate(index.rows)
    }
    assert got == expected and not index.covers_all


def test_chain_potentials_equal_a_loop_over_tokens():
    features, _, labels = toy_problem(3, docs=5)
    weights = random_weights(12, labels)
    docs = [0, 2, 3, 4]
    batch = make_batch(features, docs)
    node, edge = weights.token_scores(batch)  # [N, L], [N, L, L]
    L = len(labels)
    expected = torch.zeros(len(docs), batch.max_length, L, L, dtype=node.dtype)
    for b in range(len(docs)):
        first = int(batch.first_token[b])
        for t in range(int(batch.lengths[b])):
            for i in range(L):
                expected[b, t, i] = node[first + t] + (edge[first + t, i] if t else 0)
    got = chain_potentials(node, edge, batch)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(weights.potentials(batch), expected)


def test_length_buckets_respect_the_budget_and_cover_every_document():
    lengths = [5, 1, 9, 3, 3, 40, 2, 8]
    buckets = length_buckets(lengths, budget=10)
    assert sorted(d for b in buckets for d in b) == list(range(len(lengths)))
    for b in buckets:
        assert len(b) == 1 or len(b) * max(lengths[d] for d in b) <= 10
    flat = [lengths[d] for b in buckets for d in b]
    assert flat == sorted(flat)


# ---------------------------------------------------------------------------------------------
# the objective and its gradient
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("packed", [False, True], ids=["buckets", "packed"])
@pytest.mark.parametrize("edges", [True, False])
@pytest.mark.parametrize("scan", ["log", "scaled", "sequential", "auto"])
def test_objective_matches_brute_force(scan, edges, packed):
    features, labels, names = toy_problem(4)
    weights = random_weights(12, names, edges=edges)
    learner = CRF(sigma2=2.0, scan=scan)
    f, total, _, errors = objective_of(learner, weights, features, labels, packed=packed)
    assert f == pytest.approx(brute_objective(weights, features, labels, 2.0), rel=1e-10)
    assert errors == brute_posterior_errors(weights, features, labels)


@pytest.mark.parametrize("packed", [False, True], ids=["buckets", "packed"])
@pytest.mark.parametrize("edges", [True, False])
def test_gradient_matches_finite_differences(edges, packed):
    features, labels, names = toy_problem(5)
    weights = random_weights(12, names, scale=0.3, edges=edges)
    learner = CRF(sigma2=1.5)
    _, _, grads, _ = objective_of(learner, weights, features, labels, packed=packed)
    gen = torch.Generator().manual_seed(0)
    eps = 1e-6
    for table, grad in zip(weights.dense_tables, grads, strict=True):
        flat, gflat = table.view(-1), grad.view(-1)
        for i in torch.randint(0, len(flat), (12,), generator=gen).tolist():
            old = float(flat[i])
            flat[i] = old + eps
            up = objective_of(learner, weights, features, labels)[0]
            flat[i] = old - eps
            down = objective_of(learner, weights, features, labels)[0]
            flat[i] = old
            assert float(gflat[i]) == pytest.approx((up - down) / (2 * eps), abs=1e-6, rel=1e-5)


@pytest.mark.parametrize("edges", [True, False])
def test_float32_dp_is_close_to_float64_and_brute_force(edges):
    features, labels, names = toy_problem(5, docs=9)
    weights = random_weights(12, names, edges=edges)
    f64, _, g64, e64 = objective_of(CRF(sigma2=2.0), weights, features, labels)
    f32, _, g32, e32 = objective_of(CRF(sigma2=2.0, dtype="float32"), weights, features, labels)
    assert f32 == pytest.approx(brute_objective(weights, features, labels, 2.0), rel=1e-5)
    assert f32 == pytest.approx(f64, rel=1e-5) and e32 == e64
    assert f32 != f64  # the DP did run in float32
    for a, b in zip(g32, g64, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_bucketing_does_not_change_the_objective():
    features, labels, names = toy_problem(6, docs=9)
    weights = random_weights(12, names)
    learner = CRF(sigma2=10.0)
    f1, _, g1, e1 = objective_of(learner, weights, features, labels, budget=1)
    f2, _, g2, e2 = objective_of(learner, weights, features, labels, budget=1000)
    assert f1 == pytest.approx(f2, rel=1e-12) and e1 == e2
    for a, b in zip(g1, g2, strict=True):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("edges", [True, False])
@pytest.mark.parametrize("budget", [1, 12, 1000])
def test_packing_documents_end_to_end_does_not_change_the_objective(budget, edges):
    """crf/buckets.py: a row's nll is the sum of its documents' (the chain factorises at each
    document's first token), so packed rows give the objective, gradient and errors of
    one-document sequences; with lengths 1 to 12 and rows of 1, 2 or many per bucket."""
    lengths = [1, 12, 3, 1, 7, 5, 2, 9, 4, 1, 6, 11, 2]
    features, labels, names = toy_problem(7, lengths=lengths, L=4)
    weights = random_weights(12, names, scale=1.0, edges=edges)
    learner = CRF(sigma2=10.0)
    f1, n1, g1, e1 = objective_of(learner, weights, features, labels, budget=1)
    f2, n2, g2, e2 = objective_of(learner, weights, features, labels, budget, packed=True)
    assert f2 == pytest.approx(f1, rel=1e-12) and n2 == pytest.approx(n1, rel=1e-12)
    assert e1 == e2
    for a, b in zip(g1, g2, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_packed_buckets_of_no_documents_are_none():
    """A rank's shard may be empty (more ranks than documents): no rows, no buckets."""
    empty = FeatureMatrix(
        torch.zeros(0, dtype=torch.int32),
        torch.zeros(1, dtype=torch.long),
        torch.zeros(1, dtype=torch.long),
    )
    assert packed_groups([], budget=10) == []
    for packed in (False, True):
        buckets = make_buckets(
            empty, torch.zeros(0, dtype=torch.long), 10, with_index=False, num_features=12,
            device="cpu", packed=packed,
        )  # fmt: skip
        assert buckets == []


def test_pack_documents_fills_rows_of_a_power_of_two_edges():
    lengths = [5, 1, 9, 3, 3, 17, 2, 8, 16, 1]
    capacity = row_tokens(lengths)
    assert capacity == 17  # 16 edges hold the longest document (17 tokens)
    assert row_tokens([1]) == row_tokens([2]) == 2 and row_tokens([3]) == 3
    rows = pack_documents(lengths, capacity)
    assert sorted(d for row in rows for d in row) == list(range(len(lengths)))
    fill = [sum(lengths[d] for d in row) for row in rows]
    assert max(fill) <= capacity and fill == sorted(fill, reverse=True)
    assert len(rows) == -(-sum(lengths) // capacity)  # 65 tokens in the fewest rows: 4
    with pytest.raises(ValueError, match="a document of 17 tokens does not fit rows of 9"):
        pack_documents(lengths, 9)


def test_packed_batch_lays_out_rows_of_documents():
    lengths = [3, 1, 4, 2]
    features, _, names = toy_problem(8, lengths=lengths)
    weights = random_weights(12, names)
    rows = [[2, 1], [0, 3]]
    batch = packed_batch(features, rows)
    assert batch.lengths.tolist() == [5, 5] and batch.first_token.tolist() == [0, 4, 5, 8]
    pot = weights.potentials(batch)  # [2 rows, 5, L, L]
    for r, row in enumerate(rows):
        t = 0
        for d in row:
            alone = weights.potentials(make_batch(features, [d]))[0]  # [n, L, L]
            n = lengths[d]
            torch.testing.assert_close(pot[r, t + 1 : t + n], alone[1:n])
            # a document's first token scores the same from every previous label
            torch.testing.assert_close(pot[r, t], alone[0, 0].expand_as(pot[r, t]))
            t += n


# ---------------------------------------------------------------------------------------------
# optimizers
# ---------------------------------------------------------------------------------------------
def test_lbfgs_minimises_a_quadratic():
    gen = torch.Generator().manual_seed(0)
    A = torch.randn(8, 8, generator=gen, dtype=torch.float64)
    H = A @ A.T + 0.5 * torch.eye(8, dtype=torch.float64)
    b = torch.randn(8, generator=gen, dtype=torch.float64)
    x = torch.zeros(8, dtype=torch.float64)

    def objective():
        return float(0.5 * x @ H @ x - b @ x), [H @ x - b]

    opt = LBFGS([x], history=5)
    losses = [opt.step(objective).loss for _ in range(60)]
    assert all(b <= a + 1e-12 for a, b in zip(losses, losses[1:], strict=False))
    torch.testing.assert_close(x, torch.linalg.solve(H, b), atol=1e-6, rtol=0)


def test_scaled_sgd_equals_the_plain_update():
    gen = torch.Generator().manual_seed(1)
    v = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    w = v.clone()
    opt = ScaledSGD([v], sigma2=4.0, num_docs=10, lr=0.3)
    lam = 1.0 / (4.0 * 10)
    for step in range(5):
        rows = torch.tensor([0, 2, 5]) if step % 2 else torch.tensor([1, 2])
        grad_w = torch.randn(len(rows), 3, generator=gen, dtype=torch.float64)
        eta = opt.lr()
        assert eta == pytest.approx(0.3 / (1 + 0.3 * lam * 2 * step))
        # the learner hands over d l / d v = scale * d l / d w
        sparse = torch.sparse_coo_tensor(
            rows[None], grad_w * opt.scale, (6, 3), check_invariants=True
        ).coalesce()
        opt.step([sparse], docs=2)
        dense = torch.zeros_like(w)
        dense[rows] = grad_w
        w = (1 - eta * lam * 2) * w - eta * dense
        torch.testing.assert_close(v * opt.scale, w)
    opt.fold()
    assert opt.scale == 1.0
    torch.testing.assert_close(v, w)


def test_scaled_sgd_rejects_a_learning_rate_that_flips_the_sign():
    v = torch.zeros(2, 2)
    opt = ScaledSGD([v], sigma2=0.01, num_docs=1, lr=1000.0)
    with pytest.raises(ValueError, match="too large for the prior"):
        opt.step([torch.zeros(2, 2)], docs=1)


# ---------------------------------------------------------------------------------------------
# fit (CRF.fit through trainer.fit)
# ---------------------------------------------------------------------------------------------
def _fit(learner, seed=7, max_epochs=None, checkpoint=None, resume=False):
    features, labels, names = toy_problem(seed, docs=12, F_=8, L=3, learnable=True)
    weights = ChainWeights(8, names)
    logs = []
    result = fit(
        learner,
        ChainStructure(weights),
        Updater(weights),
        ChainData(features, labels),
        FitSettings(max_epochs=max_epochs, progress=False),
        on_epoch=logs.append,
        checkpoint=checkpoint,
        resume=resume,
    )
    return weights, features, labels, result, logs


def test_sgd_resumes_exactly(tmp_path):
    """SGD: 3 epochs with a checkpoint, resumed to 6 == 6 at once (the order is (seed, epoch),
    the rate is the count of documents seen, the tables are folded at each epoch's end)."""
    sgd = CRF(sigma2=1.0, optimizer="sgd", lr=0.1, batch_tokens=10, tol=0.0)
    w_all, _, _, _, all_logs = _fit(sgd, max_epochs=6)
    checkpoint = Checkpoint(tmp_path / "checkpoint", {"labels": w_all.labels})
    _fit(sgd, max_epochs=3, checkpoint=checkpoint)
    w, _, _, result, logs = _fit(sgd, max_epochs=6, checkpoint=checkpoint, resume=True)
    assert [e.epoch for e in logs] == [4, 5, 6] and result.resumed_from == 3
    assert [e.epoch for e in result.history] == [1, 2, 3, 4, 5, 6]
    assert [e.extra["objective"] for e in logs] == [e.extra["objective"] for e in all_logs[3:]]
    for n, t in w.tables().items():
        assert torch.equal(t, w_all.tables()[n])


def test_lbfgs_resumes_from_the_checkpoint(tmp_path):
    """L-BFGS: the weights and the stopping rule's state come back (the memory starts afresh,
    so only the first resumed iteration is compared: it starts where the killed run ended)."""
    lbfgs = CRF(sigma2=10.0, tol=1e-7)
    w3, _, _, _, first = _fit(lbfgs, max_epochs=3, checkpoint=None)
    checkpoint = Checkpoint(tmp_path / "checkpoint", {"labels": w3.labels})
    _fit(lbfgs, max_epochs=3, checkpoint=checkpoint)
    assert checkpoint.exists()
    w, _, _, result, logs = _fit(lbfgs, max_epochs=20, checkpoint=checkpoint, resume=True)
    assert logs[0].epoch == 4 and result.resumed_from == 3
    assert [e.epoch for e in result.history][:4] == [1, 2, 3, 4]
    objectives = [e.extra["objective"] for e in result.history]
    assert objectives[:3] == [e.extra["objective"] for e in first]
    assert all(b <= a for a, b in zip(objectives, objectives[1:], strict=False))
    # the stopping rule's state is replayed: a converged run resumed with a larger cap stops
    # after one iteration (a fresh rule would want `patience` more)
    c2 = Checkpoint(tmp_path / "c2", {"labels": w3.labels})
    done = CRF(sigma2=1.0, tol=1e-3, patience=2)
    _, _, _, r, _ = _fit(done, max_epochs=200, checkpoint=c2)
    assert r.stopped_by == "converged"
    _, _, _, again, logs = _fit(done, max_epochs=300, checkpoint=c2, resume=True)
    assert again.stopped_by == "converged" and [e.epoch for e in logs] == [r.epochs + 1]


def test_lbfgs_fit_decreases_the_objective_and_learns_a_learnable_problem():
    weights, features, labels, result, logs = _fit(CRF(sigma2=10.0, tol=1e-7), max_epochs=60)
    objectives = [e.extra["objective"] for e in logs]
    assert all(b <= a for a, b in zip(objectives, objectives[1:], strict=False))
    assert objectives[-1] < 0.2 * objectives[0]
    assert result.epochs == len(logs) and result.stopped_by in ("converged", "max_epochs")
    assert logs[-1].word_error == 0.0
    assert all(t.grad is None and not t.requires_grad for t in weights.dense_tables)


def test_lbfgs_stops_by_convergence():
    _, _, _, result, logs = _fit(CRF(sigma2=1.0, tol=1e-3, patience=2), max_epochs=200)
    assert result.stopped_by == "converged" and result.epochs < 200


def test_sgd_fit_approaches_the_lbfgs_optimum():
    _, _, _, _, exact = _fit(CRF(sigma2=1.0, tol=1e-9, patience=3), max_epochs=100)
    f_star = exact[-1].extra["objective"]
    _, _, _, result, logs = _fit(
        CRF(sigma2=1.0, optimizer="sgd", lr=0.1, batch_tokens=10, tol=0.0), max_epochs=20
    )
    assert result.epochs == 20
    assert logs[-1].extra["objective"] < 1.05 * f_star
    assert logs[-1].extra["objective"] < 0.5 * logs[0].extra["objective"]


def test_max_iterations_and_max_epochs_bound_each_other():
    _, _, _, result, _ = _fit(CRF(max_iterations=2, tol=0.0), max_epochs=10)
    assert result.epochs == 2
    _, _, _, result, _ = _fit(CRF(max_iterations=10, tol=0.0), max_epochs=3)
    assert result.epochs == 3


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"optimizer": "adam"}, "optimizer must be 'lbfgs' or 'sgd', got 'adam'"),
        ({"sigma2": 0.0}, "sigma2 must be > 0, got 0.0"),
        ({"dtype": "float16"}, "dtype must be 'float32' or 'float64', got 'float16'"),
        ({"scan": "max"}, "unknown scan 'max'"),
    ],
)
def test_bad_settings_are_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _fit(CRF(**kwargs), max_epochs=1)


def test_only_the_crf_objective_and_optimizers_call_backward():
    callers = [
        p.relative_to(ROOT).as_posix()
        for p in sorted((ROOT / "structperc").rglob("*.py"))
        if ".backward(" in p.read_text()
    ]
    assert callers == ["structperc/crf/objective.py", "structperc/crf/optimization.py"]


def test_objective_is_finite_for_large_weights():
    features, labels, names = toy_problem(8)
    weights = random_weights(12, names, scale=200.0)
    f, _, grads, _ = objective_of(CRF(sigma2=1e6), weights, features, labels)
    assert math.isfinite(f) and all(bool(torch.isfinite(g).all()) for g in grads)


def test_sigusr1_stops_after_the_current_iteration():
    features, labels, names = toy_problem(7, docs=12, F_=8, L=3, learnable=True)

    def on_epoch(ep):
        if ep.epoch == 2:
            os.kill(os.getpid(), signal.SIGUSR1)

    weights = ChainWeights(8, names)
    result = fit(
        CRF(tol=0.0),
        ChainStructure(weights),
        Updater(weights),
        ChainData(features, labels),
        FitSettings(max_epochs=10, progress=False),
        on_epoch=on_epoch,
    )
    assert (result.epochs, result.stopped_by) == (2, "interrupted")
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL  # the handler is restored


@pytest.mark.parametrize("scan", ["log", "scaled", "sequential"])
@pytest.mark.parametrize(
    "lengths", [[1, 12, 3, 1, 7, 5, 2], [1] * 12, [14]], ids=["mixed", "all-one", "one"]
)
def test_transition_nll_equals_nll_of_chain_potentials(lengths, scan):
    """crf/edges.py: torch-struct's edges built from node scores and one transition
    matrix give the nll and gradients of the [B, T, L, L] potentials route, on plain batches
    and packed rows, with one-token documents and a batch of one-token rows (T = 1)."""
    from structperc.crf.edges import transition_log_potentials, transition_nll
    from structperc.decode.marginals import nll

    features, labels, _ = toy_problem(8, lengths=lengths, L=4)
    gen = torch.Generator().manual_seed(3)
    node0 = torch.randn(features.num_tokens, 4, generator=gen, dtype=torch.float64)
    trans0 = torch.randn(4, 4, generator=gen, dtype=torch.float64)
    docs = list(range(features.num_docs))
    rows = pack_documents(lengths, row_tokens(lengths) if max(lengths) > 1 else 1)
    packed_order = [d for row in rows for d in row]
    for batch, doc_order in (
        (make_batch(features, docs), docs),
        (packed_batch(features, rows), packed_order),
    ):
        order = torch.cat(
            [
                torch.arange(int(features.doc_offsets[d]), int(features.doc_offsets[d + 1]))
                for d in doc_order
            ]
        )
        y = labels[order]
        node_a, trans_a = node0[order].clone().requires_grad_(), trans0.clone().requires_grad_()
        node_b, trans_b = node0[order].clone().requires_grad_(), trans0.clone().requires_grad_()
        got = transition_nll(node_a, trans_a, batch, y, scan)
        pot = chain_potentials(node_b, trans_b.expand(len(y), 4, 4), batch)
        want = nll(pot, batch.lengths, batch.pad(y), scan).sum()
        assert float(got.detach()) == pytest.approx(float(want.detach()), rel=1e-12)
        got.backward()
        want.backward()
        torch.testing.assert_close(node_a.grad, node_b.grad, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(trans_a.grad, trans_b.grad, rtol=1e-10, atol=1e-12)
        edges, ts_lengths = transition_log_potentials(node0[order], trans0, batch)
        assert edges.shape[:2] == (batch.num_docs, max(batch.max_length, 2) - 1)
        assert ts_lengths.tolist() == batch.lengths.clamp(min=2).tolist()


@pytest.mark.parametrize("edges", [True, False])
def test_observed_support_is_the_pairs_seen_in_training(edges):
    """crf/sparse.py: node pairs (f, y_t) and edge triples (f, y_{t-1}, y_t) of every feature
    occurrence (no triple at a document's first token), against a loop over the tokens."""
    from structperc.crf.sparse import Support

    features, labels, names = toy_problem(9, docs=7, F_=12, L=3)
    weights = ChainWeights(12, names, edges)
    support = Support.observed(weights, features, labels)
    node = torch.zeros(12, 3, dtype=torch.bool)
    edge = torch.zeros(12, 9, dtype=torch.bool) if edges else torch.ones(1, 9, dtype=torch.bool)
    starts = set(features.doc_offsets[:-1].tolist())
    for t in range(features.num_tokens):
        for f in features.ids[features.offsets[t] : features.offsets[t + 1]].tolist():
            node[f, labels[t]] = True
            if edges and t not in starts:
                edge[f, labels[t - 1] * 3 + labels[t]] = True
    # masks shaped like weights.dense_tables: one over the joint node | edge table with edges
    expected = [torch.cat([node, edge], dim=1)] if edges else [node, edge]
    assert len(support.masks) == len(expected)
    assert all(torch.equal(m, e) for m, e in zip(support.masks, expected, strict=True))
    assert support.size == int(node.sum() + edge.sum()) < 12 * 3 + edge.numel()


@pytest.mark.parametrize("edges", [True, False])
def test_lbfgs_on_the_observed_support_keeps_the_rest_at_zero(edges):
    """learner.support=observed: the weights outside the support stay exactly 0 (a non-zero
    start is zeroed), the objective falls every iteration, and the problem is learnt."""
    from structperc.crf.sparse import Support

    features, labels, names = toy_problem(7, docs=12, F_=8, L=3, learnable=True)
    weights = random_weights(8, names, edges=edges).float()
    logs = []
    fit(
        CRF(sigma2=10.0, tol=1e-7, support="observed"),
        ChainStructure(weights),
        Updater(weights),
        ChainData(features, labels),
        FitSettings(max_epochs=40, progress=False),
        on_epoch=logs.append,
    )
    support = Support.observed(weights, features, labels)
    for table, mask in zip(weights.dense_tables, support.masks, strict=True):
        assert bool((table[~mask] == 0).all())
        assert bool((table[mask] != 0).any())
    objectives = [e.extra["objective"] for e in logs]
    assert all(b <= a for a, b in zip(objectives, objectives[1:], strict=False))
    assert logs[-1].word_error == 0.0
    with pytest.raises(ValueError, match="support=observed needs learner.optimizer=lbfgs"):
        CRF(support="observed", optimizer="sgd")._validate()
