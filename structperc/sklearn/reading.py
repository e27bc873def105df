"""Reading item sequences into ``Occurrences``, in one process or several, through an index.

An *index* turns attribute names into ids; three kinds read the face's items:

    GrowingIndex   a dictionary that gives a new name the next id (first appearance: CRFsuite's
                   dictionary order), from the names it starts with (a warm start's)
    FrozenIndex    a fixed dictionary; an unknown name is -1 (prediction, held-out data)
    HashedRows     a name's row in a hashed table (``hashing.py``): no dictionary

``read_block`` reads an iterable of sequences once; ``read_blocks`` reads consecutive blocks of
a list in forked processes (Linux) and merges them in block order, renumbering each block's
names in the order the blocks list them, which keeps every name's first appearance: the same
ids and matrix as one process.  ``AttributeTable.grown`` is how a table of the face's
attributes (``attributes.AttributeDictionary``, ``hashing.HashedAttributes``) reads its
training items through them.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from structperc.forking import Child, ChildError, can_fork
from structperc.sklearn.items import sequence_attributes
from structperc.sklearn.occurrences import Occurrences

if TYPE_CHECKING:
    import torch

    from structperc.features.extract import FeatureMatrix

FORK_MIN_SEQUENCES = 500  # a forked reader's least share of the sequences


class Index(Protocol):
    def ids_of(self, names: list[str]) -> list[int]: ...

    def names(self) -> list[str] | None: ...


class GrowingIndex:
    """Names -> ids; a name not yet seen takes the next id (module docstring)."""

    def __init__(self, names: Sequence[str] = ()):
        # a missing key takes the next number in C (``defaultdict``): half the time of
        # ``setdefault`` on the names of CoNLL-2003's items
        self.index: defaultdict[str, int] = defaultdict(
            itertools.count(len(names)).__next__, zip(names, range(len(names)), strict=True)
        )

    def ids_of(self, names: list[str]) -> list[int]:
        return list(map(self.index.__getitem__, names))

    def names(self) -> list[str]:
        """Every name, in id order."""
        return list(self.index)


class FrozenIndex:
    """Names -> ids of a fixed dictionary (``index``), -1 for a name it does not hold."""

    def __init__(self, index: dict[str, int]):
        self.get = index.get

    def ids_of(self, names: list[str]) -> list[int]:
        return list(map(self.get, names, itertools.repeat(-1)))

    def names(self) -> None:
        return None


def read_block(
    X: Iterable[Sequence],
    name: str,
    index: Index,
    first: int = 0,
    numbers: Sequence[int] | None = None,
    count: bool = False,
) -> Occurrences:
    """The occurrences of the items of ``X`` with ids from ``index``; ``first``: the position of
    X's first sequence in the whole set, ``numbers``: the whole set's names for messages
    (``name[numbers[k]]``), ``count``: keep every id's count (``Occurrences``)."""
    found = Occurrences(name, numbers, count, first)
    ids_of = index.ids_of
    for k, xseq in enumerate(X, start=first):
        where = f"{name}[{numbers[k] if numbers is not None else k}]"
        names, values, counts = sequence_attributes(xseq, where)
        found.add(ids_of(names), values, counts, xseq)
    found.flush()
    return found


def read_blocks(
    X: Iterable[Sequence],
    name: str,
    jobs: int,
    index: Index,
    fresh: Callable[[], Index],
    numbers: Sequence[int] | None = None,
    count: bool = False,
) -> Occurrences:
    """``read_block`` of all of ``X`` with ``index``, in ``jobs`` forked processes where that is
    possible and ``X`` is a list large enough: each reads its block with a ``fresh()`` index and
    its names are then numbered by ``index`` in block order (a hashed index: the rows as they
    are).  A block's reading failed: read again here, for its error."""
    if not isinstance(X, Sequence):
        jobs = 1
    jobs = min(jobs, len(X) // FORK_MIN_SEQUENCES) if jobs > 1 and can_fork("cpu") else 1
    if jobs <= 1:
        return read_block(X, name, index, numbers=numbers, count=count)
    bounds = np.linspace(0, len(X), jobs + 1).astype(int).tolist()
    blocks = list(zip(bounds[:-1], bounds[1:], strict=True))

    def work(a: int, b: int):
        own = fresh()
        found = read_block(X[a:b], name, own, a, numbers, count)
        return own.names(), found.arrays(), found.counts

    children = [Child(lambda a=a, b=b: work(a, b), f"reading {name}[{a}:{b}]") for a, b in blocks]
    try:
        results = [child.result() for child in children]
    except ChildError:  # the error as one process raises it
        return read_block(X, name, index, numbers=numbers, count=count)
    finally:
        for child in children:
            child.kill()
    merged = Occurrences(name, numbers, count)
    for names, arrays, counts in results:
        to_global = None
        if names is not None:
            to_global = np.fromiter(index.ids_of(names), np.int64, len(names))  # [block's A]
            counts = None if counts is None else counts[: len(names)]
        merged.merge(arrays, to_global, counts)
    return merged


class AttributeTable:
    """What the face's tables of attributes share: the reading of training items through an
    index that the table grows from (``_growing``), and what it keeps of them (``_kept``)."""

    def grown(
        self,
        X: Iterable[Sequence],
        min_freq: float = 0.0,
        name: str = "X",
        jobs: int = 1,
        numbers: Sequence[int] | None = None,
    ) -> tuple[AttributeTable, FeatureMatrix, torch.Tensor | None]:
        """The table with what is new in the items of ``X`` (seen more than ``min_freq`` times
        in X), and X's matrix over it (the table's ``transform``'s).  ``X``: any iterable of
        sequences, read once; ``numbers``: what each sequence of ``X`` is called in messages
        (``name[numbers[k]]``; default its position), filled in as ``X`` is read if the caller
        wishes.  ``jobs`` > 1 reads consecutive blocks of a list ``X`` in that many forked
        processes (``read_blocks``): the same table and matrix as one process."""
        index, fresh = self._growing()
        found = read_blocks(X, name, jobs, index, fresh, numbers, count=min_freq > 0)
        return (self._kept(index, found, min_freq), *found.matrix())

    def _growing(self) -> tuple[Index, Callable[[], Index]]:
        """The index that reads new items into this table, and a forked reader's fresh one."""
        raise NotImplementedError

    def _kept(self, index: Index, found: Occurrences, min_freq: float) -> AttributeTable:
        """The table after ``found`` was read through ``index``, the occurrences of what it
        does not keep (seen ``min_freq`` times or fewer) left out of ``found``."""
        raise NotImplementedError
