"""The compiled CRF objective with edge features (``native/edge_crf_kernels.py``) against the
torch path (the sequential scan over edge potentials) and against enumeration.

Both supports: every entry of the joint [F, L + L*L] table, and the observed support
(``crf.sparse.Support``: the parameters L-BFGS moves are the kept entries in the table's
row-major order).  Weights large enough to send documents through the log-space recursion
are included.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

pytest.importorskip("numba")

from structperc.crf.learner import CRF  # noqa: E402
from structperc.crf.optimization import LBFGSTraining  # noqa: E402
from structperc.features.extract import FeatureMatrix  # noqa: E402
from structperc.model.weights import ChainWeights  # noqa: E402
from structperc.structures.chain import ChainData, ChainStructure  # noqa: E402


def synthetic(docs=40, F=30, L=4, longest=9, seed=0, values=False):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, longest + 1, (docs,), generator=g)
    N = int(lengths.sum())
    per = torch.randint(0, 5, (N,), generator=g)  # (a token may have no feature)
    offsets = torch.zeros(N + 1, dtype=torch.long)
    offsets[1:] = per.cumsum(0)
    ids = torch.randint(0, F, (int(per.sum()),), generator=g).to(torch.int32)
    labels = torch.randint(0, L, (N,), generator=g)
    doc_offsets = torch.zeros(docs + 1, dtype=torch.long)
    doc_offsets[1:] = lengths.cumsum(0)
    vals = torch.tensor([0.5, 1.0, 2.0])[torch.randint(0, 3, (len(ids),), generator=g)]
    return ChainData(FeatureMatrix(ids, offsets, doc_offsets, vals if values else None), labels)


def weights(F, L, seed, scale=1.0) -> ChainWeights:
    w = ChainWeights(F, [f"y{i}" for i in range(L)], edges=True)
    g = torch.Generator().manual_seed(seed)
    w.joint.weight.data.copy_(torch.randn(w.joint.weight.shape, generator=g) * scale)
    return w


def objective(scan, support, data, w):
    learner = CRF(sigma2=10.0, scan=scan, support=support)
    training = LBFGSTraining(
        learner, ChainStructure(w), data.features, data.labels, 0, "cpu", False
    )
    f, grads = training.objective()
    return f, [g.clone() for g in grads], training.last["errors"], training


@pytest.mark.parametrize("support", ["all", "observed"])
@pytest.mark.parametrize("values", [False, True])
def test_the_edge_kernel_equals_the_torch_path(support, values):
    data = synthetic(values=values, seed=1)
    F, L = 30, 4
    f1, g1, e1, _ = objective("sequential", support, data, weights(F, L, 2))
    f2, g2, e2, training = objective("compiled", support, data, weights(F, L, 2))
    assert type(training.compiled).__name__ == "CompiledEdgeObjective"
    assert f2 == pytest.approx(f1, rel=1e-6)
    assert e1 == e2
    torch.testing.assert_close(g2[0], g1[0], rtol=1e-4, atol=1e-4)


def test_the_edge_kernel_equals_enumeration_at_huge_weights():
    """Weights of magnitude 500: the scaled recursion underflows on some documents, which the
    log-space recursion takes; the objective is the enumerated one."""
    data = synthetic(docs=12, F=8, L=3, longest=4, seed=3)
    F, L = 8, 3
    w = weights(F, L, 4, scale=500.0)
    f, _, _, training = objective("compiled", "all", data, w)
    joint = w.joint.weight.double()
    feats = data.features
    nll = 0.0
    for d in range(len(data)):
        t0, t1 = int(feats.doc_offsets[d]), int(feats.doc_offsets[d + 1])
        S = torch.zeros(t1 - t0, L + L * L, dtype=torch.float64)
        for t in range(t0, t1):
            for k in range(int(feats.offsets[t]), int(feats.offsets[t + 1])):
                S[t - t0] += joint[int(feats.ids[k])]
        scores = {y: labeling_score(S, y, L) for y in itertools.product(range(L), repeat=t1 - t0)}
        top = max(scores.values())
        log_z = top + math.log(sum(math.exp(s - top) for s in scores.values()))
        nll += log_z - scores[tuple(data.labels[t0:t1].tolist())]
    assert math.isfinite(f)
    assert training.last["nll"] == pytest.approx(nll, rel=1e-12)


def labeling_score(S: torch.Tensor, y: tuple, L: int) -> float:
    """A labeling's score from a document's joint rows S [T, L + L*L] (node | edge)."""
    s = sum(float(S[t, y[t]]) for t in range(len(y)))
    return s + sum(float(S[t, L + y[t - 1] * L + y[t]]) for t in range(1, len(y)))


def test_the_observed_support_is_gathered_in_table_order():
    data = synthetic(seed=5)
    F, L = 30, 4
    _, grads, _, training = objective("compiled", "observed", data, weights(F, L, 6))
    mask = training.support.masks[0]
    kernel = training.compiled
    assert len(kernel.cols) == int(mask.sum()) == len(grads[0])
    rows, cols = torch.nonzero(mask, as_tuple=True)
    assert np.array_equal(kernel.cols, cols.numpy().astype(np.int16))
    assert np.array_equal(np.diff(kernel.row_ptr), mask.sum(dim=1).numpy())
