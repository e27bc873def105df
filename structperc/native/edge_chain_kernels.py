"""numba kernels of a chain with edge features: token scores, Viterbi, a perceptron's epoch.

The model is Kazama & Torisawa's Table 1 (``ChainWeights(edges=True)``): every feature f has a
row of the joint table J [F, L + L*L], node weights J[f, j] and edge weights J[f, L + i*L + j]
(label i followed by label j).  A token t with features f (values v_f, 1 without values) has
node scores s_t(j) = sum_f v_f J[f, j] and edge scores a_t(i, j) = sum_f v_f J[f, L + i*L + j]
(one pass over its features summing whole rows, as ``EmbeddingBag`` does), and a labeling y of
a document scores

    s(y) = s_0(y_0) + sum_{t>=1} (a_t(y_{t-1}, y_t) + s_t(y_t)).

``edge_viterbi`` is ``decode.viterbi._token_recursion`` step for step in the table's dtype:
alpha_t(j) = max_i alpha_{t-1}(i) + (a_t(i, j) + s_t(j)), the first maximum on ties, so a
perceptron's integer weights give its path bit for bit.

The token scores and the back-trace repeat ``chain_kernels``' on purpose: numba caches a
compiled function by its own file, so a kernel module that called another's would keep a stale
copy of it (``tests/test_architecture.py``).

``edge_perceptron_epoch`` runs one epoch of Collins' perceptron over the documents of ``order``
(y' the Viterbi labeling, h the tokens labeled wrong): if h > 0, w += Phi(x, y*) - Phi(x, y'),
with ``Updater``'s lazy averaging sums (u += seen * d, seen the documents completed before this
one) when averaging.  The entries of d are ``model.updates.path_delta``'s: at a token whose
label differs, +v at (f, y*_t) and -v at (f, y'_t); at a token after its document's first whose
label pair differs, +v at (f, y*_{t-1} y*_t) and -v at the predicted pair, except for the
features of ``node_only`` rows.  The averaging sums are ``Updater.sums``' contiguous node [F*L]
and edge [F*L*L] tables; ``touched_*`` mark the entries written, for parameter mixing (empty:
no journal).  ``stats`` returns [tokens, errors, updates, 0, seen].
"""

from __future__ import annotations

from numba import njit


@njit(cache=True)
def edge_token_scores(ids, offsets, values, weighted, t0, t1, joint, out):  # pragma: no cover
    """out[t - t0, :] = the node | edge scores of tokens t0..t1-1 (rows summed in CSR order)."""
    W = joint.shape[1]
    for t in range(t0, t1):
        r = t - t0
        for j in range(W):
            out[r, j] = 0.0
        for k in range(offsets[t], offsets[t + 1]):
            f = ids[k]
            if weighted:
                v = values[k]
                for j in range(W):
                    out[r, j] += joint[f, j] * v
            else:
                for j in range(W):
                    out[r, j] += joint[f, j]


@njit(cache=True)
def edge_viterbi(scores, T, L, alpha, nxt, bp, path):  # pragma: no cover - jit
    """The best labeling path[:T] of node | edge scores scores[:T] [T, L + L*L]."""
    for j in range(L):
        alpha[j] = scores[0, j]
    for t in range(1, T):
        for j in range(L):
            s = scores[t, j]
            best = alpha[0] + (scores[t, L + j] + s)
            arg = 0
            for i in range(1, L):
                c = alpha[i] + (scores[t, L + i * L + j] + s)
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
def _write(joint, row, col, sums, at, touched, val, seen, average):  # pragma: no cover - jit
    """joint[row, col] += val (and the averaging sum and journal mark at flat index ``at``), in
    the table's dtype as ``Updater.apply``'s ``index_add_`` computes it."""
    cast = joint.dtype.type
    v = cast(val)
    joint[row, col] += v
    if average and seen > 0:
        sums[at] += cast(seen) * v
    if touched.shape[0] > 0:
        touched[at] = 1


@njit(cache=True)
def _edge_delta(t0, T, gold, path, ids, offsets, values, weighted, L, joint, tables, seen, avg):
    """w += Phi(x, y*) - Phi(x, y') for the document at tokens t0..t0+T-1 (module docstring),
    in ``path_delta``'s order: node entries of the gold labels, of the predicted ones, then the
    edge entries likewise."""  # pragma: no cover - jit
    sums_node, sums_edge, touched_node, touched_edge, node_only = tables
    LL = L * L
    for side in range(2):
        sign = 1.0 if side == 0 else -1.0
        for t in range(T):
            g, p = gold[t0 + t], path[t]
            if g == p:
                continue
            lab = g if side == 0 else p
            for k in range(offsets[t0 + t], offsets[t0 + t + 1]):
                f = ids[k]
                v = values[k] if weighted else 1.0
                _write(joint, f, lab, sums_node, f * L + lab, touched_node, sign * v, seen, avg)
    for side in range(2):
        sign = 1.0 if side == 0 else -1.0
        for t in range(1, T):
            gp = gold[t0 + t - 1] * L + gold[t0 + t]
            pp = path[t - 1] * L + path[t]
            if gp == pp:
                continue
            pair = gp if side == 0 else pp
            for k in range(offsets[t0 + t], offsets[t0 + t + 1]):
                f = ids[k]
                if node_only.shape[0] > 0 and node_only[f]:
                    continue
                v = values[k] if weighted else 1.0
                at = f * LL + pair
                _write(joint, f, L + pair, sums_edge, at, touched_edge, sign * v, seen, avg)


@njit(cache=True, nogil=True)  # (the next chunk is read meanwhile: features/read_ahead.py)
def edge_perceptron_epoch(
    order,
    doc_offsets,
    ids,
    offsets,
    values,
    weighted,
    labels,
    joint,
    sums_node,
    sums_edge,
    average,
    seen0,
    touched_node,
    touched_edge,
    node_only,
    scores,
    alpha,
    nxt,
    bp,
    path,
    stats,
):  # pragma: no cover - jit
    """One perceptron epoch over the documents ``order``; ``joint`` [F, L + L*L] (and the sums,
    journal marks) written in place."""
    L = alpha.shape[0]
    tables = (sums_node, sums_edge, touched_node, touched_edge, node_only)
    seen = seen0
    tokens = 0
    errors_total = 0
    updates = 0
    for d in order:
        t0, t1 = doc_offsets[d], doc_offsets[d + 1]
        T = t1 - t0
        if T == 0:
            seen += 1
            continue
        edge_token_scores(ids, offsets, values, weighted, t0, t1, joint, scores)
        edge_viterbi(scores, T, L, alpha, nxt, bp, path)
        errors = 0
        for t in range(T):
            if labels[t0 + t] != path[t]:
                errors += 1
        tokens += T
        if errors > 0:
            errors_total += errors
            _edge_delta(
                t0, T, labels, path, ids, offsets, values, weighted, L, joint, tables, seen,
                average,
            )  # fmt: skip
            updates += 1
        seen += 1
    stats[0] = tokens
    stats[1] = errors_total
    stats[2] = updates
    stats[3] = 0.0
    stats[4] = seen
