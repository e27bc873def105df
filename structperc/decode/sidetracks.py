"""Exact n-best of first-order chains by a best-first search over sidetracks (small n, CPU).

Potentials as in ``viterbi.py``: ``[B, T, L, L]``, ``potentials[b, t, i, j]`` scores label j at t
after label i; row 0 of t = 0 holds the start scores; ``lengths [B]``.

With the forward Viterbi scores alpha and back-pointers bp (``viterbi.forward_scores``,
``viterbi.backpointers``), read a path y of length N backwards from a virtual sink after N - 1.
At the sink the best choice of last label is argmax_j alpha_{N-1}[j]; at position u >= 1 the best
choice of y_{u-1} given y_u is bp_u[y_u].  Any other choice is a *sidetrack*, of cost

    d_u(i, j) = alpha_{u-1}[i] + M_u[i, j] - alpha_u[j]   <= 0     (sidetrack i -> j at u)
    d_N(j)    = alpha_{N-1}[j] - max alpha_{N-1}               <= 0     (last label j)

and, because alpha telescopes along the path, s(y) = s(y^1) + sum of the costs of y's
sidetracks (Eppstein 1998, "Finding the k shortest paths"; the same trick as ``two_best``'s
max-marginals).  Every path other than the best y^1 has a leftmost sidetrack; removing it (and
completing the prefix by back-pointers) gives its *parent*, which scores at least as much and
keeps every other sidetrack.  So the paths form a tree, heap-ordered by score, whose root is
y^1 and where the children of a path y with leftmost sidetrack at s are the paths

    bp-prefix ending in (u - 1, i)  ++  y[u:]        for 1 <= u < s, i != bp_u[y_u]

of score s(y) + d_u(i, y_u) (the root also has the N - 1 choices of last label).  A best-first
search over this tree (Lawler's scheme) pops the n best paths in order.  A popped path needs at
most n - k of its children, so each pop pushes only the top (n - k) of them: one top-k over its
sidetrack costs.

The prefixes are cheap to write down: a bp-prefix meets the best path's and then follows it,
usually within a few positions, so a path is the best path's prefix, a short walked part, and
its parent's suffix.  Where a path agrees with y^1 (positions 0..q), its sidetrack costs are the
root's; only the walked positions q+1..s-1 need a gather of their own.

Cost per sequence: one blocked Viterbi forward pass (O(sqrt T) tensor calls) and, per path, a
few tensor calls of O(s L) work and a short Python walk, against ``kbest_dp``'s two tensor calls
per position: on a CPU, where the per-call overhead dominates, 2.4x faster for the n = 20 of
the proposed algorithm (``make bench``, section 3).  The scores are exact; among equal scores
the order is the search's (deterministic for a given input and n) and may differ from
``kbest_dp``'s.
"""

from __future__ import annotations

import heapq
from array import array

import torch
from torch import Tensor

from structperc.decode.viterbi import backpointers, forward_scores

NEG = float("-inf")


# the ``array`` type code of each path type: a path is kept as an array of its labels, 1 byte a
# label for int8 (the n best of a 189,000-token document: 19 MB, against 151 MB as Python lists)
TYPECODES = {torch.int8: "b", torch.int16: "h", torch.int32: "i", torch.long: "q"}


def kbest_sidetracks(
    potentials: Tensor, lengths: Tensor, n: int, dtype: torch.dtype = torch.long
) -> tuple[Tensor, Tensor]:
    """The n best paths [B, n, T] (of type ``dtype``; -1 past each length and for missing paths)
    and their scores [B, n], best first, by the sidetrack search (see the module docstring)."""
    B, T, L, _ = potentials.shape
    typecode = TYPECODES[dtype]
    alpha = forward_scores(potentials, lengths)  # [B, T, L]
    bp = backpointers(potentials, alpha)  # [B, T, L]
    paths = torch.full((B, n, T), -1, dtype=dtype)
    scores = potentials.new_full((B, n), NEG)
    for b, N in enumerate(lengths.tolist()):
        found, values = _search(potentials[b, :N], alpha[b, :N], bp[b, :N], n, typecode)
        for k, path in enumerate(found):
            paths[b, k, :N] = torch.frombuffer(path, dtype=dtype)
        scores[b, : len(found)] = torch.tensor(values, dtype=scores.dtype)
    return paths.to(potentials.device), scores


def _search(
    pot: Tensor, alpha: Tensor, bp: Tensor, n: int, typecode: str = "q"
) -> tuple[list[array], list[float]]:
    """The n best paths of one sequence (pot [N, L, L], alpha [N, L], bp [N, L]) as label arrays
    (of ``typecode``) and scores, best first; fewer where fewer than n paths have a finite
    score."""
    N, L = alpha.shape
    best, last = alpha[N - 1].max(dim=0)
    top = float(best)
    if top == NEG:
        return [], []
    bp_rows = bp.tolist()
    y1 = array(typecode, [0]) * N
    y = int(last)
    for t in range(N - 1, -1, -1):
        y1[t] = y
        y = bp_rows[t][y]
    if n == 1:
        return [y1], [top]
    # costs[u * L + j, i] = d_u(i, j) = alpha[u-1, i] + M_u[i, j] - alpha[u, j], and -inf where
    # i = bp_u[j] (no sidetrack) and in row block u = 0 (no position before)
    costs = torch.empty((N, L, L), dtype=pot.dtype)
    costs[0] = NEG
    if N > 1:
        torch.sub(
            (alpha[:-1].unsqueeze(-1) + pot[1:]).transpose(1, 2),
            alpha[1:].unsqueeze(-1),
            out=costs[1:],
        )
        costs[1:].scatter_(2, bp[1:].unsqueeze(-1), NEG)
    costs = costs.view(N * L, L)
    # the root's sidetrack costs, rows 1..N-1 then the sink's: [N * L], flat (u - 1) * L + i
    y1_t = torch.frombuffer(array("q", y1), dtype=torch.long)  # [N] (torch.tensor: ~10x slower)
    sink = (alpha[N - 1] - top).index_fill_(0, last.view(1), NEG)
    root = torch.cat([costs[torch.arange(1, N) * L + y1_t[1:]].view(-1), sink])
    found, values = [y1], [top]
    heap: list[tuple[float, int, int, int, int]] = []  # (-score, order, parent, u, i)
    pushed = 0
    parent, q, own_rows = 0, N, []  # the root: every row 1..N may hold a sidetrack
    while True:
        # the children of path `parent`: rows 1..q the root's, rows q+1.. its own (walked) ones
        head = root[: max(q, 0) * L]
        if own_rows:
            path = found[parent]
            own = costs[torch.tensor([u * L + path[u] for u in own_rows])].view(-1)
            cand = torch.cat([head, own])
        else:
            cand = head
        if cand.numel():
            vals, idx = torch.topk(cand, min(n - len(found), cand.numel()))
            base, n_head = values[parent], head.numel()
            for v, f in zip(vals.tolist(), idx.tolist(), strict=True):
                if v == NEG:
                    break
                if f < n_head:
                    u, i = divmod(f, L)
                    u += 1
                else:
                    r, i = divmod(f - n_head, L)
                    u = own_rows[r]
                heapq.heappush(heap, (-(base + v), pushed, parent, u, i))
                pushed += 1
        if not heap:
            return found, values
        neg_score, _, parent_of, u, i = heapq.heappop(heap)
        path, q = _child(found[parent_of], y1, bp_rows, u, i)
        found.append(path)
        values.append(-neg_score)
        if len(found) == n:
            return found, values
        parent, own_rows = len(found) - 1, list(range(max(q, 0) + 1, u))


def _child(parent: array, y1: array, bp_rows: list[list[int]], u: int, i: int) -> tuple[array, int]:
    """The path with the sidetrack (u, i) added to ``parent`` (u = N: last label i), and the last
    position q where it still agrees with the best path from the start (-1 if nowhere)."""
    pos, lab, walked = u - 1, i, []
    while pos >= 0 and lab != y1[pos]:
        walked.append(lab)
        lab = bp_rows[pos][lab]
        pos -= 1
    walked.reverse()
    return y1[: pos + 1] + array(y1.typecode, walked) + parent[u:], pos
