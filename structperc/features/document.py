"""``NonLocalFeatures``: the non-local (document-level) features Φ^g of n candidate labelings
of a document, as CSR rows of feature ids (Kazama & Torisawa 2007, §5).

The feature families, their definitions and citations, and the vectorised computation live in
``structperc.features.non_local`` (see its docstring for the module map): this module holds the
settings (enabled families, case folding), the vocabulary (code -> feature id) and its state.

**Vectorisation.**  ``code_counts`` gives Φ^g of all n candidates as code counts [n, 6 (K+1)^2]
(``non_local.vectorized.candidate_codes``, in chunks of ``max_batch`` candidates, with the
``DocumentIndex`` of the document cached between calls).  Codes map to feature ids through a
small table; ``vectorize`` returns CSR (ids, offsets) for ``EmbeddingBag(G, 1, mode="sum")``,
which scores all n candidates in one call.

Vocabularies (``vocabulary=``):
    "all"   every reachable code of the enabled families (default: the space is tiny and closed,
            and the penalties that matter, e.g. ``phrase=LOC|PER``, are rare in gold labelings);
    "gold"  the codes seen at least ``min_count`` times in the gold labelings given to ``fit``;
    "grow"  "gold", plus codes seen ``min_count`` times in candidates passed to
            ``vectorize(..., admit=True)``: new ids are appended (existing ids never move), so
            the caller pads its weight table with zero rows up to ``num_features``;
    "hash"  id = crc32(feature string) mod ``num_buckets``: no fitting, a fixed table size.

Timing: ``python experiments/bench/nonlocal_timing.py TRAIN.txt [N ...]``.
"""

from __future__ import annotations

import weakref
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import torch

from structperc.data.document import Document
from structperc.data.partial import has_partial
from structperc.data.tags import OUTSIDE, split_tag
from structperc.features.non_local.codes import code_names, label_classes, reachable_codes
from structperc.features.non_local.document_index import DocumentIndex
from structperc.features.non_local.notation import FAMILIES, check_families
from structperc.features.non_local.vectorized import candidate_codes

VOCABULARIES = ("all", "gold", "grow", "hash")
# the candidate labels ``code_counts`` computes at once: its [candidates, T] arrays then take a
# few MB each, whatever the document's length (a CoNLL document's 100-best is ~1/10 of it)
MAX_CELLS = 1 << 20


class NonLocalFeatures:
    """Settings and vocabulary of the non-local features; CSR Φ^g of n-best candidates.

    Args:
        families: the enabled families (a subset of ``FAMILIES``).
        casefold: compare token strings case-insensitively.
        min_count: for ``vocabulary="gold"``/``"grow"``, keep codes seen this often.
        vocabulary: ``all``, ``gold``, ``grow`` or ``hash`` (module docstring).
        num_buckets: the table size of ``vocabulary="hash"``.
        labels: the label list (id -> IOB2 tag); else taken from the documents given to ``fit``.
        max_cached_docs: documents whose ``DocumentIndex`` is kept between calls.
        max_batch: candidates computed together (larger chunks fall out of the CPU cache).
    """

    def __init__(
        self,
        families: Iterable[str] = FAMILIES,
        casefold: bool = False,
        min_count: int = 1,
        vocabulary: str = "all",
        num_buckets: int = 4096,
        labels: Sequence[str] | None = None,
        max_cached_docs: int = 4096,
        max_batch: int = 128,
    ):
        if vocabulary not in VOCABULARIES:
            raise ValueError(f"vocabulary must be one of {VOCABULARIES}, got {vocabulary!r}")
        self.families = check_families(families)
        self.casefold = casefold
        self.min_count = min_count
        self.vocabulary = vocabulary
        self.num_buckets = num_buckets
        self.max_cached_docs = max_cached_docs
        self.max_batch = max_batch
        self.labels: list[str] = []
        self.pending: Counter = Counter()  # "grow": codes seen in candidates, not yet admitted
        self._indexes: dict[int, tuple[weakref.ref, DocumentIndex]] = {}
        if labels is not None:
            self._set_labels(labels, kept=None)

    # -- labels and the code table -----------------------------------------------------------
    def _set_labels(self, labels: Sequence[str], kept: Sequence[int] | None) -> None:
        self.labels = list(labels)
        self.classes = label_classes(self.labels)
        self.label_class = np.array(
            [0 if t == OUTSIDE else 1 + self.classes.index(split_tag(t)[1]) for t in labels],
            dtype=np.int64,
        )
        self.label_begin = np.array([t.startswith("B-") for t in labels], dtype=bool)
        self.names = code_names(self.classes)
        self.reachable = reachable_codes(self.families, len(self.classes))
        self.code_id = np.full(len(self.names), -1, dtype=np.int64)
        if self.vocabulary == "hash":
            for c in self.reachable.tolist():
                self.code_id[c] = zlib.crc32(self.names[c].encode()) % self.num_buckets
            self.codes: list[int] = []
        else:
            self.codes = list(self.reachable.tolist() if kept is None else kept)
            self.code_id[self.codes] = np.arange(len(self.codes))

    def fit(self, docs: Iterable[Document], labels: Sequence[str] | None = None):
        """Fix the labels and, for ``gold``/``grow``, keep the codes of the gold labelings."""
        docs = [d for d in docs if d.tags is not None and not has_partial(d.tags)]  # gold known
        if labels is None and not self.labels:
            tags = {t for d in docs for t in d.tags}
            labels = sorted(tags | {OUTSIDE}, key=lambda t: (t != OUTSIDE, t))
        self._set_labels(labels if labels is not None else self.labels, kept=None)
        if self.vocabulary in ("gold", "grow"):
            total = np.zeros(len(self.names), dtype=np.int64)
            index = {t: i for i, t in enumerate(self.labels)}
            for d in docs:
                gold = np.array([[index.get(t, 0) for t in d.tags]], dtype=np.int64)
                total += self.code_counts(d, gold)[0]
            kept = np.flatnonzero(total >= max(self.min_count, 1))
            self._set_labels(self.labels, kept=kept.tolist())
            self.pending = Counter()
        return self

    @property
    def num_features(self) -> int:
        """G, the rows of the weight table."""
        return self.num_buckets if self.vocabulary == "hash" else len(self.codes)

    def feature_ids(self) -> dict[str, int]:
        """Each reachable feature string with an id -> its id (under ``hash`` ids are shared):
        what pairs the rows of two vocabularies (a model continued on new data)."""
        codes = [c for c in self.reachable.tolist() if self.code_id[c] >= 0]
        return {self.names[c]: int(self.code_id[c]) for c in codes}

    def carried_ids(self, old: NonLocalFeatures) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """(ids of ``old`` [M], ids here [M], the names of ``old``'s features not here): its
        features paired with these by name."""
        there, here = old.feature_ids(), self.feature_ids()
        both = [name for name in there if name in here]
        lost = sorted(name for name in there if name not in here)
        pairs = np.array([[there[n], here[n]] for n in both], dtype=np.int64).reshape(-1, 2)
        return pairs[:, 0], pairs[:, 1], lost

    def feature_names(self) -> list[str]:
        """The feature string of every id (not for ``hash``: ids are shared)."""
        if self.vocabulary == "hash":
            raise ValueError("hashed features have no id -> name map")
        return [self.names[c] for c in self.codes]

    # -- computing ---------------------------------------------------------------------------
    def index(self, doc: Document) -> DocumentIndex:
        """The cached ``DocumentIndex`` of ``doc`` (built on first use)."""
        hit = self._indexes.get(id(doc))
        if hit is not None and hit[0]() is doc:
            return hit[1]
        if len(self._indexes) >= self.max_cached_docs:
            self._indexes.pop(next(iter(self._indexes)))
        index = DocumentIndex(doc.tokens, doc.sentence_starts, self.casefold)
        self._indexes[id(doc)] = (weakref.ref(doc), index)
        return index

    def code_counts(self, doc: Document, candidates) -> np.ndarray:
        """Code counts [n, codes] of candidates [n, >= T] label ids (tensor or array)."""
        if not self.labels:
            raise RuntimeError("NonLocalFeatures has no labels: call fit() or pass labels=")
        cand = _as_array(candidates)[:, : len(doc)]
        if cand.size and cand.max() >= len(self.labels):
            raise ValueError(f"label id {cand.max()} out of range for {len(self.labels)} labels")
        # at most max_batch candidates, and at most MAX_CELLS labels, at a time
        step = max(1, min(self.max_batch, MAX_CELLS // max(len(doc), 1)))
        index = self.index(doc)
        parts = [
            candidate_codes(
                index,
                cand[i : i + step],
                self.label_class,
                self.label_begin,
                self.families,
                len(self.classes),
            )
            for i in range(0, max(len(cand), 1), step)
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def features(self, doc: Document, candidates) -> list[Counter]:
        """Φ^g of each candidate as a Counter of feature strings (all codes, no vocabulary)."""
        out = []
        for row in self.code_counts(doc, candidates):
            nz = np.flatnonzero(row)
            out.append(Counter({self.names[c]: int(row[c]) for c in nz}))
        return out

    def vectorize(self, doc: Document, candidates, admit: bool = False):
        """CSR Φ^g of candidates [n, >= T]: (ids [nnz] int64, offsets [n + 1] int64).

        ``F.embedding_bag(ids, weight [G, 1], offsets, mode="sum", include_last_offset=True)``
        gives the n scores Φ^g·α^g.  A feature that fires k times appears k times.  With
        ``admit=True`` and ``vocabulary="grow"`` the candidates' new codes are admitted first.
        """
        counts = self.code_counts(doc, candidates)
        if admit and self.vocabulary == "grow":
            self._admit(counts.sum(axis=0))
        return csr(counts, self.code_id)

    def vectorize_pieces(
        self, doc: Document, candidates
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """``vectorize`` of consecutive groups of the candidates, of at most ``MAX_CELLS``
        labels (all of them for a CoNLL document): a long document's CSR rows repeat a
        feature as often as it fires (~2 ids a token), 280 MB for the 100-best of 189,000
        tokens at once."""
        step = max(1, MAX_CELLS // max(len(doc), 1))
        for first in range(0, max(len(candidates), 1), step):
            yield self.vectorize(doc, candidates[first : first + step])

    def _admit(self, seen: np.ndarray) -> int:
        new = [c for c in np.flatnonzero(seen).tolist() if self.code_id[c] < 0]
        for c in new:
            self.pending[c] += int(seen[c])
        ready = sorted(c for c in new if self.pending[c] >= max(self.min_count, 1))
        for c in ready:
            del self.pending[c]
            self.code_id[c] = len(self.codes)
            self.codes.append(c)
        return len(ready)

    # -- persistence -------------------------------------------------------------------------
    def state(self) -> tuple[dict, dict[str, torch.Tensor]]:
        """(JSON-able metadata, tensors); the vocabulary is stored as feature strings."""
        meta = {
            "kind": "nonlocal",
            "families": list(self.families),
            "casefold": self.casefold,
            "min_count": self.min_count,
            "vocabulary": self.vocabulary,
            "num_buckets": self.num_buckets,
            "labels": self.labels,
            "features": [self.names[c] for c in self.codes],
            "pending": {self.names[c]: k for c, k in sorted(self.pending.items())},
        }
        return meta, {}

    @classmethod
    def from_state(
        cls, meta: dict, tensors: dict[str, torch.Tensor] | None = None
    ) -> NonLocalFeatures:
        obj = cls(
            families=meta["families"],
            casefold=meta["casefold"],
            min_count=meta["min_count"],
            vocabulary=meta["vocabulary"],
            num_buckets=meta["num_buckets"],
        )
        if meta["labels"]:
            obj._set_labels(meta["labels"], kept=None)
            code = {name: c for c, name in enumerate(obj.names)}
            if obj.vocabulary != "hash":
                obj._set_labels(meta["labels"], kept=[code[f] for f in meta["features"]])
            obj.pending = Counter({code[f]: k for f, k in meta["pending"].items()})
        return obj


def _as_array(candidates) -> np.ndarray:
    """Candidates as a 2-d NumPy array of label ids, in their own integer type (a long
    document's n-best in int8 stays one byte a label)."""
    if isinstance(candidates, torch.Tensor):
        candidates = candidates.detach().cpu().numpy()
    arr = np.asarray(candidates)
    if not np.issubdtype(arr.dtype, np.integer):
        arr = arr.astype(np.int64)
    return arr.reshape(1, -1) if arr.ndim == 1 else arr


def csr(counts: np.ndarray, code_id: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """Code counts [n, codes] -> (ids, offsets) through ``code_id`` (-1: not in the vocabulary)."""
    counts = np.where(code_id[None, :] >= 0, counts, 0)
    rows, cols = np.nonzero(counts)
    reps = counts[rows, cols]
    ids = np.repeat(code_id[cols], reps)
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts.sum(axis=1), out=offsets[1:])
    return torch.from_numpy(ids), torch.from_numpy(offsets)
