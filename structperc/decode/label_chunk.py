"""The exact label-chunk DP of Shimizu & Haas (2006, Figure 1), batched as tensor operations.

Scores of the parts (``LabelChunkPotentials``; C chunk tags, P POS tags, positions 0..n-1):

    a[r, C, P]        POS node <C, P, r>
    e[r, C, P0, P]    POS transition <C, P0, P, r-1, r>         (r >= 1)
    s[q, r, C]        chunk node <C, q, r>, r inclusive          (q <= r)
    g[q, C0, C]       chunk transition <C0, C, q-1, q>           (q >= 1)

Two tables, as in the paper.  The label table holds the best POS chain of a chunk [q, r] with tag
C ending in P (the first layer's Viterbi, one per chunk start q):

    label[q, q, C, P] = a[q, C, P]
    label[q, r, C, P] = max_P0 label[q, r-1, C, P0] + e[r, C, P0, P] + a[r, C, P]

and the chunk table the best structure of tokens 0..r whose last chunk has tag C (the second
layer's Viterbi over chunk boundaries):

    enter[0, C]  = 0
    enter[q, C]  = max_C0 chunk[q-1, C0] + g[q, C0, C]
    chunk[r, C]  = max_{q <= r} enter[q, C] + max_P label[q, r, C, P] + s[q, r, C]

The best score is max_C chunk[n-1, C].  We run the paper's loops in the other order — r outer —
so one step r extends the label table of every chunk start q <= r at once: a [B, T, C, P0, P]
max-plus step (vectorised over the batch, the chunk starts and the tags), then a max over q for
the chunk table.  n steps of O(n C P^2) work: O(n^2 C P^2) time, as in the paper (which counts
c^2 p^2 because its loops also run over C0), O(n^2 C P) memory for the back-pointers.  A step
costs about ten tensor calls whatever n is, so on a CPU the calls, not the arithmetic, dominate
for sentence lengths up to about a hundred.  Sentences
of different lengths share the steps: chunk[r] depends only on positions <= r, so sentence b
reads its result at r = lengths[b] - 1 and ignores the rest.

Ties go to the smallest index (``Tensor.max``), so a structure's components are deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from structperc.data.label_chunk import LabelChunk


@dataclass(frozen=True)
class LabelChunkPotentials:
    """Part scores of a padded batch of B sentences (T the longest), no autograd.

    pos_node:   [B, T, C, P]        a[b, r, C, P]
    pos_edge:   [B, T, C, P, P]     e[b, r, C, P0, P] (from P0 at r-1 to P at r; r = 0 unused)
    chunk_node: [B, T, T, C]        s[b, q, r, C] (q <= r; entries with q > r unused)
    chunk_edge: [B, T, C, C]        g[b, q, C0, C] (from C0 ending at q-1 to C; q = 0 unused)
    lengths:    [B] long, 1 <= lengths[b] <= T
    """

    pos_node: Tensor
    pos_edge: Tensor
    chunk_node: Tensor
    chunk_edge: Tensor
    lengths: Tensor

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(B, T, C, P)."""
        return tuple(self.pos_node.shape)  # type: ignore[return-value]


def decode(pot: LabelChunkPotentials) -> tuple[LabelChunk, Tensor]:
    """The best structures ([B, T] each, padded) and their scores [B].

    Time O(B n^2 C P^2) in n steps of about ten tensor operations; memory O(B n^2 C P).  The label
    table keeps a row for every chunk start q (-inf for q > r), so each step works on tensors of
    one fixed shape: twice the arithmetic of a triangular table, and fewer, cheaper calls.
    """
    a, e, s, g = pot.pos_node, pot.pos_edge, pot.chunk_node, pot.chunk_edge
    B, T, C, P = a.shape
    a_r = a.unsqueeze(2).unbind(1)  # T x [B, 1, C, P]
    e_r = e.unsqueeze(2).unbind(1)  # T x [B, 1, C, P0, P]
    g_r = g.unbind(1)  # T x [B, C0, C]
    s_r = s.unbind(2)  # T x [B, T(q), C]: s[:, q, r] of chunks ending at r
    label = a.new_full((B, T, C, P), float("-inf"))  # label[b, q, C, P] of chunks [q, r]
    enter = a.new_zeros((B, T, C))  # enter[b, q, C]
    bp_pos = [torch.zeros((B, T, C, P), dtype=torch.long, device=a.device)]  # r x [b, q, C, P]
    bp_start, bp_last, bp_prev = [], [], [torch.zeros((B, C), dtype=torch.long, device=a.device)]
    tables: list[Tensor] = []  # chunk[b, r, C], r = 0..T-1
    for r in range(T):
        if r:
            best, arg = (label.unsqueeze(-1) + e_r[r]).max(dim=3)  # [B, T, C, P] over P0
            label = best + a_r[r]
            bp_pos.append(arg)
            trans, prev = (tables[-1].unsqueeze(-1) + g_r[r]).max(dim=1)  # [B, C] over C0
            enter[:, r] = trans
            bp_prev.append(prev)
        label[:, r] = a_r[r][:, 0]
        last, last_arg = label.max(dim=-1)  # [B, T, C] over the chunk's last POS tag
        table, q = (enter + last + s_r[r]).max(dim=1)  # [B, C] over chunk starts q
        bp_start.append(q)
        bp_last.append(last_arg)
        tables.append(table)
    final = torch.stack(tables, dim=1)  # [B, T, C]
    final = final.gather(1, (pot.lengths - 1).view(B, 1, 1).expand(B, 1, C)).squeeze(1)  # [B, C]
    scores, last_tag = final.max(dim=1)  # [B]
    pointers = (
        torch.stack(bp_pos, dim=1),  # [B, T(r), T(q), C, P] -> P0 at r - 1
        torch.stack(bp_start, dim=1),  # [B, T(r), C] -> q
        torch.stack(bp_last, dim=1),  # [B, T(r), T(q), C] -> P at r
        torch.stack(bp_prev, dim=1),  # [B, T(q), C] -> C0
    )
    paths = backtrace(*(t.cpu().numpy() for t in (*pointers, last_tag, pot.lengths)))
    return LabelChunk(*(t.to(a.device) for t in paths)), scores


def backtrace(
    bp_pos: np.ndarray,
    bp_start: np.ndarray,
    bp_last: np.ndarray,
    bp_prev: np.ndarray,
    last_tag: np.ndarray,
    lengths: np.ndarray,
) -> tuple[Tensor, Tensor, Tensor]:
    """(pos, chunk, start) [B, T] from the back-pointers of ``decode`` (shapes there).

    Chunk by chunk, right to left; each chunk's POS chain follows its own pointers.
    """
    B, T = bp_start.shape[:2]
    pos = np.full((B, T), -1, dtype=np.int64)
    chunk = np.full((B, T), -1, dtype=np.int64)
    start = np.zeros((B, T), dtype=bool)
    for b in range(B):
        r, c = int(lengths[b]) - 1, int(last_tag[b])
        while r >= 0:
            q = int(bp_start[b, r, c])
            p = int(bp_last[b, r, q, c])
            chunk[b, q : r + 1] = c
            start[b, q] = True
            for t in range(r, q, -1):
                pos[b, t] = p
                p = int(bp_pos[b, t, q, c, p])
            pos[b, q] = p
            if q:
                c = int(bp_prev[b, q, c])
            r = q - 1
    return torch.from_numpy(pos), torch.from_numpy(chunk), torch.from_numpy(start)


def structure_scores(pot: LabelChunkPotentials, y: LabelChunk) -> Tensor:
    """s(y) [B] of padded structures y ([B, T] each) under ``pot``: the sum of their parts."""
    B, T, C, P = pot.shape
    device = pot.pos_node.device
    real = torch.arange(T, device=device).unsqueeze(0) < pot.lengths.unsqueeze(1)  # [B, T]
    pos, chunk = y.pos.clamp(min=0), y.chunk.clamp(min=0)
    start = y.start & real
    nxt = torch.ones_like(start)
    nxt[:, :-1] = start[:, 1:]
    end = real & (nxt | ~torch.roll(real, -1, dims=1) | (torch.arange(T, device=device) == T - 1))
    bi = torch.arange(B, device=device).unsqueeze(1).expand(B, T)
    ti = torch.arange(T, device=device).unsqueeze(0).expand(B, T)
    total = torch.where(real, pot.pos_node[bi, ti, chunk, pos], 0.0).sum(1)
    prev_pos = torch.roll(pos, 1, dims=1)
    inner = real & ~start
    total += torch.where(inner, pot.pos_edge[bi, ti, chunk, prev_pos, pos], 0.0).sum(1)
    prev_chunk = torch.roll(chunk, 1, dims=1)
    between = start & (ti > 0)
    total += torch.where(between, pot.chunk_edge[bi, ti, prev_chunk, chunk], 0.0).sum(1)
    # chunk nodes: at each chunk's last token r, its start q is the latest start <= r
    q_of = torch.where(start, ti, torch.zeros_like(ti)).cummax(dim=1).values  # [B, T]
    total += torch.where(end, pot.chunk_node[bi, q_of, ti, chunk], 0.0).sum(1)
    return total
