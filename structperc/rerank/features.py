"""Global features of candidate lists, and the ``RankingData`` the candidate-list structure reads.

Two feature maps, chosen by ``task.features``:

* ``collins``: Collins's (2002) global features (``features/collins.py``), binary, as strings;
  ``StringVocabulary`` keeps those seen on at least ``min_units`` distinct training units
  (Collins: 5) and maps them to ids;
* ``nonlocal``: Kazama & Torisawa's non-local features of the unit (``features/document.py``),
  with their counts.

``ranking_data`` lays a ``CandidateSet`` out as rows: for training, each unit's reference first
(the gold labeling, ``target="gold"``, or its best candidate, ``"oracle"``: fewest tag errors,
ties to the first model's rank), then its first n candidates.  Training units whose candidates
are all equally good teach a ranker nothing and are left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import Tensor

from structperc.data.candidates import CandidateSet
from structperc.data.document import Document
from structperc.features.collins import LowercaseLexicon, Sentence
from structperc.structures.candidates import RankingData
from structperc.structures.chain import ChainData

TARGETS = ("gold", "oracle")


class StringVocabulary:
    """Feature strings -> ids, keeping those seen on at least ``min_units`` training units."""

    def __init__(self, min_units: int = 1, strings: Iterable[str] = ()):
        self.min_units = min_units
        self.strings = list(strings)
        self.index = {s: i for i, s in enumerate(self.strings)}

    def fit(self, units: Iterable[list[set[str]]]) -> StringVocabulary:
        """``units``: per training unit, the feature sets of its rows."""
        seen: Counter = Counter()
        for rows in units:
            seen.update(set().union(*rows) if rows else set())
        self.strings = sorted(s for s, k in seen.items() if k >= self.min_units)
        self.index = {s: i for i, s in enumerate(self.strings)}
        return self

    def __len__(self) -> int:
        return len(self.strings)

    def transform(self, rows: list[set[str]]) -> tuple[Tensor, Tensor]:
        """CSR (ids [nnz], offsets [r + 1]) of the known features of each row (binary)."""
        ids = [sorted(self.index[s] for s in row if s in self.index) for row in rows]
        offsets = torch.zeros(len(rows) + 1, dtype=torch.long)
        torch.cumsum(torch.tensor([len(i) for i in ids], dtype=torch.long), 0, out=offsets[1:])
        flat = torch.tensor([i for row in ids for i in row], dtype=torch.long)
        return flat, offsets


def collins_sets(
    rows: ListRows, labels: list[str], lexicon: LowercaseLexicon, typed: bool = True
) -> list[list[set[str]]]:
    """Collins's feature set of every row of every unit (a unit's entities computed once)."""
    out = []
    for doc, paths in zip(rows.documents, rows.paths, strict=True):
        sentence = Sentence(doc.tokens, lexicon, typed)
        out.append([sentence.features([labels[i] for i in p]) for p in paths.tolist()])
    return out


def reference_row(candidates: CandidateSet, u: int, target: str) -> int | None:
    """The row of unit u's best candidate (``oracle``), or None (``gold``: not a row)."""
    if target == "gold":
        return None
    rows = candidates.rows(u)
    errors = candidates.errors[rows.start : rows.stop]
    return rows.start + int(errors.argmin())  # argmin: the first of the fewest errors


def teaches_nothing(candidates: CandidateSet, u: int) -> bool:
    """Every candidate of unit u is as good as every other (same tag errors)."""
    rows = candidates.rows(u)
    errors = candidates.errors[rows.start : rows.stop]
    return bool((errors == errors[0]).all())


@dataclass
class ListRows:
    """The rows of the kept units of one split, before their features: per unit its document,
    its rows' labelings [r, T] (the reference first for training) and L(x) [r]."""

    keep: list[int]
    documents: list[Document]
    paths: list[Tensor]
    base: list[Tensor]
    has_reference: bool


def list_rows(
    candidates: CandidateSet, tokens: ChainData, *, n: int, target: str | None
) -> ListRows:
    """The rows of every unit of ``candidates`` (units in the order of ``tokens``): its first n
    candidates, after its reference for training (``target`` "gold" or "oracle"; None: no
    reference, for dev/test).  Training units that teach nothing are left out."""
    if target is not None and target not in TARGETS:
        raise ValueError(f"task.target must be one of {TARGETS}, got {target!r}")
    if candidates.num_units != len(tokens) or tokens.documents is None:
        raise ValueError(f"{candidates.num_units} lists for {len(tokens)} units (with documents)")
    out = ListRows([], [], [], [], target is not None)
    for u in range(candidates.num_units):
        if target is not None and teaches_nothing(candidates, u):
            continue
        rows = list(candidates.rows(u))[:n]
        paths = torch.stack([candidates.labeling(r) for r in rows])  # [m, T]
        base = candidates.base[rows[0] : rows[-1] + 1]
        if target is not None:
            ref = reference_row(candidates, u, target)
            if ref is None:
                ref_path, ref_base = tokens.gold(u), candidates.gold_base[u : u + 1]
            else:
                ref_path, ref_base = candidates.labeling(ref), candidates.base[ref : ref + 1]
            paths = torch.cat([ref_path.unsqueeze(0), paths])
            base = torch.cat([ref_base, base])
        out.keep.append(u)
        out.documents.append(tokens.documents[u])
        out.paths.append(paths)
        out.base.append(base)
    return out


def ranking_data(
    rows: ListRows, features: list[tuple[Tensor, Tensor]], tokens: ChainData
) -> RankingData:
    """``RankingData`` of ``rows`` with the CSR global features of each unit's rows."""
    counts = [len(p) for p in rows.paths]
    lengths = [p.shape[1] for p in rows.paths for _ in range(len(p))]
    kept = rows.keep if len(rows.keep) != len(tokens) else None
    return RankingData(
        offsets=_offsets(counts),
        labels=torch.cat([p.reshape(-1) for p in rows.paths]),
        label_offsets=_offsets(lengths),
        base=torch.cat(rows.base).double(),
        ids=torch.cat([ids.long() for ids, _ in features]),
        id_offsets=_offsets(torch.cat([off.diff() for _, off in features]).tolist()),
        tokens=tokens if kept is None else tokens.subset(kept),
        has_reference=rows.has_reference,
    )


def _offsets(counts: list[int]) -> Tensor:
    out = torch.zeros(len(counts) + 1, dtype=torch.long)
    torch.cumsum(torch.tensor(counts, dtype=torch.long), 0, out=out[1:])
    return out
