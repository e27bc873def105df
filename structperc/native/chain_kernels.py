"""numba kernels of a chain with a transition matrix: token scores, Viterbi, one online epoch.

The model is CRFsuite's (``ChainWeights(edges=False)``): a node table W [F, L] and one
transition row E [1, L*L], E[0, i*L + j] the score of label i followed by label j.  A token t
with features f (values v_f, 1 without values) scores s_t(j) = sum_f v_f W[f, j]; a labeling y
scores  s(y) = sum_t s_t(y_t) + sum_{t>=1} E[y_{t-1} L + y_t].

``viterbi`` is ``decode.viterbi._token_recursion`` step for step in the tables' dtype:
alpha_t(j) = max_i alpha_{t-1}(i) + (E[i, j] + s_t(j)), the first maximum on ties, so a
perceptron's integer weights give the same path bit for bit.

``online_epoch`` runs one epoch of one of three rules over the instances of ``order``
(y' the Viterbi labeling, d = Phi(x, y*) - Phi(x, y'), h the tokens labeled wrong):

    PERCEPTRON  (Collins 2002)             if h > 0:  w += d
    PASSIVE_AGGRESSIVE (Crammer et al. 2006, as ``learn.passive_aggressive``)
                loss = s(y') - s(y*) + (sqrt(h) or 1),  tau = PA / PA-I / PA-II step,  w += tau d
    AROW        (Mejer & Crammer 2010, as ``learn.arow``)
                loss = h - (s(y*) - s(y')),  beta = 1 / (sum_k sigma_k d_k^2 + gamma),
                w_k += max(0, loss) beta sigma_k d_k,  sigma_k shrinks ("crfsuite" / "diagonal")

with ``Updater``'s lazy averaging sums (u += seen * scale * d, seen the instances completed
before this one) when averaging.  The entries of d are written in ``model.updates.path_delta``'s
order (node entries of the gold labels, then of the predicted ones, then the transitions);
duplicates are summed in scratch arrays (``acc``, ``mark``, ``touched_list``) where a rule needs
||d||^2 or per-entry values.  ``stats`` returns [tokens, errors, updates, loss sum, seen].
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

PERCEPTRON, PASSIVE_AGGRESSIVE, AROW = 0, 1, 2


@njit(cache=True)
def token_scores(ids, offsets, values, weighted, t0, t1, node, out):  # pragma: no cover - jit
    """out[t - t0, j] = s_t(j) for tokens t0..t1-1 (summed in CSR order, as EmbeddingBag)."""
    L = node.shape[1]
    for t in range(t0, t1):
        r = t - t0
        for j in range(L):
            out[r, j] = 0.0
        for k in range(offsets[t], offsets[t + 1]):
            f = ids[k]
            if weighted:
                v = values[k]
                for j in range(L):
                    out[r, j] += node[f, j] * v
            else:
                for j in range(L):
                    out[r, j] += node[f, j]


@njit(cache=True)
def viterbi(scores, T, trans, alpha, nxt, bp, path):  # pragma: no cover - jit
    """The best labeling path[:T] of token scores scores[:T] [T, L] and trans [L, L]."""
    L = scores.shape[1]
    for j in range(L):
        alpha[j] = scores[0, j]
    for t in range(1, T):
        for j in range(L):
            s = scores[t, j]
            best = alpha[0] + (trans[0, j] + s)
            arg = 0
            for i in range(1, L):
                c = alpha[i] + (trans[i, j] + s)
                if c > best:
                    best = c
                    arg = i
            nxt[j] = best
            bp[t, j] = arg
        for j in range(L):
            alpha[j] = nxt[j]
    y = 0
    best = alpha[0]
    for j in range(1, L):
        if alpha[j] > best:
            best = alpha[j]
            y = j
    path[T - 1] = y
    for t in range(T - 1, 0, -1):
        y = bp[t, y]
        path[t - 1] = y


@njit(cache=True)
def predict_all(doc_offsets, ids, offsets, values, weighted, node, trans, out):  # pragma: no cover
    """Viterbi labels out[N] of every document of a CSR feature matrix."""
    L = node.shape[1]
    longest = 0
    for d in range(len(doc_offsets) - 1):
        longest = max(longest, doc_offsets[d + 1] - doc_offsets[d])
    scores = np.empty((max(longest, 1), L), dtype=node.dtype)
    alpha = np.empty(L, dtype=node.dtype)
    nxt = np.empty(L, dtype=node.dtype)
    bp = np.empty((max(longest, 1), L), dtype=np.int64)
    path = np.empty(max(longest, 1), dtype=np.int64)
    for d in range(len(doc_offsets) - 1):
        t0, t1 = doc_offsets[d], doc_offsets[d + 1]
        if t1 == t0:
            continue
        token_scores(ids, offsets, values, weighted, t0, t1, node, scores)
        viterbi(scores, t1 - t0, trans, alpha, nxt, bp, path)
        for t in range(t1 - t0):
            out[t0 + t] = path[t]


@njit(cache=True)
def _add(table, sums, touched, index, val, scale, seen, average):  # pragma: no cover - jit
    """table[index] += scale * val (and the averaging sum, and the journal mark where there
    is a journal: ``touched`` not empty), in the table's dtype as torch's
    ``index_add_(alpha=scale)`` computes it."""
    cast = table.dtype.type
    v = cast(val)
    table[index] += cast(scale) * v
    if average and seen > 0:
        sums[index] += cast(scale * seen) * v
    if touched.shape[0] > 0:
        touched[index] = 1


@njit(cache=True)
def _path_delta(t0, T, gold, path, model, scale, seen, mode):  # pragma: no cover - jit
    """One pass over d's entries in ``path_delta``'s order.  mode 0: write scale * d into the
    tables (w, u, journal); mode 1: sum d into the scratch accumulators (listing new entries in
    list_*, counts[0:2] their numbers) and return d . w.  model = (csr, weighted, L, tables,
    average, scratch, counts): csr = (ids, offsets, values) of the tokens; tables = (node, edge,
    their averaging sums, their journal marks); scratch = (acc_node, acc_edge, mark_node,
    mark_edge, list_node, list_edge)."""
    csr, weighted, L, tables, average, scratch, counts = model
    ids, offsets, values = csr
    node, edge, sn, se, tn, te = tables
    acc_node, acc_edge, mark_node, mark_edge, list_node, list_edge = scratch
    dot = 0.0
    for side in range(2):
        sign = 1.0 if side == 0 else -1.0  # +d at the gold labels, -d at the predicted
        for t in range(T):
            g, p = gold[t0 + t], path[t]
            if g == p:
                continue
            lab = g if side == 0 else p
            for k in range(offsets[t0 + t], offsets[t0 + t + 1]):
                v = values[k] if weighted else 1.0
                idx = ids[k] * L + lab
                if mode == 0:
                    _add(node, sn, tn, idx, sign * v, scale, seen, average)
                else:
                    dot += node[idx] * (sign * v)
                    if mark_node[idx] == 0:
                        mark_node[idx] = 1
                        list_node[counts[0]] = idx
                        counts[0] += 1
                    acc_node[idx] += sign * v
    for side in range(2):
        sign = 1.0 if side == 0 else -1.0  # +d at the gold labels, -d at the predicted
        for t in range(1, T):
            gp = gold[t0 + t - 1] * L + gold[t0 + t]
            pp = path[t - 1] * L + path[t]
            if gp == pp:
                continue
            idx = gp if side == 0 else pp
            if mode == 0:
                _add(edge, se, te, idx, sign, scale, seen, average)
            else:
                dot += edge[idx] * sign
                if mark_edge[idx] == 0:
                    mark_edge[idx] = 1
                    list_edge[counts[1]] = idx
                    counts[1] += 1
                acc_edge[idx] += sign
    return dot


@njit(cache=True)
def online_epoch(
    order,
    doc_offsets,
    ids,
    offsets,
    values,
    weighted,
    labels,
    node,
    edge,
    sums_node,
    sums_edge,
    average,
    seen0,
    rule,
    C,
    pa_type,
    error_sensitive,
    gamma,
    crfsuite_variance,
    var_node,
    var_edge,
    touched_node,
    touched_edge,
    scores,
    alpha,
    nxt,
    bp,
    path,
    acc_node,
    acc_edge,
    mark_node,
    mark_edge,
    list_node,
    list_edge,
    stats,
):  # pragma: no cover - jit
    """One epoch of ``rule`` over the documents ``order``; the flat tables node [F*L],
    edge [L*L] (and the sums, variances, journal marks) are written in place."""
    L = scores.shape[1]
    trans = edge.reshape((L, L))
    node2 = node.reshape((-1, L))
    counts = np.zeros(2, dtype=np.int64)
    csr = (ids, offsets, values)
    tables = (node, edge, sums_node, sums_edge, touched_node, touched_edge)
    scratch = (acc_node, acc_edge, mark_node, mark_edge, list_node, list_edge)
    model = (csr, weighted, L, tables, average, scratch, counts)
    seen = seen0
    tokens = 0
    errors_total = 0
    updates = 0
    loss_total = 0.0
    for d in order:
        t0, t1 = doc_offsets[d], doc_offsets[d + 1]
        T = t1 - t0
        if T == 0:
            seen += 1
            continue
        token_scores(ids, offsets, values, weighted, t0, t1, node2, scores)
        viterbi(scores, T, trans, alpha, nxt, bp, path)
        errors = 0
        for t in range(T):
            if labels[t0 + t] != path[t]:
                errors += 1
        tokens += T
        if errors == 0:
            seen += 1
            continue
        errors_total += errors
        if rule == PERCEPTRON:
            _path_delta(t0, T, labels, path, model, 1.0, seen, 0)
            updates += 1
            seen += 1
            continue
        counts[0] = 0
        counts[1] = 0
        margin = _path_delta(t0, T, labels, path, model, 1.0, seen, 1)
        if rule == PASSIVE_AGGRESSIVE:
            norm_sq = 0.0
            for n in range(counts[0]):
                norm_sq += acc_node[list_node[n]] ** 2
            for n in range(counts[1]):
                norm_sq += acc_edge[list_edge[n]] ** 2
            loss = -margin + (math.sqrt(errors) if error_sensitive else 1.0)
            tau = 0.0
            if loss > 0 and norm_sq > 0:
                if pa_type == 0:
                    tau = loss / norm_sq
                elif pa_type == 1:
                    tau = min(C, loss / norm_sq)
                else:
                    tau = loss / (norm_sq + 0.5 / C)
            if tau > 0:
                _path_delta(t0, T, labels, path, model, tau, seen, 0)
                updates += 1
        else:  # AROW
            loss = errors - margin
            confidence = gamma
            for n in range(counts[0]):
                k = list_node[n]
                confidence += var_node[k] * acc_node[k] * acc_node[k]
            for n in range(counts[1]):
                k = list_edge[n]
                confidence += var_edge[k] * acc_edge[k] * acc_edge[k]
            beta = 1.0 / confidence
            step = max(0.0, loss) * beta
            for side in range(2):
                acc = acc_node if side == 0 else acc_edge
                var = var_node if side == 0 else var_edge
                table = node if side == 0 else edge
                sums = sums_node if side == 0 else sums_edge
                touched = touched_node if side == 0 else touched_edge
                listed = list_node if side == 0 else list_edge
                cast = table.dtype.type  # AROW's tensor arithmetic: the tables' dtype
                one, g, b = cast(1.0), cast(gamma), cast(beta)
                for n in range(counts[side]):
                    k = listed[n]
                    dk = cast(acc[k])
                    s = var[k]
                    if step > 0:
                        _add(table, sums, touched, k, s * dk, step, seen, average)
                    if crfsuite_variance:
                        var[k] = one / (one / s + dk * dk / g)
                    else:
                        var[k] = s - b * s * s * dk * dk
            if step > 0:
                updates += 1
        loss_total += loss
        for n in range(counts[0]):
            k = list_node[n]
            acc_node[k] = 0.0
            mark_node[k] = 0
        for n in range(counts[1]):
            k = list_edge[n]
            acc_edge[k] = 0.0
            mark_edge[k] = 0
        seen += 1
    stats[0] = tokens
    stats[1] = errors_total
    stats[2] = updates
    stats[3] = loss_total
    stats[4] = seen
