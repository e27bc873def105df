"""The sparse token x feature matrix X against the CRF's weight tables: lookups and support.

**Lookups.**  The token scores of the CRF are sparse products  S = X W  of the token x feature
incidence matrix X [N, F] (CSR: ``ids``, ``offsets``; what ``EmbeddingBag(mode="sum")``
computes) and a weight table W [F, D] (D = L + L*L for ``ChainWeights.joint``, node | edge; L
for the node table alone; X holds each occurrence's value where features are real-valued,
``FeatureMatrix.values``).  The gradient is  dW = X^T dS.  PyTorch's own ``embedding_bag``
backward scatters every (id, row) pair, several times slower on a CPU than the forward gather;
here X^T is built once (``TransposedIndex``: for every feature, the tokens where it fires), so
the backward is the same gather: ``embedding_bag(tokens, dS, feature_offsets)``.  ``lookup``
returns a dense [F, D] gradient when the index covers every feature (full-batch training), else
a coalesced sparse COO gradient over the features present (mini-batches), which the optimizer
adds in place (``index_add_``).

**Support** (``learner.support=observed``: CRFsuite's model).  The CRF's tables hold a weight for
every (feature, label) pair (and, with edge features, every (feature, previous label, label)
triple), 2.8 M (27.9 M) on CoNLL-2003.  CRFsuite's default (``feature.possible_states=0``) keeps
only the pairs seen in training, the non-zero pattern of X^T Y,

    node support  = {(f, y_t)             : feature f fires at a training token t},
    edge support  = {(f, y_{t-1} L + y_t) : f fires at t, t not its document's first token},

(506 k weights on CoNLL-2003; the one transition matrix of ``features.edges=false`` is kept
whole), with the weights that are not 0 where a saved model is continued (``with_nonzero``),
and every other weight stays 0.  ``Support`` holds those sets as boolean
masks shaped like ``ChainWeights.dense_tables`` (one [F, L + L*L] mask over the joint node |
edge table, or [F, L] and [1, L*L] without edge features): L-BFGS then keeps its parameters,
gradients and history (2 m + 4 vectors) in the reduced space (``gather``), and the tables are
written back (``scatter_``) before each evaluation of the objective.  The objective and gradient
restricted to the support are those of the full model with the other weights fixed at 0 (the
prior adds nothing for them), so L-BFGS minimises the penalised likelihood over the support
exactly.  On several ranks the masks are the union over the shards (all-reduced), so every rank
moves the same weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor
from torch.nn.functional import embedding_bag

from structperc.distributed import SERIAL, Group
from structperc.features.extract import FeatureMatrix
from structperc.model.weights import ChainWeights, bag_sums


@dataclass
class TransposedIndex:
    """X^T of a set of N tokens in CSR form: the tokens of each feature present.

    rows:         [U] long, the distinct feature ids present, ascending.
    tokens:       [nnz] int32, token positions 0..N-1, grouped by feature (CSR values).
    offsets:      [U + 1] int32, feature rows[u] owns tokens[offsets[u]:offsets[u + 1]].
    num_features: F, the table size.
    values:       [nnz] float32, the value of each occurrence in ``tokens``' order (X's
                  entries), or None: all 1.

    int32 (``embedding_bag`` takes int32 indices with int32 offsets) halves what the index holds
    beside the tables: 4 bytes per feature occurrence (nnz < 2^31).  ``build`` runs in chunks.
    """

    rows: Tensor
    tokens: Tensor
    offsets: Tensor
    num_features: int
    values: Tensor | None = None

    @classmethod
    def build(
        cls,
        ids: Tensor,
        offsets: Tensor,
        num_features: int,
        values: Tensor | None = None,
        chunk: int = 1 << 20,
    ) -> TransposedIndex:
        """From CSR token features ``ids`` [nnz], ``offsets`` [N + 1] (and their ``values``
        [nnz]); O(nnz log chunk).

        A counting sort in chunks of occurrences, so that no full-length int64 array is ever
        made (on CoNLL-2003 the peak memory of a CRF run was this build's): feature f's
        segment of X^T starts at the number of occurrences of the features below f; a chunk's
        occurrences, stably sorted by id, go after the ones of the same feature in earlier
        chunks.  Tokens stay ascending within each feature.  The token of occurrence k is the
        CSR row holding it, ``searchsorted(offsets, k, right) - 1``.
        """
        if len(ids) >= 2**31:
            raise ValueError(f"{len(ids)} feature occurrences: X^T holds int32 positions")
        counts = torch.bincount(ids, minlength=num_features)  # [F] occurrences per feature
        segment = torch.cumsum(counts, 0) - counts  # [F] where each feature's tokens start
        seen = torch.zeros_like(counts)  # [F] occurrences placed by earlier chunks
        tokens = torch.empty(len(ids), dtype=torch.int32)  # [nnz]
        moved = None if values is None else torch.empty_like(values)  # [nnz] in X^T's order
        for lo in range(0, len(ids), chunk):
            sorted_ids, order = torch.sort(ids[lo : lo + chunk].long(), stable=True)
            present, per_id = torch.unique_consecutive(sorted_ids, return_counts=True)
            first = torch.cumsum(per_id, 0) - per_id  # [u] start of each id in the chunk
            rank = torch.arange(len(order)) - torch.repeat_interleave(first, per_id)
            where = segment[sorted_ids] + seen[sorted_ids] + rank  # [c] places in X^T
            token = torch.searchsorted(offsets, order + lo, right=True, out_int32=True).sub_(1)
            tokens[where] = token
            if moved is not None:
                moved[where] = values[lo : lo + chunk][order]
            seen.index_add_(0, present, per_id)
        rows = torch.nonzero(counts).squeeze(1)  # [U] features present, ascending
        row_offsets = torch.zeros(len(rows) + 1, dtype=torch.int32)
        torch.cumsum(counts[rows], 0, out=row_offsets[1:])
        return cls(rows, tokens, row_offsets, num_features, moved)

    @property
    def covers_all(self) -> bool:
        """Every feature 0..F-1 is present (rows == arange(F))."""
        return len(self.rows) == self.num_features

    def to(self, device: torch.device | str) -> TransposedIndex:
        values = None if self.values is None else self.values.to(device)
        return TransposedIndex(
            self.rows.to(device),
            self.tokens.to(device),
            self.offsets.to(device),
            self.num_features,
            values,
        )

    def scores(
        self, table: Tensor, ids: Tensor, offsets: Tensor, values: Tensor | None = None
    ) -> Tensor:
        """Token scores [N, D] = X W of the tokens this index was built from (``lookup``)."""
        return lookup(table, ids, offsets, self, values)

    def gather(self, grad_tokens: Tensor) -> Tensor:
        """X^T g restricted to ``rows``: [U, D] from token gradients [N, D]."""
        values = self.values
        return embedding_bag(
            self.tokens,
            grad_tokens,
            self.offsets,
            mode="sum",
            include_last_offset=True,
            per_sample_weights=None if values is None else values.to(grad_tokens.dtype),
        )


class _Lookup(torch.autograd.Function):
    @staticmethod
    def forward(ctx, table: Tensor, ids: Tensor, offsets: Tensor, index: TransposedIndex, values):
        ctx.index = index
        ctx.table_shape = table.shape
        return bag_sums(table, ids, offsets, values)

    @staticmethod
    def backward(ctx, grad: Tensor):
        index: TransposedIndex = ctx.index
        rows = index.gather(grad.contiguous())  # [U, D]
        return table_gradient(index, rows, ctx.table_shape), None, None, None, None


def table_gradient(index: TransposedIndex, rows: Tensor, shape: torch.Size) -> Tensor:
    """The gradient of a table of ``shape`` [F, D] from ``rows`` [U, D], the gradients of the
    features ``index.rows``: the rows themselves when they are every feature, else a coalesced
    sparse COO tensor over them."""
    if index.covers_all:
        return rows
    return torch.sparse_coo_tensor(
        index.rows.unsqueeze(0), rows, shape, is_coalesced=True, check_invariants=False
    )


def lookup(
    table: Tensor,
    ids: Tensor,
    offsets: Tensor,
    index: TransposedIndex,
    values: Tensor | None = None,
) -> Tensor:
    """Token scores [N, D] = X W, differentiable in ``table`` [F, D].

    Args:
        table: [F, D] weights (e.g. ``weights.dense_tables[0].detach().requires_grad_()``).
        ids: [nnz] feature ids, offsets: [N + 1] (``include_last_offset=True`` CSR).
        index: ``TransposedIndex.build(ids, offsets, F, values)``, for the backward pass.
        values: [nnz] the entries of X (None: all 1).
    """
    return _Lookup.apply(table, ids, offsets, index, values)


CHUNK_TOKENS = 8_192  # tokens per step of the mask build: its int64 temporaries stay ~25 MB


class Support:
    """Boolean masks shaped like ``ChainWeights.dense_tables`` of the weights that move (module
    docstring)."""

    def __init__(self, masks: list[Tensor]):
        self.masks = masks

    @classmethod
    def observed(
        cls,
        weights: ChainWeights,
        features: FeatureMatrix,
        labels: Tensor,
        group: Group = SERIAL,
        allowed: Tensor | None = None,
    ) -> Support:
        """The (feature, label) pairs of ``features`` with gold ``labels`` [N] (CPU tensors),
        and with edge features the (feature, previous label, label) triples.  With a partial
        annotation (``allowed`` [N, L]) an open token observes every label it allows with each
        of its features (the edge triples: of known neighbours alone)."""
        L, F = weights.num_labels, weights.num_features
        node = torch.zeros(F * L, dtype=torch.bool)
        edge = torch.zeros(F * L * L if weights.edges else L * L, dtype=torch.bool)
        if not weights.edges:
            edge[:] = True  # the one transition matrix: every label pair
        ids, offsets, doc_offsets = features.ids, features.offsets, features.doc_offsets
        first = torch.zeros(len(labels), dtype=torch.bool)
        first[doc_offsets[:-1][doc_offsets[:-1] < len(labels)]] = True
        previous = torch.roll(labels, 1)
        for start in range(0, len(labels), CHUNK_TOKENS):
            stop = min(start + CHUNK_TOKENS, len(labels))
            a, b = int(offsets[start]), int(offsets[stop])
            counts = offsets[start + 1 : stop + 1] - offsets[start:stop]  # [n]
            token = torch.repeat_interleave(torch.arange(start, stop), counts)  # [nnz]
            f = ids[a:b].long()
            node[f * L + labels[token]] = True
            if allowed is not None:  # the open tokens: every label they allow
                rows = allowed[token]  # [nnz, L]
                many = rows.sum(1) > 1
                pair, label = rows[many].nonzero(as_tuple=True)
                node[f[many][pair] * L + label] = True
            if weights.edges:
                inside = ~first[token]
                if allowed is not None:  # known pairs alone
                    one = allowed.sum(1) == 1
                    inside &= one[token] & one[torch.clamp(token - 1, min=0)]
                t = token[inside]
                edge[(f[inside] * L + previous[t]) * L + labels[t]] = True
        masks = [node.view(F, L), edge.view(-1, L * L)]
        if weights.edges:  # one mask over the joint table (``ChainWeights.dense_tables``)
            masks = [torch.cat(masks, dim=1)]
        if group.parallel:  # the union over the shards
            counts = [m.to(torch.float32) for m in masks]
            group.all_sum_(*counts)
            masks = [c > 0 for c in counts]
        return cls(masks)

    def with_nonzero(self, tables: list[Tensor]) -> Support:
        """This support and every weight of ``tables`` that is not 0: where training starts
        from a saved model (``trainer.init_from``), its weights stay trainable rather than
        being zeroed for want of an observation in the new data (from zero tables: the same
        support)."""
        return Support([m | (t != 0).to(m.device) for m, t in zip(self.masks, tables, strict=True)])

    def to(self, device: torch.device | str) -> Support:
        return Support([m.to(device) for m in self.masks])

    @property
    def size(self) -> int:
        return sum(int(m.sum()) for m in self.masks)

    def gather(self, tables: list[Tensor]) -> list[Tensor]:
        """The supported entries of each table, 1-D copies."""
        return [t[m] for t, m in zip(tables, self.masks, strict=True)]

    def scatter_(self, tables: list[Tensor], values: list[Tensor]) -> None:
        """Write ``values`` (``gather``'s layout) into the tables' supported entries."""
        with torch.no_grad():
            for t, m, v in zip(tables, self.masks, values, strict=True):
                t[m] = v

    def zero_outside_(self, tables: list[Tensor]) -> None:
        """Set every weight outside the support to 0 (where training starts)."""
        with torch.no_grad():
            for t, m in zip(tables, self.masks, strict=True):
                t.masked_fill_(~m, 0.0)
