"""L1 + L2 by OWL-QN (Andrew & Gao 2007): the pseudo-gradient by hand, the optimum of a lasso
problem against coordinate descent, a CRF's optimality conditions against a gradient by
enumeration, sparsity growing with c1, and CRFsuite's c2 as sigma2."""

from __future__ import annotations

import itertools
import math
import re

import pytest
import torch
from test_crf_learner import objective_of, toy_problem

from structperc.crf.learner import CRF
from structperc.crf.optimization import LBFGS, pseudo_gradient
from structperc.learn.fitting import FitSettings
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.structures.chain import ChainData, ChainStructure
from structperc.trainer import fit


def test_pseudo_gradient_by_hand():
    x = torch.tensor([1.0, -1.0, 0.0, 0.0, 0.0])
    g = torch.tensor([0.5, 0.5, -2.0, 2.0, 0.3])
    # off zero: g + c1 sign(x); at zero: g + c1 if < 0, g - c1 if > 0, else 0 (|g| <= c1)
    (pg,) = pseudo_gradient([x], [g], 1.0)
    assert pg.tolist() == [1.5, -0.5, -1.0, 1.0, 0.0]


def soft_threshold(z: float, c: float) -> float:
    return math.copysign(max(abs(z) - c, 0.0), z)


def lasso_by_coordinate_descent(H, b, c1, sweeps=300) -> torch.Tensor:
    """argmin 1/2 x'Hx - b'x + c1 |x|_1 by exact coordinate minimisation (the slow reference)."""
    H, b, n = H.tolist(), b.tolist(), len(b)
    x = [0.0] * n
    for _ in range(sweeps):
        for i in range(n):
            rest = sum(H[i][j] * x[j] for j in range(n) if j != i)
            x[i] = soft_threshold(b[i] - rest, c1) / H[i][i]
    return torch.tensor(x, dtype=torch.float64)


def test_owlqn_reaches_the_lasso_optimum_of_coordinate_descent():
    gen = torch.Generator().manual_seed(0)
    A = torch.randn(8, 8, generator=gen, dtype=torch.float64)
    H = A @ A.T / 8 + 0.3 * torch.eye(8, dtype=torch.float64)
    b = torch.randn(8, generator=gen, dtype=torch.float64)
    c1 = 0.6
    x = torch.zeros(8, dtype=torch.float64)

    def objective():
        return float(0.5 * x @ H @ x - b @ x), [H @ x - b]

    opt = LBFGS([x], history=5, l1=c1)
    losses = []
    for _ in range(200):
        info = opt.step(objective)
        if not info.accepted:
            break
        losses.append(info.loss)
    assert all(b <= a + 1e-12 for a, b in zip(losses, losses[1:], strict=False))
    expected = lasso_by_coordinate_descent(H, b, c1)
    assert 0 < int((expected == 0).sum()) < 8  # a problem with zeros and non-zeros
    assert float((x - expected).abs().max()) <= 1e-6, (x, expected)
    assert torch.equal(x == 0, expected == 0)  # exact zeros, as L1 promises
    assert losses[-1] == pytest.approx(
        float(0.5 * expected @ H @ expected - b @ expected + c1 * expected.abs().sum()), abs=1e-9
    )


def enumerated_gradient(weights: ChainWeights, features, labels, sigma2: float) -> list:
    """d/dw of sum_d -log p(y*_d | x_d) + ||w||^2 / (2 sigma2), the likelihood by enumerating every
    labeling and scoring it feature by feature (no DP), the derivative by autograd."""
    node = weights.tables()["node"].detach().clone().requires_grad_(True)
    edge = weights.tables()["edge"].detach().clone().requires_grad_(True)
    L = weights.num_labels
    total = (node.square().sum() + edge.square().sum()) / (2 * sigma2)
    for d in range(features.num_docs):
        lo, hi = int(features.doc_offsets[d]), int(features.doc_offsets[d + 1])
        feats = [
            features.ids[features.offsets[t] : features.offsets[t + 1]].long()
            for t in range(lo, hi)
        ]

        def score(y, feats=feats):
            s = sum(node[f, y[t]].sum() for t, f in enumerate(feats))
            return s + sum(edge[feats[t], y[t - 1] * L + y[t]].sum() for t in range(1, len(y)))

        ys = list(itertools.product(range(L), repeat=hi - lo))
        scores = torch.stack([score(y) for y in ys])
        total = total + torch.logsumexp(scores, 0) - score(labels[lo:hi].tolist())
    total.backward()
    return [node.grad, edge.grad]


def fit_crf(learner: CRF, problem, epochs: int, double: bool = False):
    features, labels, names = problem
    num_features = int(features.ids.max()) + 1  # toy_problem: every feature occurs
    weights = ChainWeights(num_features, names)
    if double:
        weights = weights.double()
    settings = FitSettings(max_epochs=epochs, progress=False)
    data = ChainData(features, labels)
    result = fit(learner, ChainStructure(weights), Updater(weights), data, settings)
    return weights, result


def test_owlqn_crf_meets_the_l1_optimality_conditions():
    problem = toy_problem(3, docs=5, F_=5, L=2, learnable=True)
    c1, sigma2 = 0.4, 4.0
    learner = CRF(sigma2=sigma2, c1=c1, tol=1e-12, patience=5, dtype="float64")
    weights, result = fit_crf(learner, problem, 300, double=True)
    features, labels, _ = problem
    grads = enumerated_gradient(weights, features, labels, sigma2)
    zero = nonzero = 0
    for w, g in zip((weights.tables()["node"], weights.tables()["edge"]), grads, strict=True):
        at_zero = w == 0
        zero, nonzero = zero + int(at_zero.sum()), nonzero + int((~at_zero).sum())
        # |df/dw_i| <= c1 where w_i = 0; df/dw_i + c1 sign(w_i) = 0 elsewhere
        assert all(float(v) <= c1 + 1e-6 for v in g[at_zero].abs())
        assert float((g[~at_zero] + c1 * w[~at_zero].sign()).abs().max()) <= 1e-5
    assert zero > 0 and nonzero > 0
    assert result.summary["nonzero_weights"] == nonzero
    assert result.summary["parameters"] == zero + nonzero


def test_fewer_weights_survive_a_larger_c1():
    problem = toy_problem(5, docs=10, F_=10, L=3, learnable=True)
    fractions = []
    for c1 in (0.0, 0.3, 1.5):
        weights, result = fit_crf(CRF(sigma2=10.0, c1=c1, tol=1e-9), problem, 25)
        fractions.append(result.summary["nonzero_fraction"])
        nonzero = sum(int(torch.count_nonzero(t)) for t in weights.dense_tables)
        assert result.summary["nonzero_weights"] == nonzero
    assert fractions[0] == 1.0 and fractions[0] > fractions[1] > fractions[2] > 0


def test_l1_on_the_observed_support_keeps_the_rest_at_zero():
    problem = toy_problem(5, docs=10, F_=10, L=3, learnable=True)
    _, everything = fit_crf(CRF(sigma2=10.0, support="observed"), problem, 20)
    weights, result = fit_crf(CRF(sigma2=10.0, c1=0.5, support="observed"), problem, 20)
    assert result.summary["parameters"] == everything.summary["parameters"]
    assert result.summary["parameters"] < sum(t.numel() for t in weights.dense_tables)
    assert result.summary["nonzero_weights"] < everything.summary["nonzero_weights"]


def test_c2_is_crfsuites_l2_coefficient_on_the_summed_loss():
    assert CRF(c2=0.1).sigma2 == 5.0 and CRF(c2=0.005).sigma2 == 100.0
    assert CRF(c2=0.0).sigma2 == math.inf
    features, labels, names = toy_problem(2, docs=4, F_=6, L=3)
    weights = ChainWeights(6, names).double()
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for t in weights.tables().values():
            t.copy_(torch.randn(t.shape, generator=gen, dtype=t.dtype))
    f, nll, _, _ = objective_of(CRF(c2=0.3), weights, features, labels)
    sq = sum(float(t.square().sum()) for t in weights.tables().values())
    assert f - nll == pytest.approx(0.3 * sq, rel=1e-12)  # loss + c2 ||w||^2


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"c1": -0.1}, "learner.c1 must be >= 0, got -0.1"),
        (
            {"c1": 0.1, "optimizer": "sgd"},
            "learner.c1 > 0 (L1, by OWL-QN) needs learner.optimizer=lbfgs",
        ),
    ],
)
def test_bad_l1_settings_are_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        fit_crf(CRF(**kwargs), toy_problem(1, docs=3, F_=4, L=2), 1)
    with pytest.raises(ValueError, match=re.escape("learner.c2 must be >= 0, got -1")):
        CRF(c2=-1)
