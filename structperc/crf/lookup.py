"""Differentiable sparse lookups into the weight tables, with a fast (transposed) backward pass.

The token scores of the CRF are sparse products  S = X W  of the token x feature incidence matrix
X [N, F] (CSR: ``ids``, ``offsets``; what ``EmbeddingBag(mode="sum")`` computes) and a weight table
W [F, D] (D = L for node, L*L for edge weights).  The gradient is  dW = X^T dS.  PyTorch's own
``embedding_bag`` backward scatters every (id, row) pair, several times slower on a CPU than the
forward gather; here X^T is built once (``TransposedIndex``: for every feature, the tokens where
it fires), so the backward is the same gather: ``embedding_bag(tokens, dS, feature_offsets)``.

``lookup`` returns a dense [F, D] gradient when the index covers every feature (full-batch
training), else a coalesced sparse COO gradient over the features present (mini-batches), which
the optimizer adds in place (``index_add_``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor


@dataclass
class TransposedIndex:
    """X^T of a set of N tokens in CSR form: the tokens of each feature present.

    rows:         [U] long, the distinct feature ids present, ascending.
    tokens:       [nnz] long, token positions 0..N-1, grouped by feature (CSR values).
    offsets:      [U + 1] long, feature rows[u] owns tokens[offsets[u]:offsets[u + 1]].
    num_features: F, the table size.
    """

    rows: Tensor
    tokens: Tensor
    offsets: Tensor
    num_features: int

    @classmethod
    def build(cls, ids: Tensor, offsets: Tensor, num_features: int) -> TransposedIndex:
        """From CSR token features ``ids`` [nnz], ``offsets`` [N + 1]; O(nnz log nnz)."""
        n_tokens = len(offsets) - 1
        counts = offsets[1:] - offsets[:-1]  # [N]
        token_of = torch.repeat_interleave(torch.arange(n_tokens), counts)  # [nnz]
        sorted_ids, order = torch.sort(ids.long(), stable=True)
        rows, per_row = torch.unique_consecutive(sorted_ids, return_counts=True)
        row_offsets = torch.zeros(len(rows) + 1, dtype=torch.long)
        torch.cumsum(per_row, 0, out=row_offsets[1:])
        return cls(rows, token_of[order], row_offsets, num_features)

    @property
    def covers_all(self) -> bool:
        """Every feature 0..F-1 is present (rows == arange(F))."""
        return len(self.rows) == self.num_features

    def to(self, device: torch.device | str) -> TransposedIndex:
        return TransposedIndex(
            self.rows.to(device), self.tokens.to(device), self.offsets.to(device), self.num_features
        )

    def gather(self, grad_tokens: Tensor) -> Tensor:
        """X^T g restricted to ``rows``: [U, D] from token gradients [N, D]."""
        return F.embedding_bag(
            self.tokens, grad_tokens, self.offsets, mode="sum", include_last_offset=True
        )


class _Lookup(torch.autograd.Function):
    @staticmethod
    def forward(ctx, table: Tensor, ids: Tensor, offsets: Tensor, index: TransposedIndex):
        ctx.index = index
        ctx.table_shape = table.shape
        return F.embedding_bag(ids, table, offsets, mode="sum", include_last_offset=True)

    @staticmethod
    def backward(ctx, grad: Tensor):
        index: TransposedIndex = ctx.index
        rows = index.gather(grad.contiguous())  # [U, D]
        if index.covers_all:
            return rows, None, None, None
        sparse = torch.sparse_coo_tensor(
            index.rows.unsqueeze(0),
            rows,
            ctx.table_shape,
            is_coalesced=True,
            check_invariants=False,
        )
        return sparse, None, None, None


def lookup(table: Tensor, ids: Tensor, offsets: Tensor, index: TransposedIndex) -> Tensor:
    """Token scores [N, D] = X W, differentiable in ``table`` [F, D].

    Args:
        table: [F, D] weights (e.g. ``weights.node.weight.detach().requires_grad_()``).
        ids: [nnz] feature ids, offsets: [N + 1] (``include_last_offset=True`` CSR).
        index: ``TransposedIndex.build(ids, offsets, F)``, for the backward pass.
    """
    return _Lookup.apply(table, ids, offsets, index)
