"""The n best labelings of a chain, compiled: a best-first search over sidetracks.

The algorithm of ``decode/sidetracks.py`` (Eppstein 1998; Lawler's scheme), whose docstring has
the derivation: with the forward Viterbi scores alpha and back-pointers bp, a path is the best
path y^1 plus a set of *sidetracks*, each of cost

    d_u(i, j) = alpha_{u-1}[i] + M_u[i, j] - alpha_u[j] <= 0      (i -> j at u, i != bp_u[j])
    d_T(j)    = alpha_{T-1}[j] - max alpha_{T-1}                    (last label j)

and s(y) = s(y^1) + the sum of its sidetracks' costs.  Every path but y^1 has a parent (its
leftmost sidetrack removed), so the paths form a heap-ordered tree; the children of a path with
leftmost sidetrack at s are its sidetracks at the rows u < s.  Where the path agrees with y^1
(rows 1..q), those costs are the root's; only the rows q+1..s-1 it walked on its own need
costs of their own.

The search here expands children lazily: a path's children form two lists sorted by cost, the
root's costs restricted to rows <= q (one sorted list of the root's, read past the rows > q)
and its own rows' costs; a heap holds, per list, only its next child, and popping a child
pushes the child after it and the first of each of the new path's lists.  So a pop costs two
heap operations and a short walk, whatever n: the n best of a sequence cost O(T L^2) for alpha,
a sort of the root's T L costs and O(n (T + log n)) for the search.  The scores are exact (in
float64); among equal scores the order is this search's, which may differ from the torch
search's (both are exact n-best lists).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def forward(pot, T, alpha, bp):  # pragma: no cover - jit
    """alpha [T, L] and back-pointers bp [T, L] of potentials pot[:T] (first maximum)."""
    L = pot.shape[1]
    for j in range(L):
        alpha[0, j] = pot[0, 0, j]
    for t in range(1, T):
        for j in range(L):
            best = alpha[t - 1, 0] + pot[t, 0, j]
            arg = 0
            for i in range(1, L):
                c = alpha[t - 1, i] + pot[t, i, j]
                if c > best:
                    best = c
                    arg = i
            alpha[t, j] = best
            bp[t, j] = arg


@njit(cache=True, nogil=True)
def _before(score, key, a, b):  # pragma: no cover - jit
    """Whether heap entry a comes out before b: the higher score, then the earlier push."""
    return score[a] > score[b] or (score[a] == score[b] and key[a, 0] < key[b, 0])


@njit(cache=True, nogil=True)
def _swap(score, key, a, b):  # pragma: no cover - jit
    score[a], score[b] = score[b], score[a]
    for f in range(4):
        key[a, f], key[b, f] = key[b, f], key[a, f]


@njit(cache=True, nogil=True)
def _heap_push(score, key, size, value, order, path, kind, pos):  # pragma: no cover - jit
    """Push (value; push order, path, list, position) on the max-heap; the new size."""
    i = size
    score[i] = value
    key[i, 0], key[i, 1], key[i, 2], key[i, 3] = order, path, kind, pos
    while i > 0:
        p = (i - 1) >> 1
        if not _before(score, key, i, p):
            break
        _swap(score, key, i, p)
        i = p
    return size + 1


@njit(cache=True, nogil=True)
def _heap_pop(score, key, size):  # pragma: no cover - jit
    """Remove the top of the heap (read it first) and restore the heap; the new size."""
    size -= 1
    _swap(score, key, 0, size)
    i = 0
    while True:
        top, a, b = i, 2 * i + 1, 2 * i + 2
        if a < size and _before(score, key, a, top):
            top = a
        if b < size and _before(score, key, b, top):
            top = b
        if top == i:
            return size
        _swap(score, key, i, top)
        i = top


@njit(cache=True, nogil=True)
def _next_head(order, root_row, start, q):  # pragma: no cover - jit
    """The first index >= start of the sorted root list whose row is <= q, or -1."""
    for p in range(start, len(order)):
        if root_row[order[p]] <= q:
            return p
    return -1


@njit(cache=True, nogil=True)
def nbest_paths(pot, T, n, paths, scores):  # pragma: no cover - jit
    """The n best labelings paths[:k, :T] of potentials pot[:T] [T, L, L] and their scores
    scores[:k] (float64), best first; returns k, fewer than n where fewer paths have a finite
    score (none when none has)."""
    L = pot.shape[1]
    alpha = np.empty((T, L))
    bp = np.zeros((T, L), dtype=np.int64)
    forward(pot, T, alpha, bp)
    last = 0
    for j in range(1, L):
        if alpha[T - 1, j] > alpha[T - 1, last]:
            last = j
    top = alpha[T - 1, last]
    if top == -np.inf:
        return 0
    y = last
    for t in range(T - 1, -1, -1):
        paths[0, t] = y
        y = bp[t, y]
    scores[0] = top
    if n == 1:
        return 1
    # the root's sidetracks: rows 1..T-1 (flat (u - 1) * L + i), then the last label (row T)
    R = T * L
    root_cost = np.full(R, -np.inf)
    root_row = np.empty(R, dtype=np.int64)
    for u in range(1, T):
        j = paths[0, u]
        for i in range(L):
            f = (u - 1) * L + i
            root_row[f] = u
            if i != bp[u, j]:
                root_cost[f] = alpha[u - 1, i] + pot[u, i, j] - alpha[u, j]
    for j in range(L):
        f = (T - 1) * L + j
        root_row[f] = T
        if j != last:
            root_cost[f] = alpha[T - 1, j] - top
    order = np.argsort(-root_cost, kind="mergesort")
    finite = 0
    while finite < R and root_cost[order[finite]] > -np.inf:
        finite += 1
    order = order[:finite]
    # per path: the row of its sidetrack, its agreement with y^1 (rows 0..q), its own list
    side_row = np.zeros(n, dtype=np.int64)
    agree = np.zeros(n, dtype=np.int64)
    own_lo = np.zeros(n, dtype=np.int64)
    own_hi = np.zeros(n, dtype=np.int64)
    own_cost = np.empty(16)
    own_row = np.empty(16, dtype=np.int64)
    own_lab = np.empty(16, dtype=np.int64)
    own_size = 0
    heap_score = np.empty(3 * n + 3)
    heap_key = np.empty((3 * n + 3, 4), dtype=np.int64)  # (push order, path, list, position)
    size = 0
    pushed = 0
    agree[0] = T  # the root: every row holds a sidetrack
    p0 = _next_head(order, root_row, 0, T)
    if p0 >= 0:
        size = _heap_push(heap_score, heap_key, size, top + root_cost[order[p0]], pushed, 0, 0, p0)
        pushed += 1
    found = 1
    walked = np.empty(T, dtype=np.int64)
    while found < n and size > 0:
        score = heap_score[0]
        parent, kind, pos = heap_key[0, 1], heap_key[0, 2], heap_key[0, 3]
        size = _heap_pop(heap_score, heap_key, size)
        if kind == 0:
            f = order[pos]
            u, i = root_row[f], f - (root_row[f] - 1) * L
            nxt = _next_head(order, root_row, pos + 1, agree[parent])
            if nxt >= 0:
                c = scores[parent] + root_cost[order[nxt]]
                size = _heap_push(heap_score, heap_key, size, c, pushed, parent, 0, nxt)
                pushed += 1
        else:
            u, i = own_row[pos], own_lab[pos]
            if pos + 1 < own_hi[parent]:
                c = scores[parent] + own_cost[pos + 1]
                size = _heap_push(heap_score, heap_key, size, c, pushed, parent, 1, pos + 1)
                pushed += 1
        # the child: y^1's prefix, the walk back from (u - 1, i) to y^1, the parent's suffix
        k = found
        w, lab, q = 0, i, u - 1
        while q >= 0 and lab != paths[0, q]:
            walked[w] = lab
            w += 1
            lab = bp[q, lab]
            q -= 1
        for t in range(q + 1):
            paths[k, t] = paths[0, t]
        for m in range(w):
            paths[k, q + 1 + m] = walked[w - 1 - m]
        for t in range(u, T):
            paths[k, t] = paths[parent, t]
        scores[k] = score
        side_row[k], agree[k] = u, max(q, 0)
        found += 1
        if found == n:
            break
        # its own rows q+1..u-1, sorted
        rows_own = max(u - 1 - max(q, 0), 0)
        need = own_size + rows_own * L
        if need > len(own_cost):
            grow = max(need, 2 * len(own_cost))
            own_cost = np.concatenate((own_cost[:own_size], np.empty(grow - own_size)))
            own_row = np.concatenate((own_row[:own_size], np.empty(grow - own_size, np.int64)))
            own_lab = np.concatenate((own_lab[:own_size], np.empty(grow - own_size, np.int64)))
        lo = own_size
        for r in range(max(q, 0) + 1, u):
            j = paths[k, r]
            for a in range(L):
                if a != bp[r, j]:
                    c = alpha[r - 1, a] + pot[r, a, j] - alpha[r, j]
                    if c > -np.inf:
                        own_cost[own_size] = c
                        own_row[own_size] = r
                        own_lab[own_size] = a
                        own_size += 1
        if own_size > lo:
            by = np.argsort(-own_cost[lo:own_size], kind="mergesort") + lo
            own_cost[lo:own_size] = own_cost[by]
            own_row[lo:own_size] = own_row[by]
            own_lab[lo:own_size] = own_lab[by]
            size = _heap_push(heap_score, heap_key, size, score + own_cost[lo], pushed, k, 1, lo)
            pushed += 1
        own_lo[k], own_hi[k] = lo, own_size
        h = _next_head(order, root_row, 0, agree[k])
        if h >= 0:
            c = score + root_cost[order[h]]
            size = _heap_push(heap_score, heap_key, size, c, pushed, k, 0, h)
            pushed += 1
    return found
