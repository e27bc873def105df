"""The scikit-learn face's continued training (``warm_start``, ``partial_fit``) and hashing.

The averaged perceptron continued on new data (new attributes, a new label) equals Collins'
rule run through both trainings one after the other, the average over every instance of both
(``test_sklearn_online.continued_perceptron``, written out in full); m calls of ``partial_fit``
equal ``fit`` with m epochs, bit for bit; a hashed model without collisions is the dictionary
model with its rows moved.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

pytest.importorskip("sklearn")

from test_sklearn_face import toy_corpus  # noqa: E402
from test_sklearn_online import continued_perceptron, random_corpus  # noqa: E402

from structperc.model.growth import (  # noqa: E402
    grown_chain_weights,
    grown_label_columns,
    grown_label_pairs,
)
from structperc.model.weights import ChainWeights  # noqa: E402
from structperc.sklearn import CRF  # noqa: E402
from structperc.sklearn.hashing import row_of  # noqa: E402


def with_new_label(X: list, y: list, label: str = "B-NEW", word: str = "novel") -> tuple:
    """(X, y) where every third sequence's first token is a new word labeled ``label``: a new
    attribute and a new label."""
    X2, y2 = [list(x) for x in X], [list(t) for t in y]
    for s in range(0, len(X2), 3):
        X2[s][0] = {**X2[s][0], "w": word, "new": "yes"}
        y2[s][0] = label
    return X2, y2


def tables(crf: CRF) -> tuple[np.ndarray, np.ndarray]:
    return crf.model_.node.numpy(), crf.model_.edge.numpy()


# -- warm starts -----------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("average", ["continue", "restart"])
def test_continued_averaged_perceptron_is_collins_rule_over_both_trainings(seed, average):
    """fit on A, then warm-started on B (new attributes, a new label): Collins' rule written
    out in full, over both trainings in their epoch orders, the average over every instance of
    both ("continue") or over B's from A's average ("restart")."""
    XA, yA = random_corpus(30, seed)
    XB, yB = with_new_label(*random_corpus(30, seed + 10))
    crf = CRF(algorithm="ap", max_iterations=3, random_state=seed, warm_start=True)
    crf.set_params(warm_average=average).fit(XA, yA)
    before = crf.attributes_
    crf.set_params(max_iterations=2).fit(XB, yB)
    assert "B-NEW" in crf.classes_ and "B-NEW" not in set(t for s in yA for t in s)
    assert len(crf.attributes_) > len(before) and crf.attributes_[: len(before)] == before
    epochs = [e["epochs"] for e in crf.model_.info["lineage"]]
    phases = [(XA, yA, epochs[0]), (XB, yB, epochs[1], average)]
    node, edge = continued_perceptron(phases, crf.attributes_, crf.classes_, seed)
    new = crf.classes_.index("B-NEW")
    assert np.abs(node[:, new]).max() > 0  # the new label was learned
    # (restarted: A's average is not an integer table, float32 against float64 from there)
    tol = 1e-5 if average == "continue" else 1e-4
    np.testing.assert_allclose(tables(crf)[0], node, rtol=0, atol=tol)
    np.testing.assert_allclose(tables(crf)[1], edge, rtol=0, atol=tol)


def test_auto_restarts_the_average_for_new_labels_only():
    XA, yA = random_corpus(20, 2)
    crf = CRF(algorithm="ap", max_iterations=2, warm_start=True).fit(XA, yA)
    crf.fit(*random_corpus(20, 3))  # the same labels: the average goes on
    crf.fit(*with_new_label(*random_corpus(20, 4)))  # a new label: it restarts
    assert [e["start"] for e in crf.model_.info["lineage"]] == [
        "zero",
        "continued",
        "the model's weights",
    ]
    with pytest.raises(ValueError, match="warm_average must be one of"):
        crf.set_params(warm_average="keep").fit(XA, yA)


def test_the_continued_start_holds_the_old_weights_in_place():
    """The tables a warm start grows keep every old (attribute, label) weight where it was; the
    new attributes' rows and the new label's columns start at 0."""
    from structperc.sklearn.algorithms import make_learner, resolved
    from structperc.sklearn.continuation import continued_start

    XA, yA = random_corpus(20, 3)
    crf = CRF(algorithm="ap", max_iterations=2, warm_start=True).fit(XA, yA)
    model = crf.model_
    A, L = model.node.shape
    labels = [*model.labels, "B-NEW"]
    learner = make_learner(resolved({"algorithm": "ap"}))
    restarted = continued_start(model, A + 5, labels, learner)  # "auto": a new label
    assert torch.equal(restarted.tables["node"][:A, :L], model.node) and not restarted.updater
    start = continued_start(model, A + 5, labels, learner, "continue")
    node = start.tables["node"]
    assert torch.equal(node[:A, :L], model.state["weights.node"])
    assert not node[A:].any() and not node[:, L:].any()
    edge = start.tables["edge"].view(L + 1, L + 1)
    assert torch.equal(edge[:L, :L], model.state["weights.edge"].view(L, L))
    assert torch.equal(start.updater["sums.node"][:A, :L], model.state["updater.sums.node"])
    assert int(start.updater["seen"]) == len(XA) * 2


@pytest.mark.parametrize("algorithm", ["ap", "pa", "arow", "margin"])
def test_partial_fit_calls_are_the_epochs_of_fit(algorithm):
    """m calls of partial_fit (generators, as any iterables) equal fit with m epochs."""
    X, y = random_corpus(30, 2)
    online = CRF(algorithm=algorithm, random_state=4)
    for _ in range(3):
        online.partial_fit((x for x in X), iter(y))
    whole = CRF(algorithm=algorithm, max_iterations=3, epsilon=0.0, random_state=4).fit(X, y)
    assert len(whole.training_log_.iterations) == 3
    for mine, theirs in zip(tables(online), tables(whole), strict=True):
        assert np.array_equal(mine, theirs)
    lineage = online.model_.info["lineage"]
    assert [e["call"] for e in lineage] == ["partial_fit"] * 3
    assert [e["start"] for e in lineage][0] == "zero"
    assert online.model_.info["epoch"] == 3


def test_partial_fit_takes_classes_and_new_labels():
    X, y = random_corpus(10, 0)
    crf = CRF(algorithm="ap").partial_fit(X, y, classes=["B", "X-RARE"])
    assert crf.classes_[:2] == ["B", "X-RARE"] and set(crf.classes_) == {"O", "B", "I", "X-RARE"}
    XB, yB = with_new_label(X, y)
    crf.partial_fit(XB, yB)
    assert crf.classes_[-1] == "B-NEW"
    assert crf.model_.info["lineage"][-1]["new_labels"] == ["B-NEW"]


def test_partial_fit_refuses_the_crf_and_a_changed_hashing():
    X, y = random_corpus(10, 0)
    with pytest.raises(ValueError, match="partial_fit trains the online algorithms"):
        CRF(algorithm="lbfgs").partial_fit(X, y)
    crf = CRF(algorithm="ap", max_iterations=1, warm_start=True).fit(X, y)
    with pytest.raises(ValueError, match="needs the same hash_bits, got 12"):
        crf.set_params(hash_bits=12).fit(X, y)
    with pytest.raises(ValueError, match="classes: a label must be a str"):
        CRF(algorithm="ap").partial_fit(X, y, classes=[1])


def test_fit_without_warm_start_starts_afresh_and_keeps_no_state():
    X, y = random_corpus(20, 1)
    crf = CRF(algorithm="ap", max_iterations=2).fit(X, y)
    assert crf.model_.state == {}
    again = crf.fit(X, y)
    assert len(again.model_.info["lineage"]) == 1


def test_lbfgs_warm_start_begins_at_the_model_and_needs_fewer_iterations():
    X, y = random_corpus(40, 5)
    cold = CRF(algorithm="lbfgs", max_iterations=200, warm_start=True).fit(X, y)
    first = len(cold.training_log_.iterations)
    cold.fit(X, y)  # the same data again, from its optimum
    assert len(cold.training_log_.iterations) < first / 2
    assert cold.model_.info["lineage"][-1]["start"] == "the model's weights"


def test_a_pickled_warm_model_continues_as_the_original():
    XA, yA = random_corpus(20, 6)
    XB, yB = with_new_label(*random_corpus(20, 7))
    crf = CRF(algorithm="arow", max_iterations=2, warm_start=True).fit(XA, yA)
    copy = pickle.loads(pickle.dumps(crf))
    assert set(copy.model_.state) == set(crf.model_.state) >= {"learner.variance.node"}
    for estimator in (crf, copy):
        estimator.fit(XB, yB)
    for mine, theirs in zip(tables(copy), tables(crf), strict=True):
        assert np.array_equal(mine, theirs)
    assert copy.model_.info["lineage"] == crf.model_.info["lineage"]
    assert crf.size_ < len(pickle.dumps(crf))  # the state is not the model's size


# -- hashing ---------------------------------------------------------------------------------------
def test_row_of_is_a_fixed_hash():
    assert row_of("word.lower():the", 20) == 275307
    assert row_of("word.lower():the", 8) == 275307 % 256
    assert row_of("w:é", 30) == row_of("w:é", 30)


@pytest.mark.parametrize("algorithm", ["ap", "lbfgs"])
def test_a_hashed_model_without_collisions_is_the_dictionary_model(algorithm):
    X, y = random_corpus(40, 8)
    plain = CRF(algorithm=algorithm, max_iterations=5).fit(X, y)
    bits = 16
    rows = [row_of(name, bits) for name in plain.attributes_]
    assert len(set(rows)) == len(rows)  # no two attributes in one row
    hashed = CRF(algorithm=algorithm, max_iterations=5, hash_bits=bits).fit(X, y)
    assert hashed.num_attributes_ == 2**bits
    # the perceptron's integer steps are exact; L-BFGS sums its vectors in the rows' order
    tol = 0 if algorithm == "ap" else 1e-5
    torch.testing.assert_close(hashed.model_.node[rows], plain.model_.node, rtol=0, atol=tol)
    torch.testing.assert_close(hashed.model_.edge, plain.model_.edge, rtol=0, atol=tol)
    assert not hashed.model_.node[sorted(set(range(2**bits)) - set(rows))].any()
    assert [list(p) for p in hashed.predict(X)] == [list(p) for p in plain.predict(X)]
    renamed = {(f"#{row_of(a, bits)}", j) for a, j in plain.state_features_}
    assert set(hashed.state_features_) == renamed
    assert set(hashed.attributes_) <= {f"#{r}" for r in rows}
    copy = pickle.loads(pickle.dumps(hashed))
    assert copy.model_.attributes.hash_bits == bits
    assert [list(p) for p in copy.predict(X)] == [list(p) for p in plain.predict(X)]


def test_a_hashed_model_has_its_size_whatever_the_data():
    small, y_small = random_corpus(5, 9)
    large, y_large = with_new_label(*random_corpus(60, 9))
    sizes = {CRF(algorithm="ap", hash_bits=10).fit(X, y).model_.node.shape[0] for X, y in
             ((small, y_small), (large, y_large))}  # fmt: skip
    assert sizes == {1024}
    crf = CRF(algorithm="ap", hash_bits=10, warm_start=True).fit(small, y_small)
    crf.fit(large, y_large)  # new labels grow the columns; the rows stay
    assert crf.model_.node.shape == (1024, len(crf.classes_))


def test_hash_bits_are_checked():
    X, y = random_corpus(3, 0)
    for bad in (0, 31, 2.5, True):
        with pytest.raises(ValueError, match="hash_bits must be an integer in 1 ... 30"):
            CRF(algorithm="ap", hash_bits=bad).fit(X, y)


# -- growing tables --------------------------------------------------------------------------------
def test_grown_tables_keep_entries_in_place():
    node = torch.arange(6.0).view(3, 2)  # [F=3, L=2]
    grown = grown_label_columns(node, 4, 3, fill=-1.0)
    assert grown.tolist() == [[0, 1, -1], [2, 3, -1], [4, 5, -1], [-1, -1, -1]]
    pairs = torch.tensor([[1.0, 2.0, 3.0, 4.0]])  # i * 2 + j
    assert grown_label_pairs(pairs, 1, 3).view(3, 3).tolist() == [[1, 2, 0], [3, 4, 0], [0, 0, 0]]
    with pytest.raises(ValueError, match="cannot shrink"):
        grown_label_columns(node, 2, 2)


@pytest.mark.parametrize("edges", [False, True])
def test_grown_chain_weights_hold_the_old_tables(edges):
    weights = ChainWeights(3, ["A", "B"], edges=edges)
    with torch.no_grad():
        for t in weights.tables().values():
            t.copy_(torch.randn(t.shape))
    grown = grown_chain_weights(weights, 5, ["A", "B", "C"])
    old, new = weights.tables(), grown.tables()
    assert torch.equal(new["node"][:3, :2], old["node"]) and not new["node"][3:].any()
    rows = 3 if edges else 1
    assert torch.equal(
        new["edge"][:rows].reshape(rows, 3, 3)[:, :2, :2], old["edge"].view(rows, 2, 2)
    )
    with pytest.raises(ValueError, match="must begin with"):
        grown_chain_weights(weights, 5, ["B", "A"])


def test_two_processes_continue_a_model():
    """n_jobs=2 (parameter mixing over forked ranks) continues from the model's state too: the
    first epoch after the warm start begins from the kept averaging state."""
    XA, yA = toy_corpus(40, 11)  # labels that follow from the words
    XB, yB = toy_corpus(40, 12)
    crf = CRF(algorithm="ap", max_iterations=2, warm_start=True, n_jobs=2).fit(XA, yA)
    seen = int(crf.model_.state["updater.seen"])
    assert seen == 2 * len(XA)
    crf.fit(XB, yB)
    assert int(crf.model_.state["updater.seen"]) == seen + 2 * len(XB)
    assert [e["start"] for e in crf.model_.info["lineage"]] == ["zero", "continued"]
    assert crf.score(*toy_corpus(40, 13)) > 0.9
