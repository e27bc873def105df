"""Greedy longest gazetteer matching (``features/gazetteer.py``'s ``EntryIndex.match``) over
word ids, compiled.

The entries of list g are word-id sequences, grouped by (g, first word) under the sorted
``keys`` (g * V + first word id) and, within a group, longest first; a token's word id is -1
when no entry holds the word.  Left to right, at each token the longest entry of the list that
starts there and fits in the document wins; its tokens are B, I, ..., the others O, and the
match resumes after it.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def match_lists(word, t0, t1, lists, out):  # pragma: no cover - jit
    """out[g, t] = 1 (B), 2 (I) or 0 (O) for every list g at the tokens [t0, t1) of a document
    whose tokens' word ids are ``word`` [N] (per list: ``word`` or its lower-cased form, by
    ``lists``' ``lower`` [G]).  ``lists`` = (keys [K] int64 sorted, group_lo [K], group_hi [K]
    into the entries, entry_lo [E], entry_hi [E] into ``words`` [W], lower [G] bool, V)."""
    keys, group_lo, group_hi, entry_lo, entry_hi, words, lower, V = lists
    word_exact, word_lower = word
    for g in range(len(lower)):
        ids = word_lower if lower[g] else word_exact
        t = t0
        while t < t1:
            out[g, t] = 0
            w = ids[t]
            size = 0
            if w >= 0:
                key = g * V + w
                a, b = 0, len(keys)
                while a < b:
                    m = (a + b) >> 1
                    if keys[m] < key:
                        a = m + 1
                    else:
                        b = m
                if a < len(keys) and keys[a] == key:
                    for e in range(group_lo[a], group_hi[a]):
                        n = entry_hi[e] - entry_lo[e]
                        if t + n > t1:
                            continue
                        same = True
                        for k in range(1, n):
                            if ids[t + k] != words[entry_lo[e] + k]:
                                same = False
                                break
                        if same:
                            size = n
                            break
            if size:
                out[g, t] = 1
                for k in range(1, size):
                    out[g, t + k] = 2
                t += size
            else:
                t += 1
