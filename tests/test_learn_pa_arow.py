"""The passive-aggressive updates (PA, PA-I, PA-II) and AROW: one update by hand, every update of
a few epochs against a dense reference that finds the rival by enumeration, and AROW's variances
through a checkpoint and resume."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from test_model_updates import feature_matrix, phi
from test_structures import chain_oracle, random_matrix, token_ids

from structperc.checkpoint import Checkpoint
from structperc.data.synthetic import make_corpus
from structperc.features.pipeline import LocalFeatures
from structperc.learn.arow import AROW
from structperc.learn.fitting import FitSettings
from structperc.learn.passive_aggressive import PassiveAggressive, pa_loss, pa_tau
from structperc.model.batch import make_batch
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.structures.chain import ChainData, ChainStructure
from structperc.trainer import fit

# ---------------------------------------------------------------- one update, by hand

DOC = [[0], [1]]  # two tokens, feature 0 at the first, feature 1 at the second
F, L = 2, 2
GOLD = [0, 0]
# node weights: label 1 scores 3 at both tokens, so Viterbi says [1, 1]: s(y') = 6, s(y*) = 0;
# d = Phi(y*) - Phi(y') has six entries of +-1 (node[0, 0], node[0, 1], node[1, 0], node[1, 1],
# edge[1, 0 -> 0], edge[1, 1 -> 1]): ||d||^2 = 6; two tokens wrong.
NODE = [[0.0, 3.0], [0.0, 3.0]]
MARGIN, NORM_SQ, WRONG = -6.0, 6.0, 2


def one_step(learner):
    weights = ChainWeights(F, ["O", "B-X"])
    weights.tables()["node"].copy_(torch.tensor(NODE))
    before = {k: v.clone() for k, v in weights.tables().items()}
    updater = Updater(weights)
    learner.start(updater)
    batch = make_batch(feature_matrix([DOC]), [0])
    stats = learner.step(ChainStructure(weights), updater, batch, torch.tensor(GOLD))
    d = {k: phi([DOC], [GOLD], F, L)[k] - phi([DOC], [[1, 1]], F, L)[k] for k in before}
    return weights, before, d, stats


@pytest.mark.parametrize(
    "pa_type, C, sensitive, tau",
    [
        (0, 1.0, True, (6 + math.sqrt(2)) / 6),  # PA: loss / ||d||^2
        (0, 1.0, False, 7 / 6),  # loss = 6 + 1
        (1, 1.0, True, 1.0),  # PA-I: min(C, (6 + sqrt 2) / 6)
        (1, 5.0, True, (6 + math.sqrt(2)) / 6),
        (2, 1.0, True, (6 + math.sqrt(2)) / 6.5),  # PA-II: loss / (||d||^2 + 1 / (2 C))
        (2, 0.25, False, 7 / 8),
    ],
)
def test_pa_update_by_hand(pa_type, C, sensitive, tau):
    learner = PassiveAggressive(C=C, pa_type=pa_type, error_sensitive=sensitive)
    weights, before, d, stats = one_step(learner)
    assert (stats.errors, stats.updates) == (2, 1)
    assert stats.extra["loss"] == pytest.approx(6 + (math.sqrt(2) if sensitive else 1))
    for k, table in weights.tables().items():
        assert torch.allclose(table, before[k] + tau * d[k], rtol=1e-6, atol=1e-6), k
    if pa_type == 0:  # an unclipped PA step makes the margin exactly sqrt(2) (resp. 1)
        margin = sum(float((weights.tables()[k] * d[k]).sum()) for k in d)
        assert margin == pytest.approx(math.sqrt(2) if sensitive else 1.0, rel=1e-6)


def test_pa_tau_closed_forms():
    assert pa_loss(margin=-6, wrong=4, error_sensitive=True) == 8
    assert pa_loss(margin=-6, wrong=4, error_sensitive=False) == 7
    assert pa_tau(loss=3, norm_sq=2, C=1, pa_type=0) == 1.5
    assert pa_tau(loss=3, norm_sq=2, C=1, pa_type=1) == 1.0
    assert pa_tau(loss=3, norm_sq=2, C=0.5, pa_type=2) == 1.0
    assert pa_tau(loss=0, norm_sq=2, C=1, pa_type=0) == 0.0
    assert pa_tau(loss=3, norm_sq=0, C=1, pa_type=0) == 0.0


@pytest.mark.parametrize("rule", ["crfsuite", "diagonal"])
def test_arow_update_by_hand(rule):
    # variance 0.5, gamma 2: d' Sigma d = 0.5 * 6 = 3, beta = 1 / (3 + 2) = 0.2; loss = 6 + 2 = 8
    # (tokens wrong, no square root), alpha = 1.6: mu += 1.6 * 0.5 * d = 0.8 d
    learner = AROW(variance=0.5, gamma=2.0, variance_rule=rule)
    weights, before, d, stats = one_step(learner)
    assert (stats.errors, stats.updates, stats.extra["loss"]) == (2, 1, 8.0)
    for k, table in weights.tables().items():
        assert torch.allclose(table, before[k] + 0.8 * d[k], rtol=1e-6, atol=1e-6), k
        touched = d[k] != 0
        # crfsuite: 1 / (1 / 0.5 + 1 / 2) = 0.4; diagonal: 0.5 - 0.2 * 0.25 = 0.45
        shrunk = 0.4 if rule == "crfsuite" else 0.45
        var = learner.variances[k]
        assert torch.allclose(var[touched], torch.tensor(shrunk))
        assert torch.all(var[~touched] == 0.5)


def test_settings_are_checked():
    for bad in ({"pa_type": 3}, {"C": 0.0}):
        with pytest.raises(ValueError, match="learner"):
            PassiveAggressive(**bad)
    for bad in ({"variance": 0.0}, {"gamma": -1.0}, {"variance_rule": "full"}):
        with pytest.raises(ValueError, match="learner"):
            AROW(**bad)


# ---------------------------------------------------------------- against a dense reference

LENGTHS, FEATURES, LABELS = [3, 1, 4, 2], 7, 3


def dense_phi(features, d: int, y: list[int]) -> np.ndarray:
    """Phi(x_d, y) as one vector over node [F, L] then edge [F, L*L], feature repeats counted."""
    node, edge = np.zeros((FEATURES, LABELS)), np.zeros((FEATURES, LABELS * LABELS))
    first = int(features.doc_offsets[d])
    for t, label in enumerate(y):
        for f in token_ids(features, first + t):
            node[f, label] += 1
            if t:
                edge[f, y[t - 1] * LABELS + label] += 1
    return np.concatenate([node.ravel(), edge.ravel()])


def flat_weights(weights: ChainWeights) -> np.ndarray:
    return np.concatenate([weights.tables()[n].double().numpy().ravel() for n in ("node", "edge")])


class DenseReference:
    """The learners' definitions on dense vectors, the rival found by enumerating labelings."""

    def __init__(self, learner, w: np.ndarray):
        self.learner, self.w = learner, w.copy()
        self.sigma = np.full_like(w, getattr(learner, "variance", 1.0))

    def step(self, weights: ChainWeights, features, d: int, gold: list[int]) -> None:
        best = max(
            itertools.product(range(LABELS), repeat=len(gold)),
            key=lambda y: chain_oracle(weights, features, d, list(y)),
        )
        wrong = sum(a != b for a, b in zip(gold, best, strict=True))
        if not wrong:
            return
        delta = dense_phi(features, d, gold) - dense_phi(features, d, list(best))
        margin = float(delta @ self.w)
        learner = self.learner
        if isinstance(learner, PassiveAggressive):
            loss = -margin + (math.sqrt(wrong) if learner.error_sensitive else 1.0)
            sq = float(delta @ delta)
            tau = [loss / sq, min(learner.C, loss / sq), loss / (sq + 0.5 / learner.C)]
            self.w += tau[learner.pa_type] * delta
            return
        beta = 1.0 / (float(self.sigma @ (delta * delta)) + learner.gamma)
        self.w += max(0.0, wrong - margin) * beta * self.sigma * delta
        if learner.variance_rule == "crfsuite":
            self.sigma = 1.0 / (1.0 / self.sigma + delta * delta / learner.gamma)
        else:
            self.sigma = self.sigma - beta * self.sigma**2 * delta**2


@pytest.mark.parametrize(
    "learner",
    [
        PassiveAggressive(pa_type=0, average=False),
        PassiveAggressive(pa_type=1, C=0.05, average=False),
        PassiveAggressive(pa_type=2, C=0.3, error_sensitive=False, average=False),
        AROW(variance=0.7, gamma=0.5),
        AROW(variance=2.0, gamma=3.0, variance_rule="diagonal"),
    ],
    ids=["PA", "PA-I", "PA-II", "AROW", "AROW-diagonal"],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_updates_equal_a_dense_reference_with_enumeration(learner, seed):
    gen = torch.Generator().manual_seed(seed)
    features = random_matrix(LENGTHS, FEATURES, gen)
    gold = torch.randint(0, LABELS, (sum(LENGTHS),), generator=gen)
    data = ChainData(features, gold)
    weights = ChainWeights(FEATURES, ["A", "B", "C"])
    with torch.no_grad():
        for t in weights.tables().values():
            t.copy_(torch.randn(t.shape, generator=gen))
    structure, updater = ChainStructure(weights), Updater(weights)
    reference = DenseReference(learner, flat_weights(weights))
    learner.start(updater)
    moved = 0
    for _epoch in range(3):
        for d in range(len(LENGTHS)):
            batch, y = structure.instance(data, d, "cpu")
            reference.step(weights, features, d, y.tolist())
            moved += learner.step(structure, updater, batch, y).updates
            np.testing.assert_allclose(flat_weights(weights), reference.w, rtol=1e-5, atol=1e-5)
            if isinstance(learner, AROW):
                sigma = np.concatenate(
                    [learner.variances[n].double().numpy().ravel() for n in ("node", "edge")]
                )
                np.testing.assert_allclose(sigma, reference.sigma, rtol=1e-5)
    assert moved >= 3


# ---------------------------------------------------------------- training, checkpoint, resume


@pytest.fixture(scope="module")
def corpus():
    train = make_corpus(12, seed=0, max_sentences=4)
    lf = LocalFeatures(gazetteer="none", window=1).fit(train)
    labels = sorted({t for d in train for t in d.tags}, key=lambda t: (t != "O", t))
    index = {t: i for i, t in enumerate(labels)}
    y = torch.tensor([index[t] for d in train for t in d.tags])
    return lf.num_features, labels, ChainData(lf.transform(train, training=True), y)


def train(corpus, learner, epochs, **kw):
    num_features, labels, data = corpus
    weights = ChainWeights(num_features, labels)
    updater = Updater(weights, average=learner.average)
    settings = FitSettings(max_epochs=epochs, tol=0.0, patience=100, seed=3, progress=False)
    result = fit(learner, ChainStructure(weights), updater, data, settings, **kw)
    return weights, updater, result


@pytest.mark.parametrize("make", [lambda: AROW(), lambda: PassiveAggressive()], ids=["AROW", "PA"])
def test_a_resumed_run_ends_as_an_uninterrupted_one(corpus, tmp_path, make):
    w_all, u_all, r_all = train(corpus, make(), 4)
    learner = make()
    checkpoint = Checkpoint(tmp_path / "checkpoint", {"labels": corpus[1]})
    train(corpus, learner, 2, checkpoint=checkpoint)
    if isinstance(learner, AROW):  # the variances moved: a resume must restore them
        assert any(bool((v < 1.0).any()) for v in learner.variances.values())
    resumed = make()
    w, u, r = train(corpus, resumed, 4, checkpoint=checkpoint, resume=True)
    assert r.resumed_from == 2
    assert [h.errors for h in r.history] == [h.errors for h in r_all.history]
    for n, t in u.averaged_tables().items():
        assert torch.equal(t, u_all.averaged_tables()[n])
    if isinstance(resumed, AROW):
        fresh = make()
        fresh.start(u)
        with pytest.raises(ValueError, match="AROW variances"):
            fresh.load_state({})


@pytest.mark.parametrize("learner", [AROW(), PassiveAggressive()], ids=["AROW", "PA"])
def test_the_training_error_falls(corpus, learner):
    _, _, result = train(corpus, learner, 6)
    errors = [h.word_error for h in result.history]
    assert errors[-1] < 0.3 * errors[0]
