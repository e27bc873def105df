"""The CRF's training documents in DP buckets: by length, or packed end to end in rows.

A ``Bucket`` is the documents one call of the DP scans together: their layout, gold labels and
global token positions.  ``make_buckets`` forms them two ways.

**By length** (``length_buckets``): documents sorted by length, grouped so that B * (longest
length) stays within a budget of padded tokens.  torch-struct's ``LinearChain`` pads every
batch's N - 1 edges up to a power of two (its binary-tree scan), so such buckets still do ~1.5
times the DP work their tokens need on CoNLL-2003 (305,408 chart rows for 203,621 tokens in
8,000-token buckets).

**Packed** (``packed_groups``): rows of several documents end to end, each row exactly 2^k + 1
tokens long where it is full, leave almost nothing to pad.  Packing is exact because
``model.weights.chain_potentials`` gives a document's first token the same scores from every
previous label: pot[t, i, j] = node[t, j] for all i.  At such a position t the chain factorises.
With alpha_{t-1} the forward scores of the row up to t - 1,

    alpha_t[j] = logsumexp_i (alpha_{t-1}[i] + node[t, j]) = log Z_{<t} + node[t, j],

so log Z of a row is the sum of its documents' log Z, its gold score the sum of theirs, and its
negative log-likelihood the sum of theirs.  The marginals inside a document are its own; the
gradient of the row's log Z with respect to node[t, j] at a document start sums over i the edge
marginals p(y_{t-1} = i, y_t = j) = p(y_{t-1} = i) p(y_t = j), which is p(y_t = j), the start
marginal.  So the objective and the gradient equal the unpacked ones (within rounding: the sums
run in another order).

Rows are filled best-fit decreasing (longest document first), each up to ``row_tokens(lengths)``
= 2^k + 1 for the smallest k with 2^k >= longest length - 1, so that no document is split.  The
sequential scan (``decode/sequential_scan.py``) steps through a row's positions whatever the
number of rows: for it, rows as long as the longest document, all in one bucket.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from structperc.crf.edges import RowLayout
from structperc.crf.sparse import TransposedIndex
from structperc.features.extract import FeatureMatrix
from structperc.model.batch import FeatureBatch, make_batch


def row_tokens(lengths: list[int]) -> int:
    """2^k + 1 for the smallest k with 2^k >= max(lengths) - 1: a full row has 2^k edges."""
    edges = max(max(lengths), 2) - 1
    return (1 << (edges - 1).bit_length()) + 1


def pack_documents(lengths: list[int], capacity: int) -> list[list[int]]:
    """Rows of document indices, each of at most ``capacity`` tokens, every document once.

    Best-fit decreasing: documents from the longest, each into the row with the least room that
    still holds it (a new row if none does); O(D log R) searches over the rows' free room.  Rows
    are returned fullest first, their documents in the order they were placed.
    """
    if lengths and max(lengths) > capacity:
        raise ValueError(f"a document of {max(lengths)} tokens does not fit rows of {capacity}")
    rows: list[list[int]] = []
    room: list[tuple[int, int]] = []  # (free tokens, row), sorted
    for d in sorted(range(len(lengths)), key=lambda d: (-lengths[d], d)):
        at = bisect.bisect_left(room, (lengths[d], -1))
        if at < len(room):
            free, r = room.pop(at)
        else:
            free, r = capacity, len(rows)
            rows.append([])
        rows[r].append(d)
        bisect.insort(room, (free - lengths[d], r))
    free_of = {r: free for free, r in room}
    return [rows[r] for r in sorted(range(len(rows)), key=lambda r: (free_of[r], r))]


def packed_batch(features: FeatureMatrix, rows: list[list[int]]) -> FeatureBatch:
    """A ``FeatureBatch`` whose sequences are the rows: each row's documents end to end.

    ``lengths`` [R] and ``flat_positions`` [N] lay out the rows; ``first_token`` [D] holds the
    first token of every document of every row (D >= R), where ``chain_potentials`` writes the
    start scores.  Tokens are in row order, documents in each row's order.
    """
    docs = [d for row in rows for d in row]
    batch = make_batch(features, docs)  # tokens of docs in this order, first_token per document
    row_of_doc = torch.repeat_interleave(torch.tensor([len(row) for row in rows]))  # [D]
    lengths = torch.zeros(len(rows), dtype=torch.long).index_add_(0, row_of_doc, batch.lengths)
    T = int(lengths.max())
    row_of_token = torch.repeat_interleave(torch.arange(len(rows)), lengths)  # [N]
    row_start = torch.zeros(len(rows), dtype=torch.long)
    torch.cumsum(lengths[:-1], 0, out=row_start[1:])
    position = torch.arange(len(row_of_token)) - row_start[row_of_token]
    return FeatureBatch(
        ids=batch.ids,
        offsets=batch.offsets,
        lengths=lengths,
        first_token=batch.first_token,
        flat_positions=row_of_token * T + position,
        values=batch.values,
    )


@dataclass
class Bucket:
    """Documents decoded together: their batch layout, gold labels and global token positions.

    batch:  FeatureBatch of the documents (lengths, layout maps; the CSR features only where a
            bucket has its own ``index``: full-batch L-BFGS looks up all tokens at once).
    labels: [N_b] long gold labels of the bucket's tokens (batch token order).
    tokens: [N_b] long positions of the bucket's tokens in the whole training set.
    index:  X^T of the bucket's tokens (mini-batch training only).
    layout: where its tokens go in the sequential scan's edges (``edges.RowLayout``), made
            by ``bucket_loss`` on first use and kept (it depends on the layout alone).
    offset: [N_b, L] float64 cost offsets of the node scores, or None (``crf/targets.py``).
    mask:   [N_b, L] float64 restriction of a partial annotation (0 or ``NEG``), or None.
    known:  [N_b] bool, the tokens whose label is known, or None (all of them).
    """

    batch: FeatureBatch
    labels: Tensor
    tokens: Tensor
    index: TransposedIndex | None = None
    layout: RowLayout | None = None
    offset: Tensor | None = None
    mask: Tensor | None = None
    known: Tensor | None = None


def length_buckets(lengths: list[int], budget: int) -> list[list[int]]:
    """Documents sorted by length, grouped so that B * (longest length) <= ``budget``.

    A document longer than the budget gets a bucket of its own.
    """
    order = sorted(range(len(lengths)), key=lambda d: (lengths[d], d))
    buckets: list[list[int]] = []
    current: list[int] = []
    for d in order:
        if current and (len(current) + 1) * lengths[d] > budget:
            buckets.append(current)
            current = []
        current.append(d)
    if current:
        buckets.append(current)
    return buckets


def packed_groups(
    lengths: list[int], budget: int, sequential: bool = False
) -> list[list[list[int]]]:
    """Rows of documents end to end (``pack_documents``), ``budget // row length`` rows (at
    least one) to a bucket.

    ``sequential``: the DP scans position by position (``decode/sequential_scan.py``), so its
    steps are the row length whatever the number of rows: rows as long as the longest document,
    all in one bucket (``budget`` is not read).
    """
    if not lengths:  # an empty shard (more ranks than documents)
        return []
    if sequential:
        rows = pack_documents(lengths, max(max(lengths), 2))
        return [rows]
    capacity = row_tokens(lengths)
    rows = pack_documents(lengths, capacity)
    per = max(1, budget // capacity)
    return [rows[i : i + per] for i in range(0, len(rows), per)]


def make_buckets(
    features: FeatureMatrix,
    labels: Tensor,
    budget: int,
    *,
    with_index: bool,
    num_features: int,
    device: str | torch.device,
    packed: bool = False,
    sequential: bool = False,
    targets=None,
) -> list[Bucket]:
    """``Bucket``s of all documents of ``features`` (gold ``labels`` [N] over all tokens;
    ``targets``: the ``crf.targets.LikelihoodTargets`` of partial annotation and costs).

    ``packed``: the bucket's sequences are rows of several documents end to end (the module
    docstring: the same objective and gradient with a third less DP work on CoNLL-2003); else
    documents of similar length, one a sequence.  ``sequential``: packed rows for the sequential
    scan (``packed_groups``).
    """
    doc_offsets = features.doc_offsets
    lengths = (doc_offsets[1:] - doc_offsets[:-1]).tolist()
    if packed:
        layouts = [
            (packed_batch(features, rows), [d for row in rows for d in row])
            for rows in packed_groups(lengths, budget, sequential)
        ]
    else:
        layouts = [(make_batch(features, docs), docs) for docs in length_buckets(lengths, budget)]
    out = []
    for batch, docs in layouts:
        tokens = torch.cat(
            [torch.arange(int(doc_offsets[d]), int(doc_offsets[d + 1])) for d in docs]
        )
        gold_tokens = labels[tokens]  # [N_b]
        if with_index:
            index = TransposedIndex.build(batch.ids, batch.offsets, num_features, batch.values).to(
                device
            )
        else:  # full batch: one lookup over all tokens, so keep the layout, not a copy of X
            index, batch = None, layout_only(batch)
        bucket = Bucket(
            batch=batch.to(device),
            labels=gold_tokens.to(device),
            tokens=tokens.to(device),
            index=index,
        )
        if targets is not None:
            if targets.offset is not None:
                bucket.offset = targets.offset[tokens].to(device)
            mask = targets.mask(tokens)
            if mask is not None:
                bucket.mask = mask.to(device)
                bucket.known = targets.known[tokens].to(device)
        out.append(bucket)
    return out


def layout_only(batch: FeatureBatch) -> FeatureBatch:
    """``batch`` without its feature ids (every token's CSR row empty): what the DP reads
    (lengths, first tokens, padded positions), without a second copy of X [nnz]."""
    return replace(batch, ids=batch.ids[:0], offsets=torch.zeros_like(batch.offsets), values=None)
