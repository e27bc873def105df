"""Per-label costs of cost-sensitive training (``learner.label_costs``; ``class_weight`` in the
scikit-learn face).

A cost c(l) >= 0 is what missing a token whose gold label is l costs.  The loss of a labeling y
against the gold y* is the weighted Hamming loss

    Delta(y*, y) = sum_t c(y*_t) [y_t != y*_t],

which the online learners put into decoding (loss-augmented inference, Taskar et al. 2004: the
rival is argmax_y s(y) + Delta(y*, y), so a labeling that misses a costly label must lose by a
margin that grows with its cost), MMVP, PA and AROW into their step sizes too
(``structure.loss``), and the CRF into its partition function (softmax-margin, Gimpel & Smith
2010: log sum_y exp(s(y) + Delta(y*, y)) - s(y*), the likelihood with every rival labeling
weighted by exp(Delta)).  Both are offsets of the node scores (``decode/node_offsets.py``).
Labels not listed cost 1: with ``label_costs`` empty the loss is the plain Hamming loss.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor


def cost_vector(label_costs: Mapping[str, float] | None, labels: Sequence[str]) -> Tensor | None:
    """[L] float32: each label's cost (1 unless listed), or None without ``label_costs``.

    A key names a label (``B-MISC``) or a chunk type (``MISC``: each of its prefixed labels,
    ``B-MISC`` and ``I-MISC``); a label named both ways takes its own entry.  ValueError for a
    key that names neither, or a cost that is not a number >= 0."""
    if label_costs is None:
        return None
    costs = torch.ones(len(labels), dtype=torch.float32)
    index = {label: i for i, label in enumerate(labels)}
    by_type: dict[str, list[int]] = {}
    for i, label in enumerate(labels):
        prefix, dash, kind = label.partition("-")
        if dash and len(prefix) == 1:
            by_type.setdefault(kind, []).append(i)
    exact = {}
    for key, value in dict(label_costs).items():
        try:
            cost = float(value)
        except (TypeError, ValueError):
            raise ValueError(
                f"learner.label_costs.{key}: expected a number, got {value!r}"
            ) from None
        if not cost >= 0:
            raise ValueError(f"learner.label_costs.{key}: a cost must be >= 0, got {value!r}")
        key = str(key)
        if key in index:
            exact[index[key]] = cost
        elif key in by_type:
            costs[by_type[key]] = cost
        else:
            types = sorted(by_type)
            raise ValueError(
                f"learner.label_costs names {key!r}, which is no label of the model "
                f"({list(labels)}) nor a chunk type ({types})"
            )
    for i, cost in exact.items():
        costs[i] = cost
    return costs
