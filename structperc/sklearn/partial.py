"""The face's partial labels and class weights: ``y`` with ``None`` (an unknown label) or a set
of labels (one of them), and ``class_weight`` as per-label costs.

A sequence of ``y`` may leave a token's label unknown (``None``) or narrow it to a set (a
``set``, ``frozenset``, ``tuple`` or ``list`` of labels): training then learns from every
labeling compatible with the known labels (``data/partial.py``: the CRF's likelihood of the
compatible labelings, the perceptrons' latent gold).  ``class_weight`` is scikit-learn's: a dict
label (or chunk type) -> weight, or ``"balanced"`` (n_tokens / (n_labels * count of the
label)); it becomes ``learner.label_costs`` (``learn/costs.py``: softmax-margin for the CRF,
cost-augmented decoding for the others).
"""

from __future__ import annotations

CHOICES = (set, frozenset, tuple, list)  # a token's labels given as one of several


def is_label(label) -> bool:
    """A label of ``y``: a str, None (unknown), or a collection of str (one of them)."""
    if label is None or isinstance(label, str):
        return True
    return isinstance(label, CHOICES) and len(label) > 0 and all(isinstance(x, str) for x in label)


def named_labels(label) -> list[str]:
    """The labels a token's entry names (none for None)."""
    if label is None:
        return []
    return [label] if isinstance(label, str) else sorted(set(label))


def class_costs(class_weight, labels: list[str], counts: dict[str, int]) -> dict | None:
    """``learner.label_costs`` of scikit-learn's ``class_weight`` (None: none); ``counts``: the
    tokens of each known label in the training data."""
    if class_weight is None:
        return None
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"class_weight must be a dict or 'balanced', got {class_weight!r}")
        total = sum(counts.values())
        return {
            label: total / (len(labels) * counts[label]) for label in labels if counts.get(label)
        }
    if not isinstance(class_weight, dict):
        raise ValueError(f"class_weight must be a dict or 'balanced', got {class_weight!r}")
    return {str(k): float(v) for k, v in class_weight.items()}
