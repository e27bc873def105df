"""The CRF with one transition matrix (``features.edges=false``) straight into torch-struct's
layout.

With node scores S [N, L] and one transition matrix A [L, L] (from, to) the potentials of
``model.weights.chain_potentials`` are

    pot[t, i, j] = S[t, j] + A[i, j]      (t not a document's first token),
    pot[t, i, j] = S[t, j]                (t a document's first token: no previous label),

and ``adapter.to_log_potentials`` turns them into torch-struct's edges [B, N-1, L(to), L(from)]
with the first token's scores folded into edge 0.  ``transition_log_potentials`` writes those
edges directly,

    edge[b, t-1, j, i] = S[b, t, j] + [t not first] A[i, j] + [t = 1] S[b, 0, i],

from the padded node scores [B, T, L] (L numbers a token instead of L^2): no [B, T, L, L]
potentials, no transposed copy, no masked padding in between (positions past a row's length hold
anything; torch-struct and ``chain.ScaledLinearChain`` never read them).  A row of one token gets
``adapter``'s dummy edge.  The gold score is summed from S and A alone,

    s(y*) = sum_t S[t, y*_t] + sum_{t not first} A[y*_{t-1}, y*_t],

so ``transition_nll`` = log Z - s(y*) equals ``adapter.nll`` of ``chain_potentials`` (a test
compares both, and their gradients) with a fraction of the memory traffic: on the packed
CoNLL-2003 buckets the DP's glue (potentials, layout, gold scores, their backward) was about a
third of an L-BFGS iteration with ``features.edges=false``.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch_struct import LogSemiring

from structperc.crf.adapter import first_edge, log_partition_of_edges
from structperc.model.batch import FeatureBatch


def transition_log_potentials(
    node: Tensor, transition: Tensor, batch: FeatureBatch
) -> tuple[Tensor, Tensor]:
    """torch-struct edges [B, N-1, L, L] (to, from) and lengths [B] (module docstring).

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
    semiring: type[LogSemiring] = LogSemiring,
) -> Tensor:
    """sum_d -log p(y*_d | x_d) over the batch's rows (scalar), differentiable in ``node`` and
    ``transition``."""
    edges, lengths = transition_log_potentials(node, transition, batch)
    logz = log_partition_of_edges(edges, lengths, semiring)  # [B]
    return logz.sum() - gold_scores(node, transition, batch, labels)
