"""The face takes what sklearn-crfsuite takes, and refuses clearly what would poison a model.

* Feature values that are not finite numbers: before this check, ``fit`` on
  ``[[{"w": "a", "v": nan}, {"w": "b"}]] * 3`` returned a model whose every weight was NaN (a
  NaN value enters the first update's feature difference, and every later score and update
  reads it) and ``predict`` answered without complaint.  Now a ``ValueError`` names the
  sequence (its number in the user's X, empty sequences included), the token and the key.
* Iterables: ``fit`` called ``len(X)`` and failed on generators; X, y, X_dev, y_dev and
  predict's X may now be any iterables, read once.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from structperc.sklearn import CRF
from structperc.sklearn.attributes import FeatureFormatError

WORDS = {"PER": ["John", "Mary"], "LOC": ["Paris", "Rome"], "O": ["the", "in", "lives"]}


def corpus(n: int = 30):
    X, y = [], []
    for i in range(n):
        kinds = ["PER", "O", "LOC", "O"][: 2 + i % 3]
        words = [WORDS[k][(i + j) % len(WORDS[k])] for j, k in enumerate(kinds)]
        X.append([{"w": w, "len": float(len(w)), "cap": w[0].isupper()} for w in words])
        y.append(["B-" + k if k != "O" else "O" for k in kinds])
    return X, y


@pytest.mark.parametrize(
    "bad, where",
    [
        (float("nan"), "X[0][0]: feature 'v'"),
        (float("inf"), "X[0][0]: feature 'v'"),
        (-math.inf, "X[0][0]: feature 'v'"),
        (1e39, "X[0][0]: feature 'v'"),  # finite in Python, infinite in the float32 tables
        (np.float64("nan"), "X[0][0]: feature 'v'"),
    ],
)
@pytest.mark.parametrize("algorithm", ["ap", "lbfgs"])
def test_a_non_finite_value_is_named_before_training(bad, where, algorithm):
    X = [[{"w": "a", "v": bad}, {"w": "b"}]] * 3
    crf = CRF(algorithm=algorithm, max_iterations=2)
    with pytest.raises(ValueError, match=rf"^{re.escape(where)}.*finite number"):
        crf.fit(X, [["A", "B"]] * 3)
    assert not hasattr(crf, "training_log_")  # nothing was trained


def test_the_message_names_the_users_sequence_token_and_nested_key():
    X, y = corpus()
    X = [[], *X]  # an empty sequence first: the numbers stay the user's
    y = [[], *y]
    X[4] = [dict(item) for item in X[4]]
    X[4][1] = {**X[4][1], "n": {"deep": float("-inf")}}
    with pytest.raises(
        FeatureFormatError, match=r"^X\[4\]\[1\]: feature 'n:deep' has the value -inf"
    ):
        CRF(algorithm="ap", max_iterations=1).fit(X, y)


def test_holdout_and_prediction_refuse_non_finite_values():
    X, y = corpus()
    bad = [[{"w": "John", "len": float("nan")}]]
    with pytest.raises(FeatureFormatError, match=r"^X_dev\[0\]\[0\]: feature 'len'"):
        CRF(algorithm="ap", max_iterations=1).fit(X, y, X_dev=bad, y_dev=[["B-PER"]])
    crf = CRF(algorithm="ap", max_iterations=2).fit(X, y)
    # an unseen key too: a user's X with a NaN is an error wherever it is
    for X_bad, key in (([[], *bad], "len"), ([[], [{"w": "a", "unseen": math.nan}]], "unseen")):
        with pytest.raises(FeatureFormatError, match=rf"^X\[1\]\[0\]: feature '{key}'"):
            crf.predict(X_bad)
        with pytest.raises(FeatureFormatError):
            crf.predict_marginals(X_bad)


@pytest.mark.parametrize("algorithm", ["ap", "lbfgs", "pa"])
def test_fit_and_predict_take_generators(algorithm):
    X, y = corpus()
    X_dev, y_dev = corpus(8)
    from_lists = CRF(algorithm=algorithm, max_iterations=3).fit(X, y, X_dev, y_dev)
    from_gens = CRF(algorithm=algorithm, max_iterations=3).fit(
        (x for x in X), (t for t in y), iter(X_dev), map(list, y_dev)
    )
    assert from_gens.state_features_ == from_lists.state_features_
    assert from_gens.transition_features_ == from_lists.transition_features_
    want = from_lists.predict(X_dev).tolist()
    assert from_gens.predict(x for x in X_dev).tolist() == want
    marg = from_gens.predict_marginals(iter(X_dev))
    assert len(marg) == len(X_dev) and len(marg[0]) == len(X_dev[0])
    assert from_gens.score(iter(X_dev), iter(y_dev)) == from_lists.score(X_dev, y_dev)


def test_generators_of_unequal_length_are_refused():
    X, y = corpus(5)
    with pytest.raises(ValueError, match="X and y differ in length: X has more than 4"):
        CRF(algorithm="ap").fit(iter(X), iter(y[:4]))
    with pytest.raises(ValueError, match=r"X\[2\] has \d items but y\[2\] has 1 labels"):
        CRF(algorithm="ap").fit(iter(X), iter(y[:2] + [["O"]] + y[3:]))


def test_several_jobs_read_a_generator_too():
    X, y = corpus(40)
    one = CRF(algorithm="lbfgs", max_iterations=3).fit(X, y)
    two = CRF(algorithm="lbfgs", max_iterations=3, n_jobs=2).fit(iter(X), iter(y))
    assert two.attributes_ == one.attributes_
