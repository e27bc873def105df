"""log Z of chains with one transition matrix shared by every position, and its gradient, by
the scaled forward-backward algorithm over node scores: no [B, T, L, L] edge potentials.

CRFsuite's first-order model (``ChainWeights(edges=False)``) scores label j at position t after
label i as  S[t, j] + A[i, j]  with one transition matrix A [L, L] (from, to).  A row of B holds
several documents end to end (``crf/buckets.py``); at a document's first position there is no
previous label, so the row's Z is the product of its documents' (``first`` marks them):

    log Z(row) = sum_d logsumexp_y  sum_t S[t, y_t] + sum_{t>0} A[y_{t-1}, y_t]  (d: documents)

The forward algorithm in matrix form (Rabiner 1989), every vector renormalised, with
P = exp(A - max A) [L, L] and e_t = exp(S_t - m_t) (m_t = max_j S[t, j]):

    a~_0 = e_0,   a~_t = (a_{t-1} P) * e_t   (first t:  (sum_i a_{t-1}[i]) * e_t),
    c_t = sum_j a~_t[j],   a_t = a~_t / c_t,
    log Z = sum_t (log c_t + m_t) + (max A) x (positions with a transition),

L^2 work a position where the edge potentials' scans (``marginals.py``) read an L x L matrix per
position from memory.  Backward with the same scale factors: b_{n-1} = 1,
b_{t-1} = P (e_t * b_t) / c_t (first t: the sum of e_t * b_t / c_t in every entry); then

    d log Z / d S[t, j] = a_t[j] b_t[j]                        (the node marginals),
    d log Z / d A[i, j] = sum_{t with a transition} a_{t-1}[i] P[i, j] e_t[j] b_t[j] / c_t.

Positions past a row's length are skipped (their marginals are 0).  A row whose c_t falls
below ``underflow.RESCUE`` (products lost to underflow: huge weights) is scanned again exactly
in log space (``underflow.log_shared_transition``).  ``tests/test_decode_
transition_scan.py`` compares log Z and both gradients with torch-struct's scan of the same
edge potentials (``crf/edges.py``: ``transition_log_potentials``) and with enumeration.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from structperc.decode.underflow import RESCUE, log_shared_transition, with_exact_rows


class SharedTransitionChain(torch.autograd.Function):
    """log Z [B] of ``node`` [B, T, L] (padded), ``transition`` [L, L] (from, to), ``lengths``
    [B] and ``first`` [B, T] bool (a document starts there; position 0 always does), and
    which rows underflowed [B] bool (their log Z is not to be used; their c_t are set to 1 so
    that their gradients stay finite).

    The rows are scanned longest first and time-major, so that the rows still running at
    position t are the first ``running[t]`` ones: every step works on a prefix, no masks.
    """

    @staticmethod
    def forward(ctx, node: Tensor, transition: Tensor, lengths: Tensor, first: Tensor):
        B, T, L = node.shape
        order = torch.argsort(lengths, descending=True, stable=True)  # [B]
        lengths_sorted = lengths[order]
        running = lengths_sorted.view(1, B) > torch.arange(T, device=node.device).view(T, 1)
        running = running.sum(dim=1).tolist()  # [T] rows with a position t
        shift = transition.max()
        P = torch.exp(transition - shift)  # [L, L]
        m = node[order].amax(dim=2).t().contiguous()  # [T, B]
        e = torch.exp(node[order].transpose(0, 1) - m.unsqueeze(2)).contiguous()  # [T, B, L]
        starts = first[order].t().contiguous()  # [T, B]
        alphas = node.new_zeros(T, B, L)
        scales = node.new_ones(T, B)
        log_z = node.new_zeros(B)
        lost = torch.zeros(B, dtype=torch.bool, device=node.device)  # in the scan's order
        for t in range(T):
            n = running[t]
            if n == 0:
                break
            if t == 0:
                a = e[0]
            else:
                previous = alphas[t - 1, :n]  # [n, L]
                step = torch.where(
                    starts[t, :n, None], previous.sum(dim=1, keepdim=True), previous @ P
                )
                a = step * e[t, :n]
            c = a.sum(dim=1)  # [n]
            under = ~(c >= RESCUE)
            if bool(under.any()):
                lost[:n] |= under
                c = torch.where(under, 1.0, c)
            alphas[t, :n] = a / c.unsqueeze(1)
            scales[t, :n] = c
            log_z[:n] += c.log() + m[t, :n]
        moved = torch.clamp(lengths_sorted - 1, min=0) - (starts.sum(dim=0) - 1)  # transitions
        log_z += shift * moved
        ctx.save_for_backward(P, e, alphas, scales, starts, order)
        ctx.running = running
        out = torch.empty_like(log_z)
        out[order] = log_z
        underflow = torch.empty_like(lost)
        underflow[order] = lost
        ctx.mark_non_differentiable(underflow)
        return out, underflow

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: Tensor, _):
        P, e, alphas, scales, starts, order = ctx.saved_tensors
        running = ctx.running
        T, B, L = alphas.shape
        g = grad[order]  # [B] in the scan's order
        beta = alphas.new_ones(B, L)
        grad_node = alphas.new_zeros(T, B, L)
        expected = alphas.new_zeros(L, L)  # sum_t a_{t-1}^T (e_t * b_t / c_t), transitions
        for t in range(T - 1, -1, -1):
            n = running[t]
            if n == 0:
                continue
            grad_node[t, :n] = alphas[t, :n] * beta[:n]
            if t == 0:
                break
            w = e[t, :n] * beta[:n] / scales[t, :n].unsqueeze(1)  # [n, L]
            start = starts[t, :n, None]  # [n, 1]
            carried = torch.where(start, 0.0, w)
            expected += (alphas[t - 1, :n] * g[:n, None]).t() @ carried
            beta[:n] = torch.where(start, w.sum(dim=1, keepdim=True), w @ P.t())
        grad_node *= g.view(1, B, 1)
        out = torch.empty_like(grad_node.transpose(0, 1))
        out[order] = grad_node.transpose(0, 1)
        return out, expected * P, None, None


def shared_transition_log_partition(
    node: Tensor, transition: Tensor, lengths: Tensor, first: Tensor
) -> Tensor:
    """log Z [B] of rows of documents with one transition matrix (module docstring);
    differentiable in ``node`` [B, T, L] and ``transition`` [L, L] (from, to).  Rows whose
    scaled scan underflowed are scanned again in log space (module docstring)."""
    log_z, underflow = SharedTransitionChain.apply(node, transition, lengths, first)
    return with_exact_rows(
        log_z,
        underflow,
        lambda rows: log_shared_transition(node[rows], transition, lengths[rows], first[rows]),
    )
