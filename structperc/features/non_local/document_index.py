"""``DocumentIndex``: what all candidate labelings of one document share, computed once.

The n-best candidates of a document differ only in their labels, so everything that depends on
the tokens alone is cached per document: token ids (w_i as integers), the connector kind of one
and of two tokens after every position (``conj``), the sentence of every token, and, filled on
demand, the string id of every span [s, e) asked for, the occurrences (start positions) of every
string, and the proper contiguous sub-strings of every string (``subphrase``, ``supmaj``).
String ids are per document and never change; every cache only grows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from structperc.features.non_local.notation import CONNECTORS, normalize, sentence_ids

SHORT = 8  # spans shorter than this find their string id in a [T, SHORT] table


class DocumentIndex:
    """Token ids, connectors, sentences, and caches of span strings, occurrences, sub-strings.

    String ids are per document and never change; every cache only grows.
    """

    def __init__(self, tokens: Sequence[str], sentence_starts: Sequence[int], casefold: bool):
        words = normalize(tokens, casefold)
        self.length = T = len(words)
        ids: dict[str, int] = {}
        self.tok = np.fromiter((ids.setdefault(w, len(ids)) for w in words), np.int64, T)
        self.num_types = len(ids)
        low = [t.lower() for t in tokens] + [""]
        self.conn1 = np.array([CONNECTORS.get((w,), 0) for w in low[:T]] + [0], dtype=np.int64)
        self.conn2 = np.array(
            [CONNECTORS.get((low[i], low[i + 1]), 0) for i in range(T)] + [0], dtype=np.int64
        )
        self.sentence = sentence_ids(T, sentence_starts)
        self.strings: dict[tuple[int, ...], int] = {}  # token-id string -> string id
        self.string_of: list[tuple[int, ...]] = []
        self.short = np.full((T, SHORT), -1, dtype=np.int64)  # [s, e - s] -> string id
        self._long: dict[tuple[int, int], int] = {}
        self._occ: dict[int, np.ndarray] = {}
        self._subs: dict[int, tuple[int, ...]] = {}

    def _sid(self, string: tuple[int, ...]) -> int:
        sid = self.strings.get(string)
        if sid is None:
            sid = self.strings[string] = len(self.string_of)
            self.string_of.append(string)
        return sid

    def span(self, s: int, e: int) -> int:
        """String id of the span [s, e)."""
        if e - s < SHORT:
            sid = int(self.short[s, e - s])
            if sid < 0:
                sid = self.short[s, e - s] = self._sid(tuple(self.tok[s:e].tolist()))
            return sid
        if (s, e) not in self._long:
            self._long[s, e] = self._sid(tuple(self.tok[s:e].tolist()))
        return self._long[s, e]

    def spans(self, s: np.ndarray, e: np.ndarray) -> np.ndarray:
        """String ids [M] of the spans [s, e) (vectorised; Python only for unseen spans)."""
        n = e - s
        short = n < SHORT
        sids = np.full(len(s), -1, dtype=np.int64)
        sids[short] = self.short[s[short], n[short]]
        miss = np.flatnonzero(sids < 0)
        if len(miss):
            keys, inv = np.unique(s[miss] * (self.length + 1) + e[miss], return_inverse=True)
            new = [self.span(*divmod(k, self.length + 1)) for k in keys.tolist()]
            sids[miss] = np.array(new, dtype=np.int64)[inv.reshape(-1)]
        return sids

    def occurrences(self, sid: int) -> np.ndarray:
        """Start positions of every occurrence of string ``sid``."""
        occ = self._occ.get(sid)
        if occ is None:
            u = self.string_of[sid]
            occ = np.flatnonzero(self.tok[: self.length - len(u) + 1] == u[0])
            for k in range(1, len(u)):
                occ = occ[self.tok[occ + k] == u[k]]
            self._occ[sid] = occ
        return occ

    def substrings(self, sid: int) -> tuple[int, ...]:
        """String ids of the proper contiguous sub-strings of string ``sid``."""
        subs = self._subs.get(sid)
        if subs is None:
            u = self.string_of[sid]
            n = len(u)
            found = {self._sid(u[i:j]) for i in range(n) for j in range(i + 1, n + 1) if j - i < n}
            subs = self._subs[sid] = tuple(sorted(found))
        return subs
