"""Chains whose scaled scan underflowed, scanned again exactly in log space.

The fast scans of log Z (``sequential_scan``, ``transition_scan``, ``scaled_scan`` and the
compiled ``native/crf_kernels``) multiply exponentials shifted by maxima taken apart from one
another (the maximum of an edge matrix, of a row, of a column, of the token scores): a product
alpha_{t-1}(i) P[i, j] e_t(j) is exactly 0 in float64 once it is e^-708 below those maxima, and
when every product of a step is (the labels the forward vector holds reach the labels the token
prefers only through edges some 708 nats below the largest: an L-BFGS trial point with large
weights), the normaliser c_t is 0 and log Z is lost.  Clamping c_t keeps the numbers finite
but wrong (a chain with potentials of magnitude 2,000 gave log Z off by hundreds of nats).

Each fast scan therefore reports the chains whose normaliser (or, in the tree scan, a product
entry that is not a structural zero) fell below ``RESCUE``: a product lost there is below
1e-308 / 1e-280 of the sum, negligible; and ``with_exact_rows`` replaces those chains' log Z by
an exact log-space scan (torch-struct's ``LinearChain(LogSemiring)``, logsumexp over every
product; ``log_shared_transition`` for chains of node scores and one transition matrix),
differentiable by autograd.  At ordinary weights no chain is reported and nothing is added.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch_struct import LinearChain, LogSemiring

RESCUE = 1e-280  # a normaliser below this: some products may have underflowed


def with_exact_rows(logz: Tensor, underflow: Tensor, exact) -> Tensor:
    """``logz`` [B] with the rows where ``underflow`` [B] bool holds replaced by
    ``exact(rows)`` (log Z [R] of those rows, ``rows`` [R] long), differentiable in both."""
    if not bool(underflow.any()):
        return logz
    rows = underflow.nonzero().squeeze(1)  # [R]
    return logz.index_put((rows,), exact(rows))


def log_scan_rows(edges: Tensor, lengths: Tensor, rows: Tensor) -> Tensor:
    """Exact log Z [R] of the ``rows`` of torch-struct edges [B, N-1, L, L] (to, from) with
    ``lengths`` [B] >= 2, by torch-struct's log-semiring scan."""
    picked = edges.index_select(0, rows)
    n = int(lengths[rows].max())
    return LinearChain(LogSemiring).sum(picked[:, : n - 1], lengths=lengths[rows])


def log_shared_transition(
    node: Tensor, transition: Tensor, lengths: Tensor, first: Tensor
) -> Tensor:
    """Exact log Z [B] of rows of documents end to end (``transition_scan``'s layout: node
    scores [B, T, L], one transition matrix [L, L] (from, to), ``first`` [B, T] marks each
    document's first token) by the forward algorithm in log space:

        la_0 = S_0,  la_t = S_t + logsumexp_i (la_{t-1}(i) + A[i, :])   (a transition at t)
        la_t = S_t + logsumexp_i la_{t-1}(i)                             (a document starts)

    and log Z = logsumexp_j la_{n-1}(j): T steps of L^2 work, for the few rows that need it."""
    B, T, L = node.shape
    out = []
    for b in range(B):
        n = int(lengths[b])
        la = node[b, 0]  # [L]
        for t in range(1, n):
            if bool(first[b, t]):
                la = node[b, t] + torch.logsumexp(la, dim=0)
            else:
                la = node[b, t] + torch.logsumexp(la.unsqueeze(1) + transition, dim=0)
        out.append(torch.logsumexp(la, dim=0))
    return torch.stack(out)
