"""sklearn-crfsuite's tutorial (its docs, "Tutorial": CoNLL 2002 NER with ``word2features``) run
with only its imports changed, on a small slice of CoNLL-2003 (the tutorial's ``iob_sents`` of
(word, POS tag, label) triples read from the data folder instead of NLTK's corpus)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import scipy.stats
from sklearn.metrics import make_scorer
from sklearn.model_selection import RandomizedSearchCV

# the tutorial's imports, changed:
#   import sklearn_crfsuite
#   from sklearn_crfsuite import scorers
#   from sklearn_crfsuite import metrics
import structperc.sklearn as sklearn_crfsuite
from structperc.sklearn import metrics, scorers

pytestmark = pytest.mark.realdata


def iob_sents(path: Path, limit: int) -> list[list[tuple[str, str, str]]]:
    """The first ``limit`` sentences of a CoNLL-2003 file as (word, POS tag, NER label)."""
    sents, current = [], []
    for line in path.read_text().splitlines():
        cols = line.split()
        if not cols or cols[0] == "-DOCSTART-":
            if current:
                sents.append(current)
                current = []
            if len(sents) == limit:
                break
            continue
        current.append((cols[0], cols[1], cols[3]))
    return sents[:limit]


# -- the tutorial's feature functions, as documented -----------------------------------------------
def word2features(sent, i):
    word = sent[i][0]
    postag = sent[i][1]

    features = {
        "bias": 1.0,
        "word.lower()": word.lower(),
        "word[-3:]": word[-3:],
        "word[-2:]": word[-2:],
        "word.isupper()": word.isupper(),
        "word.istitle()": word.istitle(),
        "word.isdigit()": word.isdigit(),
        "postag": postag,
        "postag[:2]": postag[:2],
    }
    if i > 0:
        word1 = sent[i - 1][0]
        postag1 = sent[i - 1][1]
        features.update(
            {
                "-1:word.lower()": word1.lower(),
                "-1:word.istitle()": word1.istitle(),
                "-1:word.isupper()": word1.isupper(),
                "-1:postag": postag1,
                "-1:postag[:2]": postag1[:2],
            }
        )
    else:
        features["BOS"] = True

    if i < len(sent) - 1:
        word1 = sent[i + 1][0]
        postag1 = sent[i + 1][1]
        features.update(
            {
                "+1:word.lower()": word1.lower(),
                "+1:word.istitle()": word1.istitle(),
                "+1:word.isupper()": word1.isupper(),
                "+1:postag": postag1,
                "+1:postag[:2]": postag1[:2],
            }
        )
    else:
        features["EOS"] = True

    return features


def sent2features(sent):
    return [word2features(sent, i) for i in range(len(sent))]


def sent2labels(sent):
    return [label for token, postag, label in sent]


def sent2tokens(sent):
    return [token for token, postag, label in sent]


def test_the_tutorial_runs_with_its_import_changed(data_dir):
    train_sents = iob_sents(data_dir / "conll2003" / "train.txt", 200)
    test_sents = iob_sents(data_dir / "conll2003" / "test.txt", 150)

    X_train = [sent2features(s) for s in train_sents]
    y_train = [sent2labels(s) for s in train_sents]

    X_test = [sent2features(s) for s in test_sents]
    y_test = [sent2labels(s) for s in test_sents]

    crf = sklearn_crfsuite.CRF(
        algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=20, all_possible_transitions=True
    )
    crf.fit(X_train, y_train)

    labels = list(crf.classes_)
    labels.remove("O")
    y_pred = crf.predict(X_test)
    f1 = metrics.flat_f1_score(y_test, y_pred, average="weighted", labels=labels)
    assert 0.3 < f1 <= 1.0  # 200 sentences learn something

    sorted_labels = sorted(labels, key=lambda name: (name[1:], name[0]))
    report = metrics.flat_classification_report(
        y_test, y_pred, labels=sorted_labels, digits=3, zero_division=0
    )
    assert "I-PER" in report

    # hyperparameter optimization (the tutorial: 50 draws, 3 folds; here 2 and 2)
    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", max_iterations=10, all_possible_transitions=True)
    params_space = {"c1": scipy.stats.expon(scale=0.5), "c2": scipy.stats.expon(scale=0.05)}
    f1_scorer = make_scorer(metrics.flat_f1_score, average="weighted", labels=labels)
    rs = RandomizedSearchCV(
        crf, params_space, cv=2, verbose=0, n_jobs=1, n_iter=2, scoring=f1_scorer, random_state=0
    )
    rs.fit(X_train, y_train)
    assert 0.0 <= rs.best_score_ <= 1.0
    crf = rs.best_estimator_
    assert crf.score(X_test, y_test) > 0.7
    assert 0.0 <= scorers.sequence_accuracy(crf, X_test, y_test) <= 1.0

    # check what the classifier learned
    top = Counter(crf.transition_features_).most_common(20)
    assert all(isinstance(a, str) and isinstance(b, str) for (a, b), _ in top)
    weights = Counter(crf.state_features_).most_common(30)
    assert {label for (attr, label), _ in weights} <= set(crf.classes_)
