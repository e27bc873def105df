"""The CRF's lookup X W through the feature sets that repeat across tokens: X = A B.

A window feature reads the input at fixed offsets from its token (``w[-1]``, ``pos[0]/pos[1]``),
so the features of the templates that read the same offsets, at one token, are a function of
the words at those positions: every occurrence of "Germany" preceded by "in" brings the same
set.  Call such a set, one group of templates at one token, a *slot*, and each distinct set a
*unit*.  On CoNLL-2003 with Table 1's features the 19.3 M feature occurrences of the training
tokens fall into 3.4 M slots holding 236 k units of 1.3 M entries in all.  With

    A [N, U]  the token x unit incidence (a token's slots, one unit each),
    B [U, F]  the unit x feature incidence (a unit's features),

the token x feature incidence is X = A B, and the CRF's lookup and its gradient are

    S  = X W   = A (B W)           forward: the U unit sums, then N sums of units,
    dW = X^T dS = B^T (A^T dS)     backward: each unit's gradient, then each feature's,

both as ``embedding_bag`` gathers (``sparse.TransposedIndex`` for the transposes), reading
(nnz(A) + nnz(B)) rows of D = L + L^2 numbers instead of nnz(X): 4.7 M instead of 19.3 M on
CoNLL-2003, and 0.45 s instead of 1.1 s an objective evaluation (forward and backward, one
thread).  The sums are the same up to float32 rounding (the order of the additions changes).

**Groups** (``features/lookup_groups.py``): templates are grouped by the offsets they read,
and within those by how many values they take (at most ``FEW_VALUES``, e.g. the POS tag, a
gazetteer mark, a word-form flag, or more, e.g. the word and its affixes), so that a token's
few-valued features, which combine freely with its word, make units of their own.  The grouping
only decides which sets are shared; the units are the data's own sets, compared exactly, so the
lookup equals X W whatever the groups.

**Building** (``FactoredIndex.build``), in chunks of tokens: within a chunk, the occurrences
sorted by (token, group, feature) make the slots; each slot is hashed (a sum of mixed feature
ids, its group and length), the hashes matched against the units seen so far, new ones appended;
then every slot is compared entry by entry with the unit it was matched to, so a hash collision
can never merge two different sets (the build returns None and the caller keeps the plain
lookup; none has been seen).  The unit ids are in order of first appearance.  ``build`` also
returns None where factoring would read more than ``MAX_FRACTION`` of X's rows, or where X has
real values.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor
from torch.nn.functional import embedding_bag

from structperc.crf.sparse import TransposedIndex, table_gradient
from structperc.features.extract import FeatureMatrix

log = logging.getLogger(__name__)

MAX_FRACTION = 0.7  # factor only where A and B hold at most this share of X's entries
CHUNK = 1 << 20  # feature occurrences per chunk of the build (its temporaries: ~50 MB)
KEY_LIMIT = 2**62  # a chunk sorts by one int64 key (token, group, feature) below it, else lexsort
_MIX = np.uint64(0x9E3779B97F4A7C15)
_MIX2 = np.uint64(0xBF58476D1CE4E5B9)
_GROUP = np.uint64(0x94D049BB133111EB)
_LENGTH = np.uint64(0xD6E8FEB86659FD93)


def _slot_hashes(ids: np.ndarray, starts: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """A 64-bit hash of every slot: ``ids`` [n] sorted within slots, ``starts`` [s] where each
    slot begins, ``groups`` [s] its group (wrapping uint64 arithmetic)."""
    h = ids.astype(np.uint64) * _MIX
    h ^= h >> np.uint64(29)
    h *= _MIX2
    lengths = np.diff(np.append(starts, len(ids))).astype(np.uint64)
    out = np.add.reduceat(h, starts) if len(starts) else np.zeros(0, np.uint64)
    out ^= groups.astype(np.uint64) * _GROUP + lengths * _LENGTH
    out *= _MIX2
    return out ^ (out >> np.uint64(31))


@dataclass
class FactoredIndex:
    """X = A B of a set of N tokens (module docstring).

    unit_ids:     [nnz(B)] int32 feature ids of every unit, unit after unit (B's CSR).
    unit_offsets: [U + 1] int32.
    token_units:  [nnz(A)] int32 unit ids of every token's slots, token after token (A's CSR).
    token_offsets: [N + 1] int32.
    by_unit:      A^T (``TransposedIndex``: the tokens of each unit), the backward's first step.
    by_feature:   B^T (the units of each feature), its second.
    occurrences:  nnz(X), for the log.
    """

    unit_ids: Tensor
    unit_offsets: Tensor
    token_units: Tensor
    token_offsets: Tensor
    by_unit: TransposedIndex
    by_feature: TransposedIndex
    occurrences: int

    @property
    def num_units(self) -> int:
        return len(self.unit_offsets) - 1

    @property
    def rows_read(self) -> int:
        """nnz(A) + nnz(B): the table rows a lookup reads (against nnz(X))."""
        return len(self.unit_ids) + len(self.token_units)

    @classmethod
    def build(
        cls,
        ids: Tensor,
        offsets: Tensor,
        groups: Tensor | np.ndarray,
        num_features: int,
        values: Tensor | None = None,
        chunk: int = CHUNK,
    ) -> FactoredIndex | None:
        """From CSR token features ``ids`` [nnz], ``offsets`` [N + 1] and the rows' ``groups``
        [F]; None where it would not pay, with real values, or on a hash collision (module
        docstring)."""
        if values is not None or len(ids) == 0:
            return None
        ids_np = ids.numpy()
        offs = offsets.numpy().astype(np.int64)
        groups = np.asarray(groups, dtype=np.int64)
        num_groups = int(groups.max()) + 1 if len(groups) else 1
        N = len(offs) - 1
        known = np.zeros(0, dtype=np.uint64)  # sorted hashes of the units so far
        known_unit = np.zeros(0, dtype=np.int64)  # [len(known)] their unit ids
        unit_ids = _Growing(np.int32)  # every unit's feature ids, in unit order
        unit_starts = _Growing(np.int64)  # [U] where each unit's ids begin
        unit_lengths = _Growing(np.int64)  # [U]
        token_parts: list[np.ndarray] = []  # [slots] unit ids, token after token
        slots_per_token = np.zeros(N, dtype=np.int64)
        num_units = 0
        lo = 0
        while lo < N:  # chunks of whole tokens, ~``chunk`` occurrences
            hi = int(np.searchsorted(offs, offs[lo] + chunk, side="right")) - 1
            hi = min(max(hi, lo + 1), N)
            a, b = int(offs[lo]), int(offs[hi])
            f = ids_np[a:b].astype(np.int64)
            token = np.repeat(np.arange(hi - lo), np.diff(offs[lo : hi + 1]))
            g = groups[f]
            if (hi - lo) * num_groups * num_features < KEY_LIMIT:  # one int64 key: faster
                order = np.argsort((token * num_groups + g) * num_features + f)
            else:
                order = np.lexsort((f, g, token))
            f, g, token = f[order], g[order], token[order]
            new_slot = np.ones(len(f), dtype=bool)
            new_slot[1:] = (token[1:] != token[:-1]) | (g[1:] != g[:-1])
            starts = np.flatnonzero(new_slot)
            lengths = np.diff(np.append(starts, len(f)))
            hashes = _slot_hashes(f, starts, g[starts])
            distinct, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
            at = np.searchsorted(known, distinct)
            found = at < len(known)
            found[found] = known[at[found]] == distinct[found]
            unit_of = np.empty(len(distinct), dtype=np.int64)
            unit_of[found] = known_unit[at[found]]
            fresh = np.flatnonzero(~found)
            fresh = fresh[np.argsort(first[fresh], kind="stable")]  # in order of appearance
            unit_of[fresh] = num_units + np.arange(len(fresh))
            fresh_starts, fresh_lengths = starts[first[fresh]], lengths[first[fresh]]
            unit_starts.extend(len(unit_ids) + np.cumsum(fresh_lengths) - fresh_lengths)
            unit_ids.extend(f[_ranges(fresh_starts, fresh_lengths)])
            unit_lengths.extend(fresh_lengths)
            num_units += len(fresh)
            added = np.flatnonzero(~found)  # (ascending hashes)
            at = np.searchsorted(known, distinct[added])
            known = np.insert(known, at, distinct[added])
            known_unit = np.insert(known_unit, at, unit_of[added])
            slot_unit = unit_of[inverse]  # [slots]
            token_parts.append(slot_unit)
            slots_per_token[lo:hi] += np.bincount(token[starts], minlength=hi - lo)
            # every slot against its unit, entry by entry (a hash collision would show here)
            units = (unit_ids.values, unit_starts.values, unit_lengths.values)
            if not _slots_match(f, starts, lengths, slot_unit, *units):
                log.warning("feature-set hash collision: the CRF keeps the plain lookup")
                return None
            lo = hi
        lengths = unit_lengths.values
        unit_ids = unit_ids.values
        token_units = np.concatenate(token_parts)
        if len(unit_ids) + len(token_units) > MAX_FRACTION * len(ids_np):
            return None
        unit_offsets = np.zeros(num_units + 1, dtype=np.int64)
        np.cumsum(lengths, out=unit_offsets[1:])
        token_offsets = np.zeros(N + 1, dtype=np.int64)
        np.cumsum(slots_per_token, out=token_offsets[1:])
        unit_ids_t = torch.from_numpy(unit_ids.astype(np.int32))
        token_units_t = torch.from_numpy(token_units.astype(np.int32))
        unit_offsets_t = torch.from_numpy(unit_offsets)
        token_offsets_t = torch.from_numpy(token_offsets)
        return cls(
            unit_ids=unit_ids_t,
            unit_offsets=unit_offsets_t.to(torch.int32),
            token_units=token_units_t,
            token_offsets=token_offsets_t.to(torch.int32),
            by_unit=TransposedIndex.build(token_units_t, token_offsets_t, num_units),
            by_feature=TransposedIndex.build(unit_ids_t, unit_offsets_t, num_features),
            occurrences=len(ids_np),
        )

    def to(self, device: torch.device | str) -> FactoredIndex:
        return FactoredIndex(
            self.unit_ids.to(device),
            self.unit_offsets.to(device),
            self.token_units.to(device),
            self.token_offsets.to(device),
            self.by_unit.to(device),
            self.by_feature.to(device),
            self.occurrences,
        )

    def scores(self, table: Tensor, ids=None, offsets=None, values=None) -> Tensor:
        """Token scores [N, D] = A (B W), differentiable in ``table`` [F, D] (the index was
        built from the tokens' ids and offsets: those arguments are ``TransposedIndex``'s)."""
        return _FactoredLookup.apply(table, self)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions starts[i] .. starts[i] + lengths[i] - 1 of every i, concatenated."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    begin = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
    return begin + np.arange(total)


def _slots_match(f, starts, lengths, slot_unit, unit_ids, unit_starts, unit_lengths) -> bool:
    """Every slot (``f`` [n] sorted ids, ``starts``/``lengths`` [s]) holds exactly the ids of
    the unit it was matched to (``slot_unit`` [s]; the units' ids, starts and lengths)."""
    if not np.array_equal(unit_lengths[slot_unit], lengths):
        return False
    return np.array_equal(unit_ids[_ranges(unit_starts[slot_unit], lengths)], f)


class _Growing:
    """A 1-D array appended to in amortised O(1) a value (its capacity doubles)."""

    def __init__(self, dtype):
        self.buffer = np.zeros(1024, dtype=dtype)
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def extend(self, values: np.ndarray) -> None:
        need = self.size + len(values)
        if need > len(self.buffer):
            grown = np.zeros(max(need, 2 * len(self.buffer)), dtype=self.buffer.dtype)
            grown[: self.size] = self.buffer[: self.size]
            self.buffer = grown
        self.buffer[self.size : need] = values
        self.size = need

    @property
    def values(self) -> np.ndarray:
        """The values so far (a view)."""
        return self.buffer[: self.size]


class _FactoredLookup(torch.autograd.Function):
    @staticmethod
    def forward(ctx, table: Tensor, index: FactoredIndex) -> Tensor:
        ctx.index, ctx.table_shape = index, table.shape
        unit = embedding_bag(  # [U, D] = B W
            index.unit_ids, table, index.unit_offsets, mode="sum", include_last_offset=True
        )
        return embedding_bag(  # [N, D] = A (B W)
            index.token_units, unit, index.token_offsets, mode="sum", include_last_offset=True
        )

    @staticmethod
    def backward(ctx, grad: Tensor):
        index: FactoredIndex = ctx.index
        per_unit = index.by_unit.gather(grad.contiguous())  # [U, D] = A^T dS (every unit)
        rows = index.by_feature.gather(per_unit)  # [F', D] = B^T (A^T dS)
        return table_gradient(index.by_feature, rows, ctx.table_shape), None


def lookup_index(
    features: FeatureMatrix, groups, num_features: int
) -> FactoredIndex | TransposedIndex:
    """The index of the CRF's lookup over ``features`` (CPU tensors): ``FactoredIndex`` where
    the rows' ``groups`` [F] are known and factoring pays, else X^T (``TransposedIndex``)."""
    if groups is not None:
        t0 = time.perf_counter()
        index = FactoredIndex.build(
            features.ids, features.offsets, groups, num_features, features.values
        )
        if index is not None:
            log.info(
                "CRF lookup: %d feature occurrences as %d slots over %d distinct feature sets "
                "(%d entries): %.1fx fewer rows read (built in %.1f s)",
                index.occurrences,
                len(index.token_units),
                index.num_units,
                len(index.unit_ids),
                index.occurrences / max(index.rows_read, 1),
                time.perf_counter() - t0,
            )
            return index
    return TransposedIndex.build(features.ids, features.offsets, num_features, features.values)
