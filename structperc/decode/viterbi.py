"""Batched Viterbi decoding of first-order chains, as tensor operations.

Potentials ``[B, T, L, L]``: ``potentials[b, t, i, j]`` scores label j at position t after label i
at t-1 (node and edge scores summed).  At t = 0 only row 0 is read: ``potentials[b, 0, 0, j]``
scores starting in j.  ``lengths[b]`` (1 <= lengths[b] <= T) marks the real positions.

The forward pass is the max-plus prefix product alpha_t = alpha_0 (x) M_1 (x) ... (x) M_t
(``maxplus.py``).  Computed naively that is T dependent steps, each a few tensor operations of a
few microseconds' overhead — on a CPU the overhead, not the arithmetic, dominates for the small
label sets of NER (L = 9).  We regroup the product into ``K = ceil(T / m)`` blocks of m ~ sqrt(T)
matrices:

1. within every block at once, the running products P[k, s] = M[k, 0] (x) ... (x) M[k, s]
   (m - 1 steps over [B, K, L, L] matrices);
2. the entering vectors of the blocks, beta_{k+1} = beta_k (x) P[k, m-1] (K steps over [B, L]);
3. all alpha at once: alpha[k, s] = beta_k (x) P[k, s].

That is O(sqrt(T)) operations instead of O(T), for L times more arithmetic.  Positions past a
sequence's length are padded with the max-plus identity, so alpha stays put there.  Back-pointers
``bp[t, j] = argmax_i alpha_{t-1}[i] + M_t[i, j]`` are one batched argmax (ties go to the smallest
label index, as in a plain loop), and the back-trace composes them by pointer doubling
(log2(T) gathers).  With integer-valued weights (every perceptron update is +-1) the grouping
changes no value, so the result is exactly that of the plain loop in ``reference.py``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from structperc.decode.maxplus import mp_identity, mp_matmul, mp_vecmat


def forward_scores(potentials: Tensor, lengths: Tensor) -> Tensor:
    """alpha [B, T, L]: the best score of a path over 0..t ending in each label.

    For t >= lengths[b], alpha[b, t] = alpha[b, lengths[b] - 1].
    """
    B, T, L, _ = potentials.shape
    alpha0 = potentials[:, 0, 0, :]  # [B, L]
    if T == 1:
        return alpha0.unsqueeze(1)
    n = T - 1  # transition matrices M_1..M_{T-1}
    m = max(1, math.isqrt(n))
    K = math.ceil(n / m)
    eye = mp_identity(L, dtype=potentials.dtype, device=potentials.device)
    mats = potentials[:, 1:]  # [B, n, L, L]
    # identity past each length (position t is real when t < lengths[b])
    real = torch.arange(1, T, device=potentials.device).unsqueeze(0) < lengths.unsqueeze(1)
    mats = torch.where(real[:, :, None, None], mats, eye)  # [B, n, L, L]
    if K * m > n:
        pad = eye.expand(B, K * m - n, L, L)
        mats = torch.cat([mats, pad], dim=1)
    blocks = mats.view(B, K, m, L, L).unbind(2)  # m x [B, K, L, L]
    prefix = [blocks[0]]
    for s in range(1, m):
        prefix.append(mp_matmul(prefix[-1], blocks[s]))
    totals = prefix[-1].unbind(1)  # K x [B, L, L]
    beta = [alpha0]  # entering vector of each block, [B, L] each
    for k in range(K - 1):
        beta.append(mp_vecmat(beta[-1], totals[k]))
    beta_t = torch.stack(beta, dim=1)  # [B, K, L]
    prefix_t = torch.stack(prefix, dim=2)  # [B, K, m, L, L]
    alpha = mp_vecmat(beta_t.unsqueeze(2), prefix_t)  # [B, K, m, L]
    alpha = alpha.reshape(B, K * m, L)[:, :n]
    return torch.cat([alpha0.unsqueeze(1), alpha], dim=1)  # [B, T, L]


def backpointers(potentials: Tensor, alpha: Tensor) -> Tensor:
    """bp [B, T, L]: bp[b, t, j] = argmax_i alpha[b, t-1, i] + M_t[i, j]; bp[:, 0] = j."""
    B, T, L, _ = potentials.shape
    bp = torch.empty((B, T, L), dtype=torch.long, device=potentials.device)
    bp[:, 0] = torch.arange(L, device=potentials.device)
    if T > 1:
        cand = alpha[:, :-1].unsqueeze(-1) + potentials[:, 1:]  # [B, T-1, L(i), L(j)]
        # max(dim).indices: first maximum, like argmax, and several times faster on CPU
        bp[:, 1:] = cand.max(dim=2).indices
    return bp


def backtrace(bp: Tensor, last: Tensor, lengths: Tensor) -> Tensor:
    """Paths [B, T] (-1 past each length) from back-pointers and the last labels [B].

    On the CPU a plain loop over Python lists is cheapest; elsewhere ``backtrace_doubling``.
    """
    if bp.device.type != "cpu":
        return backtrace_doubling(bp, last, lengths)
    B, T, _ = bp.shape
    paths = torch.full((B, T), -1, dtype=torch.long)
    for b, (rows, y, n) in enumerate(
        zip(bp.tolist(), last.tolist(), lengths.tolist(), strict=True)
    ):
        path = [0] * n
        for t in range(n - 1, -1, -1):
            path[t] = y
            y = rows[t][y]
        paths[b, :n] = torch.tensor(path)
    return paths


def backtrace_doubling(bp: Tensor, last: Tensor, lengths: Tensor) -> Tensor:
    """``backtrace`` as log2(T) batched gathers (for accelerators).

    Pointer doubling: G_t maps the label at t+d to the label at t; composing G_t with G_{t+d}
    doubles d, so log2(T) gathers give every position's label from the label at T-1.
    """
    B, T, L = bp.shape
    device = bp.device
    ident = torch.arange(L, device=device).expand(B, 1, L)
    real = torch.arange(T, device=device).unsqueeze(0) < lengths.unsqueeze(1)  # [B, T]
    # G[t] maps the label at t+1 to the label at t; identity where t+1 is not a real position
    nxt_real = torch.cat([real[:, 1:], torch.zeros_like(real[:, :1])], dim=1)
    G = torch.cat([bp[:, 1:], ident], dim=1)  # [B, T, L]
    G = torch.where(nxt_real.unsqueeze(-1), G, ident)
    d = 1
    while d < T:
        shifted = torch.cat([G[:, d:], ident.expand(B, d, L)], dim=1)  # G[t + d]
        G = torch.gather(G, 2, shifted)  # G[t] o G[t+d]
        d *= 2
    paths = torch.gather(G, 2, last.view(B, 1, 1).expand(B, T, 1)).squeeze(2)
    return paths.masked_fill(~real, -1)


def backward_scores(potentials: Tensor, lengths: Tensor) -> Tensor:
    """beta [B, T, L]: the best score of positions t+1..len-1 given label i at t (0 at len-1).

    Computed as ``forward_scores`` of the reversed chain, whose matrices are the transposed
    M_t in reverse order; beta is 0 past each length.
    """
    B, T, L, _ = potentials.shape
    device = potentials.device
    t_rev = torch.arange(T, device=device).unsqueeze(0)  # [1, T]
    real = t_rev < lengths.unsqueeze(1)  # [B, T]
    src = torch.where(real, lengths.unsqueeze(1) - t_rev, torch.zeros_like(t_rev))  # [B, T]
    src = src.clamp(max=T - 1)
    rev = potentials.gather(1, src.view(B, T, 1, 1).expand(B, T, L, L)).transpose(-1, -2)
    rev = rev.clone()
    rev[:, 0] = 0.0  # the reversed chain starts anywhere at no cost
    alpha_rev = forward_scores(rev, lengths)  # alpha_rev[b, t'] = beta[b, len - 1 - t']
    back = torch.where(real, lengths.unsqueeze(1) - 1 - t_rev, t_rev)  # [B, T]
    beta = alpha_rev.gather(1, back.unsqueeze(-1).expand(B, T, L))
    return beta.masked_fill(~real.unsqueeze(-1), 0.0)


def viterbi(potentials: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """Best paths [B, T] (long, -1 past each length) and their scores [B]."""
    alpha = forward_scores(potentials, lengths)  # [B, T, L]
    final = alpha[:, -1]  # == alpha at lengths - 1 (identity padding)
    scores, last = final.max(dim=1)  # [B], [B]
    bp = backpointers(potentials, alpha)
    return backtrace(bp, last, lengths), scores
