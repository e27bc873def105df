"""A bucket's torch-struct edges straight from its token scores, and its negative log-likelihood.

``model.weights.chain_potentials`` turns token scores into potentials [B, T, L, L] (from, to) and
``decode.marginals.to_log_potentials`` turns those into torch-struct's edges
[B, N-1, L(to), L(from)], the first token's scores folded into edge 0.  On a bucket of the whole
training set that chain of tensors (padded potentials, a transposed copy, slices and masks) costs
more than the scan itself, forward and backward.  Both layouts of the tables skip it here and
write the edges in one pass, with the gold score s(y*) beside them, so that the nll of a bucket
is log Z - s(y*) with a fraction of the memory traffic.  Tests compare both with
``decode.marginals.nll`` of ``chain_potentials``, and their gradients.

**Edge features** (``RowEdges``, ``row_nll``: the sequential scan over packed rows).  With node
scores S [N, L] and edge scores A [N, L, L] (from, to) of a bucket's tokens,

    pot[t, i, j] = S[t, j] + A[t, i, j]     (t not a document's first token),
    pot[t, i, j] = S[t, j]                  (t a document's first token: no previous label),
    edge[b, p-1, j, i] = pot[t, i, j] + [p = 1] S[t0_b, i]      (token t at position p >= 1 of
                                                                 row b, t0_b the row's first).

``RowEdges`` writes the edges in one ``index_copy`` (time-major, the layout the sequential scan
reads) and its backward gathers the edge marginals back to the tokens in one ``index_select``:

    dS[t, j] = sum_i G[p-1, b, j, i]  (+ sum_j' G[0, b, j', j] for a row's first token),
    dA[t, i, j] = G[p-1, b, j, i]     (0 for a document's first token),

G the gradient of the edges.  It also returns s(y*) (node scores of the gold labels plus the
edge scores of consecutive gold labels inside each document), whose gradient is the gold labels'
indicators, added in place.

**One transition matrix** (``features.edges=false``: ``transition_nll``, any scan).  With node
scores S [N, L] and one transition matrix A [L, L] (from, to),

    edge[b, t-1, j, i] = S[b, t, j] + [t not first] A[i, j] + [t = 1] S[b, 0, i],

from the padded node scores [B, T, L] (L numbers a token instead of L^2; positions past a row's
length hold anything: no scan reads them), and the gold score is summed from S and A alone,

    s(y*) = sum_t S[t, y*_t] + sum_{t not first} A[y*_{t-1}, y*_t].

On the packed CoNLL-2003 buckets the DP's glue (potentials, layout, gold scores, their backward)
was about a third of an L-BFGS iteration with ``features.edges=false`` before this layout.  A
row of one token gets ``decode.marginals``' dummy second position in both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from structperc.decode.marginals import first_edge, log_partition_of_edges
from structperc.decode.scaled_scan import NEG
from structperc.decode.sequential_scan import SequentialLinearChain, Workspace
from structperc.decode.transition_scan import shared_transition_log_partition
from structperc.model.batch import FeatureBatch


@dataclass
class RowLayout:
    """Where a bucket's tokens go in the time-major edges [K * B] (K = T - 1 edges a row).

    slot:      [N] long, (p - 1) * B + b for a token at position p >= 1 of row b; K * B (a spare
               slot) for a row's first token.
    starts:    [B] long, the token at position 0 of each row.
    firsts:    [D] long, every document's first token (``batch.first_token``).
    gold_node: [N] long, flat index t * (L + L^2) + y*_t of the gold node score of every token.
    gold_edge: [N - D] long, flat index of the gold edge score of every token that has a
               previous label in its document.
    gold_node_at, gold_edge_at: the same gold scores as flat indices into [N, L] node and
               [N, L, L] (from, to) edge gradients.
    lengths:   [B] long row lengths, at least 2.
    singles:   [S] long, the rows of one token: they get ``decode.marginals``' dummy second position
               (edge 0 allows only label 0 after the first token: every path one completion).
    padding:   [P] long, the slots past each row's length (set to 0: the scan reads them).
    labels:    [N] long gold labels in the order of the token scores the layout addresses.
    num_labels, rows, edges: L, B and K (T - 1).
    workspace: buffers of ``row_nll`` on this layout reused from one call to the next
               (``sequential_scan.Workspace``: what a call returns is then valid until the next
               call; the CRF's objective sets one), or None: fresh tensors every call.

    Token indices (``slot``, ``starts``, ``firsts``, the gold indices) address the batch's own
    token order, or with ``of(..., tokens=, num_tokens=)`` a score tensor of ``num_tokens``
    tokens (the whole training set) in which the batch's tokens sit at ``tokens``: the one
    bucket of the sequential scan then reads the lookup's scores as they are, without a
    gathered copy.
    """

    slot: Tensor
    starts: Tensor
    firsts: Tensor
    gold_node: Tensor
    gold_edge: Tensor
    gold_node_at: Tensor
    gold_edge_at: Tensor
    lengths: Tensor
    singles: Tensor
    padding: Tensor
    labels: Tensor
    num_labels: int
    rows: int
    edges: int
    workspace: Workspace | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(
        cls,
        batch: FeatureBatch,
        labels: Tensor,
        num_labels: int,
        tokens: Tensor | None = None,
        num_tokens: int | None = None,
    ) -> RowLayout:
        """The layout of ``batch`` (lengths, first_token, flat_positions; tokens in row order)
        with gold ``labels`` [N]; ``tokens`` [N]: where the batch's tokens sit among
        ``num_tokens`` scores (class docstring)."""
        if (tokens is None) != (num_tokens is None):
            raise ValueError("RowLayout.of: give tokens and num_tokens together, or neither")
        L, width = num_labels, num_labels + num_labels * num_labels
        B, T = batch.num_docs, max(batch.max_length, 2)
        K = T - 1
        flat = batch.flat_positions
        row, pos = flat // batch.max_length, flat % batch.max_length
        slot = torch.where(pos >= 1, (pos - 1) * B + row, K * B)
        starts = (pos == 0).nonzero().squeeze(1)
        starts = starts[row[starts].argsort()]  # by row
        N = len(labels)
        inside = torch.ones(N, dtype=torch.bool, device=labels.device)
        inside[batch.first_token] = False
        k = inside.nonzero().squeeze(1)  # tokens with a previous label in their document
        pair = labels[k - 1] * L + labels[k]  # (from, to)
        filled = torch.zeros(K * B + 1, dtype=torch.bool, device=labels.device)
        filled[slot] = True
        # where the batch's tokens sit in the score tensor the layout addresses
        at = torch.arange(N, device=labels.device) if tokens is None else tokens.to(labels.device)
        ordered = labels
        if num_tokens is not None:  # address the whole score tensor
            by_token = torch.full((num_tokens,), K * B, dtype=torch.long, device=labels.device)
            by_token[at] = slot
            slot = by_token
            ordered = torch.full((num_tokens,), -1, dtype=labels.dtype, device=labels.device)
            ordered[at] = labels
        return cls(
            slot=slot,
            starts=at[starts],
            firsts=at[batch.first_token],
            gold_node=at * width + labels,
            gold_edge=at[k] * width + L + pair,
            gold_node_at=at * L + labels,
            gold_edge_at=at[k] * (L * L) + pair,
            lengths=batch.lengths.clamp(min=2),
            singles=(batch.lengths == 1).nonzero().squeeze(1),
            padding=(~filled[: K * B]).nonzero().squeeze(1),
            labels=ordered,
            num_labels=L,
            rows=B,
            edges=K,
        )


class RowEdges(torch.autograd.Function):
    """scores [N, L + L^2] -> (torch-struct edges [B, K, L, L] (to, from), a view of a
    time-major tensor; the gold score s(y*), a scalar) (module docstring)."""

    @staticmethod
    def forward(
        ctx, scores: Tensor, layout: RowLayout, dtype: torch.dtype | None = None
    ) -> tuple[Tensor, Tensor]:
        N, width = scores.shape
        L, B, K = layout.num_labels, layout.rows, layout.edges
        dtype = dtype or scores.dtype  # the DP's (the scores' own: float32 tables)
        ws = layout.workspace or Workspace()
        exact = ws.empty("scores", (N, width), scores, dtype)  # node + edge summed in dtype:
        exact.copy_(scores)  # in float32 the sums' rounding stalled L-BFGS near the optimum
        node = exact[:, :L]
        pot = ws.empty("pot", (N, L, L), exact)  # (from, to)
        torch.add(exact[:, L:].view(N, L, L), node.unsqueeze(1), out=pot)
        pot[layout.firsts] = node[layout.firsts].unsqueeze(1)
        # memory (from, to), time-major, + the spare slot of the rows' first tokens; the edges
        # are its (to, from) view: the scan's products read either orientation
        edges = ws.empty("edges", (K * B + 1, L, L), exact)
        edges[layout.padding] = 0.0
        edges.index_copy_(0, layout.slot, pot)
        edges = edges[: K * B].view(K, B, L, L)
        edges[0] += node[layout.starts].unsqueeze(2)  # the start scores S[t0_b, from]
        edges[0, layout.singles, :, 1:] = NEG  # one-token rows: the dummy edge (to 0 only)
        flat = exact.view(-1)
        gold = flat[layout.gold_node].sum() + flat[layout.gold_edge].sum()
        ctx.layout, ctx.shape, ctx.dtype = layout, scores.shape, scores.dtype
        return edges.transpose(-1, -2).transpose(0, 1), gold

    @staticmethod
    def backward(ctx, g_edges: Tensor, g_gold: Tensor) -> tuple[Tensor, None, None]:
        layout = ctx.layout
        N, width = ctx.shape
        L, B, K = layout.num_labels, layout.rows, layout.edges
        ws = layout.workspace or Workspace()
        grad = ws.empty("grad", (N, width), g_edges, ctx.dtype)  # the scores' type
        G = g_edges.transpose(0, 1).transpose(-1, -2).reshape(K * B, L, L)  # (from, to)
        slot = layout.slot.clamp(max=K * B - 1)
        per_token = ws.empty("per_token", (N, L, L), G)  # [N, L(from), L(to)]
        torch.index_select(G, 0, slot, out=per_token)
        per_token[layout.starts] = 0.0  # a row's first token has no edge of its own
        node = per_token.sum(dim=1)
        node[layout.starts] += G[:B].sum(dim=2)  # edge 0's start scores: sum over to
        per_token[layout.firsts] = 0.0  # a document's first token: no edge scores
        # the gold indicators in the DP's type, before the cast: a marginal near 1 minus 1
        # keeps its digits (in float32 it would round to 0)
        g = g_gold.to(node.dtype)
        node.view(-1).index_add_(0, layout.gold_node_at, g.expand(len(layout.gold_node_at)))
        per_token.view(-1).index_add_(0, layout.gold_edge_at, g.expand(len(layout.gold_edge_at)))
        grad[:, :L] = node
        grad[:, L:].view(N, L, L).copy_(per_token)
        return grad, None, None


def row_nll(scores: Tensor, layout: RowLayout, dtype: torch.dtype | None = None) -> Tensor:
    """sum_d -log p(y*_d | x_d) over a bucket's rows (scalar), from token scores [N, L + L^2]
    (node, then edge flattened (from, to)), by ``SequentialLinearChain`` with the DP in
    ``dtype`` (default: the scores'); the gradient comes back in the scores' type (in the
    layout's workspace if it has one: valid until the next call on the same layout)."""
    edges, gold = RowEdges.apply(scores, layout, dtype)
    chain = SequentialLinearChain(workspace=layout.workspace)
    logz = chain.sum(edges, lengths=layout.lengths)
    return logz.sum() - gold


def transition_log_potentials(
    node: Tensor, transition: Tensor, batch: FeatureBatch
) -> tuple[Tensor, Tensor]:
    """torch-struct edges [B, N-1, L, L] (to, from) and lengths [B] of one transition matrix
    (module docstring).

    Args:
        node: [N_b, L] node scores of the batch's tokens (batch token order).
        transition: [L, L] (from, to), or anything of L*L elements.
        batch: the layout (``lengths``, ``first_token``, ``flat_positions``).
    """
    N_b, L = node.shape
    B, T = batch.num_docs, batch.max_length
    Tm = max(T, 2)  # torch-struct needs one edge at least
    pos = batch.flat_positions
    if Tm != T:  # (T = 1: every row one token) the positions in a [B, 2] layout
        pos = pos // T * Tm + pos % T
    padded = node.new_zeros(B * Tm, L).index_copy(0, pos, node).view(B, Tm, L)
    first = torch.zeros(B * Tm, dtype=torch.bool, device=node.device)
    first[pos[batch.first_token]] = True
    first = first.view(B, Tm)
    to_from = transition.reshape(L, L).t()  # [L(to), L(from)]
    edges = torch.where(first[:, 1:, None, None], 0.0, to_from)  # [B, Tm-1, L, L]
    edges = edges + padded[:, 1:, :, None]  # + S[t, to]
    lengths = batch.lengths.to(node.device)
    head = first_edge(edges[:, 0], padded[:, 0, None, :], lengths)  # start S[b, 0, from] folded
    edges = torch.cat([head.unsqueeze(1), edges[:, 1:]], dim=1)
    return edges, lengths.clamp(min=2)


def gold_scores(node: Tensor, transition: Tensor, batch: FeatureBatch, labels: Tensor) -> Tensor:
    """s(y*) summed over the batch: node scores of the gold labels plus the transitions between
    consecutive gold labels inside each document (scalar tensor).

    labels: [N_b] long gold label of every token, batch token order.
    """
    L = node.shape[1]
    total = node.gather(1, labels.view(-1, 1)).sum()
    inside = torch.ones(len(labels), dtype=torch.bool, device=labels.device)
    inside[batch.first_token] = False  # tokens with a previous label in their document
    inside[0] = False
    k = inside.nonzero().squeeze(1)
    pairs = labels[k - 1] * L + labels[k]  # (from, to) flattened
    return total + transition.reshape(L * L)[pairs].sum()


def transition_nll(
    node: Tensor,
    transition: Tensor,
    batch: FeatureBatch,
    labels: Tensor,
    scan: str = "log",
) -> Tensor:
    """sum_d -log p(y*_d | x_d) over the batch's rows (scalar), differentiable in ``node`` and
    ``transition``.  ``scan="sequential"``: the forward-backward algorithm over the node scores
    and the one matrix (``decode/transition_scan.py``), without the edge potentials."""
    if scan == "sequential":
        padded, first = padded_nodes(node, batch)
        L = node.shape[1]
        lengths = batch.lengths.to(node.device)
        logz = shared_transition_log_partition(padded, transition.reshape(L, L), lengths, first)
    else:
        edges, lengths = transition_log_potentials(node, transition, batch)
        logz = log_partition_of_edges(edges, lengths, scan)  # [B]
    return logz.sum() - gold_scores(node, transition, batch, labels)


def padded_nodes(node: Tensor, batch: FeatureBatch) -> tuple[Tensor, Tensor]:
    """Node scores [N_b, L] in the batch's padded layout [B, T, L] (0 past each length), and
    [B, T] bool: where a document starts (``first_token``)."""
    B, T, L = batch.num_docs, batch.max_length, node.shape[1]
    pos = batch.flat_positions.to(node.device)
    padded = node.new_zeros(B * T, L).index_copy(0, pos, node).view(B, T, L)
    first = torch.zeros(B * T, dtype=torch.bool, device=node.device)
    first[pos[batch.first_token.to(node.device)]] = True
    return padded, first.view(B, T)
