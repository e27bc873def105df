"""What a trained model has learned: its largest weights, read table by table.

For a chain (``model/weights.py``) a feature f has a node weight per label and, with edge
features, an edge weight per label pair; the *transition matrix* is the edge weights every
token shares: the one row of ``edges=False`` (CRFsuite's first-order model, the scikit-learn
face), or the ``bias`` feature's row with edge features (Kazama & Torisawa's Table 1, whose
bias fires at every token).  The non-local table (``model/document_weights.py``) has one weight
per feature ``family=class|class``, grouped here by family; a ranker's (``model/ranker_weights.py``)
has w_0, the weight of the first model's score, and its global features.  "Top" means the
``top`` largest weights of a column and the ``top`` most negative ones (eli5's
``explain_weights`` shows the same two ends).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from structperc.explain.contributions import Namer
from structperc.explain.names import ARROW, BASE
from structperc.features.extract import KEY_SHIFT


@dataclass(frozen=True)
class Ranked:
    """Names and weights of one column's largest and most negative weights."""

    positive: list[tuple[str, float]]
    negative: list[tuple[str, float]]

    def to_json(self) -> dict:
        return {
            "positive": [{"feature": n, "weight": w} for n, w in self.positive],
            "negative": [{"feature": n, "weight": w} for n, w in self.negative],
        }


def top_of_column(table: Tensor, column: int, name, top: int) -> Ranked:
    """The ``top`` largest (> 0) and most negative (< 0) weights of ``table[:, column]``, named
    by ``name(row)``."""
    col = table[:, column].detach().float().cpu()  # [F]
    k = min(top, len(col))
    hi, lo = torch.topk(col, k), torch.topk(-col, k)
    positive = [(name(r), float(w)) for w, r in zip(*hi, strict=True) if w > 0]
    negative = [(name(r), -float(w)) for w, r in zip(*lo, strict=True) if w > 0]
    return Ranked(positive, negative)


def chain_transitions(weights, bias_row: int | None = None) -> list[list[float]] | None:
    """The transition matrix [L][L] (from, to): the shared edge row (``edges=False``) or the
    edge weights of the bias feature (row ``bias_row``); None when the model has neither."""
    L = weights.num_labels
    edge = weights.tables()["edge"]
    if not weights.edges:
        return edge[0].detach().view(L, L).tolist()
    return None if bias_row is None else edge[bias_row].detach().view(L, L).tolist()


def bias_row(vocab) -> int | None:
    """The row of the bias feature (the empty template) of a ``features.extract.Vocabulary``,
    or None where it has none."""
    if () not in vocab.templates:
        return None
    return vocab.row_of(vocab.templates.index(()) << KEY_SHIFT)


def chain_weights(
    weights, namer: Namer, top: int = 20, pairs: bool = False, bias: int | None = None
) -> dict:
    """The top features of every label (node weights), the transition matrix (``bias``: the
    bias feature's row, ``bias_row``) and, with ``pairs``, the top edge features of every label
    pair (edge features only), as JSON."""
    labels = weights.labels
    node = weights.tables()["node"]
    out: dict = {
        "labels": labels,
        "per_label": {
            label: top_of_column(node, j, lambda r: namer.feature("node", r), top).to_json()
            for j, label in enumerate(labels)
        },
        "transitions": chain_transitions(weights, bias),
    }
    if pairs and weights.edges:
        edge, L = weights.tables()["edge"], len(labels)
        out["per_label_pair"] = {
            f"{labels[i]}{ARROW}{labels[j]}": top_of_column(
                edge, i * L + j, lambda r: namer.feature("edge", r), top
            ).to_json()
            for i in range(L)
            for j in range(L)
        }
    return out


def non_local_weights(weights, names: list[str]) -> dict[str, list[dict]]:
    """The non-local features' weights grouped by family (``phrase``, ``tokmaj``, ...), each
    family's features by weight, largest first."""
    table = weights.tables()["global"][:, 0].detach().cpu().tolist()
    families: dict[str, list[dict]] = {}
    for name, w in zip(names, table, strict=True):
        family = name.split("=", 1)[0]
        families.setdefault(family, []).append({"feature": name, "weight": w})
    for items in families.values():
        items.sort(key=lambda x: -x["weight"])
    return families


def ranker_weights(weights, namer: Namer, top: int = 20, base_weight: float | None = None) -> dict:
    """A ranker's w_0 (learned, or the constant ``base_weight``) and its top global features."""
    w0 = float(weights.base[0, 0]) if base_weight is None else float(base_weight)
    glob = weights.tables()["global"]
    ranked = top_of_column(glob, 0, lambda r: namer.feature("global", r), top)
    return {"base": {"feature": BASE, "weight": w0}, "global": ranked.to_json()}


def label_chunk_weights(weights, namer: Namer, top: int = 20) -> dict:
    """The top features of every column of every part table of a label-chunk model."""
    out: dict = {}
    for table_name, table in weights.tables().items():
        out[table_name] = {
            namer.target(table_name, c): top_of_column(
                table, c, lambda r, t=table_name: namer.feature(t, r), top
            ).to_json()
            for c in range(table.shape[1])
        }
    return out
