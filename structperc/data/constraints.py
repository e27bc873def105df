"""What a user knows of a document's labeling before it is decoded: constraints for prediction.

    Constraints(
        labels={0: "B-ORG", 3: {"B-PER", "I-PER"}, 5: "LOC"},   # a token's label, or its choices
        not_labels={2: {"B-PER"}},                               # labels a token may not carry
        spans=[(4, 6, "ORG")],                                   # entities that must be there
        forbidden=[(7, 9, "PER"), (10, 11, None)],               # entities that must not be
    )

A choice may name a chunk type (``"LOC"``: ``B-LOC`` or ``I-LOC``).  A span is (start, end
exclusive, type) over the document's tokens; a forbidden span of type None forbids every type.
An entity is what conlleval reads in IOB2 (``data.tags.spans``): a required span fixes ``B-X``
at its start, ``I-X`` inside, and a token after it that is not ``I-X``; a forbidden one is ruled
out exactly, by the chain's augmented lattice (``decode/forbidden_spans.py``).  Everything but
forbidden spans is a set of allowed labels per token (``allowed``), which every decoder honours
as -inf node scores (``decode/node_offsets.py``).  ``from_cells`` reads the per-token form of a
constraint column (``None``/``?`` free, a label fixed, labels joined by ``|`` allowed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from .partial import cell_labels, is_partial


@dataclass
class Constraints:
    """One document's constraints (module docstring)."""

    labels: Mapping[int, str | Iterable[str]] = field(default_factory=dict)
    not_labels: Mapping[int, Iterable[str]] = field(default_factory=dict)
    spans: Sequence[tuple[int, int, str]] = ()
    forbidden: Sequence[tuple[int, int, str | None]] = ()

    @classmethod
    def from_cells(cls, cells: Sequence, unknown: str = "?", any_of: str = "|") -> Constraints:
        """Per-token constraints: None (or ``unknown``) leaves a token free, a label fixes it,
        a set / list / tuple of labels (or a text of labels joined by ``any_of``) allows them;
        a partial cell of ``data/partial.py`` as well."""
        labels: dict[int, str | set[str]] = {}
        for t, cell in enumerate(cells):
            if cell is None or cell == unknown:
                continue
            if isinstance(cell, str):
                if is_partial(cell):
                    allowed = cell_labels(cell)
                    if allowed is not None:
                        labels[t] = set(allowed)
                elif any_of and any_of in cell and cell != any_of:
                    labels[t] = {x for x in cell.split(any_of) if x}
                else:
                    labels[t] = cell
            else:
                labels[t] = set(cell)
        return cls(labels=labels)

    def is_empty(self) -> bool:
        return not (self.labels or self.not_labels or self.spans or self.forbidden)

    def allowed(self, length: int, labels: Sequence[str]) -> Tensor:
        """[T, L] bool: the labels each of the ``length`` tokens may carry.  ValueError naming a
        token outside the document, a label or type the model does not have, or a token left
        with no label."""
        index = {label: j for j, label in enumerate(labels)}
        mask = torch.ones((length, len(labels)), dtype=torch.bool)

        def ids(t: int, names, what: str) -> list[int]:
            check_token(t, length, what)
            names = [names] if isinstance(names, str) else list(names)
            out = []
            for name in names:
                out += label_ids(name, index, labels, f"{what} of token {t}")
            return out

        for t, names in self.labels.items():
            keep = torch.zeros(len(labels), dtype=torch.bool)
            keep[ids(t, names, "the label")] = True
            mask[t] &= keep
        for t, names in self.not_labels.items():
            mask[t, ids(t, names, "a forbidden label")] = False
        for start, end, kind in self.spans:
            check_span(start, end, length, "required span")
            b = label_ids(f"B-{kind}", index, labels, f"the span ({start}, {end}, {kind})")
            i = label_ids(f"I-{kind}", index, labels, f"the span ({start}, {end}, {kind})")
            only(mask, start, b)
            for t in range(start + 1, end):
                only(mask, t, i)
            if end < length:
                mask[end, i] = False
        empty = (~mask.any(1)).nonzero()
        if len(empty):
            raise ValueError(f"token {int(empty[0])}: the constraints leave it no label")
        return mask

    def forbidden_spans(
        self, length: int, labels: Sequence[str]
    ) -> list[tuple[int, int, int, int]]:
        """(start, end, id of B-X, id of I-X) of every forbidden span (-1 for a label the model
        lacks), a span of no type once per type; for ``decode/forbidden_spans.py``."""
        index = {label: j for j, label in enumerate(labels)}
        kinds = sorted({label[2:] for label in labels if label[:2] in ("B-", "I-")})
        out = []
        for start, end, kind in self.forbidden:
            check_span(start, end, length, "forbidden span")
            if kind is not None and kind not in kinds:
                raise ValueError(
                    f"the forbidden span ({start}, {end}, {kind}): no type {kind!r} among the "
                    f"model's labels ({list(labels)})"
                )
            for k in [kind] if kind is not None else kinds:
                out.append((start, end, index.get(f"B-{k}", -1), index.get(f"I-{k}", -1)))
        return out


def only(mask: Tensor, t: int, keep: list[int]) -> None:
    row = torch.zeros(mask.shape[1], dtype=torch.bool)
    row[keep] = True
    mask[t] &= row


def check_token(t: int, length: int, what: str) -> None:
    if not 0 <= t < length:
        raise ValueError(f"{what}: token {t} is outside the document (0..{length - 1})")


def check_span(start: int, end: int, length: int, what: str) -> None:
    if not 0 <= start < end <= length:
        raise ValueError(
            f"{what} ({start}, {end}): expected 0 <= start < end <= {length} (end exclusive)"
        )


def label_ids(name: str, index: Mapping[str, int], labels: Sequence[str], what: str) -> list[int]:
    """The ids of a label, or of a chunk type's prefixed labels; ValueError for neither."""
    if name in index:
        return [index[name]]
    typed = [j for j, label in enumerate(labels) if label[:2] in ("B-", "I-") and label[2:] == name]
    if typed:
        return typed
    raise ValueError(f"{what}: {name!r} is no label of the model ({list(labels)}) nor a type")


def as_constraints(item) -> Constraints | None:
    """A document's constraints from what a caller gives: a ``Constraints``, a mapping of its
    fields, a per-token sequence (``Constraints.from_cells``), or None (none)."""
    if item is None or isinstance(item, Constraints):
        return item
    if isinstance(item, Mapping):
        return Constraints(**item)
    return Constraints.from_cells(item)


def encode_constraints(
    constraints: Sequence, lengths: Sequence[int], labels: Sequence[str]
) -> tuple[Tensor | None, dict | None]:
    """(allowed [N, L] bool or None, forbidden spans by document or None) of documents of
    ``lengths`` with ``constraints`` (one entry per document, ``as_constraints``' forms)."""
    if len(constraints) != len(lengths):
        raise ValueError(f"{len(constraints)} constraints for {len(lengths)} documents")
    rows, forbidden, any_rows = [], {}, False
    for d, (item, n) in enumerate(zip(constraints, lengths, strict=True)):
        c = as_constraints(item)
        if c is None or c.is_empty():
            rows.append(torch.ones((n, len(labels)), dtype=torch.bool))
            continue
        if c.labels or c.not_labels or c.spans:
            any_rows = True
        rows.append(c.allowed(n, labels))
        spans = c.forbidden_spans(n, labels)
        if spans:
            forbidden[d] = spans
    allowed = torch.cat(rows) if any_rows and rows else None
    return allowed, forbidden or None
