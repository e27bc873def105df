"""A batch of documents as EmbeddingBag input, and the index maps to padded [B, T] layouts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from structperc.features.extract import FeatureMatrix

Device = str | torch.device  # where tensors live: "cpu", "cuda", torch.device(...)


@dataclass
class FeatureBatch:
    """CSR features of B documents, their N tokens concatenated.

    ids:            [nnz] int32 feature ids.
    offsets:        [N + 1] int64 (``include_last_offset=True``).
    lengths:        [B] int64 document lengths.
    first_token:    [B] int64, index (in 0..N-1) of each document's first token.
    flat_positions: [N] int64, index of each token in the padded [B * T] layout.
    values:         [nnz] float32 values of the ids, or None: all 1 (``FeatureMatrix.values``).
    node_offset:    [N, L] float added to the node scores before decoding, or None: -inf where a
                    constraint forbids a label, a cost where decoding is cost-augmented
                    (``decode/node_offsets.py``); the features and their differences ignore it.
    """

    ids: Tensor
    offsets: Tensor
    lengths: Tensor
    first_token: Tensor
    flat_positions: Tensor
    values: Tensor | None = None
    node_offset: Tensor | None = None

    @property
    def num_docs(self) -> int:
        return len(self.lengths)

    @property
    def max_length(self) -> int:
        return int(self.lengths.max())

    @property
    def num_tokens(self) -> int:
        return len(self.offsets) - 1

    def to(self, device: torch.device | str) -> FeatureBatch:
        return FeatureBatch(*(None if t is None else t.to(device) for t in self.__dict__.values()))

    def pad(self, values: Tensor, fill: int = -1) -> Tensor:
        """Token values [N, ...] -> padded [B, T, ...] (``fill`` past each length)."""
        B, T = self.num_docs, self.max_length
        out = values.new_full((B * T, *values.shape[1:]), fill)
        out[self.flat_positions] = values
        return out.view(B, T, *values.shape[1:])

    def unpad(self, padded: Tensor) -> Tensor:
        """Padded [B, T, ...] -> token values [N, ...]."""
        return padded.reshape(-1, *padded.shape[2:])[self.flat_positions]

    def token_features(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        """The CSR rows of the given tokens, flattened: (feature ids [M] long, token of each [M]).

        ``tokens`` [K] long, indices into the batch's N tokens; the ids of each token come in
        CSR order, the tokens in the order given.
        """
        feats, owner = csr_rows(
            self.offsets.cpu().numpy(), self.ids.cpu().numpy(), tokens.cpu().numpy()
        )
        return torch.from_numpy(feats).to(tokens.device), torch.from_numpy(owner).to(tokens.device)


def csr_rows(
    offsets: np.ndarray, ids: np.ndarray, tokens: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``FeatureBatch.token_features`` on numpy arrays: (feature ids [M] int64, token of each [M]).

    In numpy because an update builds it once per document from a handful of small arrays, where
    each torch call costs several microseconds and each numpy call one.
    """
    pos, owner = csr_positions(offsets, tokens)
    return ids[pos].astype(np.int64), owner


def csr_positions(offsets: np.ndarray, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions [M] in the CSR arrays of the given tokens' entries, token of each [M])."""
    starts = offsets[tokens]  # [K]
    counts = offsets[tokens + 1] - starts  # [K] ids per token
    owner = np.repeat(tokens, counts)  # [M]
    pos = np.arange(len(owner)) + np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return pos, owner


def make_batch(features: FeatureMatrix, docs: list[int] | Tensor) -> FeatureBatch:
    """Gather the documents ``docs`` of ``features`` into one batch (on the CPU)."""
    if len(docs) == 1 and features.offsets.device.type == "cpu":
        return document_batch(features, int(docs[0]))
    doc_idx = torch.as_tensor(docs, dtype=torch.long)
    starts = features.doc_offsets[doc_idx]  # [B] first token
    ends = features.doc_offsets[doc_idx + 1]
    lengths = ends - starts
    tokens = torch.cat([torch.arange(int(s), int(e)) for s, e in zip(starts, ends, strict=True)])
    counts = features.offsets[tokens + 1] - features.offsets[tokens]  # [N] ids per token
    offsets = torch.zeros(len(tokens) + 1, dtype=torch.long)
    torch.cumsum(counts, 0, out=offsets[1:])
    # positions of all ids of the selected tokens
    id_pos = torch.repeat_interleave(features.offsets[tokens], counts) + (
        torch.arange(int(offsets[-1])) - torch.repeat_interleave(offsets[:-1], counts)
    )
    T = int(lengths.max())
    doc_of_token = torch.repeat_interleave(torch.arange(len(doc_idx)), lengths)
    first = torch.zeros(len(doc_idx), dtype=torch.long)
    torch.cumsum(lengths[:-1], 0, out=first[1:])
    pos_in_doc = torch.arange(len(tokens)) - first[doc_of_token]
    return FeatureBatch(
        ids=features.ids[id_pos],
        offsets=offsets,
        lengths=lengths,
        first_token=first,
        flat_positions=doc_of_token * T + pos_in_doc,
        values=None if features.values is None else features.values[id_pos],
    )


def document_batch(features: FeatureMatrix, d: int) -> FeatureBatch:
    """Document d of CPU ``features`` as a one-document batch: views of its CSR rows, read
    through NumPy (a few microseconds: an online epoch over a corpus mapped from disk builds
    one per step, ``trainer.run_epochs``), or for a matrix on disk its rows read from the files
    (``features.files``: no page of the maps touched, ``features/store.py``)."""
    if features.files is not None:
        ids, offsets = features.files.document(d)  # [n] int32, [T + 1] int64
        T = len(offsets) - 1
        return FeatureBatch(
            ids=torch.from_numpy(ids),
            offsets=torch.from_numpy(offsets),
            lengths=torch.from_numpy(np.array([T], dtype=np.int64)),
            first_token=torch.from_numpy(np.zeros(1, dtype=np.int64)),
            flat_positions=torch.from_numpy(np.arange(T, dtype=np.int64)),
        )
    doc_offsets, offsets = features.doc_offsets.numpy(), features.offsets.numpy()
    s, e = int(doc_offsets[d]), int(doc_offsets[d + 1])
    lo, hi = int(offsets[s]), int(offsets[e])
    return FeatureBatch(
        ids=features.ids[lo:hi],
        offsets=torch.from_numpy(offsets[s : e + 1] - lo),
        lengths=torch.from_numpy(np.array([e - s], dtype=np.int64)),
        first_token=torch.from_numpy(np.zeros(1, dtype=np.int64)),
        flat_positions=torch.from_numpy(np.arange(e - s, dtype=np.int64)),
        values=None if features.values is None else features.values[lo:hi],
    )


def packed_order(doc_offsets: Tensor) -> tuple[Tensor, list[int]]:
    """The time-major packing of whole documents (``decode.viterbi.viterbi_packed``).

    doc_offsets [D + 1]: document d owns tokens doc_offsets[d]:doc_offsets[d + 1].  Returns
    (perm [N], batch_sizes [T]): ``perm[r]`` is the token in packed row r, the documents taken
    in order of decreasing length (ties by index), and ``batch_sizes[t]`` how many documents
    have a token at position t.
    """
    lengths = doc_offsets[1:] - doc_offsets[:-1]  # [D]
    order = torch.argsort(lengths, descending=True, stable=True)
    lens, starts = lengths[order], doc_offsets[:-1][order]
    T = int(lens[0]) if len(lens) else 0
    pos = torch.arange(T)
    grid = starts.view(1, -1) + pos.view(-1, 1)  # [T, D]: token at position t of document r
    real = pos.view(-1, 1) < lens.view(1, -1)  # [T, D]
    return grid[real], real.sum(dim=1).tolist()


def length_sorted_batches(
    lengths: list[int], batch_size: int, max_tokens: int | None = None
) -> list[list[int]]:
    """Document indices in batches of ``batch_size``, shortest documents first, so that
    documents of similar length share a batch (little padding).  ``max_tokens``: a batch also
    ends before its padded size (documents x the longest) would pass it; a longer document is
    a batch of its own."""
    order = sorted(range(len(lengths)), key=lambda d: lengths[d])
    if max_tokens is None:
        return [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
    batches: list[list[int]] = [[]]
    for d in order:
        last = batches[-1]
        if last and (len(last) == batch_size or (len(last) + 1) * lengths[d] > max_tokens):
            batches.append(last := [])
        last.append(d)
    return batches if batches[0] else []
