"""numba kernel of the CRF's negative log-likelihood and gradient with edge features, over the
weights a support keeps (Kazama & Torisawa 2007, Table 1: every feature x has a node weight
per label and an edge weight per label pair, x x y_0 and x x y_-1 x y_0).

The parameters are the entries of the joint table [F, L + L*L] (``ChainWeights(edges=True)``:
node columns 0..L-1, edge column L + i*L + j for the pair (i, j)) that a support keeps
(``crf.sparse.Support``: with ``support=observed`` the (feature, label) pairs and (feature,
previous label, label) triples seen in training, CRFsuite's choice; ``all``: every entry), in
the table's row-major order, which is ``Support.gather``'s.  ``row_ptr`` [F + 1] says where
each feature's parameters start and ``n_node`` [F] how many of them are node entries (they
come first); ``cols`` [P] is each parameter's column.  A token's scores are then

    s_t(j)     = sum_{f at t} v_f sum_{p: node entry (f, j)}  w_p
    e_t(i, j)  = sum_{f at t} v_f sum_{p: edge entry (f, i, j)} w_p     (t >= 1)
    phi_t(i, j) = e_t(i, j) + s_t(j),   phi_0 = s_0 (no previous label at a document's start)

and the forward-backward runs with a transition matrix of its own at every token (Rabiner
1989, section V.A): G_t = exp(phi_t - m_t) with m_t = max phi_t, alpha_t = alpha_{t-1} G_t
normalised by c_t, beta_{t-1} = G_t beta_t / c_t; then p(y_t = j) = alpha_t(j) beta_t(j),
p(y_{t-1} = i, y_t = j) = alpha_{t-1}(i) G_t[i, j] beta_t(j) / c_t, log Z = sum (m_t + log c_t),
and the gradient of sum_d nll_d is each parameter's expected count minus its gold count.  As
in ``crf_kernels``, a normaliser below ``RESCUE`` sends the document to the log-space
recursion (exact at any weights).  One pass over each token's features builds its scores and
one adds its gradient: the work per token is the number of kept entries its features have, not
F x (L + L*L).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from structperc.decode.underflow import RESCUE


# numba caches a compiled function by its own file: a kernel module calls none of another's
# (tests/test_architecture.py), so these small helpers are this module's own.
@njit(cache=True)
def log_sum_exp(x, n):  # pragma: no cover - jit
    """log sum_k exp(x[k]) over the first n entries (-inf when all are -inf)."""
    top = -np.inf
    for k in range(n):
        top = max(top, x[k])
    if not top > -np.inf:
        return top
    total = 0.0
    for k in range(n):
        total += math.exp(x[k] - top)
    return top + math.log(total)


@njit(cache=True)
def longest_document(doc_offsets):  # pragma: no cover - jit
    longest = 1
    for d in range(len(doc_offsets) - 1):
        longest = max(longest, doc_offsets[d + 1] - doc_offsets[d])
    return longest


@njit(cache=True)
def entries(f, row_ptr, n_node):  # pragma: no cover - jit
    """Where feature f's kept parameters lie (module docstring): its node entries first:split,
    then its edge entries split:last."""
    first = row_ptr[f]
    return first, first + n_node[f], row_ptr[f + 1]


@njit(cache=True)
def document_scores(
    t0, T, ids, offsets, values, weighted, row_ptr, n_node, cols, params, S, phi, labels
):  # pragma: no cover - jit
    """S[:T] [T, L] and phi[:T] [T, L * L] (flat (from, to): no division in the loops) of one
    document (module docstring); returns the gold labeling's score."""
    L = S.shape[1]
    gold = 0.0
    for t in range(T):
        for j in range(L):
            S[t, j] = 0.0
        if t > 0:
            for ij in range(L * L):
                phi[t, ij] = 0.0
        for k in range(offsets[t0 + t], offsets[t0 + t + 1]):
            f = ids[k]
            v = float(values[k]) if weighted else 1.0
            first, split, last = entries(f, row_ptr, n_node)
            for p in range(first, split):
                S[t, cols[p]] += v * params[p]
            if t > 0:
                for p in range(split, last):
                    phi[t, cols[p] - L] += v * params[p]
        y = labels[t0 + t]
        if t > 0:
            gold += phi[t, labels[t0 + t - 1] * L + y]
            for i in range(L):
                for j in range(L):
                    phi[t, i * L + j] += S[t, j]
        gold += S[t, y]
    return gold


@njit(cache=True)
def scaled_forward_backward(T, S, phi, G, alpha, beta, c):  # pragma: no cover - jit
    """log Z of one document by the scaled recursion (module docstring), or NaN when a
    normaliser fell below RESCUE (then ``log_forward_backward``); G, alpha, beta, c filled."""
    L = S.shape[1]
    m = S[0, 0]
    for j in range(1, L):
        m = max(m, S[0, j])
    total = 0.0
    for j in range(L):
        alpha[0, j] = math.exp(S[0, j] - m)
        total += alpha[0, j]
    if not total >= RESCUE:
        return np.nan
    c[0] = total
    for j in range(L):
        alpha[0, j] /= total
    log_z = m + math.log(total)
    for t in range(1, T):
        m = phi[t, 0]
        for i in range(L):
            for j in range(L):
                m = max(m, phi[t, i * L + j])
        for i in range(L):
            for j in range(L):
                G[t, i * L + j] = math.exp(phi[t, i * L + j] - m)
        total = 0.0
        for j in range(L):
            a = 0.0
            for i in range(L):
                a += alpha[t - 1, i] * G[t, i * L + j]
            alpha[t, j] = a
            total += a
        if not total >= RESCUE:
            return np.nan
        c[t] = total
        for j in range(L):
            alpha[t, j] /= total
        log_z += m + math.log(total)
    for j in range(L):
        beta[T - 1, j] = 1.0
    for t in range(T - 1, 0, -1):
        for i in range(L):
            b = 0.0
            for j in range(L):
                b += G[t, i * L + j] * beta[t, j]
            beta[t - 1, i] = b / c[t]
    return log_z


@njit(cache=True)
def log_forward_backward(T, S, phi, G, alpha, beta, la, lb):  # pragma: no cover - jit
    """log Z of one document in log space; afterwards alpha[t, j] = p(y_t = j), beta = 1 and
    G[t, i * L + j] = p(y_{t-1} = i, y_t = j) (t >= 1): what ``accumulate`` reads with c = 1."""
    L = S.shape[1]
    work = np.empty(L)
    for j in range(L):
        la[0, j] = S[0, j]
    for t in range(1, T):
        for j in range(L):
            for i in range(L):
                work[i] = la[t - 1, i] + phi[t, i * L + j]
            la[t, j] = log_sum_exp(work, L)
    for j in range(L):
        lb[T - 1, j] = 0.0
    for t in range(T - 1, 0, -1):
        for i in range(L):
            for j in range(L):
                work[j] = phi[t, i * L + j] + lb[t, j]
            lb[t - 1, i] = log_sum_exp(work, L)
    for j in range(L):
        work[j] = la[T - 1, j]
    log_z = log_sum_exp(work, L)
    for t in range(T):
        for j in range(L):
            alpha[t, j] = math.exp(la[t, j] + lb[t, j] - log_z)
            beta[t, j] = 1.0
        if t > 0:
            for i in range(L):
                for j in range(L):
                    G[t, i * L + j] = math.exp(la[t - 1, i] + phi[t, i * L + j] + lb[t, j] - log_z)
    return log_z


@njit(cache=True)
def edge_nll_gradient(
    doc_offsets,
    ids,
    offsets,
    values,
    weighted,
    labels,
    L,
    row_ptr,
    n_node,
    cols,
    params,
    grad,
    total0,
):  # pragma: no cover - jit
    """(total0 + sum_d nll_d, posterior errors) over L labels; the gradient of sum_d nll_d
    with respect to ``params`` [P] is added into ``grad`` [P] (float64, zeroed by the
    caller)."""
    n = longest_document(doc_offsets)
    S, alpha, beta = np.empty((n, L)), np.empty((n, L)), np.empty((n, L))
    la, lb, c = np.empty((n, L)), np.empty((n, L)), np.empty(n)
    phi, G = np.empty((n, L * L)), np.empty((n, L * L))
    total = total0
    errors = 0
    for d in range(len(doc_offsets) - 1):
        t0 = doc_offsets[d]
        T = doc_offsets[d + 1] - t0
        if T == 0:
            continue
        gold = document_scores(
            t0, T, ids, offsets, values, weighted, row_ptr, n_node, cols, params, S, phi, labels
        )
        log_z = scaled_forward_backward(T, S, phi, G, alpha, beta, c)
        in_log = not log_z == log_z  # NaN: a normaliser underflowed
        if in_log:
            log_z = log_forward_backward(T, S, phi, G, alpha, beta, la, lb)
            for t in range(T):
                c[t] = 1.0
        total += log_z - gold
        for t in range(T):
            y = labels[t0 + t]
            best, best_p = 0, -1.0
            for j in range(L):  # node marginals into S (its scores are no longer needed)
                p = alpha[t, j] * beta[t, j]
                S[t, j] = p
                if p > best_p:
                    best_p, best = p, j
            if best != y:
                errors += 1
            if t > 0:  # pair marginals into G (in log space they are there already)
                if not in_log:
                    for i in range(L):
                        a = alpha[t - 1, i] / c[t]
                        for j in range(L):
                            G[t, i * L + j] = a * G[t, i * L + j] * beta[t, j]
                G[t, labels[t0 + t - 1] * L + y] -= 1.0
            S[t, y] -= 1.0
            for k in range(offsets[t0 + t], offsets[t0 + t + 1]):
                f = ids[k]
                v = float(values[k]) if weighted else 1.0
                first, split, last = entries(f, row_ptr, n_node)
                for p in range(first, split):
                    grad[p] += v * S[t, cols[p]]
                if t > 0:
                    for p in range(split, last):
                        grad[p] += v * G[t, cols[p] - L]
    return total, errors
