"""What each feature adds to the score difference of two labelings.

A linear model scores a labeling y as s(x, y) = Φ(x, y)·w, summed over its weight tables.  For
the predicted labeling y' and a runner-up z, the difference

    s(x, y') − s(x, z) = Σ_k (Φ(x, y') − Φ(x, z))_k · w_k

splits exactly into one term per table entry k = (table, row, column): a feature (the row) paired
with a label, a label pair or a tag combination (the column).  The structures already give the
sparse difference Φ(x, y') − Φ(x, z) (``Structure.delta``, a ``model.updates.SparseDelta``), so an
explanation is that delta read against the weights: ``contributions`` groups its entries by
feature, each with its terms (target, value, weight), and the sum of every contribution is the
margin, to rounding (``Explained``: what an explanation holding them shares).  A ``Namer``
turns rows and columns into names (``names.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor

from structperc.model.updates import SparseDelta
from structperc.model.weights import flat_at


class Namer(Protocol):
    """Names the rows (features) and columns (labels, label pairs, tags) of a model's tables."""

    def feature(self, table: str, row: int) -> str: ...

    def target(self, table: str, column: int) -> str: ...


@dataclass(frozen=True)
class Term:
    """One table entry of a feature: its column's name, Φ(y')_k − Φ(z)_k and w_k."""

    target: str
    value: float
    weight: float

    def to_json(self) -> dict:
        return {"target": self.target, "value": self.value, "weight": self.weight}


@dataclass(frozen=True)
class Contribution:
    """A feature's share of the margin: Σ of value × weight over its ``terms``."""

    table: str
    row: int
    feature: str
    terms: tuple[Term, ...]
    contribution: float

    def to_json(self) -> dict:
        return {
            "table": self.table,
            "feature": self.feature,
            "contribution": self.contribution,
            "terms": [t.to_json() for t in self.terms],
        }


def contributions(
    delta: SparseDelta, tables: dict[str, Tensor], namer: Namer
) -> list[Contribution]:
    """The features of ``delta`` (Φ(y') − Φ(z)) with their terms under the weights ``tables``
    (name -> [F, W]), largest |contribution| first; entries whose value cancels are dropped."""
    out: list[Contribution] = []
    for name, (index, values) in delta.coalesced().items():
        keep = values != 0
        index, values = index[keep].cpu(), values[keep].cpu()
        if not len(index):
            continue
        table = tables[name]
        flat, pos = flat_at(table, index.to(table.device))
        weights = flat[pos].detach().cpu().double()  # [K]
        width = table.shape[1]
        rows, columns = torch.div(index, width, rounding_mode="floor"), index % width
        by_row: dict[int, list[Term]] = {}
        entries = zip(
            rows.tolist(), columns.tolist(), values.tolist(), weights.tolist(), strict=True
        )
        for r, c, v, w in entries:
            by_row.setdefault(r, []).append(Term(namer.target(name, c), v, w))
        for r, terms in by_row.items():
            total = sum(t.value * t.weight for t in terms)
            out.append(Contribution(name, r, namer.feature(name, r), tuple(terms), total))
    out.sort(key=lambda c: (-abs(c.contribution), c.table, c.row))
    return out


def total(items: list[Contribution]) -> float:
    """Σ of the contributions (the margin they explain)."""
    return float(sum(c.contribution for c in items))


class Explained:
    """What an explanation shares whose ``contributions`` (largest first) add up to its
    margin: their sum, and their JSON."""

    contributions: list[Contribution]

    @property
    def explained(self) -> float:
        """Σ of the contributions: the margin, to rounding."""
        return total(self.contributions)

    def contributions_json(self, top: int | None) -> dict:
        """The ``top`` contributions (None: all) as JSON objects, and the count and sum of the
        rest."""
        shown = self.contributions if top is None else self.contributions[:top]
        rest = self.contributions[len(shown) :]
        return {
            "contributions": [c.to_json() for c in shown],
            "other_contributions": {"count": len(rest), "sum": total(rest)},
        }
