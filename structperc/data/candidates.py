"""n-best candidate lists of a first model, as reranking reads them, and their files on disk.

Reranking (Collins 2002; Kazama & Torisawa 2007, section 6.3) takes the n best labelings of every
unit (a document or a sentence) from a first model and learns to pick among them.  A
``CandidateSet`` holds the lists of the units of one data set:

    units         [U, 3] long   (document index, first token, end token) of each unit
    offsets       [U + 1] long  unit u's candidates are rows offsets[u]:offsets[u + 1], best first
    labels        [sum] long    row r's label ids are labels[label_offsets[r]:label_offsets[r + 1]]
    label_offsets [R + 1] long
    base          [R] float64   the first model's score of each candidate: Φ(x, y)·w for a
                                perceptron, log p(y | x) = s(y) − log Z for a CRF (Collins's L(x))
    gold_base     [U] float64   the same for the gold labeling (nan without one)
    errors        [R] long      tokens a candidate gets wrong (against the gold)
    tp, fp, fn    [R] long      its correct, spurious and missed entities (within the unit)
    fold          [U] long      the jackknife fold whose first model made the list (-1: the
                                first model trained on all of the training data)

Files are ``<name>.safetensors`` (the tensors) + ``<name>.json`` (the label list and how the
lists were made), written atomically; loading runs no code.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import torch
from torch import Tensor

from structperc.eval.chunks import chunk_spans
from structperc.io import atomic_save_tensors, atomic_write_json, load_tensors, read_json

FORMAT = "structperc.candidates/1"


@dataclass
class CandidateSet:
    """The n-best lists of U units (module docstring for the fields)."""

    # per unit
    units: Tensor
    offsets: Tensor
    gold_base: Tensor
    fold: Tensor
    # per candidate row
    labels: Tensor
    label_offsets: Tensor
    base: Tensor
    errors: Tensor
    tp: Tensor
    fp: Tensor
    fn: Tensor

    def rows(self, u: int) -> range:
        return range(int(self.offsets[u]), int(self.offsets[u + 1]))

    def labeling(self, r: int) -> Tensor:
        """Label ids [T] of candidate row r."""
        return self.labels[int(self.label_offsets[r]) : int(self.label_offsets[r + 1])]

    @property
    def num_units(self) -> int:
        return len(self.units)

    @property
    def num_rows(self) -> int:
        return len(self.base)

    def paths(self, u: int, n: int | None = None) -> Tensor:
        """The first n (default all) candidates of unit u as [m, T]."""
        rows = list(self.rows(u))[:n]
        return torch.stack([self.labeling(r) for r in rows])

    def truncated(self, n: int) -> CandidateSet:
        """The same units with only their first n candidates."""
        if not self.num_units:
            return self
        return CandidateSet.cat([self.unit(u, n) for u in range(self.num_units)])

    def tensors(self) -> dict[str, Tensor]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @staticmethod
    def cat(parts: list[CandidateSet]) -> CandidateSet:
        """The units of ``parts`` one after the other (at least one part)."""

        def shifted(name: str) -> Tensor:
            out, base = [torch.zeros(1, dtype=torch.long)], 0
            for p in parts:
                out.append(getattr(p, name)[1:] + base)
                base += int(getattr(p, name)[-1])
            return torch.cat(out)

        plain = ("units", "labels", "base", "gold_base", "errors", "tp", "fp", "fn", "fold")
        joined = {name: torch.cat([getattr(p, name) for p in parts]) for name in plain}
        return CandidateSet(
            offsets=shifted("offsets"), label_offsets=shifted("label_offsets"), **joined
        )

    def sorted_by_unit(self) -> CandidateSet:
        """Units in order of (document, first token)."""
        order = sorted(range(self.num_units), key=lambda u: tuple(self.units[u, :2].tolist()))
        if not order:
            return self
        return CandidateSet.cat([self.unit(u) for u in order])

    def unit(self, u: int, n: int | None = None) -> CandidateSet:
        """Unit u alone (its first n candidates)."""
        rows = self.rows(u)[:n]
        lo, hi = int(self.label_offsets[rows.start]), int(self.label_offsets[rows.stop])
        return CandidateSet(
            units=self.units[u : u + 1],
            offsets=torch.tensor([0, len(rows)]),
            labels=self.labels[lo:hi],
            label_offsets=self.label_offsets[rows.start : rows.stop + 1] - lo,
            base=self.base[rows.start : rows.stop],
            gold_base=self.gold_base[u : u + 1],
            errors=self.errors[rows.start : rows.stop],
            tp=self.tp[rows.start : rows.stop],
            fp=self.fp[rows.start : rows.stop],
            fn=self.fn[rows.start : rows.stop],
            fold=self.fold[u : u + 1],
        )


def entity_counts(gold: list[str], pred: list[str]) -> tuple[int, int, int]:
    """(correct, spurious, missed) entities of ``pred`` against ``gold`` (conlleval chunks)."""
    g, p = chunk_spans(gold), chunk_spans(pred)
    tp = len(g & p)
    return tp, len(p) - tp, len(g) - tp


def save_candidates(path: Path, candidates: CandidateSet, meta: dict) -> None:
    """``path``.safetensors + ``path``.json (the JSON last: it marks the pair complete)."""
    atomic_save_tensors(path.with_suffix(".safetensors"), candidates.tensors())
    atomic_write_json(path.with_suffix(".json"), {"format": FORMAT, **meta})


def load_candidates(path: Path) -> tuple[CandidateSet, dict]:
    """The set and metadata written by ``save_candidates``."""
    meta = read_json(path.with_suffix(".json"))
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path}.json: format {meta.get('format')!r}, expected {FORMAT!r}")
    tensors = load_tensors(path.with_suffix(".safetensors"))
    return CandidateSet(**{f.name: tensors[f.name] for f in fields(CandidateSet)}), meta


def candidates_exist(path: Path) -> bool:
    return path.with_suffix(".json").is_file() and path.with_suffix(".safetensors").is_file()
