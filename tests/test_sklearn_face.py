"""The scikit-learn face (``structperc.sklearn``): python-crfsuite's feature format, the estimator
against brute force on a tiny model, scikit-learn's model selection, pickling, several processes,
the metrics, and CRFsuite's algorithm names."""

from __future__ import annotations

import itertools
import math
import pickle
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pycrfsuite
import pytest
import torch
from sklearn.base import clone
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV, cross_val_score

from structperc.crf.learner import CRF as CRFLearner
from structperc.learn.arow import AROW
from structperc.learn.passive_aggressive import PassiveAggressive
from structperc.learn.perceptron import Perceptron
from structperc.sklearn import CRF, metrics
from structperc.sklearn.algorithms import make_learner, resolved
from structperc.sklearn.attributes import (
    AttributeDictionary,
    FeatureFormatError,
    item_attributes,
)

ROOT = Path(__file__).resolve().parent.parent

WORDS = {"PER": ["John", "Mary", "Anna"], "LOC": ["Paris", "Rome"], "O": ["the", "in", "lives"]}


def toy_corpus(n: int = 40, seed: int = 0) -> tuple[list, list]:
    """Sequences of 1-6 tokens whose labels (IOB2) follow from the words and their order."""
    rng = random.Random(seed)
    X, y = [], []
    for _ in range(n):
        kinds = [rng.choice(["PER", "LOC", "O", "O"]) for _ in range(rng.randint(1, 6))]
        words = [rng.choice(WORDS[k]) for k in kinds]
        labels = [
            "O" if k == "O" else ("I-" if t and kinds[t - 1] == k else "B-") + k
            for t, k in enumerate(kinds)
        ]
        X.append([item(words, t) for t in range(len(words))])
        y.append(labels)
    return X, y


def item(words: list[str], t: int) -> dict:
    out = {"bias": 1.0, "w": words[t].lower(), "title": words[t].istitle()}
    out["length"] = len(words[t]) / 4.0  # a real value
    if t:
        out["-1"] = {"w": words[t - 1].lower()}
    else:
        out["BOS"] = True
    return out


# -- python-crfsuite's feature format --------------------------------------------------------------
def test_item_attributes_are_python_crfsuites():
    items = [
        {"a": False, "b": "x", "c": {"d": 1, "e": "z", "f": {"g": 2.5}}, "n": 3, "t": True},
        {"l": ["p", "q"], "s": {"u"}, "k:y": "a=b", "nested": {"list": ["x", "y"]}},
        ["w1", "w2"],
        {"unicode": "Zürich", "bytes": b"raw"},
    ]
    expected = pycrfsuite.ItemSequence(items).items()
    for got_item, want in zip(items, expected, strict=True):
        names, values = item_attributes(got_item)
        assert dict(zip(names, values, strict=True)) == want
    # a name listed twice counts twice (CRFsuite sums the item's attributes)
    assert item_attributes(["w", "w"]) == (["w", "w"], [1.0, 1.0])


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"a": None}, "X[0][1]: feature 'a' has a value of type NoneType"),
        ({1: "x"}, "X[0][1]: a feature name must be a str, got int 1"),
        ("word", "X[0][1]: a token's features must be a dict or a list of strings, got str"),
    ],
)
def test_bad_items_are_named_by_sequence_and_token(bad, message):
    with pytest.raises(FeatureFormatError, match=message.replace("[", r"\[").replace("]", r"\]")):
        AttributeDictionary.fit([[{"ok": 1.0}, bad]])


def test_dictionary_order_cutoff_and_unseen_attributes():
    X = [[{"a": "1", "b": True}, {"a": "1", "z": False}], [["c", "a:1"]]]
    attributes, features, values = AttributeDictionary().grown(X, min_freq=1)
    assert attributes.names == ["a:1"]  # seen 3 times; b, z and c once
    assert features.offsets.tolist() == [0, 1, 2, 3]
    assert features.ids.tolist() == [0, 0, 0] and values is None
    everything, features, _ = AttributeDictionary().grown(X)
    assert everything.names == ["a:1", "b", "z", "c"]  # first appearance; z (False) kept
    assert features.offsets.tolist() == [0, 2, 3, 5]  # value 0 fires nowhere
    new, _ = everything.transform([[{"a": "2", "b": True}]])
    assert new.ids.tolist() == [1] and new.doc_offsets.tolist() == [0, 1]


def test_reading_in_several_processes_gives_one_process_dictionary_and_matrix():
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(300)]
    X = [
        [{"w": str(rng.choice(words)), "n": float(rng.integers(0, 3)), "cap": bool(t % 2)}
         for t in range(int(rng.integers(1, 6)))]
        for _ in range(1600)
    ]  # fmt: skip
    for min_freq in (0, 2):
        one = AttributeDictionary().grown(X, min_freq=min_freq)
        three = AttributeDictionary().grown(X, min_freq=min_freq, jobs=3)
        assert one[0].names == three[0].names
        for a, b in zip(one[1].tensors().values(), three[1].tensors().values(), strict=True):
            assert torch.equal(a, b)
        assert torch.equal(one[2], three[2])
    X[1200][0] = {"w": object()}  # a block's error: raised as one process raises it
    with pytest.raises(FeatureFormatError, match=r"X\[1200\]\[0\]: feature 'w'"):
        AttributeDictionary().grown(X, jobs=3)


@pytest.mark.parametrize("algorithm", ["lbfgs", "l2sgd", "ap", "mmvp"])
def test_a_value_trains_as_its_name_repeated(algorithm):
    """{"x": 3.0} scores and trains as the name listed three times (CRFsuite sums an item's
    attributes): the per-sample weights against the binary path."""
    rng = random.Random(5)
    valued, repeated, y = [], [], []
    for _ in range(20):
        words = [rng.choice(["a", "b", "c"]) for _ in range(rng.randint(1, 5))]
        counts = [{"a": 3, "b": 1, "c": 2}[w] for w in words]
        valued.append([{"w": w, "x": float(k)} for w, k in zip(words, counts, strict=True)])
        repeated.append([["w:" + w] + ["x"] * k for w, k in zip(words, counts, strict=True)])
        y.append(
            ["P" if w == "a" or (t and words[t - 1] == "c") else "N" for t, w in enumerate(words)]
        )
    settings = {"algorithm": algorithm, "max_iterations": 5, "all_possible_states": True}
    a = CRF(**settings).fit(valued, y)
    b = CRF(**settings).fit(repeated, y)
    assert a.attributes_ == b.attributes_
    assert torch.allclose(a.model_.node, b.model_.node, atol=1e-5)
    assert torch.allclose(a.model_.edge, b.model_.edge, atol=1e-5)
    assert float(a.model_.node.abs().sum()) > 0
    marginals_a = a.predict_marginals(valued)
    marginals_b = b.predict_marginals(repeated)
    for ma, mb in zip(marginals_a, marginals_b, strict=True):
        for ta, tb in zip(ma, mb, strict=True):
            assert ta == pytest.approx(tb, abs=1e-5)


def test_mismatched_labels_are_named():
    X, y = toy_corpus(5)
    y[3] = y[3] + ["O"]
    with pytest.raises(ValueError, match=r"X\[3\] has \d+ items but y\[3\] has \d+ labels"):
        CRF().fit(X, y)


# -- the estimator against brute force -------------------------------------------------------------
def labeling_score(crf: CRF, xseq: list, labels: tuple[str, ...]) -> float:
    """s(x, y) from the fitted attributes alone (the public dicts), token by token."""
    state, transition = crf.state_features_, crf.transition_features_
    known = set(crf.attributes_)
    total = 0.0
    for t, token in enumerate(xseq):
        names, values = item_attributes(token)
        for name, value in zip(names, values, strict=True):
            if name in known:
                total += value * state.get((name, labels[t]), 0.0)
        if t:
            total += transition.get((labels[t - 1], labels[t]), 0.0)
    return total


@pytest.fixture(scope="module")
def fitted() -> tuple[CRF, list, list]:
    X, y = toy_corpus(40)
    return CRF(algorithm="lbfgs", c2=0.05, max_iterations=30).fit(X, y), X, y


def test_decoding_marginals_and_nbest_match_enumeration(fitted):
    crf, X, _ = fitted
    labels = crf.classes_
    xseq = X[1][:4]
    every = sorted(
        itertools.product(labels, repeat=len(xseq)),
        key=lambda lab: -labeling_score(crf, xseq, lab),
    )
    scores = [labeling_score(crf, xseq, lab) for lab in every]
    assert crf.predict_single(xseq) == list(every[0])
    nbest = crf.predict_nbest([xseq], 5)[0]
    assert [labeling_score(crf, xseq, tuple(p)) for p in nbest] == pytest.approx(scores[:5])
    log_z = math.log(sum(math.exp(s - scores[0]) for s in scores)) + scores[0]
    marginals = crf.predict_marginals_single(xseq)
    for t in range(len(xseq)):
        for label in labels:
            p = sum(
                math.exp(s - log_z) for lab, s in zip(every, scores, strict=True) if lab[t] == label
            )
            assert marginals[t][label] == pytest.approx(p, abs=1e-5)


def test_fit_learns_the_toy_task_and_reports(fitted):
    crf, X, y = fitted
    assert crf.score(X, y) == 1.0
    assert set(crf.classes_) == {"B-PER", "I-PER", "B-LOC", "I-LOC", "O"}
    assert crf.classes_[0] == y[0][0]  # the order labels first appear in
    assert crf.size_ > 0 and crf.training_log_.iterations[-1]["num"] <= 30
    # CRFsuite's model: only (attribute, label) pairs seen in training carry weight
    seen = {
        (name, label)
        for xs, ys in zip(X, y, strict=True)
        for token, label in zip(xs, ys, strict=True)
        for name in item_attributes(token)[0]
    }
    assert set(crf.state_features_) <= seen
    predicted = crf.predict(X[:3])
    assert predicted.dtype == object and list(predicted[0]) == y[0]


def test_constraints_give_iob2_valid_output(fitted):
    crf, X, _ = fitted
    i, o = crf.classes_.index("I-LOC"), crf.classes_.index("O")
    outputs = {}
    for constraints in (None, "iob2"):
        tilted = pickle.loads(pickle.dumps(crf)).set_params(constraints=constraints)
        tilted.model_.edge[o, i] = 50.0  # make I-LOC after O the best move
        outputs[constraints] = list(tilted.predict(X))

    def valid(path):
        return all(
            not (cur.startswith("I-") and prev[2:] != cur[2:])
            for prev, cur in zip(["O", *path], path, strict=False)
        )

    assert not all(valid(p) for p in outputs[None])
    assert all(valid(p) for p in outputs["iob2"])
    constrained = pickle.loads(pickle.dumps(crf)).set_params(constraints="iob2")
    for sequence in constrained.predict_marginals(X[:10]):
        assert all(p == 0.0 for label, p in sequence[0].items() if label.startswith("I-"))
        for token in sequence:
            assert sum(token.values()) == pytest.approx(1.0)


def test_dev_accuracy_is_logged_each_iteration():
    X, y = toy_corpus(20)
    crf = CRF(algorithm="ap", max_iterations=3).fit(X[:15], y[:15], X_dev=X[15:], y_dev=y[15:])
    assert [it["num"] for it in crf.training_log_.iterations] == [1, 2, 3]
    assert all(0.0 <= it["dev_accuracy"] <= 1.0 for it in crf.training_log_.iterations)
    with pytest.raises(ValueError, match="Pass both X_dev and y_dev"):
        CRF().fit(X, y, X_dev=X)


# -- scikit-learn ----------------------------------------------------------------------------------
def test_grid_search_and_cross_validation_run():
    X, y = toy_corpus(24)
    scorer = make_scorer(metrics.flat_f1_score, average="weighted")
    search = GridSearchCV(CRF(max_iterations=8), {"c2": [0.01, 1.0]}, cv=2, scoring=scorer)
    search.fit(X, y)
    assert search.best_params_["c2"] in (0.01, 1.0)
    assert search.best_estimator_.score(X, y) > 0.8
    scores = cross_val_score(CRF(algorithm="ap", max_iterations=3), X, y, cv=2)
    assert len(scores) == 2 and all(0.5 < s <= 1.0 for s in scores)
    assert clone(CRF(c1=0.2, n_jobs=2)).get_params()["n_jobs"] == 2


def test_a_pickled_estimator_loads_in_a_fresh_process(fitted, tmp_path):
    crf, X, _ = fitted
    data = pickle.dumps(crf)
    assert b"torch" not in data  # safetensors bytes and JSON, no torch object
    (tmp_path / "crf.pkl").write_bytes(data)
    (tmp_path / "X.pkl").write_bytes(pickle.dumps(X[:5]))
    code = (
        "import pickle, sys; from pathlib import Path; d = Path(sys.argv[1]); "
        "crf = pickle.loads((d / 'crf.pkl').read_bytes()); "
        "print(repr([list(p) for p in crf.predict(pickle.loads((d / 'X.pkl').read_bytes()))]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == repr([list(p) for p in crf.predict(X[:5])])
    unfitted = pickle.loads(pickle.dumps(CRF(c2=0.3)))
    assert unfitted.c2 == 0.3
    with pytest.raises(AttributeError, match="not fitted yet"):
        _ = unfitted.classes_


# -- several processes -----------------------------------------------------------------------------
def test_two_processes_train_the_crf_of_one():
    X, y = toy_corpus(30, seed=4)
    one = CRF(c2=0.1, max_iterations=10).fit(X, y)
    two = CRF(c2=0.1, max_iterations=10, n_jobs=2).fit(X, y)
    a, b = one.model_.node, two.model_.node
    assert float((a - b).norm() / a.norm()) < 1e-4
    assert [it["loss"] for it in two.training_log_.iterations] == pytest.approx(
        [it["loss"] for it in one.training_log_.iterations], rel=1e-5
    )
    ap = CRF(algorithm="ap", max_iterations=4, n_jobs=2).fit(X, y)  # parameter mixing
    assert ap.score(X, y) > 0.95
    again = CRF(algorithm="ap", max_iterations=4, n_jobs=2).fit(X, y)
    assert torch.equal(ap.model_.node, again.model_.node)


# -- metrics ---------------------------------------------------------------------------------------
def test_metrics_agree_with_sklearn_crfsuites():
    sk_metrics = pytest.importorskip("sklearn_crfsuite.metrics")
    y_true = [["B-PER", "I-PER", "O"], ["O", "B-LOC"], ["B-LOC"]]
    y_pred = [["B-PER", "O", "O"], ["O", "B-LOC"], ["B-PER"]]
    labels = ["B-PER", "I-PER", "B-LOC"]
    for name in ("flat_accuracy_score", "sequence_accuracy_score"):
        assert getattr(metrics, name)(y_true, y_pred) == getattr(sk_metrics, name)(y_true, y_pred)
    assert metrics.flat_f1_score(
        y_true, y_pred, average="weighted", labels=labels
    ) == sk_metrics.flat_f1_score(y_true, y_pred, average="weighted", labels=labels)
    assert metrics.flat_classification_report(
        y_true, y_pred, labels=labels, zero_division=0
    ) == sk_metrics.flat_classification_report(y_true, y_pred, labels=labels, zero_division=0)
    assert metrics.sequence_accuracy_score(y_true, y_pred) == pytest.approx(1 / 3)
    assert metrics.entity_f1_score(y_true, y_pred) == pytest.approx(1 / 3)  # LOC right of 3 and 3


# -- CRFsuite's algorithm names --------------------------------------------------------------------
def test_the_algorithm_table_sets_the_learners():
    crf = make_learner(resolved({"algorithm": "lbfgs", "c2": 0.25, "max_iterations": 50}))
    assert isinstance(crf, CRFLearner)
    assert (crf.optimizer, crf.sigma2, crf.support, crf.max_iterations) == (
        "lbfgs",
        2.0,
        "observed",
        50,
    )
    assert (crf.tol, crf.patience, crf.history) == (1e-5, 10, 6)
    sgd = make_learner(resolved({"algorithm": "l2sgd", "all_possible_states": True}))
    assert (sgd.optimizer, sgd.sigma2, sgd.support, sgd.max_iterations) == ("sgd", 0.5, "all", 1000)
    assert (sgd.lr, sgd.batch_tokens) == (0.2, 1)  # experiments/sklearn_l2sgd/
    ap = make_learner(resolved({"algorithm": "ap"}))
    assert isinstance(ap, Perceptron) and ap.average
    with pytest.raises(ValueError, match="algorithm must be one of"):
        resolved({"algorithm": "sgd"})
    with pytest.raises(ValueError, match="c1 > 0 .* needs algorithm='lbfgs'"):
        resolved({"algorithm": "ap", "c1": 0.1})


@pytest.mark.parametrize("algorithm", ["l2sgd", "ap", "margin", "mmvp"])
def test_every_algorithm_learns_the_toy_task(algorithm):
    X, y = toy_corpus(30, seed=2)
    crf = CRF(algorithm=algorithm, max_iterations=10, c=5.0 if algorithm == "margin" else None)
    assert crf.fit(X, y).score(X, y) > 0.95


def test_pa_maps_onto_the_passive_aggressive_learner():
    pa = make_learner(resolved({"algorithm": "pa", "c": 0.5, "pa_type": 2, "averaging": False}))
    assert isinstance(pa, PassiveAggressive)
    assert (pa.C, pa.pa_type, pa.error_sensitive, pa.average) == (0.5, 2, True, False)
    X, y = toy_corpus(30, seed=2)
    assert CRF(algorithm="pa", max_iterations=10).fit(X, y).score(X, y) > 0.95


def test_arow_maps_onto_the_arow_learner():
    arow = make_learner(resolved({"algorithm": "arow", "variance": 2.0, "gamma": 0.5}))
    assert isinstance(arow, AROW) and (arow.variance, arow.gamma, arow.average) == (2.0, 0.5, False)
    X, y = toy_corpus(30, seed=2)
    assert CRF(algorithm="arow", max_iterations=10).fit(X, y).score(X, y) > 0.95


def test_c1_maps_onto_the_crfs_l1_term():
    crf = make_learner(resolved({"algorithm": "lbfgs", "c1": 0.3, "c2": 0.5}))
    assert (crf.c1, crf.sigma2) == (0.3, 1.0)
    X, y = toy_corpus(30, seed=2)
    sparse = CRF(c1=1.0, c2=0.01, max_iterations=40, all_possible_states=True).fit(X, y)
    dense = CRF(c1=0.0, c2=0.01, max_iterations=40, all_possible_states=True).fit(X, y)
    assert len(sparse.state_features_) < len(dense.state_features_)
    assert sparse.score(X, y) > 0.95


def test_empty_sequences_are_labeled_empty():
    X = [[{"w": "a"}, {"w": "b"}], [], [{"w": "a"}]]
    y = [["P", "N"], [], ["P"]]
    crf = CRF(algorithm="ap", max_iterations=3).fit(X, y)
    assert [list(p) for p in crf.predict(X)] == y
    assert list(crf.predict_marginals(X)[1]) == []
    assert crf.predict_nbest(X, 2)[1] == [[]]
