"""``eli5.explain_weights(crf)`` for the face's ``CRF``, as eli5 does it for sklearn-crfsuite's.

eli5 (0.16, scikit-learn >= 1.6) explains an ``sklearn_crfsuite.CRF`` by a function registered
for that class; its dispatch goes by class, so it does not see ``structperc.sklearn.CRF``.
``register`` adds one for the face, built from ``CRF.explain_weights`` (``explain/weights.py``):
per label its ``top`` features by weight, positive and negative, and the transition matrix, in
eli5's own ``Explanation`` objects, so ``eli5.format_as_text``, ``format_as_html`` and
``format_as_dataframe`` show them.  The face calls ``register`` when a model is fitted or
unpickled (eli5's import takes some 0.7 s, more than the face should spend at import), and it
does nothing where eli5 is not installed.
"""

from __future__ import annotations

import importlib.util

import numpy as np

_registered = False


def register(estimator: type) -> bool:
    """Register ``estimator`` (the face's ``CRF``) with eli5's ``explain_weights``; False
    without eli5."""
    global _registered
    if _registered:
        return True
    if importlib.util.find_spec("eli5") is None:
        return False
    from eli5.explain import explain_weights

    explain_weights.register(estimator)(explain_crf_weights)
    _registered = True
    return True


def explain_crf_weights(crf, top: int = 20, targets=None, **options):
    """eli5's ``Explanation`` of the face's ``CRF`` (``targets``: the labels to show, in that
    order; default every label).  eli5's other options (``feature_re``, ``feature_filter``,
    ``target_names`` ...) are not supported: ValueError naming them."""
    given = sorted(k for k, v in options.items() if v is not None)
    if given:
        raise ValueError(
            f"eli5.explain_weights on structperc's CRF takes top= and targets=, not {given}"
        )
    from eli5.base import (
        Explanation,
        FeatureWeight,
        FeatureWeights,
        TargetExplanation,
        TransitionFeatureWeights,
    )

    weights = crf.explain_weights(top=top)
    labels = weights["labels"]
    shown = list(labels if targets is None else targets)
    index = [labels.index(t) for t in shown]
    node = crf.model_.node.numpy()  # [A, L]
    positive, negative = (node > 0).sum(axis=0), (node < 0).sum(axis=0)  # [L] each

    def target(label: str, j: int) -> TargetExplanation:
        ranked = weights["per_label"][label]
        pos = [FeatureWeight(x["feature"], x["weight"]) for x in ranked["positive"]]
        neg = [FeatureWeight(x["feature"], x["weight"]) for x in ranked["negative"]]
        more_pos, more_neg = int(positive[j]) - len(pos), int(negative[j]) - len(neg)
        features = FeatureWeights(pos, neg, more_pos, more_neg)
        return TargetExplanation(target=label, feature_weights=features)

    transitions = np.asarray(weights["transitions"])[np.ix_(index, index)]
    return Explanation(
        targets=[target(label, j) for label, j in zip(shown, index, strict=True)],
        transition_features=TransitionFeatureWeights(class_names=shown, coef=transitions),
        estimator=repr(crf),
        method="CRF",
    )
