"""Attribute codes of a stream of tokens, computed once per distinct word.

Most of a named-attribute model's attributes (``features/attributes.py``: the word, its lower
case, prefixes, suffixes and word-form flags; ``features/word_classes.py``: its classes) are
functions of the word alone.  ``TypeTable`` numbers the distinct words of a stream, and
``AttributeCoder`` computes those attributes' codes (``Vocabulary``'s, -1 where an attribute has
no value or a value training never saw) once per number, by the very functions extraction uses,
applied to a document made of the new words.  A token's row of codes [A] is then a gather; the
attributes that read the context (the POS and chunk columns, gazetteer matches) are filled in
by the caller (``column_codes``, ``inference/gazetteer_matcher.py``).

``AttributeCoder.supports`` says whether a model's features are all of these kinds: feature
templates (``features.templates``), boundary values, gazetteer files and real values are not,
and such a model is tagged by the torch path.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice

import numpy as np

from structperc.data.document import Document
from structperc.features.attributes import TABLE1, token_attributes
from structperc.features.pipeline import LocalFeatures
from structperc.features.word_classes import word_class_columns

COLUMN_ATTRIBUTES = {"pos": "pos", "chk": "chunk"}  # attribute -> the input column it reads
TYPE_LIMIT = 1 << 20  # distinct words a stream keeps numbered before it starts afresh


class TypeTable:
    """The distinct words of a stream, numbered in order of appearance."""

    def __init__(self):
        self.index: dict[str, int] = {}
        self.generation = 0  # how often the table started afresh

    def __len__(self) -> int:
        return len(self.index)

    def ids(self, tokens: Sequence[str]) -> np.ndarray:
        """[T] int64: the number of each token (new words get the next numbers)."""
        index = self.index
        return np.fromiter(
            (index.setdefault(w, len(index)) for w in tokens), dtype=np.int64, count=len(tokens)
        )

    def words(self, first: int, last: int) -> list[str]:
        """The words numbered first..last-1."""
        return list(islice(self.index, first, last))

    @property
    def full(self) -> bool:
        """Whether the table should start afresh (at a batch boundary: ``clear``)."""
        return len(self.index) >= TYPE_LIMIT

    def clear(self) -> None:
        self.index = {}
        self.generation += 1


class WordColumn:
    """A value per numbered word of a ``TypeTable``, computed once per word: ``compute`` maps a
    list of words to an array of their values (rows), which ``of`` extends as words come."""

    def __init__(self, compute, shape: tuple[int, ...] = (), dtype=np.int64):
        self.compute = compute
        self._cache = np.zeros((0, *shape), dtype=dtype)  # [capacity, *shape]
        self._size = 0  # the words computed
        self._generation = 0  # of the table they were computed for

    def of(self, types: TypeTable) -> np.ndarray:
        """[len(types), *shape]: the values of every numbered word."""
        have, need = self._size, len(types)
        if types.generation != self._generation:  # the table started afresh
            have, self._generation = 0, types.generation
        if need > have:
            new = self.compute(types.words(have, need))
            if need > len(self._cache):
                capacity = max(need, 2 * len(self._cache))
                grown = np.empty((capacity, *self._cache.shape[1:]), dtype=self._cache.dtype)
                grown[:have] = self._cache[:have]
                self._cache = grown
            self._cache[have:need] = new
        self._size = need
        return self._cache[:need]


class AttributeCoder:
    """The codes of a named-attribute model's attributes (``attributes``, the vocabulary's sorted
    list, the columns of a codes matrix [N, A]).

    ``type_columns`` are the word's own attributes, ``column_of`` maps "pos"/"chunk" to their
    columns, ``gazetteer_columns`` the gazetteer attributes' (``eng.list`` types and external
    lists); ``codes_of_types`` extends the per-word cache of a ``TypeTable``.
    """

    def __init__(self, features: LocalFeatures):
        self.features = features
        vocab = features.vocab
        self.attributes = vocab.attributes
        classes = set(features.word_classes.attributes) if features.word_classes else set()
        words_own = (set(TABLE1) - set(COLUMN_ATTRIBUTES)) | classes
        self.type_attributes = [a for a in self.attributes if a in words_own]
        self.table_attributes = tuple(a for a in self.type_attributes if a in TABLE1)
        self.class_attributes = [a for a in self.type_attributes if a in classes]
        self.type_columns = np.array(
            [self.attributes.index(a) for a in self.type_attributes], dtype=np.int64
        )
        self.column_of = {
            column: self.attributes.index(a)
            for a, column in COLUMN_ATTRIBUTES.items()
            if a in self.attributes
        }
        gazetteers = set(features.gazetteer_types) if features.gazetteer != "none" else set()
        gazetteers |= set(features.external_entries)
        self.gazetteer_columns = {
            a: self.attributes.index(a) for a in self.attributes if a in gazetteers
        }
        self.word_codes_column = WordColumn(self.word_codes, (len(self.type_attributes),), np.int32)

    @staticmethod
    def supports(features: LocalFeatures) -> bool:
        """Whether every attribute of ``features`` is one of the kinds above, and its keys'
        rows are the vocabulary's own (a hashed vocabulary, ``features.hash_bits``, takes the
        torch path)."""
        if features.compiled is not None or features.boundary or features.gazetteer_families:
            return False
        if getattr(features.vocab, "hash_bits", None) is not None:
            return False
        classes = set(features.word_classes.attributes) if features.word_classes else set()
        gazetteers = set(features.gazetteer_types) if features.gazetteer != "none" else set()
        known = set(TABLE1) | classes | gazetteers | set(features.external_entries)
        return set(features.vocab.attributes) <= known

    def codes_of_types(self, types: TypeTable) -> np.ndarray:
        """[len(types), A_type] int32: the word-own attribute codes of every numbered word."""
        return self.word_codes_column.of(types)

    def word_codes(self, words: list[str]) -> np.ndarray:
        """[len(words), A_type] int32: the word-own attribute codes of ``words``."""
        doc = Document(tokens=words)
        columns = token_attributes(doc, self.table_attributes, self.features.flag_off)
        if self.class_attributes:
            columns.update(word_class_columns(self.features.word_classes, doc))
        vocab = self.features.vocab
        out = np.empty((len(words), len(self.type_attributes)), dtype=np.int32)
        for k, a in enumerate(self.type_attributes):
            out[:, k] = vocab._codes(columns, a)
        return out

    def value_codes(self, attribute: str, values: Sequence[str | None]) -> np.ndarray:
        """[len(values)] int32: the codes of ``values`` of ``attribute`` (-1: unseen or None)."""
        index = self.features.vocab._index[attribute]
        return np.fromiter(
            (index.get(v, -1) if v is not None else -1 for v in values),
            dtype=np.int32,
            count=len(values),
        )

    def codes(self, type_ids: np.ndarray, types: TypeTable) -> np.ndarray:
        """[A, N] int32: the codes of tokens numbered ``type_ids`` [N], attribute by attribute,
        the word-own attributes filled and every other row -1 (for the caller to fill)."""
        out = np.full((len(self.attributes), len(type_ids)), -1, dtype=np.int32)
        out[self.type_columns] = self.codes_of_types(types)[type_ids].T
        return out
