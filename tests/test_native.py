"""The compiled kernels (structperc/native/) against brute force and against the torch paths.

Viterbi and the forward-backward on tiny chains are checked by enumerating every labeling; the
online epochs against ``trainer.run_epochs``'s Python loop over ``learner.step`` (the perceptron
bit for bit, PA and AROW to float rounding); the CRF's objective and gradient against
``crf.objective.full_objective``; the estimator's compiled predictions against the torch ones.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

pytest.importorskip("numba")

from structperc.crf.learner import CRF  # noqa: E402
from structperc.crf.optimization import LBFGSTraining, SGDTraining  # noqa: E402
from structperc.decode.viterbi import _token_recursion  # noqa: E402
from structperc.features.extract import FeatureMatrix  # noqa: E402
from structperc.learn.arow import AROW  # noqa: E402
from structperc.learn.fitting import FitSettings  # noqa: E402
from structperc.learn.margin import MarginPerceptron  # noqa: E402
from structperc.learn.passive_aggressive import PassiveAggressive  # noqa: E402
from structperc.learn.perceptron import Perceptron  # noqa: E402
from structperc.model.updates import Updater  # noqa: E402
from structperc.model.weights import ChainWeights  # noqa: E402
from structperc.native import chain_kernels, crf_kernels  # noqa: E402
from structperc.native.chain_predict import compiled_chain, decode  # noqa: E402
from structperc.native.online import compiled_epochs  # noqa: E402
from structperc.structures.chain import ChainData, ChainStructure  # noqa: E402
from structperc.trainer import run_epochs  # noqa: E402


def synthetic(docs=120, F=60, L=4, seed=0, values=False, longest=12) -> tuple[ChainData, int, int]:
    """Documents of 1..longest tokens with 1-5 features each; a token's label is a function of
    its first feature (learnable, with mistakes along the way)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, longest + 1, (docs,), generator=g)
    N = int(lengths.sum())
    per = torch.randint(1, 6, (N,), generator=g)
    offsets = torch.zeros(N + 1, dtype=torch.long)
    offsets[1:] = per.cumsum(0)
    ids = torch.randint(0, F, (int(per.sum()),), generator=g).to(torch.int32)
    labels = ids[offsets[:-1]].long() % L
    doc_offsets = torch.zeros(docs + 1, dtype=torch.long)
    doc_offsets[1:] = lengths.cumsum(0)
    # values that are powers of two: value * weight is exact, so the sums do not depend on how
    # a library orders or fuses the products (near-ties would break apart otherwise)
    powers = torch.tensor([0.5, 1.0, 2.0])
    vals = powers[torch.randint(0, 3, (len(ids),), generator=g)] if values else None
    return ChainData(FeatureMatrix(ids, offsets, doc_offsets, vals), labels), F, L


def random_weights(F, L, seed=0, integer=False) -> ChainWeights:
    w = ChainWeights(F, [f"y{i}" for i in range(L)], edges=False)
    g = torch.Generator().manual_seed(seed)
    for t in w.dense_tables:
        t.data.copy_(
            torch.randint(-2, 3, t.shape, generator=g).float()
            if integer
            else torch.randn(t.shape, generator=g)
        )
    return w


def kernel_inputs(w: ChainWeights, f: FeatureMatrix):
    L = w.num_labels
    node = w.node.weight.detach().numpy()
    values = f.values.numpy() if f.values is not None else np.ones(1, np.float32)
    return (
        f.doc_offsets.numpy(),
        f.ids.numpy(),
        f.offsets.numpy(),
        values,
        f.values is not None,
        node,
        w.edge.weight.detach().numpy().reshape(L, L),
    )


def labelings(T, L):
    return itertools.product(range(L), repeat=T)


def brute_scores(w: ChainWeights, f: FeatureMatrix, d: int):
    """Token scores [T, L] (float64) and transitions [L, L] of document d, and every labeling's
    score."""
    L = w.num_labels
    node = w.node.weight.double()
    trans = w.edge.weight.double().view(L, L)
    t0, t1 = int(f.doc_offsets[d]), int(f.doc_offsets[d + 1])
    S = torch.zeros(t1 - t0, L, dtype=torch.float64)
    for t in range(t0, t1):
        for k in range(int(f.offsets[t]), int(f.offsets[t + 1])):
            v = 1.0 if f.values is None else float(f.values[k])
            S[t - t0] += v * node[int(f.ids[k])]
    scores = {
        y: float(
            sum(S[t, y[t]] for t in range(len(y)))
            + sum(trans[y[t - 1], y[t]] for t in range(1, len(y)))
        )
        for y in labelings(t1 - t0, L)
    }
    return S, trans, scores


@pytest.mark.parametrize("values", [False, True])
def test_viterbi_is_the_best_labeling(values):
    data, F, L = synthetic(docs=30, F=12, L=3, longest=4, values=values, seed=1)
    for seed in range(3):
        w = random_weights(F, L, seed)
        out = np.empty(data.num_tokens, np.int64)
        chain_kernels.predict_all(*kernel_inputs(w, data.features), out)
        f = data.features
        for d in range(len(data)):
            _, _, scores = brute_scores(w, f, d)
            a, b = int(f.doc_offsets[d]), int(f.doc_offsets[d + 1])
            best = max(scores.values())
            assert scores[tuple(out[a:b].tolist())] == pytest.approx(best, abs=1e-5)


def test_viterbi_breaks_ties_as_the_torch_recursion():
    """Integer weights (a perceptron's) tie often: the first maximum, as _token_recursion."""
    data, F, L = synthetic(docs=200, F=8, L=4, longest=10, seed=2)
    w = random_weights(F, L, seed=3, integer=True)
    out = np.empty(data.num_tokens, np.int64)
    chain_kernels.predict_all(*kernel_inputs(w, data.features), out)
    structure = ChainStructure(w)
    f = data.features
    for d in range(len(data)):
        a, b = int(f.doc_offsets[d]), int(f.doc_offsets[d + 1])
        node, edge = w.csr_scores(
            f.ids[f.offsets[a] : f.offsets[b]], f.offsets[a : b + 1] - f.offsets[a]
        )
        path = _token_recursion(node, edge)[0] if b - a > 1 else [int(node[0].argmax())]
        assert out[a:b].tolist() == path, d
    by_document = compiled_chain(structure, "cpu").labels(f)  # the estimator's decoder
    assert np.concatenate(by_document).tolist() == out.tolist()


@pytest.mark.parametrize("batch_size", [1, 3, 256])
def test_the_pipelines_decode_is_the_torch_predict(batch_size, monkeypatch):
    """``decode`` (the labeler's, the cascade's and the bench's prediction) gives
    ``ChainStructure.predict``'s labels, through the compiled decoder where it applies and the
    torch path where the data constrain the labels."""
    data, F, L = synthetic(docs=200, F=8, L=4, longest=10, seed=2)
    structure = ChainStructure(random_weights(F, L, seed=3, integer=True))
    prediction = ChainData(data.features)
    expected = structure.predict(prediction, batch_size=batch_size)
    calls = []
    torch_predict = ChainStructure.predict
    monkeypatch.setattr(
        ChainStructure, "predict", lambda *a, **k: calls.append(1) or torch_predict(*a, **k)
    )
    assert decode(structure, prediction, batch_size=batch_size) == expected
    assert calls == []  # compiled
    allowed = torch.ones(data.num_tokens, L, dtype=torch.bool)
    allowed[::3, 0] = False
    constrained = ChainData(data.features, allowed=allowed)
    assert decode(structure, constrained, batch_size) == torch_predict(structure, constrained)
    assert calls == [1]  # the torch path


@pytest.mark.parametrize("values", [False, True])
def test_marginals_and_nll_by_enumeration(values):
    data, F, L = synthetic(docs=12, F=10, L=3, longest=4, values=values, seed=4)
    w = random_weights(F, L, seed=5)
    f = data.features
    out = np.empty((data.num_tokens, L))
    crf_kernels.node_marginals(*kernel_inputs(w, f), out)
    grad_node, grad_trans = np.zeros((F, L)), np.zeros((L, L))
    doc_offsets, ids, offsets, vals, weighted, node, trans = kernel_inputs(w, f)
    total, _ = crf_kernels.nll_gradient(
        doc_offsets, ids, offsets, vals, weighted, data.labels.numpy(), node, trans,
        grad_node, grad_trans,
    )  # fmt: skip
    expected_total = 0.0
    for d in range(len(data)):
        _, _, scores = brute_scores(w, f, d)
        log_z = math.log(sum(math.exp(s) for s in scores.values()))
        a, b = int(f.doc_offsets[d]), int(f.doc_offsets[d + 1])
        gold = tuple(data.labels[a:b].tolist())
        expected_total += log_z - scores[gold]
        for t in range(b - a):
            for j in range(L):
                p = sum(math.exp(s - log_z) for y, s in scores.items() if y[t] == j)
                assert out[a + t, j] == pytest.approx(p, abs=1e-9)
    assert total == pytest.approx(expected_total, rel=1e-9)


@pytest.mark.parametrize("values", [False, True])
def test_crf_objective_and_gradient_equal_the_torch_path(values):
    data, F, L = synthetic(docs=80, F=40, L=5, values=values, seed=6)
    w = random_weights(F, L, seed=7)
    structure = ChainStructure(w)
    out = {}
    for scan in ("sequential", "compiled"):
        training = LBFGSTraining(
            CRF(sigma2=10.0, scan=scan), structure, data.features, data.labels, 0, "cpu", False
        )
        f, grads = training.objective()
        out[scan] = (f, grads, training.last["errors"])
    (f1, g1, e1), (f2, g2, e2) = out["sequential"], out["compiled"]
    assert f2 == pytest.approx(f1, rel=1e-6)
    assert e1 == e2
    for a, b in zip(g1, g2, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("values", [False, True])
def test_crf_sgd_epochs_equal_the_torch_path(values):
    data, F, L = synthetic(docs=80, F=40, L=5, values=values, seed=10)
    out = {}
    for scan in ("scaled", "compiled"):
        w = random_weights(F, L, seed=11)
        learner = CRF(sigma2=0.05, scan=scan, optimizer="sgd", lr=0.2, batch_tokens=40)
        training = SGDTraining(
            learner, ChainStructure(w), data.features, data.labels, 0, "cpu", False
        )
        its = [training.iteration(k) for k in (1, 2)]
        out[scan] = (w, its, training.opt.seen)
    (w1, i1, s1), (w2, i2, s2) = out["scaled"], out["compiled"]
    assert s1 == s2 and len(training.buckets) > 1
    for a, b in zip(i1, i2, strict=True):
        assert b.nll == pytest.approx(a.nll, rel=1e-5)
        assert b.objective == pytest.approx(a.objective, rel=1e-5)
        assert a.errors == b.errors
    for a, b in zip(w1.dense_tables, w2.dense_tables, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_compiled_sgd_refuses_edge_features():
    """L-BFGS has a compiled edge-feature objective (tests/test_edge_crf_kernel.py); SGD's
    compiled epochs keep one transition matrix and say so."""
    data, F, L = synthetic(docs=5, F=10, L=3)
    structure = ChainStructure(ChainWeights(F, ["a", "b", "c"], edges=True))
    with pytest.raises(ValueError, match="edges=false"):
        SGDTraining(
            CRF(scan="compiled", optimizer="sgd"),
            structure,
            data.features,
            data.labels,
            0,
            "cpu",
            False,
        )


def train(learner, compiled: bool, values=False, epochs=3, journal=False):
    data, F, L = synthetic(values=values, seed=8)
    w = ChainWeights(F, [f"y{i}" for i in range(L)], edges=False)
    structure, updater = ChainStructure(w), Updater(w, average=learner.average)
    learner.start(updater)
    settings = FitSettings(max_epochs=epochs, progress=False, compiled=compiled, tol=0)
    result = run_epochs(learner, structure, updater, data, settings)
    return w, updater, result.history


LEARNERS = {
    "perceptron": lambda: Perceptron(),
    "averaged": lambda: Perceptron(average=True),
    "pa": lambda: PassiveAggressive(pa_type=0),
    "pa1": lambda: PassiveAggressive(pa_type=1, C=0.5),
    "pa2": lambda: PassiveAggressive(pa_type=2, C=0.5, error_sensitive=False),
    "arow": lambda: AROW(),
    "arow_diagonal": lambda: AROW(variance=0.5, gamma=2.0, variance_rule="diagonal"),
}


@pytest.mark.parametrize("values", [False, True])
@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_compiled_epochs_equal_the_python_loop(name, values):
    (w1, u1, h1), (w2, u2, h2) = (train(LEARNERS[name](), c, values) for c in (False, True))
    assert [(e.errors, e.updates, e.tokens) for e in h1] == [
        (e.errors, e.updates, e.tokens) for e in h2
    ]
    for e1, e2 in zip(h1, h2, strict=True):
        assert e1.extra.get("loss", 0.0) == pytest.approx(e2.extra.get("loss", 0.0), rel=1e-5)
    exact = name in ("perceptron", "averaged") and not values  # integer weights
    tol = {"rtol": 0, "atol": 0} if exact else {"rtol": 1e-5, "atol": 1e-5}
    for n, t in w1.tables().items():
        torch.testing.assert_close(t, w2.tables()[n], **tol)
    assert u1.seen == u2.seen
    for n, t in u1.sums.items():
        torch.testing.assert_close(t, u2.sums[n], rtol=1e-5, atol=1e-3)


def train_edges(average: bool, compiled: bool, values=False, longest=12, node_only=False):
    """The perceptron over a chain with edge features (Kazama & Torisawa's Table 1 layout)."""
    data, F, L = synthetic(values=values, seed=11, longest=longest, docs=60)
    w = ChainWeights(F, [f"y{i}" for i in range(L)], edges=True)
    if node_only:  # a third of the rows without edge weights
        w.set_node_only(torch.arange(F) % 3 == 0)
    structure, updater = ChainStructure(w), Updater(w, average=average)
    settings = FitSettings(max_epochs=3, progress=False, compiled=compiled, tol=0)
    result = run_epochs(Perceptron(average=average), structure, updater, data, settings)
    return w, updater, result.history


@pytest.mark.parametrize("node_only", [False, True], ids=["all_edges", "node_only_rows"])
@pytest.mark.parametrize("longest", [12, 150], ids=["short", "long"])  # long: the blocked scan
@pytest.mark.parametrize("values", [False, True])
@pytest.mark.parametrize("average", [False, True], ids=["perceptron", "averaged"])
def test_compiled_edge_epochs_equal_the_python_loop(average, values, longest, node_only):
    """Bit for bit: the same paths, updates and tables (integer weights; the values are powers
    of two, so every sum is exact in float32)."""
    runs = [train_edges(average, c, values, longest, node_only) for c in (False, True)]
    (w1, u1, h1), (w2, u2, h2) = runs
    assert [(e.errors, e.updates, e.tokens) for e in h1] == [
        (e.errors, e.updates, e.tokens) for e in h2
    ]
    assert h1[-1].errors < h1[0].errors  # it learns
    assert torch.equal(w1.joint.weight, w2.joint.weight)
    assert u1.seen == u2.seen
    for n, t in u1.sums.items():
        assert torch.equal(t, u2.sums[n]), n
    if node_only:
        assert torch.all(w2.tables()["edge"][w2.node_only] == 0)


def test_the_journal_lists_every_entry_an_edge_epoch_wrote():
    data, F, L = synthetic(seed=12)
    w = ChainWeights(F, [f"y{i}" for i in range(L)], edges=True)
    structure, updater = ChainStructure(w), Updater(w, average=True)
    epoch = compiled_epochs(Perceptron(average=True), structure, updater, data, "cpu")
    updater.journal = []
    stats = epoch(list(range(len(data))))
    assert stats.updates > 0 and updater.seen == len(data)
    for n, t in w.tables().items():
        touched = set(torch.cat([i for m, i in updater.journal if m == n]).tolist())
        changed = set(torch.nonzero(t.reshape(-1)).view(-1).tolist())
        assert changed and changed <= touched


def test_the_journal_lists_every_entry_an_epoch_wrote():
    data, F, L = synthetic(seed=9)
    w = ChainWeights(F, [f"y{i}" for i in range(L)], edges=False)
    structure, updater = ChainStructure(w), Updater(w, average=True)
    epoch = compiled_epochs(Perceptron(average=True), structure, updater, data, "cpu")
    updater.journal = []
    stats = epoch(list(range(len(data))))
    assert stats.updates > 0 and updater.seen == len(data)
    touched = {
        n: set(torch.cat([i for m, i in updater.journal if m == n]).tolist())
        for n in ("node", "edge")
    }
    for n, t in w.tables().items():
        changed = set(torch.nonzero(t.reshape(-1)).view(-1).tolist())
        assert changed <= touched[n]


def test_what_has_no_compiled_epoch():
    data, F, L = synthetic(docs=5)
    plain = ChainStructure(ChainWeights(F, [f"y{i}" for i in range(L)], edges=False))
    up = Updater(plain.weights)
    assert compiled_epochs(Perceptron(), plain, up, data, "cpu") is not None
    assert compiled_epochs(MarginPerceptron(C=1.0), plain, up, data, "cpu") is None
    edges = ChainStructure(ChainWeights(F, [f"y{i}" for i in range(L)], edges=True))
    assert compiled_epochs(Perceptron(), edges, Updater(edges.weights), data, "cpu") is not None
    pa = PassiveAggressive(pa_type=1, C=0.5)
    assert compiled_epochs(pa, edges, Updater(edges.weights), data, "cpu") is None
    iob = ChainStructure(ChainWeights(F, ["O", "B-X", "I-X"], edges=False), constraints="iob2")
    assert compiled_epochs(Perceptron(), iob, Updater(iob.weights), data, "cpu") is None
    assert compiled_chain(iob, "cpu") is None
    assert compiled_epochs(Perceptron(), plain, up, data, "meta") is None


def test_without_numba_the_face_takes_the_torch_paths(monkeypatch):
    import structperc.native.chain_predict as chain_predict
    import structperc.native.online as online
    import structperc.sklearn.algorithms as algorithms

    for module in (online, chain_predict, algorithms):
        monkeypatch.setattr(module, "numba_available", lambda: False)
    assert algorithms.crf_scan("lbfgs", "cpu") == "sequential"
    assert algorithms.crf_scan("sgd", "cpu") == "auto"
    data, F, L = synthetic(docs=5)
    plain = ChainStructure(ChainWeights(F, [f"y{i}" for i in range(L)], edges=False))
    assert compiled_epochs(Perceptron(), plain, Updater(plain.weights), data, "cpu") is None
    assert compiled_chain(plain, "cpu") is None
