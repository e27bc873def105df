"""Attribute occurrences as they are read, in compact typed buffers; the CSR matrix at the end.

Reading python-crfsuite items gives, sequence by sequence, attribute ids and Python lists of
values (``items.sequence_attributes``).  Kept whole as Python lists, every occurrence costs 16
bytes of list slots (an id and a value), and the NumPy arrays made from them at the end as
much again, several times over, before the matrix exists.  ``Occurrences`` buffers the last
``BLOCK`` occurrences only (ids int64, values float64: the items' numbers as they are) and
flushes them into typed arrays (``array.array``, grown in place):

    ids      [M] int32      the id of every occurrence that fires (value != 0, id >= 0)
    values   [M] float32    their values, or None while every one is 1 (the binary path)
    offsets  [N + 1] int64  token i owns ids[offsets[i]:offsets[i + 1]]
    lengths  [D] int64      tokens of each sequence
    counts   [A] int64      occurrences of each id, those of value 0 included (what
                            ``min_freq`` counts), when ``count=True``

so reading holds 4 bytes an occurrence (8 with values) and 8 a token: the matrix's own size,
which ``matrix`` hands to torch without a copy.  The matrix is the one of reading everything
first: occurrences in the order read, those of value 0 or of an unknown attribute (id -1) left
out.  A value that is not a finite float32 raises ``FeatureFormatError`` naming its sequence,
token and key when its block is flushed (an error in the items themselves, such as a value of
a wrong type, is raised by the reading as it meets it).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np
import torch

from structperc.features.extract import FeatureMatrix
from structperc.sklearn.items import FeatureFormatError, sequence_attributes

BLOCK = 1 << 16  # occurrences buffered before a flush (1 MB)
RENUMBER_CHUNK = 1 << 20  # occurrences renumbered at a time by ``keep_only``


class Occurrences:
    """The attribute occurrences of a set of sequences (module docstring).

    name, numbers: how messages call the sequences (``name[numbers[k]]`` for the k-th added;
    its position when ``numbers`` is None).  count: keep ``counts`` (``min_freq``).
    """

    def __init__(
        self,
        name: str = "X",
        numbers: Sequence[int] | None = None,
        count: bool = False,
        first: int = 0,
    ):
        self.name, self.numbers, self.first = name, numbers, first
        self.ids = array("i")  # [M]
        self.values: array | None = None  # [M], None: all 1
        self.offsets = array("q", [0])  # [N + 1]
        self.lengths = array("q")  # [D]
        self.counts: np.ndarray | None = np.zeros(0, np.int64) if count else None
        self._new_block()

    def _new_block(self) -> None:
        """Empty buffers for the next block."""
        self._ids = array("q")  # [m] the block's ids (-1: unknown)
        self._values = array("d")  # [m] their values
        self._per_token = array("q")  # [n] occurrences of each of its tokens
        self._sequences: list = []  # (k, items) of its sequences, for messages

    def __len__(self) -> int:
        """Sequences added."""
        return len(self.lengths)

    def add(self, ids: list[int], values: list, counts: list[int], xseq=None) -> None:
        """One sequence's occurrences: ``ids`` (-1: unknown), ``values`` and the number of each
        token's (``items.sequence_attributes``); ``xseq``: its items, re-read for the key of a
        value that is not finite."""
        self._sequences.append((len(self.lengths), xseq))
        self.lengths.append(len(counts))
        self._ids.fromlist(ids)  # (from a list: ~2x the speed of extend)
        self._values.fromlist(values)
        self._per_token.fromlist(counts)
        if len(self._ids) >= BLOCK:
            self.flush()

    def flush(self) -> None:
        """Move the buffered block into the typed arrays."""
        if not self._sequences:
            return
        with np.errstate(over="ignore", invalid="ignore"):
            values = np.frombuffer(self._values, dtype=np.float64).astype(np.float32)  # [m]
        finite = np.isfinite(values)
        if not finite.all():
            self._not_finite(int(np.flatnonzero(~finite)[0]))
        ids = np.frombuffer(self._ids, dtype=np.int64)  # [m]
        known = ids >= 0
        if self.counts is not None:
            self._count(ids[known])
        fires = known & (values != 0.0)
        per_token = np.frombuffer(self._per_token, dtype=np.int64)  # [n]
        if fires.all():
            kept_per_token = per_token
        else:
            token = np.repeat(np.arange(len(per_token)), per_token)  # [m]
            kept_per_token = np.bincount(token[fires], minlength=len(per_token))
            ids, values = ids[fires], values[fires]
        ends = np.cumsum(kept_per_token) + self.offsets[-1]  # [n]
        self.offsets.frombytes(ends.tobytes())
        self.ids.frombytes(ids.astype(np.int32).tobytes())
        if self.values is None and not bool(np.all(values == 1.0)):
            self.values = array("f", [1.0]) * (len(self.ids) - len(ids))  # the ones so far
        if self.values is not None:
            self.values.frombytes(values.tobytes())
        self._new_block()

    def _count(self, ids: np.ndarray) -> None:
        found = np.bincount(ids)  # [max id + 1]
        self._grow_counts(len(found))
        self.counts[: len(found)] += found

    def _add_counts(self, ids: np.ndarray, counts: np.ndarray) -> None:
        """counts[ids] += counts (``ids`` distinct)."""
        self._grow_counts(int(ids.max()) + 1 if len(ids) else 0)
        self.counts[ids] += counts

    def _grow_counts(self, need: int) -> None:
        if need > len(self.counts):
            grown = np.zeros(max(need, 2 * len(self.counts)), np.int64)
            grown[: len(self.counts)] = self.counts
            self.counts = grown

    def _not_finite(self, m: int) -> None:
        """FeatureFormatError for occurrence ``m`` of the block (its sequence, token and key:
        a NaN value would make every weight NaN in training, every score in prediction)."""
        starts = np.cumsum([0, *self._per_token])  # [n + 1] first occurrence of each token
        token = int(np.searchsorted(starts, m, side="right")) - 1  # in the block
        t0 = 0  # the block's token where sequence k begins
        for k, xseq in self._sequences:  # noqa: B007 - the one it stops at is used
            if token < t0 + int(self.lengths[k]):
                break
            t0 += int(self.lengths[k])
        where = f"{self.name}[{self.where(k)}]"
        position = m - int(starts[t0])  # of the occurrence in its sequence
        key = sequence_attributes(xseq, where)[0][position] if xseq is not None else "?"
        token -= t0
        raise FeatureFormatError(
            f"{where}[{token}]: feature {key!r} has the value {self._values[m]!r}; a feature "
            "value must be a finite number (float32: within +-3.4e38)"
        )

    def where(self, k: int) -> int:
        """What messages call the k-th sequence added."""
        k += self.first
        return self.numbers[k] if self.numbers is not None else k

    def arrays(self) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
        """(ids [M] int32, values [M] float32 or None, tokens' kept counts [N], lengths [D])
        as NumPy arrays (copies: a forked reader's result, ``merge``)."""
        self.flush()
        values = None if self.values is None else np.array(self.values, dtype=np.float32)
        return (
            np.array(self.ids, dtype=np.int32),
            values,
            np.diff(np.array(self.offsets, dtype=np.int64)),
            np.array(self.lengths, dtype=np.int64),
        )

    def merge(self, arrays: tuple, to_global: np.ndarray | None, counts=None) -> None:
        """Append another reader's ``arrays`` (ids through ``to_global`` [its A], None: the
        same numbering) and add its ``counts`` [its A]."""
        self.flush()
        ids, values, per_token, lengths = arrays
        if to_global is not None:
            ids = to_global[ids].astype(np.int32)
        if self.values is None and values is not None:
            self.values = array("f", [1.0]) * len(self.ids)
        if self.values is not None:
            self.values.frombytes(
                (np.ones(len(ids), np.float32) if values is None else values).tobytes()
            )
        self.ids.frombytes(ids.tobytes())
        self.offsets.frombytes((np.cumsum(per_token) + self.offsets[-1]).tobytes())
        self.lengths.frombytes(lengths.tobytes())
        if counts is not None and self.counts is not None:
            self._add_counts(np.arange(len(counts)) if to_global is None else to_global, counts)

    def counted(self, n: int) -> np.ndarray:
        """[n] int64: the occurrences of each of the ids 0 ... n - 1 (0 for an id not read);
        ``count=True``."""
        seen = np.zeros(n, np.int64)
        counted = self.counts[:n]
        seen[: len(counted)] = counted
        return seen

    def keep_only(self, new_id: np.ndarray) -> None:
        """Renumber every id i as ``new_id[i]`` [A] and leave out those with -1, in place."""
        self.flush()
        kept = _renumber(self.ids, self.values, self.offsets, new_id)
        del self.ids[kept:]
        if self.values is not None:
            del self.values[kept:]

    def matrix(self) -> tuple[FeatureMatrix, torch.Tensor | None]:
        """The CSR matrix (the sequences as documents) over the buffers themselves, and the
        values [M] (None: all 1).  The buffers are then the matrix's: add nothing after."""
        self.flush()
        doc_offsets = np.zeros(len(self.lengths) + 1, dtype=np.int64)
        np.cumsum(np.frombuffer(self.lengths, dtype=np.int64), out=doc_offsets[1:])
        features = FeatureMatrix(
            torch.from_numpy(np.frombuffer(self.ids, dtype=np.int32)),
            torch.from_numpy(np.frombuffer(self.offsets, dtype=np.int64)),
            torch.from_numpy(doc_offsets),
        )
        values = self.values
        return features, None if values is None else torch.from_numpy(
            np.frombuffer(values, dtype=np.float32)
        )


def _renumber(ids: array, values: array | None, offsets: array, new_id: np.ndarray) -> int:
    """``Occurrences.keep_only``'s pass over the buffers (NumPy views, released on return, so
    that the arrays can then be shortened): the number of occurrences kept."""
    ids_np = np.frombuffer(ids, dtype=np.int32)  # [M]
    values_np = None if values is None else np.frombuffer(values, dtype=np.float32)
    offsets_np = np.frombuffer(offsets, dtype=np.int64)  # [N + 1]
    N = len(offsets_np) - 1
    write, a, old_start = 0, 0, 0
    while a < N:
        b = int(np.searchsorted(offsets_np, old_start + RENUMBER_CHUNK, side="right"))
        b = min(max(b - 1, a + 1), N)
        old_ends = offsets_np[a + 1 : b + 1].copy()  # [b - a] before they are rewritten
        lo, hi = old_start, int(old_ends[-1])
        renumbered = new_id[ids_np[lo:hi]]  # [hi - lo]
        keep = renumbered >= 0
        n = int(keep.sum())
        per_token = np.diff(np.concatenate([[lo], old_ends]))  # [b - a]
        token = np.repeat(np.arange(b - a), per_token)
        kept_per_token = np.bincount(token[keep], minlength=b - a)
        ids_np[write : write + n] = renumbered[keep]
        if values_np is not None:
            values_np[write : write + n] = values_np[lo:hi][keep]
        offsets_np[a + 1 : b + 1] = write + np.cumsum(kept_per_token)
        write += n
        a, old_start = b, hi
    return write
