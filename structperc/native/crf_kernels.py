"""numba kernel of the CRF's negative log-likelihood and its gradient, one transition matrix.

The model is CRFsuite's (``ChainWeights(edges=False)``: node table W [F, L], transitions
A [L, L]).  For each document with token scores s_t(j) = sum_f v_f W[f, j] (f the token's
features, v_f their values) and gold labels y*:

    nll = log Z - s(y*),   s(y) = sum_t s_t(y_t) + sum_{t>=1} A[y_{t-1}, y_t]
    d nll / d W[f, j] = sum_{t: f fires} v_f (p(y_t = j) - [y*_t = j])
    d nll / d A[i, j] = sum_{t>=1} (p(y_{t-1} = i, y_t = j) - [y*_{t-1} = i, y*_t = j])

The marginals come from the scaled forward-backward algorithm (Rabiner 1989, section V.A; as
CRFsuite's ``crf1d_context``): with E_t(j) = exp(s_t(j) - m_t), M = exp(A - max A),
alpha_t = (alpha_{t-1} M) * E_t normalised by its sum c_t, beta_t(i) = sum_j M[i, j] E_{t+1}(j)
beta_{t+1}(j) / c_{t+1}, so that p(y_t = j) = alpha_t(j) beta_t(j),
p(y_{t-1} = i, y_t = j) = alpha_{t-1}(i) M[i, j] E_t(j) beta_t(j) / c_t and
log Z = sum_t log c_t + sum_t m_t + (T - 1) max A.  Everything in float64.

**When the scaled products underflow.**  The shifts m_t and max A are taken apart, so a product
alpha_{t-1}(i) M[i, j] E_t(j) is below e^-708 (0 in float64) whenever the labels the forward
vector holds and the labels token t prefers are joined only by transitions some 708 nats below
the largest one: at an L-BFGS trial point with large weights (a transition of 749 beside ones
near 0) every product of a step can underflow and c_t is exactly 0.  A normaliser below
``RESCUE`` (1e-280; a lost product is then below 1e-308 / 1e-280 of the sum, negligible) sends
the document to ``log_forward_backward``: the same quantities in log space,

    la_0 = s_0,  la_t(j) = s_t(j) + logsumexp_i (la_{t-1}(i) + A[i, j]),
    lb_{T-1} = 0,  lb_t(i) = logsumexp_j (A[i, j] + s_{t+1}(j) + lb_{t+1}(j)),
    log Z = logsumexp_j la_{T-1}(j),  p(y_t = j) = exp(la_t(j) + lb_t(j) - log Z),
    p(y_{t-1} = i, y_t = j) = exp(la_{t-1}(i) + A[i, j] + s_t(j) + lb_t(j) - log Z),

exact at any weights (L^2 exponentials a token instead of L: only for such documents).  A
document whose scores are not finite (infinite weights) gives a non-finite log Z, never an
exception: the objective is then +inf or NaN, which the line search treats as a failed trial.

The errors it counts are the tokens whose most probable label (the first maximum of the
marginals) is not the gold one, as ``crf.objective.posterior_errors``.

**Partial annotation and costs** (``targets_nll_gradient``'s ``offset`` and ``allowed``;
``crf/targets.py``).
An offset o [N, L] is added to the token scores before the pass (the costs of softmax-margin,
0 at the gold labels); a document with an open token (gold label -1) has the likelihood of its
compatible labelings, those whose labels lie in ``allowed`` [N, L] (Tsuboi et al. 2008):

    nll = log Z - log Z_allowed,
    d nll / d W[f, j] = sum_{t: f fires} v_f (p(y_t = j) - q(y_t = j)),
    d nll / d A[i, j] = sum_{t>=1} (p(y_{t-1} = i, y_t = j) - q(y_{t-1} = i, y_t = j)),

with q the marginals of a second pass whose disallowed token scores are -inf (E = 0 there: the
same forward-backward, exact).  A document without open tokens keeps the gold counts.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def exp_transitions(trans, scale):  # pragma: no cover - jit
    """(M = exp(A - max A) [L, L] float64, max A) of A = scale * trans."""
    L = trans.shape[0]
    top = -np.inf
    for i in range(L):
        for j in range(L):
            top = max(top, scale * float(trans[i, j]))
    M = np.empty((L, L))
    for i in range(L):
        for j in range(L):
            M[i, j] = math.exp(scale * float(trans[i, j]) - top)
    return M, top


RESCUE = 1e-280  # a forward normaliser below this: the document is redone in log space
NO_OFFSET = np.zeros((0, 1))  # no offset of the token scores (``forward_backward``)
NO_ALLOWED = np.zeros((0, 1), np.uint8)  # no restriction


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
def log_forward_backward(T, trans, scale, scores, E, alpha, beta, la, lb):  # pragma: no cover
    """The log-space forward-backward of one document (module docstring) over the scaled
    token scores scores[:T] (left as they are) and A = scale * trans: log Z; afterwards
    alpha[t, j] = p(y_t = j), beta = 1, E[:T] = the token scores, la / lb the log forward and
    backward tables (``add_log_pair_marginals`` reads them)."""
    L = trans.shape[0]
    work = np.empty(L)
    for j in range(L):
        la[0, j] = scores[0, j]
    for t in range(1, T):
        for j in range(L):
            for i in range(L):
                work[i] = la[t - 1, i] + scale * float(trans[i, j])
            la[t, j] = scores[t, j] + log_sum_exp(work, L)
    for j in range(L):
        lb[T - 1, j] = 0.0
    for t in range(T - 2, -1, -1):
        for i in range(L):
            for j in range(L):
                work[j] = scale * float(trans[i, j]) + scores[t + 1, j] + lb[t + 1, j]
            lb[t, i] = log_sum_exp(work, L)
    for j in range(L):
        work[j] = la[T - 1, j]
    log_z = log_sum_exp(work, L)
    for t in range(T):
        for j in range(L):
            alpha[t, j] = math.exp(la[t, j] + lb[t, j] - log_z)
            beta[t, j] = 1.0
            E[t, j] = scores[t, j]
    return log_z


@njit(cache=True)
def add_log_pair_marginals(
    t, log_z, trans, scale, E, la, lb, out, sign=1.0
):  # pragma: no cover - jit
    """out[i, j] += sign * p(y_{t-1} = i, y_t = j), t >= 1, of a document ``forward_backward``
    did in log space (log_z: its log Z).  The scaled case is written inline where it is
    summed."""
    L = out.shape[0]
    for i in range(L):
        for j in range(L):
            out[i, j] += sign * math.exp(
                la[t - 1, i] + scale * float(trans[i, j]) + E[t, j] + lb[t, j] - log_z
            )


@njit(cache=True)
def buffers(n, L):  # pragma: no cover - jit
    """The per-document work arrays of ``forward_backward`` for documents of up to n tokens:
    scores, E, alpha, beta [n, L], c [n], la, lb [n, L]."""
    return (
        np.empty((n, L)), np.empty((n, L)), np.empty((n, L)), np.empty((n, L)), np.empty(n),
        np.empty((n, L)), np.empty((n, L)),
    )  # fmt: skip


@njit(cache=True)
def forward_backward(
    t0,
    T,
    ids,
    offsets,
    values,
    weighted,
    node,
    trans,
    scale,
    M,
    top,
    scores,
    E,
    alpha,
    beta,
    c,
    la,
    lb,
    offset,
    allowed,
    restricted,
):  # pragma: no cover - jit
    """Token scores (scores[:T], of the weights scale * node, plus ``offset`` [N, L] unless it
    is empty; -inf where ``allowed`` [N, L] is 0 when ``restricted``), E, the normalised alpha
    and beta of tokens t0..t0+T-1 (M, top = ``exp_transitions(trans, scale)``); returns (log Z,
    whether it went to log space).  Afterwards p(y_t = j) = alpha[t, j] beta[t, j] and
    ``add_log_pair_marginals`` gives the transitions' marginals of a document in log space."""
    L = node.shape[1]
    log_z = (T - 1) * top
    for t in range(T):
        for j in range(L):
            scores[t, j] = 0.0
        for k in range(offsets[t0 + t], offsets[t0 + t + 1]):
            f = ids[k]
            v = float(values[k]) if weighted else 1.0
            for j in range(L):
                scores[t, j] += v * float(node[f, j])
        for j in range(L):
            scores[t, j] *= scale
        if offset.shape[0] > 0:
            for j in range(L):
                scores[t, j] += offset[t0 + t, j]
        if restricted:
            for j in range(L):
                if allowed[t0 + t, j] == 0:
                    scores[t, j] = -np.inf
        m = scores[t, 0]
        for j in range(1, L):
            m = max(m, scores[t, j])
        log_z += m
        for j in range(L):
            E[t, j] = math.exp(scores[t, j] - m)
    for t in range(T):  # forward, normalised
        total_t = 0.0
        for j in range(L):
            if t == 0:
                a = E[0, j]
            else:
                a = 0.0
                for i in range(L):
                    a += alpha[t - 1, i] * M[i, j]
                a *= E[t, j]
            alpha[t, j] = a
            total_t += a
        if not total_t >= RESCUE:  # products lost to underflow (or scores not finite)
            return log_forward_backward(T, trans, scale, scores, E, alpha, beta, la, lb), True
        c[t] = total_t
        for j in range(L):
            alpha[t, j] /= total_t
        log_z += math.log(total_t)
    for j in range(L):  # backward, with the forward's normalisers
        beta[T - 1, j] = 1.0
    for t in range(T - 2, -1, -1):
        for i in range(L):
            b = 0.0
            for j in range(L):
                b += M[i, j] * E[t + 1, j] * beta[t + 1, j]
            beta[t, i] = b / c[t + 1]
    return log_z, False


@njit(cache=True)
def marginals_into(scores, t, alpha, beta):  # pragma: no cover - jit
    """scores[t, j] = p(y_t = j) = alpha[t, j] beta[t, j]; the most probable label (the first
    of equals)."""
    best = 0
    best_p = -1.0
    for j in range(scores.shape[1]):
        p = alpha[t, j] * beta[t, j]
        scores[t, j] = p
        if p > best_p:
            best_p = p
            best = j
    return best


@njit(cache=True)
def longest_document(doc_offsets):  # pragma: no cover - jit
    longest = 1
    for d in range(len(doc_offsets) - 1):
        longest = max(longest, doc_offsets[d + 1] - doc_offsets[d])
    return longest


@njit(cache=True)
def add_expectations(
    sign,
    t0,
    T,
    ids,
    offsets,
    values,
    weighted,
    labels,
    trans,
    M,
    scores,
    E,
    alpha,
    beta,
    c,
    la,
    lb,
    log_z,
    in_log,
    grad_node,
    grad_trans,
    count_errors,
):  # pragma: no cover - jit
    """sign * the expected feature counts of a document ``forward_backward`` just scanned, added
    into grad_node [F, L] and grad_trans [L, L]; the known tokens (label >= 0) whose most
    probable label is wrong, when ``count_errors`` (0 otherwise).  Overwrites scores[:T] with
    the node marginals."""
    L = scores.shape[1]
    errors = 0
    for t in range(T):
        best = marginals_into(scores, t, alpha, beta)
        y = labels[t0 + t]
        if count_errors and y >= 0 and best != y:
            errors += 1
        for k in range(offsets[t0 + t], offsets[t0 + t + 1]):
            f = ids[k]
            v = sign * (float(values[k]) if weighted else 1.0)
            for j in range(L):
                grad_node[f, j] += v * scores[t, j]
        if t > 0:
            if in_log:
                add_log_pair_marginals(t, log_z, trans, 1.0, E, la, lb, grad_trans, sign)
            else:
                for i in range(L):
                    a = sign * alpha[t - 1, i] / c[t]
                    for j in range(L):
                        grad_trans[i, j] += a * M[i, j] * E[t, j] * beta[t, j]
    return errors


def nll_gradient(*arrays, total0: float = 0.0):
    """``targets_nll_gradient`` of gold labels (every token known), no offset: ``arrays`` its
    first ten arguments (``doc_offsets`` ... ``grad_trans``)."""
    return targets_nll_gradient(*arrays, total0, NO_OFFSET, NO_ALLOWED)


@njit(cache=True)
def targets_nll_gradient(
    doc_offsets,
    ids,
    offsets,
    values,
    weighted,
    labels,
    node,
    trans,
    grad_node,
    grad_trans,
    total0,
    offset,
    allowed,
):  # pragma: no cover - jit
    """total0 + sum_d nll_d (summed on from total0: the documents may come in several calls)
    and the posterior errors; the gradients are added into grad_node [F, L] and grad_trans
    [L, L] (float64, zeroed by the caller).  ``offset`` [N, L] float64 is added to the token
    scores (empty [0, L]: none); a document with an open token (label -1) takes the likelihood
    of the labelings ``allowed`` [N, L] uint8 allows (the module docstring)."""
    L = node.shape[1]
    scores, E, alpha, beta, c, la, lb = buffers(longest_document(doc_offsets), L)
    M, top = exp_transitions(trans, 1.0)
    total = total0
    errors = 0
    for d in range(len(doc_offsets) - 1):
        t0, t1 = doc_offsets[d], doc_offsets[d + 1]
        T = t1 - t0
        if T == 0:
            continue
        is_open = False
        for t in range(T):
            if labels[t0 + t] < 0:
                is_open = True
        log_z, in_log = forward_backward(
            t0, T, ids, offsets, values, weighted, node, trans, 1.0, M, top, scores, E, alpha,
            beta, c, la, lb, offset, allowed, False,
        )  # fmt: skip
        if not is_open:
            gold = 0.0
            for t in range(T):
                gold += scores[t, labels[t0 + t]]
                if t > 0:
                    gold += float(trans[labels[t0 + t - 1], labels[t0 + t]])
            total += log_z - gold
        errors += add_expectations(
            1.0, t0, T, ids, offsets, values, weighted, labels, trans, M, scores, E, alpha,
            beta, c, la, lb, log_z, in_log, grad_node, grad_trans, True,
        )  # fmt: skip
        if not is_open:  # minus the gold counts
            for t in range(T):
                y = labels[t0 + t]
                for k in range(offsets[t0 + t], offsets[t0 + t + 1]):
                    grad_node[ids[k], y] -= float(values[k]) if weighted else 1.0
                if t > 0:
                    grad_trans[labels[t0 + t - 1], y] -= 1.0
            continue
        log_zc, in_log_c = forward_backward(
            t0, T, ids, offsets, values, weighted, node, trans, 1.0, M, top, scores, E, alpha,
            beta, c, la, lb, offset, allowed, True,
        )  # fmt: skip
        total += log_z - log_zc
        add_expectations(
            -1.0, t0, T, ids, offsets, values, weighted, labels, trans, M, scores, E, alpha,
            beta, c, la, lb, log_zc, in_log_c, grad_node, grad_trans, False,
        )  # fmt: skip
    return total, errors


@njit(cache=True)
def node_marginals(
    doc_offsets, ids, offsets, values, weighted, node, trans, out
):  # pragma: no cover
    """p(y_t = j | x) into out [N, L] (float64) for every token of every document."""
    L = node.shape[1]
    scores, E, alpha, beta, c, la, lb = buffers(longest_document(doc_offsets), L)
    M, top = exp_transitions(trans, 1.0)
    for d in range(len(doc_offsets) - 1):
        t0, t1 = doc_offsets[d], doc_offsets[d + 1]
        if t1 == t0:
            continue
        forward_backward(
            t0, t1 - t0, ids, offsets, values, weighted, node, trans, 1.0, M, top, scores, E,
            alpha, beta, c, la, lb, NO_OFFSET, NO_ALLOWED, False,
        )  # fmt: skip
        for t in range(t1 - t0):
            for j in range(L):
                out[t0 + t, j] = alpha[t, j] * beta[t, j]


@njit(cache=True)
def sgd_epoch(
    order,
    bucket_offsets,
    bucket_docs,
    doc_offsets,
    ids,
    offsets,
    values,
    weighted,
    labels,
    node,
    trans,
    state,
    lr0,
    lam,
    acc_node,
    mark_node,
    list_node,
    acc_trans,
    total0=0.0,
):  # pragma: no cover - jit
    """One epoch of ``crf.optimization.SGDTraining``: per mini-batch b of ``order`` (its
    documents bucket_docs[bucket_offsets[b]:bucket_offsets[b + 1]]) the gradient g of
    sum_d nll_d at w = scale * v, then ``ScaledSGD.step``: eta = lr0 / (1 + lr0 lam seen),
    scale *= 1 - eta lam |b|, v -= eta g / scale (folded into v when scale < 1e-4).
    node [F, L] and trans [L, L] hold v; state [2] = (scale, seen), updated.  Returns
    (total0 + sum nll, posterior errors, 0), or (0, 0, 1) when a step's decay is not
    positive."""
    L = node.shape[1]
    scores, E, alpha, beta, c, la, lb = buffers(longest_document(doc_offsets), L)
    node_flat = node.reshape(-1)
    trans_flat = trans.reshape(-1)
    acc_pairs = acc_trans.reshape((L, L))
    total = total0
    errors = 0
    for b in order:
        scale = state[0]
        M, top = exp_transitions(trans, scale)
        listed = 0
        for k in range(L * L):
            acc_trans[k] = 0.0
        first, last = bucket_offsets[b], bucket_offsets[b + 1]
        for q in range(first, last):
            d = bucket_docs[q]
            t0, t1 = doc_offsets[d], doc_offsets[d + 1]
            T = t1 - t0
            if T == 0:
                continue
            log_z, in_log = forward_backward(
                t0, T, ids, offsets, values, weighted, node, trans, scale, M, top, scores, E,
                alpha, beta, c, la, lb, NO_OFFSET, NO_ALLOWED, False,
            )  # fmt: skip
            gold = 0.0
            for t in range(T):
                gold += scores[t, labels[t0 + t]]
                if t > 0:
                    gold += scale * float(trans[labels[t0 + t - 1], labels[t0 + t]])
            total += log_z - gold
            for t in range(T):
                y = labels[t0 + t]
                if marginals_into(scores, t, alpha, beta) != y:
                    errors += 1
                for k in range(offsets[t0 + t], offsets[t0 + t + 1]):
                    row = ids[k] * L
                    v = float(values[k]) if weighted else 1.0
                    if mark_node[row] == 0:
                        mark_node[row] = 1
                        list_node[listed] = row
                        listed += 1
                    for j in range(L):
                        acc_node[row + j] += v * scores[t, j]
                    acc_node[row + y] -= v
                if t > 0:
                    if in_log:
                        add_log_pair_marginals(t, log_z, trans, scale, E, la, lb, acc_pairs)
                    else:
                        for i in range(L):
                            a = alpha[t - 1, i] / c[t]
                            for j in range(L):
                                acc_trans[i * L + j] += a * M[i, j] * E[t, j] * beta[t, j]
                    acc_trans[labels[t0 + t - 1] * L + y] -= 1.0
        docs = last - first
        eta = lr0 / (1.0 + lr0 * lam * state[1])
        decay = 1.0 - eta * lam * docs
        if decay <= 0:
            return 0.0, 0, 1
        scale *= decay
        coef = -eta / scale
        for q in range(listed):
            row = list_node[q]
            for j in range(L):
                node_flat[row + j] += coef * acc_node[row + j]
                acc_node[row + j] = 0.0
            mark_node[row] = 0
        for k in range(L * L):
            trans_flat[k] += coef * acc_trans[k]
        state[1] += docs
        if scale < 1e-4:
            for k in range(len(node_flat)):
                node_flat[k] *= scale
            for k in range(L * L):
                trans_flat[k] *= scale
            scale = 1.0
        state[0] = scale
    return total, errors, 0
