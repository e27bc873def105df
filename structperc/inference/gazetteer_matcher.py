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
        vocabulary: dict[str, int] = {}
        groups: dict[tuple[int, int], list[tuple[int, ...]]] = {}
        for g, (_, entries, lower, _) in enumerate(found):
            for entry in entries:
                words = tuple(w.lower() for w in entry) if lower else entry
                ids = tuple(vocabulary.setdefault(w, len(vocabulary)) for w in words)
                groups.setdefault((g, ids[0]), []).append(ids)
        V = max(len(vocabulary), 1)
        keys, group_lo, group_hi, entry_lo, entry_hi, flat = [], [], [], [], [], []
        for g, first in sorted(groups):
            group_lo.append(len(entry_lo))
            for ids in sorted(set(groups[g, first]), key=lambda e: (-len(e), e)):
                entry_lo.append(len(flat))
                flat.extend(ids)
                entry_hi.append(len(flat))
            group_hi.append(len(entry_lo))
            keys.append(g * V + first)
        self.lists = (
            np.array(keys, np.int64),
            np.array(group_lo, np.int64),
            np.array(group_hi, np.int64),
            np.array(entry_lo, np.int64),
            np.array(entry_hi, np.int64),
            np.array(flat, np.int64),
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
