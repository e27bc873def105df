"""Metrics over sequences of labels, as ``sklearn_crfsuite.metrics`` names them.

The flat metrics score every token of every sequence as one classification, through
scikit-learn's own functions on the flattened labels (``flat_f1_score(y, p, average="weighted",
labels=...)`` is ``sklearn.metrics.f1_score`` of the tokens); ``sequence_accuracy_score`` is the
share of sequences labeled without a mistake.  ``entity_f1_score`` and
``entity_classification_report`` are seqeval's (CoNLL's chunk F1; ``structperc.eval`` computes
the same as conlleval.pl).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import wraps
from itertools import chain

from sklearn import metrics


def flatten(sequences: Sequence[Sequence]) -> list:
    """The items of every sequence, one list."""
    return list(chain.from_iterable(sequences))


def _flat(function):
    @wraps(function)
    def on_tokens(y_true, y_pred, *args, **kwargs):
        return function(flatten(y_true), flatten(y_pred), *args, **kwargs)

    return on_tokens


@_flat
def flat_accuracy_score(y_true, y_pred) -> float:
    """Token accuracy (``sklearn.metrics.accuracy_score`` of the tokens)."""
    return metrics.accuracy_score(y_true, y_pred)


@_flat
def flat_precision_score(y_true, y_pred, **kwargs):
    """``sklearn.metrics.precision_score`` of the tokens."""
    return metrics.precision_score(y_true, y_pred, **kwargs)


@_flat
def flat_recall_score(y_true, y_pred, **kwargs):
    """``sklearn.metrics.recall_score`` of the tokens."""
    return metrics.recall_score(y_true, y_pred, **kwargs)


@_flat
def flat_f1_score(y_true, y_pred, **kwargs):
    """``sklearn.metrics.f1_score`` of the tokens."""
    return metrics.f1_score(y_true, y_pred, **kwargs)


@_flat
def flat_fbeta_score(y_true, y_pred, beta, **kwargs):
    """``sklearn.metrics.fbeta_score`` of the tokens."""
    return metrics.fbeta_score(y_true, y_pred, beta=beta, **kwargs)


@_flat
def flat_classification_report(y_true, y_pred, labels=None, **kwargs):
    """``sklearn.metrics.classification_report`` of the tokens."""
    return metrics.classification_report(y_true, y_pred, labels=labels, **kwargs)


def sequence_accuracy_score(y_true, y_pred) -> float:
    """The share of sequences whose every label is right (0 for no sequences)."""
    if len(y_true) != len(y_pred):
        raise ValueError(f"{len(y_true)} true sequences but {len(y_pred)} predicted")
    if not len(y_true):
        return 0.0
    right = sum(list(t) == list(p) for t, p in zip(y_true, y_pred, strict=True))
    return right / len(y_true)


def entity_f1_score(y_true, y_pred, **kwargs) -> float:
    """seqeval's chunk F1 (CoNLL's entity F1) of IOB sequences."""
    from seqeval.metrics import f1_score

    return f1_score([list(s) for s in y_true], [list(s) for s in y_pred], **kwargs)


def entity_classification_report(y_true, y_pred, **kwargs):
    """seqeval's per-type chunk report of IOB sequences."""
    from seqeval.metrics import classification_report

    return classification_report([list(s) for s in y_true], [list(s) for s in y_pred], **kwargs)
