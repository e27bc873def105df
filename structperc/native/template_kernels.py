"""numba kernels of a chain's token scores straight from attribute codes, and its Viterbi path.

A named-attribute model (``features/extract.py``) fires, at token t, template j = ((a_1, o_1),
..., (a_k, o_k)) with the mixed-radix code  c = ((c_1 w_2 + c_2) w_3 + c_3) ...  of the codes
c_i = codes[a_i, t + o_i] (w_i the number of values of a_i), when every t + o_i lies in the
document and every c_i >= 0; the feature's row of the weight table is what ``TemplateTables``
(``inference/template_tables.py``) stores, -1 for none (a code training never kept, or a row
of zeros):

    dense templates    row = dense[base_j + c]
    sparse templates   row = rows[k] for the k in [lo_j, hi_j) with keys[k] = c (binary search)

A token's scores are the sum of its features' rows: node scores and edge scores (from, to) in
the columns that ``ScoreTable`` names.  Most rows belong to the *word templates*, unigrams of
an attribute of the word alone (``inference/token_codes.py``) at an offset o; their sum depends
only on the word at t + o, so ``word_sums`` adds them once per distinct word and offset,

    S[u, o] = sum over the word templates j at offset o of table[row_j(u)],

and ``window_sums`` adds, for every token, the S of its neighbours and the rows of the other
(*context*) templates: a few rows a token instead of a hundred, read from a table that stays in
the cache (a token's hundred rows of a word table are scattered over megabytes).  Sums are in
float64 (S stored in float32): the torch path's float32 sums agree to float rounding.

``viterbi_sums`` is ``chain_kernels.viterbi``'s recursion over potentials
p_t(i, j) = node_t(j) + (edge_t(i, j) or trans(i, j)), the first maximum on ties.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def word_sums(word_codes, word_templates, table, out):  # pragma: no cover - jit
    """out[u, o, :] [U, O, W] = the sum of the rows of the word templates at offset index o of
    word u (``word_codes`` [U, A_w] int32); ``word_templates`` = (column [Jw] of the template's
    attribute in ``word_codes``, offset index [Jw], dense base [Jw], dense)."""
    column, offset_index, base, dense = word_templates
    U, O, W = out.shape
    acc = np.empty((O, W), dtype=np.float64)
    for u in range(U):
        acc[:] = 0.0
        for j in range(len(column)):
            c = word_codes[u, column[j]]
            if c < 0:
                continue
            row = dense[base[j] + c]
            if row < 0:
                continue
            src = table[row]
            dst = acc[offset_index[j]]
            for w in range(W):
                dst[w] += src[w]
        for o in range(O):
            for w in range(W):
                out[u, o, w] = acc[o, w]


@njit(cache=True, nogil=True)
def context_rows(codes, t0, t1, d0, d1, tables, rows):  # pragma: no cover - jit
    """rows[t - t0, j] = the table row of context template j at the tokens t of [t0, t1), a
    window of the document [d0, d1) (-1: none), one template at a time."""
    n_parts, part_attr, part_off, part_width, dense_base, dense, lo, hi, keys, table_rows = tables
    for j in range(len(n_parts)):
        P = n_parts[j]
        base = dense_base[j]
        for t in range(t0, t1):
            code = 0
            found = True
            for k in range(P):
                s = t + part_off[j, k]
                if s < d0 or s >= d1:
                    found = False
                    break
                c = codes[part_attr[j, k], s]
                if c < 0:
                    found = False
                    break
                code = code * part_width[j, k] + c
            row = -1
            if found and base >= 0:
                row = dense[base + code]
            elif found:
                a, b = lo[j], hi[j]
                while a < b:  # the first key >= code
                    m = (a + b) >> 1
                    if keys[m] < code:
                        a = m + 1
                    else:
                        b = m
                if a < hi[j] and keys[a] == code:
                    row = table_rows[a]
            rows[t - t0, j] = row


@njit(cache=True, nogil=True)
def window_sums(codes, words, t0, t1, d0, d1, model, rows, out):  # pragma: no cover - jit
    """out[t - t0, :] [T, W] float64 = the scores of the tokens t of [t0, t1), a window of the
    document [d0, d1) whose tokens the templates read: the word sums S[words[t + o], o]
    (``word_sums``; ``words`` [N] the tokens' rows of S) and the context templates' rows
    (``context_rows``, into the scratch ``rows`` [>= T, J]).  ``codes`` [A, N] int32 (-1: no
    value); ``model`` = (tables, table, S, offsets [O])."""
    tables, table, S, offsets = model
    W = table.shape[1]
    J = len(tables[0])
    context_rows(codes, t0, t1, d0, d1, tables, rows)
    for t in range(t0, t1):
        acc = out[t - t0]
        for w in range(W):
            acc[w] = 0.0
        for o in range(len(offsets)):
            s = t + offsets[o]
            if s < d0 or s >= d1:
                continue
            src = S[words[s], o]
            for w in range(W):
                acc[w] += src[w]
        mine = rows[t - t0]
        for j in range(J):
            row = mine[j]
            if row >= 0:
                src2 = table[row]
                for w in range(W):
                    acc[w] += src2[w]


@njit(cache=True, nogil=True)
def potentials(sums, T, scoring, pot):  # pragma: no cover - jit
    """pot[t, i, j] [T, L, L] of token sums [T, W] (``window_sums``): node_t(j) plus
    edge_t(i, j) or trans(i, j); at t = 0 node_0(j) in every row.  ``scoring`` = (node_cols
    [L], edge_cols [L * L] (empty: ``trans``), trans [L, L], allowed [L, L], start [L]): the
    columns of the scores in the sums (-1: zero), and the transitions and first labels the
    tag-scheme constraints allow (empty: all; ``decode/constraints.py``), -inf elsewhere."""
    node_cols, edge_cols, trans, allowed, start = scoring
    L = len(node_cols)
    node = np.empty(L, dtype=pot.dtype)
    for t in range(T):
        for j in range(L):
            c = node_cols[j]
            node[j] = sums[t, c] if c >= 0 else 0.0
        for i in range(L):
            for j in range(L):
                if t == 0:
                    v = node[j]
                    if len(start) and not start[j]:
                        v = -np.inf
                else:
                    if len(edge_cols):
                        c = edge_cols[i * L + j]
                        e = sums[t, c] if c >= 0 else 0.0
                    else:
                        e = trans[i, j]
                    v = e + node[j]
                    if len(allowed) and not allowed[i, j]:
                        v = -np.inf
                pot[t, i, j] = v


@njit(cache=True, nogil=True)
def viterbi_sums(sums, T, scoring, alpha, nxt, bp, path):  # pragma: no cover - jit
    """The best labeling path[:T] of the potentials of token sums [T, W] (``potentials``'
    ``scoring``), read from the sums as the recursion goes instead of written out first: the
    recursion of ``chain_kernels.viterbi``, the first maximum on ties."""
    node_cols, edge_cols, trans, allowed, start = scoring
    L = len(node_cols)
    edges = len(edge_cols) > 0
    constrained = len(allowed) > 0
    for j in range(L):
        c = node_cols[j]
        alpha[j] = sums[0, c] if c >= 0 else 0.0
        if len(start) and not start[j]:
            alpha[j] = -np.inf
    for t in range(1, T):
        row = sums[t]
        for j in range(L):
            c = node_cols[j]
            node = row[c] if c >= 0 else 0.0
            best = -np.inf
            arg = 0
            for i in range(L):
                if constrained and not allowed[i, j]:
                    continue
                if edges:
                    e = edge_cols[i * L + j]
                    v = alpha[i] + ((row[e] if e >= 0 else 0.0) + node)
                else:
                    v = alpha[i] + (trans[i, j] + node)
                if v > best or i == 0:
                    best = v
                    arg = i
            nxt[j] = best
            bp[t, j] = arg
        alpha[:] = nxt
    path[T - 1] = y = np.argmax(alpha)  # (the first maximum)
    for t in range(T - 1, 0, -1):
        path[t - 1] = y = bp[t, y]


@njit(cache=True, nogil=True)
def label_sequences(codes, words, bounds, model, scoring, out):  # pragma: no cover - jit
    """The Viterbi labels out[t] of the tokens of every sequence k, bounds[k] = (t0, t1, d0,
    d1): the tokens [t0, t1) decoded, [d0, d1) the document whose tokens the templates read
    (``window_sums``'s ``codes``, ``words`` and ``model``; ``potentials``' ``scoring``)."""
    L = len(scoring[0])
    longest = 1
    for k in range(len(bounds)):
        longest = max(longest, bounds[k, 1] - bounds[k, 0])
    sums = np.empty((longest, model[1].shape[1]), dtype=model[1].dtype)
    rows = np.empty((longest, len(model[0][0])), dtype=np.int32)
    alpha = np.empty(L, dtype=np.float64)
    nxt = np.empty(L, dtype=np.float64)
    bp = np.empty((longest, L), dtype=np.int64)
    path = np.empty(longest, dtype=np.int64)
    for k in range(len(bounds)):
        t0, t1, d0, d1 = bounds[k, 0], bounds[k, 1], bounds[k, 2], bounds[k, 3]
        T = t1 - t0
        if T == 0:
            continue
        window_sums(codes, words, t0, t1, d0, d1, model, rows, sums)
        viterbi_sums(sums, T, scoring, alpha, nxt, bp, path)
        for t in range(T):
            out[t0 + t] = path[t]
