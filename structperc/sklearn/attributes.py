"""Token features as python-crfsuite reads them, and their dictionary of attributes.

python-crfsuite (``ItemSequence``; Okazaki's CRFsuite underneath) takes one item per token,
either a list of attribute names (each with value 1.0) or a dict, read key by key:

    {"k": "v"}            the attribute "k:v" with value 1.0 (the key and value joined by ":")
    {"k": 2.5}            the attribute "k" with value 2.5 (an int the same; True 1.0, False 0.0)
    {"k": {...}}          the nested dict's attributes, each name prefixed with "k:"
    {"k": [...]}, set     the list's (or set's) names, each prefixed with "k:", value 1.0

An attribute named twice in one item counts twice (CRFsuite sums what the item lists).  A token's
score for label y is sum_a value_a * w[a, y]: the values are EmbeddingBag's per-sample weights.
Attributes unseen in training do not fire at prediction time.

``AttributeDictionary`` numbers the attribute names of the training items in the order they
first appear (CRFsuite's dictionary order), keeping those seen more than ``min_freq`` times, and
turns item sequences into structperc's CSR ``FeatureMatrix`` (an attribute with value 0 adds
nothing to any score or gradient and is left out of the rows).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
import torch

from structperc.features.extract import FeatureMatrix
from structperc.forking import Child, ChildError, can_fork

SEPARATOR = ":"  # python-crfsuite's joiner of a key and its string value or nested names


class FeatureFormatError(ValueError):
    """An item that python-crfsuite's format does not allow (the message names where)."""


def item_attributes(item, where: str = "item") -> tuple[list[str], list[float]]:
    """(names, values) of one token's item, in python-crfsuite's order (module docstring)."""
    names: list[str] = []
    values: list[float] = []
    if isinstance(item, dict):
        _dict_attributes(item, "", names, values, where)
    elif isinstance(item, (list, tuple, set, frozenset)):
        for name in item:
            names.append(_name(name, where))
            values.append(1.0)
    else:
        raise FeatureFormatError(
            f"{where}: a token's features must be a dict or a list of strings, "
            f"got {type(item).__name__}"
        )
    return names, values


def _dict_attributes(item: dict, prefix: str, names: list, values: list, where: str) -> None:
    for key, value in item.items():
        name = prefix + _name(key, where)
        kind = type(value)
        if kind is str:  # the common cases first
            names.append(name + SEPARATOR + value)
            values.append(1.0)
        elif kind is bool or kind is float or kind is int:
            names.append(name)
            values.append(float(value))
        elif isinstance(value, dict):
            _dict_attributes(value, name + SEPARATOR, names, values, where)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for member in value:
                names.append(name + SEPARATOR + _name(member, f"{where}, key {name!r}"))
                values.append(1.0)
        elif isinstance(value, str):
            names.append(name + SEPARATOR + str(value))
            values.append(1.0)
        elif isinstance(value, bytes):
            names.append(name + SEPARATOR + value.decode("utf-8"))
            values.append(1.0)
        else:
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise FeatureFormatError(
                    f"{where}: feature {name!r} has a value of type {type(value).__name__}; "
                    "expected a str, bool, number, dict, list or set"
                ) from None
            names.append(name)
            values.append(number)


def _name(key, where: str) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        return key.decode("utf-8")
    raise FeatureFormatError(
        f"{where}: a feature name must be a str, got {type(key).__name__} {key!r}"
    )


def sequence_attributes(xseq: Sequence, where: str) -> tuple[list[str], list, list[int]]:
    """The attributes of every token of one sequence: (names, values, count per token).

    The values are python-crfsuite's numbers (a bool stands for 1.0 or 0.0).  A flat dict of
    str keys with str, bool or number values, the common item, is read inline (this loop is
    most of ``fit``'s time before training starts); anything else goes through
    ``item_attributes``.
    """
    names: list[str] = []
    values: list = []
    counts: list[int] = []
    add_name, add_value = names.append, values.append
    for t, item in enumerate(xseq):
        before = len(names)
        if type(item) is dict:
            for key, value in item.items():
                kind = type(value)
                if type(key) is str:
                    if kind is str:
                        add_name(key + SEPARATOR + value)
                        add_value(1.0)
                        continue
                    if kind is bool or kind is float or kind is int:
                        add_name(key)
                        add_value(value)
                        continue
                _dict_attributes({key: value}, "", names, values, f"{where}[{t}]")
        else:
            more, more_values = item_attributes(item, f"{where}[{t}]")
            names += more
            values += more_values
        counts.append(len(names) - before)
    return names, values, counts


class AttributeDictionary:
    """Attribute names -> ids, frozen on the training items (module docstring).

    names: the kept names, id = position (first appearance in training).
    """

    def __init__(self, names: list[str] | None = None):
        self.names: list[str] = list(names or [])
        self.index: dict[str, int] = {n: i for i, n in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

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
        names, found = read_blocks(X, name, jobs, numbers)
        ids = found.id_array()
        found.check_finite(name, names.__getitem__, numbers)
        seen = np.bincount(ids, minlength=len(names))  # [A] occurrences of each name
        keep = seen > min_freq
        new_id = np.cumsum(keep) - 1  # [A] id among the kept names
        dictionary = cls([n for n, k in zip(names, keep.tolist(), strict=True) if k])
        return (dictionary, *found.csr(np.where(keep[ids], new_id[ids], -1)))

    def transform(
        self, X: Iterable[Sequence], name: str = "X", numbers: Sequence[int] | None = None
    ) -> tuple[FeatureMatrix, torch.Tensor | None]:
        """CSR features of the sequences of ``X`` (ids [nnz] int32, offsets [N + 1], the
        sequences as documents) and their values [nnz] float32 where some value is not 1
        (else None: the binary path); ``numbers`` as ``fit_transform``'s."""
        get = self.index.get
        found = Occurrences()
        unseen: dict[int, str] = {}  # (occurrence of an unseen name: its name, for messages)
        for k, xseq in enumerate(X):
            where = f"{name}[{numbers[k] if numbers is not None else k}]"
            names, values, counts = sequence_attributes(xseq, where)
            ids = [get(n, -1) for n in names]
            if -1 in ids:
                first = len(found.ids)
                unseen.update((first + k, n) for k, n in enumerate(names) if ids[k] < 0)
            found.add(ids, values, counts)
        ids = found.id_array()
        found.check_finite(
            name, lambda m: unseen[m] if ids[m] < 0 else self.names[ids[m]], numbers, True
        )
        return found.csr(ids)


def read_block(
    X: Iterable[Sequence], name: str, first: int = 0, numbers: Sequence[int] | None = None
) -> tuple[list[str], Occurrences]:
    """The names of the items of ``X`` in order of first appearance, and their occurrences
    (ids into those names); ``first``: the position of X's first sequence in the whole set,
    ``numbers``: the whole set's names for messages (``fit_transform``)."""
    # a name's id is its rank of first appearance: a missing key takes the next number in C
    # (``defaultdict``), a plain lookup otherwise (half the time of ``setdefault``)
    index: defaultdict[str, int] = defaultdict(itertools.count().__next__)
    found = Occurrences()
    for k, xseq in enumerate(X, start=first):
        where = f"{name}[{numbers[k] if numbers is not None else k}]"
        names, values, counts = sequence_attributes(xseq, where)
        found.add([index[n] for n in names], values, counts)
    return list(index), found


def read_blocks(
    X: Iterable[Sequence], name: str, jobs: int, numbers: Sequence[int] | None = None
) -> tuple[list[str], Occurrences]:
    """``read_block`` of all of ``X``, in ``jobs`` forked processes where that is possible and
    ``X`` is a list large enough (a block's reading failed: read again here, for its error);
    any other iterable is read once, here."""
    if not isinstance(X, Sequence):
        jobs = 1
    jobs = min(jobs, len(X) // 500) if jobs > 1 and can_fork("cpu") else 1
    if jobs <= 1:
        return read_block(X, name, numbers=numbers)
    bounds = np.linspace(0, len(X), jobs + 1).astype(int).tolist()
    blocks = list(zip(bounds[:-1], bounds[1:], strict=True))

    def work(a: int, b: int):
        names, found = read_block(X[a:b], name, a, numbers)
        return names, found.arrays()

    children = [Child(lambda a=a, b=b: work(a, b), f"reading {name}[{a}:{b}]") for a, b in blocks]
    try:
        results = [child.result() for child in children]
    except ChildError:
        return read_block(X, name, numbers=numbers)  # the error as one process raises it
    finally:
        for child in children:
            child.kill()
    index: dict[str, int] = {}
    merged = Occurrences()
    for names, (ids, values, per_token, lengths) in results:
        to_global = np.fromiter(
            (index.setdefault(n, len(index)) for n in names), dtype=np.int64, count=len(names)
        )
        merged.extend(to_global[ids], values, per_token, lengths)
    return list(index), merged


class Occurrences:
    """The attribute occurrences of a set of sequences as they are read: ids, values, how many
    per token, tokens per sequence."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.values: list[float] = []
        self.per_token: list[int] = []
        self.lengths: list[int] = []

    def add(self, ids: list[int], values: list[float], counts: list[int]) -> None:
        self.ids += ids
        self.values += values
        self.per_token += counts
        self.lengths.append(len(counts))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(ids [M] int32, values [M] float32, per token [N], lengths [D]) as NumPy arrays."""
        return (
            np.asarray(self.ids, dtype=np.int32),
            np.asarray(self.values, dtype=np.float32),
            np.asarray(self.per_token, dtype=np.int64),
            np.asarray(self.lengths, dtype=np.int64),
        )

    def extend(self, ids, values, per_token, lengths) -> None:
        """Add another block's occurrences (``arrays``, ids already in this numbering)."""
        for mine, more in zip(
            ("ids", "values", "per_token", "lengths"),
            (ids, values, per_token, lengths),
            strict=True,
        ):
            old = getattr(self, mine)
            setattr(self, mine, np.concatenate([np.asarray(old, more.dtype), more]))

    def id_array(self) -> np.ndarray:
        return np.asarray(self.ids, dtype=np.int64)

    def check_finite(
        self, name: str, key_of, numbers: Sequence[int] | None = None, by_occurrence=False
    ) -> None:
        """FeatureFormatError naming the first value that is not a finite float32 number
        (NaN, an infinity, or beyond +-3.4e38): its sequence of ``name`` (``numbers[k]`` for
        the k-th, if given), its token and its key (``key_of(i)``: the name of id i, or of
        occurrence i when ``by_occurrence``).  A NaN value would make every weight NaN in
        training, and every score NaN in prediction."""
        with np.errstate(over="ignore", invalid="ignore"):
            values = np.asarray(self.values, dtype=np.float32)  # [M]
        bad = np.flatnonzero(~np.isfinite(values))
        if not len(bad):
            return
        m = int(bad[0])
        token_ends = np.cumsum(np.asarray(self.per_token, dtype=np.int64))  # [N]
        token = int(np.searchsorted(token_ends, m, side="right"))
        doc_ends = np.cumsum(np.asarray(self.lengths, dtype=np.int64))  # [D]
        k = int(np.searchsorted(doc_ends, token, side="right"))
        t = token - (int(doc_ends[k - 1]) if k else 0)
        key = key_of(m if by_occurrence else int(self.ids[m]))
        s = numbers[k] if numbers is not None else k
        raise FeatureFormatError(
            f"{name}[{s}][{t}]: feature {key!r} has the value {self.values[m]!r}; a feature "
            "value must be a finite number (float32: within +-3.4e38)"
        )

    def csr(self, ids: np.ndarray) -> tuple[FeatureMatrix, torch.Tensor | None]:
        """The CSR matrix of the occurrences with ``ids`` [M] (-1: left out), those of value 0
        left out too; and the values, None when all are 1."""
        values = np.asarray(self.values, dtype=np.float32)  # [M]
        fires = (ids >= 0) & (values != 0.0)
        token = np.repeat(np.arange(len(self.per_token)), self.per_token)  # [M]
        offsets = np.zeros(len(self.per_token) + 1, dtype=np.int64)
        np.cumsum(np.bincount(token[fires], minlength=len(self.per_token)), out=offsets[1:])
        doc_offsets = np.zeros(len(self.lengths) + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=doc_offsets[1:])
        kept = values[fires]
        features = FeatureMatrix(
            torch.from_numpy(ids[fires].astype(np.int32)),
            torch.from_numpy(offsets),
            torch.from_numpy(doc_offsets),
        )
        return features, None if bool(np.all(kept == 1.0)) else torch.from_numpy(kept)
