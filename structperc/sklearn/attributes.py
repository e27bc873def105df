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
from structperc.sklearn.occurrences import Occurrences
from structperc.sklearn.reading import AttributeTable, FrozenIndex, GrowingIndex, read_block


class AttributeDictionary(AttributeTable):
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
        """The attributes of the items of ``X`` seen more than ``min_freq`` times (``grown``
        from an empty dictionary)."""
        return cls().grown(X, min_freq)[0]

    def _growing(self) -> tuple[GrowingIndex, type[GrowingIndex]]:
        """The names held, giving the new ones the next ids; a forked reader's from none."""
        return GrowingIndex(self.names), GrowingIndex

    def _kept(
        self, index: GrowingIndex, found: Occurrences, min_freq: float
    ) -> AttributeDictionary:
        """The dictionary of the names held (whatever their count) and the new ones seen more
        than ``min_freq`` times, in order of first appearance; the ids in ``found`` renumbered
        to it (the names held keep theirs)."""
        names = index.names()
        if min_freq > 0:
            keep = found.counted(len(names)) > min_freq  # [A]
            keep[: len(self)] = True
            if not keep.all():
                found.keep_only(np.where(keep, np.cumsum(keep) - 1, -1))
                names = [n for n, k in zip(names, keep.tolist(), strict=True) if k]
        return type(self)(names)

    def transform(
        self, X: Iterable[Sequence], name: str = "X", numbers: Sequence[int] | None = None
    ) -> tuple[FeatureMatrix, torch.Tensor | None]:
        """CSR features of the sequences of ``X`` (ids [nnz] int32, offsets [N + 1], the
        sequences as documents) and their values [nnz] float32 where some value is not 1
        (else None: the binary path); ``numbers`` as ``grown``'s."""
        return read_block(X, name, FrozenIndex(self.index), numbers=numbers).matrix()
