"""Exact n-best decoding of first-order chains, batched, as tensor operations.

Potentials as in ``viterbi.py``: ``[B, T, L, L]``, ``potentials[b, t, i, j]`` scores label j at t
after label i; row 0 of t = 0 holds the start scores; ``lengths [B]``.

Three exact algorithms; ``nbest`` picks by n, batch and device, n = 2 has its own route.  On a
CPU, for small n (``algorithm``), the best-first search over sidetracks of ``sidetracks.py``
(a Viterbi pass and a few tensor calls per path) is the fastest; the two recursions below cost
a fixed number of tensor calls per position, which is what an accelerator wants.

**Small n: the k-best Viterbi recursion** (``kbest_dp``; the n-best semiring of Huang & Chiang
2005, or torch-struct's ``KMaxSemiring``).  For every position t and label j keep the n best
prefix scores S_t[j, 0..n-1] ending in j, in descending order, with back-pointers (previous
label, previous rank):

    S_t[j, :] = top-n over (i, r) of  S_{t-1}[i, r] + M_t[i, j]          (L * n candidates)

and read the answer off top-n of S_{T-1}.  One step is one add and one top-n over
``[B, L, L * n]``.  Cost: O(T L^2 n log n) time, O(T L n) back-pointer memory per sequence.

**Large n: an exact beam ranked by the backward bound** (``kbest_beam``).  A prefix ending in
label j at t has one best completion, of score s(prefix) + beta_t[j] (``backward_scores``), and
distinct prefixes have distinct best completions; so keeping only the n best prefixes *per
position* by s + beta loses none of the n best paths.  One step is a top-n over ``[B, n * L]``:
L times less work and memory than the recursion (O(T n L log n) time, O(T n) memory), at the
price of a backward pass and a few more tensor calls per step, which dominate for small n.
On one 2-core CPU thread the 6,400 best of a 250-token document take about 0.5 s.

**Why not a forward-Viterbi + backward A* search** (Soong & Huang's tree-trellis, as in CRF++):
A* pops one trellis node at a time in Python, and every extra path costs up to T pops (its
suffix below the deviation point), ~n*T/2 heap operations.  The sidetrack search pops whole
paths instead (n pops, each a top-k over its sidetrack costs), which is why it wins on a CPU;
the tensor recursions above cost a fixed number of tensor operations per token whatever n and
batch, which is what an accelerator wants.  The beam's back-pointers are int32 and
``nbest_batched`` bounds the batch by a memory budget.

**Ties**: the score list is exact whatever the ties; among equal-scoring paths the order is the
one the algorithm that ran gives (``torch.topk``'s, or the sidetrack search's), deterministic
for a given input, n and device (a stable sort would fix a lexicographic rule but costs ~10x
more per step at n = 20).  So a CPU and a GPU may keep other tied paths.
``two_best`` (used for n = 2) takes the first off-path edge in (t, i, j) order.

**Fewer paths than n** (L^T < n, or -inf potentials from constraints): the missing entries have
score -inf and the path -1 at every position — never a valid label sequence.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from structperc.decode.sidetracks import kbest_sidetracks
from structperc.decode.viterbi import backpointers, backtrace, backward_scores, forward_scores

# From this n on, ``nbest`` takes ``kbest_beam``: below it the per-label recursion's fewer tensor
# calls per step win; above it the beam's L-times-smaller top-n does (experiments/bench).
BEAM_FROM_N = 64
# On a CPU ``nbest`` takes ``kbest_sidetracks`` below BEAM_FROM_N, and for one sequence below
# SIDETRACKS_BELOW_N: one Viterbi pass and a few tensor calls per path beat a fixed number per
# position until n paths cost about as much as T positions.  ``make bench`` (section 3, the
# algorithms side by side on CoNLL-2003): the 20-best of the training documents one at a time
# in 1.18 s against kbest_dp's 2.82 s, the 100-best 4.01 s against the beam's 9.42 s; in
# batches of 16 (prediction) 0.26 s against the beam's 0.34 s at n = 20, but 0.96 s against
# 0.64 s at n = 100.
SIDETRACKS_BELOW_N = 256


def algorithm(potentials: Tensor, n: int) -> str:
    """The name of the function ``nbest`` calls for these potentials [B, T, L, L] and n."""
    if n == 2:
        return "two_best"
    on_cpu = potentials.device.type == "cpu"
    if on_cpu and (n < BEAM_FROM_N or (potentials.shape[0] == 1 and n < SIDETRACKS_BELOW_N)):
        return "kbest_sidetracks"
    return "kbest_beam" if n >= BEAM_FROM_N else "kbest_dp"


def _top(cand: Tensor, n: int) -> tuple[Tensor, Tensor]:
    """(values, indices) of the n largest along the last dim, in descending order."""
    return torch.topk(cand, min(n, cand.shape[-1]), dim=-1, sorted=True)


def nbest(
    potentials: Tensor, lengths: Tensor, n: int, dtype: torch.dtype = torch.long
) -> tuple[Tensor, Tensor]:
    """The n best paths [B, n, T] (-1 past each length) and their scores [B, n], best first.

    Entries beyond the number of existing paths have score -inf and path -1 everywhere.
    n = 2 takes the max-marginal route (``two_best``), which costs about two Viterbi passes.
    ``dtype``: the paths' integer type (``path_dtype``: int8 stores the n best of a long
    document in an eighth of long's memory; the sidetrack search writes it from the start).
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    name = algorithm(potentials, n)
    if name == "kbest_sidetracks":
        return kbest_sidetracks(potentials, lengths, n, dtype)
    if name == "two_best":
        paths, scores = two_best(potentials, lengths)
    else:
        paths, scores = _KBEST[name](potentials, lengths, n)
    return paths.to(dtype), scores


def path_dtype(num_labels: int) -> torch.dtype:
    """The smallest integer type that holds the label ids 0..num_labels-1 and -1."""
    for dtype in (torch.int8, torch.int16, torch.int32):
        if num_labels <= torch.iinfo(dtype).max:
            return dtype
    return torch.long


def kbest_beam(potentials: Tensor, lengths: Tensor, n: int) -> tuple[Tensor, Tensor]:
    """``nbest`` by an exact beam over prefixes, ranked with the backward Viterbi bound (any n).

    With beta_t[j] the best score of positions t+1.. given label j at t (``backward_scores``),
    a prefix p ending in j at t has exactly one best completion, of score s(p) + beta_t[j], and
    distinct prefixes have distinct best completions.  So if n prefixes at t rank at or above p
    by s + beta, n distinct complete paths score at least as high as any path through p, and p
    can be dropped without changing the n-best scores.  Keeping the n best prefixes per
    position (not per label, as ``kbest_dp`` does) the step is

        P_t = top-n over (k, j) of  s(p_k) + M_t[label(p_k), j] + beta_t[j]      (n * L candidates)

    and at the end (beta = 0) the beam holds the n best paths, best first.  One step is one
    gather, one add and one top-n over ``[B, n * L]``: L times less work and memory than the
    per-label recursion (O(T n L log n) time, O(T n) back-pointers per sequence).
    """
    B, T, L, _ = potentials.shape
    device = potentials.device
    neg = float("-inf")
    beta = backward_scores(potentials, lengths)  # [B, T, L]
    labels_at = torch.arange(L, device=device).expand(B, L)
    prio, order = _top(potentials[:, 0, 0, :] + beta[:, 0], n)  # [B, K]
    S = potentials[:, 0, 0, :].gather(1, order)  # [B, K] prefix scores
    lab = labels_at.gather(1, order)  # [B, K] last labels
    labs, backs = [lab.to(torch.int32)], [None]  # per position [B, K_t]: label, previous k
    for t in range(1, T):
        K = S.shape[1]
        M = potentials[:, t].gather(1, lab.unsqueeze(-1).expand(B, K, L))  # [B, K, L]
        cand = (M + S.unsqueeze(-1)).view(B, K * L)  # flat index k * L + j
        _, idx = _top((M + (S.unsqueeze(-1) + beta[:, t, None, :])).view(B, K * L), n)
        S_new = cand.gather(1, idx)  # [B, K']
        back = torch.div(idx, L, rounding_mode="floor")
        lab_new = idx - back * L
        active = (t < lengths).view(B, 1)
        if not bool(active.all()):  # finished sequences keep their beam (padded with -inf)
            K2 = idx.shape[1]
            keep = torch.arange(K2, device=device).expand(B, K2)
            S_old = F.pad(S, (0, K2 - K), value=neg)
            lab_old = F.pad(lab, (0, K2 - K))
            S_new = torch.where(active, S_new, S_old)
            lab_new = torch.where(active, lab_new, lab_old)
            back = torch.where(active, back, keep.clamp(max=K - 1))
        S, lab = S_new, lab_new
        labs.append(lab.to(torch.int32))
        backs.append(back.to(torch.int32))
    # the beam is sorted by score at each sequence's last position (beta = 0 there)
    K = S.shape[1]
    cur = torch.arange(K, device=device).expand(B, K)
    paths = torch.empty((B, K, T), dtype=torch.long, device=device)
    for t in range(T - 1, -1, -1):
        paths[:, :, t] = labs[t].gather(1, cur)
        if t > 0:
            cur = backs[t].gather(1, cur).long()
    real = torch.arange(T, device=device).view(1, 1, T) < lengths.view(B, 1, 1)
    paths = paths.masked_fill(~real, -1)
    if K < n:
        S = F.pad(S, (0, n - K), value=neg)
        paths = F.pad(paths, (0, 0, 0, n - K), value=-1)
    paths[torch.isneginf(S)] = -1
    return paths, S


def kbest_dp(potentials: Tensor, lengths: Tensor, n: int) -> tuple[Tensor, Tensor]:
    """``nbest`` by the k-best Viterbi recursion (any n).

    Each step is two tensor calls writing into buffers made once (an add into the candidate
    scores, a top-n into the next scores and the step's back-pointers): the per-call overhead,
    not the arithmetic, is what a step of one document costs on a CPU.
    """
    B, T, L, _ = potentials.shape
    device = potentials.device
    neg = float("-inf")
    # S[t % 2]: [B, L, n] best prefix scores per label at t; only rank 0 exists at t = 0
    S = potentials.new_full((2, B, L, n), neg)
    S[0, :, :, 0] = potentials[:, 0, 0, :]
    scores = S.unbind(0)
    back = torch.empty((T, B, L, n), dtype=torch.long, device=device)  # flat index i * n + r
    keep = torch.arange(L * n, device=device).view(1, L, n).expand(B, L, n)
    back[0] = keep
    backs = back.unbind(0)
    trans = potentials.transpose(-1, -2).unsqueeze(-1).unbind(1)  # T x [B, L(j), L(i), 1]
    cand = potentials.new_empty((B, L, L, n))  # cand[b, j, i, r] = S[b, i, r] + M_t[b, i, j]
    cand_flat = cand.view(B, L, L * n)
    ragged = bool((lengths < T).any())
    for t in range(1, T):
        prev, cur = scores[(t - 1) % 2], scores[t % 2]
        torch.add(prev.unsqueeze(1), trans[t], out=cand)
        torch.topk(cand_flat, n, dim=-1, sorted=True, out=(cur, backs[t]))  # [B, L, n]
        if ragged:  # finished sequences keep their scores; their pointers are the identity
            active = (t < lengths).view(B, 1, 1)
            cur.copy_(torch.where(active, cur, prev))
            backs[t].copy_(torch.where(active, backs[t], keep))
    final, fidx = _top(scores[(T - 1) % 2].reshape(B, L * n), n)  # [B, n], index j * n + r
    paths = _trace(back, fidx, lengths, L, n)
    paths[torch.isneginf(final)] = -1
    return paths, final


def _trace(back: Tensor, fidx: Tensor, lengths: Tensor, L: int, n: int) -> Tensor:
    """Follow (label, rank) pointers [T, B, L, n] from the final top-n indices [B, n].

    By pointer doubling (as ``viterbi.backtrace_doubling``): G[t] maps the flat index
    (label * n + rank) at t+1 to the one at t; composing G[t] with G[t+d] doubles d, so
    log2(T) gathers over [T, B, L * n] give every position's index from the one at T-1,
    instead of T dependent gathers.  Past a sequence's length the pointers are the identity;
    padding positions are masked to -1 at the end.
    """
    T, B = back.shape[0], back.shape[1]
    K = L * n
    ident = torch.arange(K, device=back.device).expand(1, B, K)
    G = torch.cat([back.view(T, B, K)[1:], ident])  # [T, B, K]
    d = 1
    while d < T:
        shifted = torch.cat([G[d:], ident.expand(d, B, K)])  # G[t + d]
        G = torch.gather(G, 2, shifted)  # G[t] o G[t + d]
        d *= 2
    index = torch.gather(G, 2, fidx.unsqueeze(0).expand(T, B, n))  # [T, B, n]
    paths = torch.div(index, n, rounding_mode="floor").permute(1, 2, 0)  # [B, n, T]
    real = torch.arange(T, device=back.device).view(1, 1, T) < lengths.view(B, 1, 1)
    return paths.masked_fill(~real, -1)


def nbest_batched(
    potentials: Tensor,
    lengths: Tensor,
    n: int,
    memory_budget: int = 512 * 2**20,
    dtype: torch.dtype = torch.long,
) -> tuple[Tensor, Tensor]:
    """``nbest`` (paths of type ``dtype``) over sub-batches whose back-pointers fit
    ``memory_budget`` bytes."""
    B, T, L, _ = potentials.shape
    # the sidetrack search keeps [T, L, L] costs and the paths; the beam stores int32 (label,
    # previous k) per kept prefix, plus the [n, L]
    # candidate scores of a step; the per-label recursion int64 (label, rank) per label and
    # rank, and its back-trace three more [T, L * n] int64 maps
    name = algorithm(potentials, n)
    if name == "kbest_sidetracks":
        per_seq = (T * L * L + T * n) * 8  # forward pass, sidetrack costs, the paths
    elif name == "kbest_beam":
        per_seq = T * n * 8 + n * L * 16
    else:
        per_seq = T * L * n * 8 * 4
    step = max(1, memory_budget // max(per_seq, 1))
    if step >= B:
        return nbest(potentials, lengths, n, dtype)
    parts = [
        nbest(potentials[s : s + step], lengths[s : s + step], n, dtype) for s in range(0, B, step)
    ]
    return torch.cat([p for p, _ in parts]), torch.cat([s for _, s in parts])


def two_best(potentials: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """The best and second-best paths [B, 2, T] and scores [B, 2] from max-marginals.

    With forward scores alpha and backward scores beta, the best path through the edge
    (i at t-1, j at t) scores  mu_t[i, j] = alpha_{t-1}[i] + M_t[i, j] + beta_t[j].  Every path
    other than the best uses at least one edge off the best path (for length >= 2), and mu of
    such an edge is the score of a path other than the best, so the second-best score is the
    largest mu over the off-path edges, and its path is the best path through that edge.  For a
    length-1 sequence the candidates are the start labels.  Ties: the first edge in (t, i, j)
    order.  The blocked forward/backward passes make this ~2 Viterbi passes of tensor work.
    """
    B, T, L, _ = potentials.shape
    device = potentials.device
    neg = float("-inf")
    alpha = forward_scores(potentials, lengths)  # [B, T, L]
    beta = backward_scores(potentials, lengths)  # [B, T, L]
    bp = backpointers(potentials, alpha)  # [B, T, L]
    best_score, last = alpha[:, -1].max(dim=1)
    best = backtrace(bp, last, lengths)  # [B, T]
    paths = torch.full((B, 2, T), -1, dtype=torch.long, device=device)
    paths[:, 0] = best
    scores = torch.stack([best_score, best_score.new_full((B,), neg)], dim=1)
    # candidates: position 0 (start labels) and every edge t >= 1, flattened as [t, i, j]
    start = alpha[:, 0] + beta[:, 0]  # [B, L]
    start = start.scatter(1, best[:, :1].clamp(min=0), neg)  # not the best start label
    start_c = start.new_full((B, 1, L, L), neg)
    start_c[:, 0, 0, :] = start  # row 0 stands for "no previous label"
    if T > 1:
        mu = alpha[:, :-1].unsqueeze(-1) + potentials[:, 1:] + beta[:, 1:].unsqueeze(-2)
        t_idx = torch.arange(1, T, device=device)
        real = (t_idx.unsqueeze(0) < lengths.unsqueeze(1)).view(B, T - 1, 1, 1)
        mu = torch.where(real, mu, torch.tensor(neg, dtype=mu.dtype, device=device))
        on_path = best[:, :-1].clamp(min=0) * L + best[:, 1:].clamp(min=0)  # [B, T-1]
        mu = mu.view(B, T - 1, L * L).scatter(2, on_path.unsqueeze(-1), neg).view(B, T - 1, L, L)
        # a length-1 sequence has no edges: its start labels are the candidates
        short = (lengths == 1).view(B, 1, 1, 1)
        start_c = torch.where(short, start_c, torch.tensor(neg, dtype=mu.dtype, device=device))
        cands = torch.cat([start_c, mu], dim=1)  # [B, T, L, L]
    else:
        cands = start_c
    second, flat = cands.view(B, -1).max(dim=1)  # [B]
    scores[:, 1] = second
    fwd = forward_pointers(potentials, beta)  # [B, T, L]
    for b, (f, s, n) in enumerate(
        zip(flat.tolist(), second.tolist(), lengths.tolist(), strict=True)
    ):
        if s == neg:
            continue
        t, ij = divmod(f, L * L)
        i, j = divmod(ij, L)
        path = [0] * n
        if t == 0:
            path[0] = j
        else:
            path[t - 1], path[t] = i, j
            rows = bp[b, :t].tolist()
            for u in range(t - 1, 0, -1):
                path[u - 1] = rows[u][path[u]]
        nxt = fwd[b].tolist()
        for u in range(t, n - 1):
            path[u + 1] = nxt[u][path[u]]
        paths[b, 1, :n] = torch.tensor(path)
    return paths, scores


def forward_pointers(potentials: Tensor, beta: Tensor) -> Tensor:
    """fp [B, T, L]: fp[b, t, i] = argmax_j M_{t+1}[i, j] + beta_{t+1}[j] (last position: 0)."""
    B, T, L, _ = potentials.shape
    fp = torch.zeros((B, T, L), dtype=torch.long, device=potentials.device)
    if T > 1:
        fp[:, :-1] = (potentials[:, 1:] + beta[:, 1:].unsqueeze(-2)).max(dim=-1).indices
    return fp


_KBEST = {"kbest_sidetracks": kbest_sidetracks, "kbest_beam": kbest_beam, "kbest_dp": kbest_dp}
