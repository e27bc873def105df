"""Sparse linear weights of a first-order chain in ``torch.nn.EmbeddingBag`` tables.

Every surface feature f (a row) has a node weight per label and an edge weight per label pair
(Kazama & Torisawa 2007, Table 1: x × y_0 and x × y_-1 × y_0):

    node [F, L]       node[f, j]
    edge [F, L * L]   edge[f, i * L + j]   (from i to j)

The score of label j at token t after label i is  sum_{f in x_t} node[f, j] + edge[f, i*L + j].
Both tables of a feature are one row of a single ``EmbeddingBag(F, L + L * L)`` (``joint``):
``node`` and ``edge`` are its column blocks [:, :L] and [:, L:], views whose rows are strided.
One ``embedding_bag`` call then reads both for a whole batch: ~28 % less time than a call per
table (measured on CoNLL-2003's test documents one at a time: 185 against 256 us a document),
because a token's 90 weights per feature are one contiguous run.  With ``edges=False`` the
features are node features only and the edge table is one row, a label transition matrix shared
by every token (CRFsuite's first-order model; a 45-tag POS tagger would need 2,025 edge weights
per feature otherwise); the two tables are then separate:

    node: EmbeddingBag(F, L)   edge: [1, L * L]   edge[0, i * L + j]

A feature template may make node features only (``edges=false``, ``features/template_language.py``)
beside node + edge ones: ``node_only`` ([F] bool, or None for none) names those rows, whose edge
weights stay zero because no update or gradient writes them (``updates.path_delta``, the CRF's
objective).  ``tables()`` names the node and edge tables in both layouts; code that addresses an
entry by its flat (row-major) index goes through ``flat_at``, which also serves the strided
views.  Tables start at zero (not PyTorch's N(0, 1)), in memory that may take 2 MB pages
(``huge_pages.py``).  No autograd: learners write the tables
directly (``updates.py``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from structperc.model.batch import FeatureBatch
from structperc.model.huge_pages import zeros as huge_page_zeros


class ChainWeights(nn.Module):
    """Node and edge weight tables over ``num_features`` surface features and ``labels``
    (``edges=False``: a transition matrix instead of edge features)."""

    def __init__(self, num_features: int, labels: list[str], edges: bool = True):
        super().__init__()
        self.labels = list(labels)
        self.edges = edges
        L = len(labels)
        if edges:  # node | edge weights of each feature in one row
            self.joint = zero_bag(num_features, L + L * L)
        else:
            self.node = zero_bag(num_features, L)
            self.edge = zero_bag(1, L * L)
        self.node_only: Tensor | None = None  # [F] bool: rows without edge weights

    def set_node_only(self, mask) -> ChainWeights:
        """Rows [F] (bool, or None: none) whose features are node features only; their edge
        weights are never written.  Meaningful with edge features only."""
        if mask is not None and self.edges:
            mask = torch.as_tensor(mask, dtype=torch.bool)
            if mask.shape != (self.num_features,):
                raise ValueError(f"node_only mask of shape {list(mask.shape)}, expected [F]")
            self.node_only = mask if bool(mask.any()) else None
        return self

    @property
    def num_labels(self) -> int:
        return len(self.labels)

    @property
    def num_features(self) -> int:
        return (self.joint if self.edges else self.node).num_embeddings

    @property
    def dense_tables(self) -> list[Tensor]:
        """The contiguous weight tensors that hold every table ([joint] or [node, edge]): what an
        optimizer over all weights (the CRF's) updates in place."""
        if self.edges:
            return [self.joint.weight]
        return [self.node.weight, self.edge.weight]

    def tables(self) -> dict[str, Tensor]:
        """The weight tensors by name ("node" [F, L], "edge" [F, L*L] or [1, L*L]); with edge
        features, column blocks of ``joint`` (strided rows: see ``flat_at``)."""
        if self.edges:
            L = self.num_labels
            joint = self.joint.weight
            return {"node": joint[:, :L], "edge": joint[:, L:]}
        return {"node": self.node.weight, "edge": self.edge.weight}

    def token_scores(self, batch: FeatureBatch) -> tuple[Tensor, Tensor]:
        """Node scores [N, L] and edge scores [N, L, L] of the batch's N tokens."""
        return self.csr_scores(batch.ids, batch.offsets, batch.values)

    def csr_scores(
        self, ids: Tensor, offsets: Tensor, values: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """Node [N, L] and edge [N, L, L] scores of N tokens given as CSR rows (ids [nnz],
        offsets [N + 1], ``values`` [nnz] or None: all 1); with edge features, views of one
        [N, L + L*L] lookup."""
        L = self.num_labels
        offsets = offsets_like(ids, offsets)
        if self.edges:
            both = table_sums(self.joint, ids, offsets, values)  # [N, L + L*L]
            return both[:, :L], both[:, L:].view(-1, L, L)
        node = table_sums(self.node, ids, offsets, values)
        return node, self.edge.weight.view(1, L, L).expand(len(node), L, L)

    def potentials(self, batch: FeatureBatch) -> Tensor:
        """Potentials [B, T, L, L] of a padded batch (``chain_potentials``)."""
        return chain_potentials(*self.token_scores(batch), batch)


def zero_bag(rows: int, width: int) -> nn.EmbeddingBag:
    """An ``EmbeddingBag(rows, width)`` of zeros, without autograd, its table in memory that
    may take huge pages (``huge_pages.zeros``: the steps read and write its rows at random)."""
    table = huge_page_zeros((rows, width))
    return nn.EmbeddingBag(rows, width, mode="sum", _weight=table).requires_grad_(False)


def table_sums(
    table: nn.Module, ids: Tensor, offsets: Tensor, values: Tensor | None = None
) -> Tensor:
    """Σ of the rows of ``table`` named by each CSR row (ids [nnz], offsets [n + 1]), each row
    times its ``values`` entry [nnz] where given: [n, D].  ``table`` is an ``EmbeddingBag`` or a
    read-only ``CompactTable`` (a model loaded for tagging, ``model/compact_table.py``), which
    computes the same sums of binary features."""
    if isinstance(table, nn.EmbeddingBag):
        return F.embedding_bag(
            ids,
            table.weight,
            offsets,
            mode="sum",
            include_last_offset=True,
            per_sample_weights=values,
        )
    if values is not None:
        raise ValueError("a compact (tagging) table reads binary features only")
    return table(ids, offsets)


def offsets_like(ids: Tensor, offsets: Tensor) -> Tensor:
    """CSR ``offsets`` [n + 1] in the integer type of ``ids`` [nnz].

    ``embedding_bag`` given int32 ids (``FeatureMatrix``) with int64 offsets first copies the
    ids to int64: a 155 MB temporary in every lookup over the CRF's full training set (19.3 M
    ids), ~15 us of every per-document lookup.  Offsets are at most nnz, so they fit.
    """
    return offsets if offsets.dtype == ids.dtype else offsets.to(ids.dtype)


def flat_at(table: Tensor, index: Tensor) -> tuple[Tensor, Tensor]:
    """A 1-D view over ``table`` [R, W] and the positions in it of the flat (row-major) indices
    ``index`` (``row * W + column``): ``flat[positions]`` reads and writes those entries.

    For a contiguous table that is ``table.view(-1)`` and ``index``.  A table whose rows are
    strided (stride S > W: a column block of a wider table, as ``ChainWeights.tables()`` gives
    with edge features) cannot be flattened without a copy; the 1-D view then spans its rows in
    the storage, (R - 1) * S + W elements, and an index moves by (S - W) per row before it.
    """
    if table.is_contiguous():
        return table.view(-1), index
    R, W = table.shape
    S = table.stride(0)
    if table.stride(1) != 1 or S < W:
        raise ValueError(f"flat_at: a table with strides {table.stride()} (shape {[R, W]})")
    flat = table.as_strided(((R - 1) * S + W,), (1,))
    return flat, index + torch.div(index, W, rounding_mode="floor") * (S - W)


def bag_sums(table: Tensor, ids: Tensor, offsets: Tensor, values: Tensor | None = None) -> Tensor:
    """Σ of the rows of ``table`` [F, D] named by each CSR row (ids [nnz], offsets [n + 1]),
    times ``values`` [nnz] where given: [n, D] (what ``EmbeddingBag(mode="sum")`` computes), on
    the table's device."""
    ids = ids.to(table.device)
    return F.embedding_bag(
        ids,
        table,
        offsets_like(ids, offsets.to(table.device)),
        mode="sum",
        include_last_offset=True,
        per_sample_weights=None if values is None else values.to(table.device, table.dtype),
    )


def chain_potentials(node: Tensor, edge: Tensor, batch: FeatureBatch) -> Tensor:
    """Potentials [B, T, L, L] (from, to) of a batch from its token scores, out of place (autograd
    runs through it: the CRF).

    Args:
        node: [N, L] node scores of the batch's tokens.
        edge: [N, L, L] edge scores (from, to).
        batch: the batch's layout (``first_token``, ``flat_positions``, ``lengths``).

    potentials[b, t, i, j] = node[t, j] + edge[t, i, j] for t >= 1; at a document's first token
    there is no previous label, so every row holds the node scores.  Padding positions are 0.
    """
    N, L = node.shape
    scores = edge + node.unsqueeze(1)  # [N, L, L], a fresh tensor: written in place below
    first = batch.first_token  # [B]
    scores[first] = node[first].unsqueeze(1).expand(len(first), L, L)
    B, T = batch.num_docs, batch.max_length
    if B == 1:
        return scores.unsqueeze(0)
    out = scores.new_zeros(B * T, L, L).index_copy(0, batch.flat_positions, scores)
    return out.view(B, T, L, L)
