"""``Vocabulary.fit`` and ``transform`` over a training corpus read in chunks: the same
vocabulary and the same feature ids as one fit over the whole corpus, in the memory of one
chunk's attribute columns (plus the dictionaries, which are the model's).

A vocabulary's attribute codes are ranks in each attribute's sorted training values, and its
keys mix those codes (``extract.Vocabulary``): neither is known before the last chunk is read.
So the attribute strings, the costly part, are computed once per chunk and kept as integers:

1. ``add(columns, doc_ids)``: each attribute value gets a provisional code, its order of first
   appearance (a growing dictionary per attribute); the chunk's codes [A, n] int32 are written
   to the spill folder;
2. ``finish()``: the dictionaries sorted give ``Vocabulary.fit_values`` (with the values of an
   inherited vocabulary, ``Vocabulary.inherit``) and a map from each provisional code to its
   final one; then, per spilled chunk, the template keys seen and how
   often (``Vocabulary.key_counts``) are written, and merged template by template (one
   template's keys in memory at a time) into the keys kept by the cutoffs
   (``Vocabulary.fit_keys``);
3. ``transform(k)``: chunk k's feature ids from its spilled codes.

The spill holds 4 bytes per token and attribute, on disk; ``close`` removes it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from structperc.features.extract import Column, FactorColumn, Vocabulary

PARTS = ("keys", "counts", "bounds")  # what a chunk's key counts are spilled as


class ChunkedVocabulary:
    """Fits ``vocab`` (``Vocabulary``, unfitted) chunk by chunk (module docstring), spilling to
    the folder ``spill``."""

    def __init__(self, vocab: Vocabulary, spill: str | Path):
        self.vocab = vocab
        self.attributes = vocab.attributes
        self.spill = Path(spill)
        self.spill.mkdir(parents=True, exist_ok=True)
        self.seen: dict[str, dict[str, int]] = {a: {} for a in self.attributes}
        self.chunks = 0
        self.remap: dict[str, np.ndarray] = {}

    # -- pass 1 -----------------------------------------------------------------------------
    def add(self, columns: dict[str, Column], doc_ids: np.ndarray) -> int:
        """Spill one chunk's provisional attribute codes; returns the chunk's number."""
        n = len(doc_ids)
        codes = np.empty((len(self.attributes), n), dtype=np.int32)  # [A, n]
        for row, name in enumerate(self.attributes):
            codes[row] = self._provisional(name, columns[name])
        k = self.chunks
        np.save(self.spill / f"{k}.codes.npy", codes)
        np.save(self.spill / f"{k}.docs.npy", np.asarray(doc_ids, dtype=np.int64))
        self.chunks += 1
        return k

    def _provisional(self, name: str, column: Column) -> np.ndarray:
        table = self.seen[name]
        code = table.setdefault
        if isinstance(column, FactorColumn):
            per_value = np.fromiter(
                (-1 if v is None else code(v, len(table)) for v in column.values),
                dtype=np.int64,
                count=len(column.values),
            )
            return per_value[column.index] if len(per_value) else np.full(len(column), -1)
        return np.fromiter(
            (-1 if v is None else code(v, len(table)) for v in column),
            dtype=np.int64,
            count=len(column),
        )

    # -- pass 2 -----------------------------------------------------------------------------
    def finish(self) -> Vocabulary:
        """Fit the vocabulary's values and keys from the spilled chunks; returns it."""
        self.vocab.fit_values({a: set(self.seen[a]) for a in self.attributes})
        # provisional code -> the value's code in the dictionary (which may hold more values
        # than the training set's: an inherited vocabulary's)
        for name in self.attributes:
            self.remap[name] = self.vocab.codes_of(name, self.seen[name])
        self.seen = {}
        for k in range(self.chunks):
            counts = self.vocab.key_counts(None, *self._codes(k))
            keys = [u for u, _ in counts]
            np.save(self.spill / f"{k}.keys.npy", np.concatenate(keys) if keys else np.zeros(0))
            np.save(
                self.spill / f"{k}.counts.npy",
                np.concatenate([c for _, c in counts]) if counts else np.zeros(0, np.int64),
            )
            np.save(self.spill / f"{k}.bounds.npy", np.cumsum([0] + [len(u) for u in keys]))
        spilled = [
            tuple(np.load(self.spill / f"{k}.{part}.npy", mmap_mode="r") for part in PARTS)
            for k in range(self.chunks)
        ]
        merged = [self._merged(j, spilled) for j in range(len(self.vocab.templates))]
        self.vocab.fit_keys(merged)
        return self.vocab

    @staticmethod
    def _merged(j: int, spilled: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
        """Template j's codes over every chunk (``spilled``: each chunk's mapped keys, counts
        and template bounds) and their total counts."""
        keys, counts = [], []
        for chunk_keys, chunk_counts, bounds in spilled:
            lo, hi = int(bounds[j]), int(bounds[j + 1])
            keys.append(chunk_keys[lo:hi])
            counts.append(chunk_counts[lo:hi])
        if not keys:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        uniq, inverse = np.unique(np.concatenate(keys), return_inverse=True)
        total = np.bincount(inverse, weights=np.concatenate(counts), minlength=len(uniq))
        return uniq, total.astype(np.int64)

    def _codes(self, k: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(doc ids [n], final attribute codes) of chunk k."""
        spilled = np.load(self.spill / f"{k}.codes.npy")  # [A, n]
        codes = {}
        for row, name in enumerate(self.attributes):
            prov = spilled[row].astype(np.int64)
            table = self.remap[name]
            codes[name] = np.where(prov >= 0, table[np.maximum(prov, 0)] if len(table) else 0, -1)
        return np.load(self.spill / f"{k}.docs.npy"), codes

    # -- pass 3 -----------------------------------------------------------------------------
    def transform(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Chunk k's feature ids in CSR form (``Vocabulary.transform``'s)."""
        doc_ids, codes = self._codes(k)
        return self.vocab.transform(None, doc_ids, codes)

    def close(self) -> None:
        shutil.rmtree(self.spill, ignore_errors=True)
