"""The dictionary of attributes of the face's model, and the CSR matrix of item sequences.

The items are python-crfsuite's (``items.py``).  ``AttributeDictionary`` numbers the attribute
names of the training items in the order they first appear (CRFsuite's dictionary order),
keeping those seen more than ``min_freq`` times, and turns item sequences into structperc's
CSR ``FeatureMatrix`` (an attribute with value 0 adds nothing to any score or gradient and is
left out of the rows; attributes unseen in training do not fire at prediction time).  A warm
start grows the dictionary (``grown``): the names it holds keep their ids, the new ones of the
new items follow in order of first appearance.  The reading keeps compact buffers of the
occurrences only (``occurrences.py``), in one process or several (``reading.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import torch

from structperc.features.extract import FeatureMatrix
from structperc.sklearn.items import (  # noqa: F401 - the item format, as this module gave it
    SEPARATOR,
    FeatureFormatError,
    item_attributes,
    sequence_attributes,
)
from structperc.sklearn.reading import FrozenIndex, GrowingIndex, read_block, read_blocks


class AttributeDictionary:
    """Attribute names -> ids, frozen on the training items (module docstring).

    names: the kept names, id = position (first appearance in training).
    """

    hash_bits: int | None = None  # (``hashing.HashedAttributes``: rows of a hashed table)

    def __init__(self, names: list[str] | None = None):
        self.names: list[str] = list(names or [])
        self.index: dict[str, int] = {n: i for i, n in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def name_of(self, i: int) -> str:
        """The name of attribute id ``i``."""
        return self.names[i]

    @classmethod
    def fit(cls, X: Iterable[Sequence], min_freq: float = 0.0) -> AttributeDictionary:
        """The attributes of the items of ``X`` seen more than ``min_freq`` times."""
        return cls.fit_transform(X, min_freq)[0]

    @classmethod
    def fit_transform(
        cls,
        X: Iterable[Sequence],
        min_freq: float = 0.0,
        name: str = "X",
        jobs: int = 1,
        numbers: Sequence[int] | None = None,
    ) -> tuple[AttributeDictionary, FeatureMatrix, torch.Tensor | None]:
        """``fit`` and ``transform`` of the training items in one reading of them.  ``X``: any
        iterable of sequences, read once; ``numbers``: what each sequence of ``X`` is called
        in messages (``name[numbers[k]]``; default its position), filled in as ``X`` is read if
        the caller wishes.  ``jobs`` > 1 reads consecutive blocks of a list ``X`` in that many
        forked processes (Linux) and merges their dictionaries in block order, which keeps
        every name's first appearance: the same dictionary and matrix as one process."""
        return cls().grown(X, min_freq, name, jobs, numbers)

    def grown(
        self,
        X: Iterable[Sequence],
        min_freq: float = 0.0,
        name: str = "X",
        jobs: int = 1,
        numbers: Sequence[int] | None = None,
    ) -> tuple[AttributeDictionary, FeatureMatrix, torch.Tensor | None]:
        """This dictionary with the names new in the items of ``X`` appended (those seen more
        than ``min_freq`` times in X, in order of first appearance), and X's matrix over it;
        the names it holds keep their ids, whatever their count in X (``fit_transform``'s
        arguments)."""
        index = GrowingIndex(self.names)
        found = read_blocks(X, name, jobs, index, GrowingIndex, numbers, count=min_freq > 0)
        names = index.names()
        if min_freq > 0:
            seen = np.zeros(len(names), np.int64)  # [A] occurrences of each name in X
            counted = found.counts[: len(names)]
            seen[: len(counted)] = counted
            keep = seen > min_freq
            keep[: len(self)] = True
            if not keep.all():
                found.keep_only(np.where(keep, np.cumsum(keep) - 1, -1))
                names = [n for n, k in zip(names, keep.tolist(), strict=True) if k]
        return (type(self)(names), *found.matrix())

    def transform(
        self, X: Iterable[Sequence], name: str = "X", numbers: Sequence[int] | None = None
    ) -> tuple[FeatureMatrix, torch.Tensor | None]:
        """CSR features of the sequences of ``X`` (ids [nnz] int32, offsets [N + 1], the
        sequences as documents) and their values [nnz] float32 where some value is not 1
        (else None: the binary path); ``numbers`` as ``fit_transform``'s."""
        return read_block(X, name, FrozenIndex(self.index), numbers=numbers).matrix()
