"""A read-only feature table without its zero rows and columns: a saved model loaded for tagging.

A trained table is mostly zeros, since the perceptron family writes a weight only where an
update touched it.  The column tagger's chunker is a [195,941, 506] table (397 MB, more than
torch and the rest of a tagging process together) in which 122,082 rows and 259 columns (label
pairs the training data never joined are 0 in every row) hold a weight; the main job's is
[309,779, 90] with 228,711 such rows.  ``CompactTable`` keeps the dense block of those rows and
columns (the chunker's: 127 MB; the main job's: 82 MB), a map from feature id to row in it,
where every all-zero row goes to one row of zeros, and the kept columns' places.

Its sums are the full table's, bit for bit: ``embedding_bag`` adds, for every token, the same
rows in the same order (an all-zero row adds +0.0 where it did), and a column left out is 0 in
every row, so its sum is the +0.0 the full table gives.  A lookup costs one gather of the ids
(and a scatter of the columns, where some were left out) more than the full table's.

Training needs the full tables (updates write into them): ``model.files.load_model`` builds a
``CompactTable`` only when asked (``compact=True``, what ``inference.loading.load_tagger`` asks).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

LOOKUP_ROWS = 1 << 14  # CSR rows (tokens) a lookup sums at once


class CompactTable(nn.Module):
    """A [num_rows, width] table of the given non-zero entries, for ``forward(ids, offsets)``.

    Args:
        num_rows: F, the table's rows (feature ids 0..F-1).
        blocks: the table's column blocks left to right, each (width, flat indices, values):
            the entries of a [F, width] table (``row * width + column``), as
            ``model.files.sparse_tables`` stores them.  ValueError for an index outside it.
    """

    def __init__(self, num_rows: int, blocks: list[tuple[int, Tensor, Tensor]]):
        super().__init__()
        self.num_embeddings = num_rows
        self.embedding_dim = width = sum(w for w, _, _ in blocks)
        kept_rows = torch.zeros(num_rows, dtype=torch.bool)
        kept_cols = torch.zeros(width, dtype=torch.bool)
        left = 0
        for w, index, _ in blocks:  # (a block at a time: a few MB of temporaries, not 100)
            if len(index) and (int(index.min()) < 0 or int(index.max()) >= num_rows * w):
                raise ValueError(f"a weight outside the [{num_rows}, {w}] table")
            kept_rows[torch.div(index, w, rounding_mode="floor").long()] = True
            kept_cols[(index % w).long() + left] = True
            left += w
        # a kept row's place in the compact table (from 1), and 0 for an all-zero row (zeros)
        row_of = torch.cumsum(kept_rows, 0, dtype=torch.int32) * kept_rows
        col_of = torch.cumsum(kept_cols, 0) - 1
        table = torch.zeros(int(kept_rows.sum()) + 1, int(kept_cols.sum()))
        flat, left = table.view(-1), 0
        for w, index, values in blocks:
            rows = row_of[torch.div(index, w, rounding_mode="floor").long()].long()
            flat[rows * table.shape[1] + col_of[(index % w).long() + left]] = values
            left += w
        self.register_buffer("row_of", row_of)
        self.register_buffer("table", table)
        # the kept columns' places in a full row, or None when every column is kept
        every = bool(kept_cols.all())
        self.register_buffer("columns", None if every else torch.nonzero(kept_cols).squeeze(1))

    @property
    def weight(self) -> Tensor:
        raise TypeError(
            "a read-only compact table (a model loaded for tagging): "
            "load_model(..., compact=False) gives the full tables"
        )

    def forward(self, ids: Tensor, offsets: Tensor) -> Tensor:
        """Σ of the rows each CSR row names (ids [nnz], offsets [n + 1]): [n, width], equal to
        ``F.embedding_bag(ids, full, offsets, mode="sum", include_last_offset=True)``;
        ``LOOKUP_ROWS`` CSR rows at a time (the renumbered ids of a long document's 17 M would
        take 71 MB more)."""
        n = len(offsets) - 1
        out = self.table.new_zeros(n, self.embedding_dim)
        columns = slice(None) if self.columns is None else self.columns
        ids, offsets = ids.to(self.table.device), offsets.to(self.table.device)
        for first in range(0, n, LOOKUP_ROWS):
            last = min(first + LOOKUP_ROWS, n)
            lo, hi = int(offsets[first]), int(offsets[last])
            rows = self.row_of[ids[lo:hi]]
            out[first:last, columns] = F.embedding_bag(
                rows,
                self.table,
                (offsets[first : last + 1] - lo).to(rows.dtype),
                mode="sum",
                include_last_offset=True,
            )
        return out
