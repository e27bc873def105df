"""A model's gazetteer attributes, matched by the compiled kernel over word ids.

The ``eng.list`` types (``go``, ``gp``, ... with the full list, as prediction matches it) and
the external lists (``x_city``, ...) of ``LocalFeatures`` become word-id entries
(``native/gazetteer_kernels.py``); a token's word id is its entry word's (its lower-cased
form's for a list matched case-insensitively), computed once per word of the stream.  The
matches give each attribute's values as ``_gazetteer_columns`` does: B, I and O for the
``eng.list`` types, B and I (no value outside a match) for the external lists.
"""

from __future__ import annotations

import numpy as np

from structperc.features.pipeline import LocalFeatures
from structperc.inference.token_codes import AttributeCoder, TypeTable, WordColumn
from structperc.native.gazetteer_kernels import match_lists


class GazetteerMatcher:
    """The gazetteer attributes of ``coder``'s model: ``fill`` writes their codes."""

    def __init__(self, features: LocalFeatures, coder: AttributeCoder):
        found = []  # (attribute, entries, lower-cased, the value outside a match)
        for attribute in coder.gazetteer_columns:
            if attribute in features.external_entries:
                found.append((attribute, features.external_entries[attribute], False, None))
            else:
                kind = features.gazetteer_types[attribute]
                entries = features.entries.get(kind, set())
                found.append((attribute, entries, features.gazetteer_lowercase, "O"))
        self.rows = np.array([coder.gazetteer_columns[a] for a, *_ in found], dtype=np.int64)
        # per list, the codes of O, B, I (the match kernel's 0, 1, 2)
        self.values = np.array(
            [coder.value_codes(a, [outside, "B", "I"]) for a, _, _, outside in found],
            dtype=np.int32,
        ).reshape(len(found), 3)
        # every entry's words numbered, then the entries sorted by (list, first word, longest
        # first): the groups the kernel searches
        entries = [
            (g, tuple(w.lower() for w in e) if lower else e)
            for g, (_, listed, lower, _) in enumerate(found)
            for e in listed
        ]
        lengths = np.fromiter((len(e) for _, e in entries), np.int64, len(entries))
        vocabulary: dict[str, int] = {}
        flat = np.fromiter(
            (vocabulary.setdefault(w, len(vocabulary)) for _, e in entries for w in e),
            np.int64,
            int(lengths.sum()),
        )
        starts = np.zeros(len(entries) + 1, np.int64)
        np.cumsum(lengths, out=starts[1:])
        lists = np.fromiter((g for g, _ in entries), np.int64, len(entries))
        V = max(len(vocabulary), 1)
        first = flat[starts[:-1]] if len(entries) else np.zeros(0, np.int64)
        key = lists * V + first
        order = np.lexsort((-lengths, key))
        keys, group_lo, counts = np.unique(key[order], return_index=True, return_counts=True)
        self.lists = (
            keys,
            group_lo.astype(np.int64),
            (group_lo + counts).astype(np.int64),
            starts[:-1][order],
            starts[1:][order],
            flat,
            np.array([lower for _, _, lower, _ in found], dtype=np.bool_),
            V,
        )

        def exact(words: list[str]) -> np.ndarray:
            return np.array([vocabulary.get(w, -1) for w in words], dtype=np.int64)

        def lowered(words: list[str]) -> np.ndarray:
            return np.array([vocabulary.get(w.lower(), -1) for w in words], dtype=np.int64)

        self._exact, self._lower = WordColumn(exact), WordColumn(lowered)

    def fill(
        self, codes: np.ndarray, type_ids: np.ndarray, documents: np.ndarray, types: TypeTable
    ):
        """Write the gazetteer attributes' rows of ``codes`` [A, N] for the tokens numbered
        ``type_ids`` [N] of the documents [d0, d1) of ``documents`` [D, 2]."""
        if not len(self.rows):
            return
        word = (self._exact.of(types)[type_ids], self._lower.of(types)[type_ids])
        tags = np.zeros((len(self.rows), len(type_ids)), dtype=np.int8)
        for d0, d1 in documents.tolist():
            match_lists(word, d0, d1, self.lists, tags)
        for g, row in enumerate(self.rows.tolist()):
            codes[row] = self.values[g][tags[g]]
