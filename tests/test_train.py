"""Tests for structperc.trainer and the perceptron: convergence rule, fit, predict."""

from __future__ import annotations

import pytest
import torch
from oracles.chain import path_score

from structperc.checkpoint import Checkpoint
from structperc.data.document import Document
from structperc.data.synthetic import make_corpus
from structperc.decode.viterbi import viterbi
from structperc.eval import evaluate
from structperc.features.pipeline import LocalFeatures
from structperc.learn.fitting import Convergence, FitSettings, epoch_order
from structperc.learn.perceptron import Perceptron
from structperc.model.batch import make_batch
from structperc.model.updates import Updater, path_delta
from structperc.model.weights import ChainWeights
from structperc.structures.chain import ChainData, ChainStructure
from structperc.trainer import fit

# ---------------------------------------------------------------- Convergence


def run_rule(errors: list[float], tol: float, patience: int) -> list[bool]:
    rule = Convergence(tol=tol, patience=patience)
    return [rule.update(e) for e in errors]


def test_convergence_after_patience_small_changes():
    # changes: 0.05, 0.0105.. (both < 0.1) -> converged at the third epoch
    assert run_rule([1.0, 0.95, 0.94], tol=0.1, patience=2) == [False, False, True]
    # patience 3 needs one more
    assert run_rule([1.0, 0.95, 0.94, 0.94], tol=0.1, patience=3) == [False, False, False, True]


def test_convergence_streak_resets_on_a_large_change():
    # 1.0 -> 0.95 small, -> 0.5 large (resets), -> 0.49, -> 0.48 small, small
    assert run_rule([1.0, 0.95, 0.5, 0.49, 0.48], tol=0.1, patience=2) == [
        False,
        False,
        False,
        False,
        True,
    ]


def test_convergence_is_relative_and_strict():
    # relative: 0.01 -> 0.0095 is a 5% change, below tol 0.1 although the absolute change is tiny
    assert run_rule([0.01, 0.0095], tol=0.1, patience=1) == [False, True]
    # 0.001 -> 0.0005 is a 50% change: not converged for tol 0.1 although absolutely tiny
    assert run_rule([0.001, 0.0005], tol=0.1, patience=1) == [False, False]
    # a change of exactly tol does not count (strictly below)
    assert run_rule([1.0, 0.5], tol=0.5, patience=1) == [False, False]
    # increases count by their absolute value
    assert run_rule([1.0, 1.05, 2.0], tol=0.1, patience=1) == [False, True, False]


def test_convergence_with_zero_error():
    # zero that stays zero is no change
    assert run_rule([0.0, 0.0, 0.0], tol=1e-4, patience=2) == [False, False, True]
    assert run_rule([0.1, 0.0, 0.0], tol=1e-4, patience=1) == [False, False, True]
    # leaving zero is an infinite change: the streak resets
    assert run_rule([0.0, 0.0, 0.1, 0.1], tol=1e-4, patience=2) == [False, False, False, False]


def test_convergence_state_round_trip():
    rule = Convergence(tol=0.1, patience=3)
    for e in (1.0, 0.99, 0.98):
        rule.update(e)
    resumed = Convergence(tol=0.1, patience=3)
    resumed.load_state(rule.state())
    assert resumed.state() == {"previous": 0.98, "streak": 2}
    assert resumed.update(0.975) is True
    assert Convergence(tol=0.1, patience=3).update(0.975) is False


# ---------------------------------------------------------------- a small corpus


def label_ids(docs: list[Document], labels: list[str]) -> torch.Tensor:
    index = {t: i for i, t in enumerate(labels)}
    return torch.tensor([index[t] for d in docs for t in d.tags])


@pytest.fixture(scope="module")
def corpus():
    train, dev = make_corpus(40, seed=0), make_corpus(15, seed=1)
    lf = LocalFeatures(gazetteer="none", window=1).fit(train)
    labels = sorted({t for d in train for t in d.tags}, key=lambda t: (t != "O", t))
    assert labels[0] == "O" and len(labels) == 9
    return {
        "train": train,
        "dev": dev,
        "labels": labels,
        "features": lf,
        "X": lf.transform(train, training=True),
        "y": label_ids(train, labels),
        "X_dev": lf.transform(dev),
    }


def train_model(corpus, *, average=True, seed=0, max_epochs=4, patience=10, tol=1e-4, **kw):
    weights = ChainWeights(corpus["features"].num_features, corpus["labels"])
    updater = Updater(weights, average=average)
    result = fit(
        Perceptron(average=average),
        ChainStructure(weights),
        updater,
        ChainData(corpus["X"], corpus["y"]),
        FitSettings(max_epochs=max_epochs, tol=tol, patience=patience, seed=seed, progress=False),
        **kw,
    )
    return weights, updater, result


def predict(weights, features, batch_size=256):
    return ChainStructure(weights).predict(ChainData(features), batch_size=batch_size)


def doc_labels(labels, features, d):
    return ChainData(features, labels).gold(d)


def dev_f1(corpus, weights) -> float:
    pred = predict(weights, corpus["X_dev"])
    labels = corpus["labels"]
    return evaluate([d.tags for d in corpus["dev"]], [[labels[i] for i in p] for p in pred]).f1


def test_averaged_perceptron_learns_synthetic_corpus(corpus):
    weights, updater, result = train_model(corpus, max_epochs=10, patience=2, tol=1e-3)
    errors = [h.word_error for h in result.history]
    assert errors[0] > 0.01  # it had something to learn
    assert errors[-1] < errors[0]
    n_tokens = len(corpus["y"])
    assert all(h.tokens == n_tokens for h in result.history)
    assert result.epochs == len(result.history) == result.history[-1].epoch
    assert result.stopped_by == ("converged" if result.epochs < 10 else "max_epochs")
    with updater.averaged():
        f1_avg = dev_f1(corpus, weights)
    updater.finalize()
    assert dev_f1(corpus, weights) == f1_avg
    assert f1_avg > 90.0


def test_untrained_model_scores_zero(corpus):
    weights = ChainWeights(corpus["features"].num_features, corpus["labels"])
    assert all(label == 0 for doc in predict(weights, corpus["X_dev"]) for label in doc)
    assert dev_f1(corpus, weights) == 0.0


def test_fit_is_deterministic_given_the_seed(corpus):
    w1, u1, r1 = train_model(corpus, max_epochs=3, seed=5)
    w2, u2, r2 = train_model(corpus, max_epochs=3, seed=5)
    for n, t in w1.tables().items():
        assert torch.equal(t, w2.tables()[n])
    for n, t in u1.averaged_tables().items():
        assert torch.equal(t, u2.averaged_tables()[n])
    assert [h.errors for h in r1.history] == [h.errors for h in r2.history]
    # the seed does decide the order
    assert epoch_order(40, True, 5, 1) != epoch_order(40, True, 6, 1)
    assert epoch_order(40, True, 5, 1) != epoch_order(40, True, 5, 2)
    assert sorted(epoch_order(40, True, 5, 1)) == list(range(40))
    assert epoch_order(5, False, 5, 1) == [0, 1, 2, 3, 4]


def test_fit_resumes_exactly(corpus, tmp_path):
    """Two epochs with a checkpoint, then a resumed run to four == four epochs at once."""
    w_all, u_all, r_all = train_model(corpus, max_epochs=4, seed=2)
    checkpoint = Checkpoint(tmp_path / "checkpoint", {"labels": corpus["labels"]})
    _, _, r1 = train_model(corpus, max_epochs=2, seed=2, checkpoint=checkpoint)
    logs = []
    w, u, r2 = train_model(
        corpus, max_epochs=4, seed=2, checkpoint=checkpoint, resume=True, on_epoch=logs.append
    )
    assert [h.epoch for h in logs] == [3, 4]
    assert [h.epoch for h in r2.history] == [1, 2, 3, 4]
    assert r2.epochs == 4 and r2.stopped_by == "max_epochs" and r2.resumed_from == 2
    assert r2.previous_seconds == pytest.approx(sum(h.seconds for h in r1.history))
    assert [h.errors for h in r2.history] == [h.errors for h in r_all.history]
    for n, t in w.tables().items():
        assert torch.equal(t, w_all.tables()[n])
    for n, t in u.averaged_tables().items():
        assert torch.equal(t, u_all.averaged_tables()[n])


def test_resume_refuses_a_checkpoint_of_another_model(corpus, tmp_path):
    checkpoint = Checkpoint(tmp_path / "checkpoint", {"labels": corpus["labels"]})
    train_model(corpus, max_epochs=1, checkpoint=checkpoint)
    other = Checkpoint(tmp_path / "checkpoint", {"labels": corpus["labels"][::-1]})
    with pytest.raises(ValueError, match="checkpoint of a different model"):
        train_model(corpus, max_epochs=2, checkpoint=other, resume=True)


def test_fit_stops_at_max_epochs_and_on_convergence(corpus):
    _, _, r = train_model(corpus, max_epochs=1)
    assert (r.epochs, r.stopped_by, len(r.history)) == (1, "max_epochs", 1)
    # the corpus is separable: the error reaches 0 and stays there, which converges
    _, _, r = train_model(corpus, max_epochs=30, patience=2)
    assert r.stopped_by == "converged"
    assert r.epochs < 30
    assert [h.word_error for h in r.history[-3:]] == [0.0, 0.0, 0.0]


def test_perceptron_step_is_one_collins_update(corpus):
    X, y = corpus["X"], corpus["y"]
    L = len(corpus["labels"])
    weights = ChainWeights(corpus["features"].num_features, corpus["labels"])
    updater = Updater(weights)
    batch = make_batch(X, [0])
    gold = doc_labels(y, X, 0)
    stats = Perceptron().step(ChainStructure(weights), updater, batch, gold)
    # zero weights: every score ties, Viterbi says label 0 ("O") everywhere
    zeros = torch.zeros_like(gold)
    assert stats.tokens == len(gold)
    assert stats.errors == int((gold != 0).sum()) > 0
    assert stats.updates == 1
    expected = ChainWeights(corpus["features"].num_features, corpus["labels"])
    Updater(expected).apply(path_delta(batch, gold, zeros, L))
    for n, t in weights.tables().items():
        assert torch.equal(t, expected.tables()[n])
    # after the update the gold path beats the old prediction by ||delta||^2 (weights were 0)
    pot = weights.potentials(batch)[0]
    margin = path_score(pot, gold.tolist()) - path_score(pot, zeros.tolist())
    assert margin == pytest.approx(path_delta(batch, gold, zeros, L).norm_sq()) and margin > 0
    paths, _ = viterbi(pot.unsqueeze(0), batch.lengths)
    assert not torch.equal(paths[0], zeros)


def test_no_update_when_the_prediction_is_right(corpus):
    weights, updater, _ = train_model(corpus, average=False, max_epochs=30, patience=2)
    X, y = corpus["X"], corpus["y"]
    before = {n: t.clone() for n, t in weights.tables().items()}
    for d in range(3):
        batch, gold = make_batch(X, [d]), doc_labels(y, X, d)
        stats = Perceptron().step(ChainStructure(weights), updater, batch, gold)
        assert (stats.errors, stats.updates) == (0, 0)
    for n, t in weights.tables().items():
        assert torch.equal(t, before[n])


# ---------------------------------------------------------------- predict


@pytest.mark.parametrize("average", [False, True])
def test_predict_batched_equals_one_at_a_time(corpus, average, monkeypatch):
    import structperc.structures.chain as chain_mod

    weights, updater, _ = train_model(corpus, average=average, max_epochs=1)
    updater.finalize()
    X = corpus["X_dev"]
    small = predict(weights, X, batch_size=16)  # below PACKED_FROM on a CPU: one by one
    singles = predict(weights, X, batch_size=1)
    monkeypatch.setattr(chain_mod, "PACKED_FROM", 2)  # packed time-major batches
    batched = predict(weights, X, batch_size=16)
    odd = predict(weights, X, batch_size=5)
    assert batched == singles == odd == small
    for d, doc in enumerate(corpus["dev"]):
        assert len(batched[d]) == len(doc)
        batch = make_batch(X, [d])
        paths, _ = viterbi(weights.potentials(batch), batch.lengths)
        assert paths[0].tolist() == batched[d]
    # the weights are not trivial: the documents get more than one label
    assert len({label for p in batched for label in p}) > 2
