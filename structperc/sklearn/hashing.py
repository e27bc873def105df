"""Feature hashing for the face: attribute names into the 2^bits rows of a fixed-size table.

``CRF(hash_bits=b)`` keeps no dictionary: an attribute's row is a stable hash of its name,

    row(name) = blake2b_64(utf-8 bytes of name) mod 2^b

(BLAKE2b with an 8-byte digest, read little-endian: the same row on every machine and in every
process, unlike Python's salted ``hash``), so the model has 2^b x L state weights whatever the
data, and prediction hashes the items' names the same way (Weinberger et al. 2009, "Feature
Hashing for Large Scale Multitask Learning"; unsigned here: two names that share a row share
its weights).  With 2^b at least the number of names and no two names in one row, the hashed
model is the dictionary model with its rows moved.  ``min_freq`` counts occurrences per row.
The model cannot name its rows' attributes: ``CRF.attributes_`` and ``state_features_`` call a
row "#<row>", and ``row_of`` gives a name's row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from hashlib import blake2b

import numpy as np
import torch

from structperc.features.extract import FeatureMatrix
from structperc.sklearn.occurrences import Occurrences
from structperc.sklearn.reading import AttributeTable, read_block

HASH = "blake2b-64"  # the model's record of how its rows were hashed
MAX_BITS = 30  # a table of 2^30 rows x L labels is already 4 L GiB of float32
CACHE = 1 << 20  # names whose rows a reading remembers (cleared when full)


def row_of(name: str, bits: int) -> int:
    """The row of attribute ``name`` in a table of 2^``bits`` rows."""
    digest = blake2b(name.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << bits) - 1)


def check_bits(bits) -> int:
    """``bits`` as an int in 1 ... ``MAX_BITS``, else ValueError naming the parameter."""
    if isinstance(bits, bool) or int(bits) != bits or not 1 <= bits <= MAX_BITS:
        raise ValueError(f"hash_bits must be an integer in 1 ... {MAX_BITS}, got {bits!r}")
    return int(bits)


class HashedRows(dict):
    """name -> row, remembering at most ``CACHE`` names (the index ``reading.py`` reads with)."""

    def __init__(self, bits: int):
        super().__init__()
        self.bits = bits

    def __missing__(self, name: str) -> int:
        if len(self) >= CACHE:
            self.clear()
        row = self[name] = row_of(name, self.bits)
        return row

    def ids_of(self, names: list[str]) -> list[int]:
        return list(map(self.__getitem__, names))

    def names(self) -> None:
        return None


class HashedAttributes(AttributeTable):
    """The attributes of a hashed model: 2^``hash_bits`` rows, no names (module docstring);
    ``AttributeDictionary``'s interface."""

    def __init__(self, hash_bits: int):
        self.hash_bits = check_bits(hash_bits)

    def __len__(self) -> int:
        return 1 << self.hash_bits

    @property
    def names(self) -> list[str]:
        """(a hashed model has no attribute names)"""
        return []

    def name_of(self, row: int) -> str:
        return f"#{row}"

    def _growing(self) -> tuple[HashedRows, Callable[[], HashedRows]]:
        """The rows of the names (a forked reader's likewise): the table does not grow."""
        bits = self.hash_bits
        return HashedRows(bits), lambda: HashedRows(bits)

    def _kept(self, index: HashedRows, found: Occurrences, min_freq: float) -> HashedAttributes:
        """Itself (the rows are fixed), the occurrences of rows seen ``min_freq`` times or
        fewer left out of ``found``."""
        if min_freq > 0:
            seen = found.counted(len(self))  # [2^bits]
            found.keep_only(np.where(seen > min_freq, np.arange(len(self)), -1))
        return self

    def transform(
        self, X: Iterable[Sequence], name: str = "X", numbers: Sequence[int] | None = None
    ) -> tuple[FeatureMatrix, torch.Tensor | None]:
        """The matrix of the items of ``X`` (``AttributeDictionary.transform``)."""
        return read_block(X, name, HashedRows(self.hash_bits), numbers=numbers).matrix()
