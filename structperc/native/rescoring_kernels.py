"""Kazama & Torisawa's prediction, compiled: the n' best labelings of each window of a document
under the local model, rescored with the non-local features, the best kept
(``structures/rescoring.py``'s ``predict``, one window at a time).

Per window [t0, t1): the token scores (``template_kernels.window_sums``), the potentials, the
n' best (``nbest_kernels.nbest_paths``), Φ^g·α^g of each (``nonlocal_kernels``), and the first
candidate of the highest local + non-local score.  The non-local features compare the tokens'
``compare`` ids (equal ids, equal strings: the words, lower-cased when the features fold case)
and read the connector kinds of ``connector`` ids (0 other, 1 ",", 2 "and", 3 "or", lower-cased:
``notation.CONNECTORS``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from structperc.native.nbest_kernels import nbest_paths
from structperc.native.nonlocal_kernels import (
    candidate_score,
    longest_mention,
    scratch,
    string_ids,
)
from structperc.native.template_kernels import potentials, window_sums

COMMA, AND, OR = 1, 2, 3  # connector ids


@njit(cache=True, nogil=True)
def local_ids(values, T):  # pragma: no cover - jit
    """values[:T] renumbered 0..V-1 (equal values, equal numbers), in order of size."""
    order = np.argsort(values[:T], kind="mergesort")
    out = np.empty(T, dtype=np.int64)
    rank = -1
    for p in range(T):
        if p == 0 or values[order[p]] != values[order[p - 1]]:
            rank += 1
        out[order[p]] = rank
    return out


@njit(cache=True, nogil=True)
def window_document(compare, connector, sentence, t0, t1):  # pragma: no cover - jit
    """(words, sentence, conn1, conn2) of the window [t0, t1) for ``candidate_score``: local word
    ids, sentence ids, and the connector kind of the one and of the two tokens after each
    position (1: ",", 2: "and", "or", ", and", ", or"; 0: none)."""
    T = t1 - t0
    words = local_ids(compare[t0:t1], T)
    conn1 = np.zeros(T + 1, dtype=np.int64)
    conn2 = np.zeros(T + 1, dtype=np.int64)
    for t in range(T):
        c = connector[t0 + t]
        conn1[t] = 1 if c == COMMA else (2 if c == AND or c == OR else 0)
        if t + 1 < T and c == COMMA:
            d = connector[t0 + t + 1]
            conn2[t] = 2 if d == AND or d == OR else 0
    return words, sentence[t0:t1].astype(np.int64), conn1, conn2


@njit(cache=True, nogil=True)
def rescore_windows(  # pragma: no cover - jit
    codes, words, bounds, model, scoring, n, text, nonlocal_model, out
):
    """The labels out[t] of the tokens of every window k, bounds[k] = (t0, t1, d0, d1): the best
    of the ``n`` best of [t0, t1) (the templates reading [d0, d1), ``window_sums``) under the
    local + non-local score.  ``text`` = (compare [N], connector [N], sentence [N]) ids;
    ``nonlocal_model`` = ``candidate_score``'s model."""
    compare, connector, sentence = text
    label_class, label_begin = nonlocal_model[0], nonlocal_model[1]
    L = len(scoring[0])
    K1 = int(label_class.max()) + 1
    longest_window = 1
    for k in range(len(bounds)):
        longest_window = max(longest_window, bounds[k, 1] - bounds[k, 0])
    sums = np.empty((longest_window, model[1].shape[1]), dtype=np.float64)
    rows = np.empty((longest_window, len(model[0][0])), dtype=np.int32)
    pot = np.empty((longest_window, L, L), dtype=np.float64)
    paths = np.empty((n, longest_window), dtype=np.int16)
    local = np.empty(n, dtype=np.float64)
    for k in range(len(bounds)):
        t0, t1, d0, d1 = bounds[k, 0], bounds[k, 1], bounds[k, 2], bounds[k, 3]
        T = t1 - t0
        if T == 0:
            continue
        window_sums(codes, words, t0, t1, d0, d1, model, rows, sums)
        potentials(sums, T, scoring, pot)
        found = nbest_paths(pot, T, n, paths, local)
        if found == 0:  # no labeling has a finite score (constraints): the first label
            for t in range(T):
                out[t0 + t] = 0
            continue
        best = 0
        if found > 1:
            longest = max(longest_mention(paths, found, T, label_class, label_begin), 1)
            w, sent, conn1, conn2 = window_document(compare, connector, sentence, t0, t1)
            doc = (w, sent, conn1, conn2) + string_ids(w, T, longest)
            work = scratch(T, longest, K1)
            best_total = -np.inf
            for r in range(found):
                total = local[r] + candidate_score(paths[r], T, doc, nonlocal_model, work)
                if total > best_total:
                    best_total = total
                    best = r
        for t in range(T):
            out[t0 + t] = paths[best, t]
