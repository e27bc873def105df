"""Documents packed end to end into rows of 2^k + 1 tokens for the CRF's DP (L-BFGS).

torch-struct's ``LinearChain`` pads every batch's N - 1 edges up to a power of two (its binary-
tree scan), so buckets of documents of similar length still do ~1.5 times the DP work their
tokens need on CoNLL-2003 (305,408 chart rows for 203,621 tokens in 8,000-token buckets).  Rows
of several documents, each row exactly 2^k + 1 tokens long where it is full, leave almost nothing
to pad.

Packing is exact because ``model.weights.chain_potentials`` gives a document's first token the
same scores from every previous label: pot[t, i, j] = node[t, j] for all i.  At such a position
t the chain factorises.  With alpha_{t-1} the forward scores of the row up to t - 1,

    alpha_t[j] = logsumexp_i (alpha_{t-1}[i] + node[t, j]) = log Z_{<t} + node[t, j],

so log Z of a row is the sum of its documents' log Z, its gold score the sum of theirs, and its
negative log-likelihood the sum of theirs.  The marginals inside a document are its own; the
gradient of the row's log Z with respect to node[t, j] at a document start sums over i the edge
marginals p(y_{t-1} = i, y_t = j) = p(y_{t-1} = i) p(y_t = j), which is p(y_t = j), the start
marginal.  So the objective and the gradient equal the unpacked ones (within rounding: the sums
run in another order).

Rows are filled best-fit decreasing (longest document first), each up to ``row_tokens(lengths)``
= 2^k + 1 for the smallest k with 2^k >= longest length - 1, so that no document is split.
"""

from __future__ import annotations

import bisect

import torch

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
    )
