"""Rankers over fixed candidate lists: boosting against a line search, the voted perceptron
against a brute-force vote, and the jackknife's isolation of held-out folds."""

from __future__ import annotations

import math

import pytest
import torch

from structperc.data.document import Document
from structperc.features.extract import FeatureMatrix
from structperc.learn.boosting import BoostingProblem, BoostingState, RankBoost
from structperc.learn.fitting import FitSettings
from structperc.learn.ranking import RankingPerceptron
from structperc.model.ranker_weights import RankerWeights
from structperc.model.updates import Updater
from structperc.rerank.candidates import ListSettings
from structperc.structures.candidates import CandidateList, RankingData
from structperc.structures.chain import ChainData
from structperc.structures.voting import VoteState
from structperc.tasks import jackknife
from structperc.trainer import fit


def toy_lists(seed: int, units: int = 6, G: int = 8, reference: bool = True) -> RankingData:
    """Units of 2-5 candidates over T = 3 labels {0, 1}, random binary features and L(x); with
    ``reference``, each unit's first row is a copy of one of its candidates."""
    gen = torch.Generator().manual_seed(seed)
    paths, base, ids, counts = [], [], [], []
    offsets = [0]
    for _ in range(units):
        m = int(torch.randint(2, 6, (1,), generator=gen))
        cands = [torch.tensor([(j >> b) & 1 for b in range(3)]) for j in range(m)]
        L = torch.randn(m, generator=gen, dtype=torch.float64)
        feats = [torch.unique(torch.randint(0, G, (3,), generator=gen)) for _ in range(m)]
        if reference:
            r = int(torch.randint(0, m, (1,), generator=gen))
            cands, L, feats = [cands[r], *cands], torch.cat([L[r : r + 1], L]), [feats[r], *feats]
        paths += cands
        base.append(L)
        ids += feats
        counts += [len(f) for f in feats]
        offsets.append(offsets[-1] + len(cands))
    n_rows = len(paths)
    tokens = ChainData(  # one feature per token: these lists have no local features
        FeatureMatrix(
            torch.zeros(3 * units, dtype=torch.int32),
            torch.arange(3 * units + 1),
            torch.arange(units + 1) * 3,
        ),
        torch.zeros(3 * units, dtype=torch.long),
    )
    return RankingData(
        offsets=torch.tensor(offsets),
        labels=torch.cat(paths),
        label_offsets=torch.arange(n_rows + 1) * 3,
        base=torch.cat(base),
        ids=torch.cat(ids),
        id_offsets=torch.tensor([0, *torch.tensor(counts).cumsum(0).tolist()]),
        tokens=tokens,
        has_reference=reference,
    )


def features_of(data: RankingData, r: int) -> set[int]:
    return set(data.ids[int(data.id_offsets[r]) : int(data.id_offsets[r + 1])].tolist())


def brute_loss(data: RankingData, w0: float, w: torch.Tensor) -> float:
    """Σ_i Σ_j exp(F(x_ij) − F(x_i1)) over the pairs boosting sees."""
    total = 0.0
    for u in range(len(data)):
        ref = int(data.offsets[u])

        def F(r: int) -> float:
            return w0 * float(data.base[r]) + sum(float(w[k]) for k in features_of(data, r))

        for r in data.candidate_rows(u):
            if not torch.equal(data.row(r), data.row(ref)):
                total += math.exp(F(r) - F(ref))
    return total


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_boosting_step_is_the_exact_line_minimum_and_lowers_the_loss(seed):
    data = toy_lists(seed)
    problem = BoostingProblem.build(data, 8)
    w0 = 0.3
    state = BoostingState.start(problem, w0)
    w = torch.zeros(8, dtype=torch.float64)
    assert state.loss() == pytest.approx(brute_loss(data, w0, w))
    checked = 0
    for _ in range(5):
        before = state.loss()
        exact = bool((state.w_plus > 0).logical_and(state.w_minus > 0).any())
        both = (state.w_plus > 0) & (state.w_minus > 0)
        k, delta = state.round(problem, epsilon=0.0)
        if k < 0:
            break
        w[k] += delta
        assert state.loss() == pytest.approx(brute_loss(data, w0, w), rel=1e-9)
        assert state.loss() < before
        if not (exact and both[k]):
            continue  # one side empty: the exact step is infinite (capped)
        checked += 1
        w[k] -= delta

        def along(step: float, k: int = k) -> float:
            trial = w.clone()
            trial[k] += step
            return brute_loss(data, w0, trial)

        # a line search along w_k: no step on a fine grid around δ* does better
        grid = [delta + s for s in torch.linspace(-2.0, 2.0, 401).tolist()]
        assert along(delta) <= min(along(g) for g in grid) * (1 + 1e-12)
        w[k] += delta
    assert checked, "no round had both sides non-empty: pick another toy problem"


def test_boosting_initial_weight_minimises_the_loss_on_base_scores():
    from structperc.learn.boosting import initial_base_weight

    d = torch.tensor([1.0, 2.0, -0.5, 0.3])
    w0 = initial_base_weight(d)
    loss = lambda w: float(torch.exp(-w * d.double()).sum())  # noqa: E731
    assert loss(w0) <= min(loss(w0 - 1e-4), loss(w0 + 1e-4)) + 1e-12


def test_rankboost_writes_the_tables_and_reports_every_k_rounds():
    data = toy_lists(5, units=10)
    weights = RankerWeights(8)
    logs = []
    learner = RankBoost(rounds=6, epsilon=0.01, report_every=2)
    result = fit(
        learner,
        CandidateList(weights),
        Updater(weights),
        data,
        FitSettings(progress=False),
        on_epoch=logs.append,
    )
    assert [h.extra["rounds"] for h in logs] == [0, 2, 4, 6] and result.epochs == 3
    assert float(weights.base) != 0 and float(weights.global_.weight.abs().sum()) > 0
    losses = [h.extra["loss"] for h in logs]
    assert losses == sorted(losses, reverse=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_voted_prediction_equals_a_brute_force_vote(seed):
    train, test = toy_lists(seed, units=8), toy_lists(seed + 10, units=5, reference=False)
    beta = 0.5
    weights = RankerWeights(8)
    structure = CandidateList(weights, base_scale=beta)
    updater = Updater(weights, record=True)
    learner = RankingPerceptron(beta=beta, vote=True)
    fit(learner, structure, updater, train, FitSettings(max_epochs=3, progress=False))
    state = VoteState(structure, test)
    state.advance(updater.history)
    voted = state.best_rows(updater.seen)
    # brute force from zero weights, in the same (shuffled) order as fit
    expected = brute_vote_in_order(CandidateList(RankerWeights(8), beta), train, test, 3)
    assert voted == expected
    assert updater.seen == 3 * len(train)


def brute_vote_in_order(structure, train, test, epochs) -> list[int]:
    from structperc.learn.fitting import epoch_order

    weights = structure.weights
    updater = Updater(weights)
    learner = RankingPerceptron(beta=structure.base_scale, vote=False)
    votes = [dict() for _ in range(len(test))]
    for epoch in range(1, epochs + 1):
        for u in epoch_order(len(train), True, 0, epoch):
            batch, gold = structure.instance(train, u, "cpu")
            learner.step(structure, updater, batch, gold)
            updater.tick()
            for v, row in zip(votes, structure.winners(test), strict=True):
                v[row] = v.get(row, 0) + 1
    return [min(v, key=lambda r: (-v[r], r)) for v in votes]


def test_jackknife_never_trains_a_first_model_on_its_held_out_fold(monkeypatch, tmp_path):
    """Every first model f is trained on documents outside fold f, and decodes only fold f."""
    docs = [Document(tokens=[f"w{d}", "x"], tags=["O", "O"]) for d in range(11)]
    from structperc.features.pipeline import LocalFeatures

    features = LocalFeatures(gazetteer="none", window=0).fit(docs)
    labels = ["O", "B-X", "I-X"]
    data = ChainData(
        features.transform(docs, training=True), torch.zeros(22, dtype=torch.long), docs
    )
    seen: dict[int, set[str]] = {}

    def spy_train(learner, train, *args):
        seen[len(seen)] = {d.tokens[0] for d in train.documents}
        return real_train(learner, train, *args)

    real_train = jackknife.train_first_model
    monkeypatch.setattr(jackknife, "train_first_model", spy_train)
    lists = ListSettings(folds=3, n=2, n_test=2)
    from structperc.learn.perceptron import Perceptron

    decoded = {}
    for fold in range(3):
        jackknife.generate_fold(
            fold,
            learner=Perceptron(),
            train=data,
            evaluate={},
            num_features=features.num_features,
            labels=labels,
            settings=FitSettings(max_epochs=1, progress=False),
            lists=lists,
            folder=tmp_path,
            meta={},
        )
        from structperc.data.candidates import load_candidates

        made, _ = load_candidates(tmp_path / lists.file(fold))
        decoded[fold] = {f"w{d}" for d in made.units[:, 0].tolist()}
    for fold in range(3):
        held_out = {f"w{d}" for d in range(11) if d % 3 == fold}
        assert decoded[fold] == held_out
        assert not (seen[fold] & held_out), f"first model {fold} saw its held-out fold"
        assert seen[fold] | held_out == {f"w{d}" for d in range(11)}
