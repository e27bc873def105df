"""Closed-form checks of the margin perceptron (Kazama & Torisawa 2007, Alg. 3.1)."""

from __future__ import annotations

import pytest
import torch
from test_model_updates import feature_matrix, phi

from structperc.learn.margin import MarginPerceptron
from structperc.model.batch import make_batch
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.structures.chain import ChainStructure

DOC = [[0], [1]]  # two tokens, feature 0 at the first, feature 1 at the second
F, L = 2, 2
GOLD = [0, 0]


def _setup(node: list[list[float]]):
    weights = ChainWeights(F, ["O", "B-X"])
    weights.tables()["node"].copy_(torch.tensor(node))
    before = {k: v.clone() for k, v in weights.tables().items()}
    return weights, Updater(weights), make_batch(feature_matrix([DOC]), [0]), before


def _expected(before, rival):
    gold_phi, rival_phi = phi([DOC], [GOLD], F, L), phi([DOC], [rival], F, L)
    return {k: before[k] + gold_phi[k] - rival_phi[k] for k in before}


def test_wrong_prediction_updates_against_it():
    weights, updater, batch, before = _setup([[0.0, 3.0], [0.0, 3.0]])  # best: [1, 1]
    stats = MarginPerceptron(C=100.0).step(
        ChainStructure(weights), updater, batch, torch.tensor(GOLD)
    )
    assert (stats.errors, stats.updates) == (2, 1)
    for k, v in _expected(before, [1, 1]).items():
        assert torch.equal(weights.tables()[k], v)


@pytest.mark.parametrize("C, updated", [(0.5, False), (1.0, True), (5.0, True)])
def test_margin_against_second_best(C, updated):
    # scores: [0,0] = 3 + 2 = 5; [0,1] = 3; [1,0] = 4 (second best, margin 1); [1,1] = 2
    weights, updater, batch, before = _setup([[3.0, 2.0], [2.0, 0.0]])
    stats = MarginPerceptron(C=C).step(ChainStructure(weights), updater, batch, torch.tensor(GOLD))
    assert stats.errors == 0 and stats.updates == int(updated)
    expected = _expected(before, [1, 0]) if updated else before
    for k, v in expected.items():
        assert torch.equal(weights.tables()[k], v)


def test_negative_C_is_rejected():
    with pytest.raises(ValueError, match="C"):
        MarginPerceptron(C=-1)
