"""The label-chunk structure of Shimizu & Haas (2006): joint POS tagging and NP chunking.

A labeling segments a sentence into chunks, tags every chunk (NP or not) and every token (one of
five collapsed POS tags): ``data.label_chunk.LabelChunk``.  Its score is the sum of the scores of
its parts (POS nodes and transitions, chunk nodes and transitions), read from one
``EmbeddingBag`` table per part type (``model/label_chunk_weights.py``); the best labeling is
found exactly by the O(n^2) DP of the paper's Figure 1 (``decode/label_chunk.py``).  The loss is
the Hamming distance over POS tags plus NP tags (``data.label_chunk.hamming``).

The paper's back-off (section 5.3): while ``trainable`` is set (part type -> [F] bool rows),
``delta`` keeps only the entries of those rows, so the lexicalized weights stay frozen; the joint
task sets it during the first epoch (``tasks/joint.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from structperc.data.label_chunk import LabelChunk, hamming, token_codes
from structperc.decode.label_chunk import LabelChunkPotentials, decode, structure_scores
from structperc.decode.label_chunk_constraints import constrained_potentials
from structperc.features.extract import FeatureMatrix
from structperc.model.batch import Device, length_sorted_batches
from structperc.model.label_chunk_weights import (
    LabelChunkWeights,
    PartBatch,
    make_part_batch,
    restrict,
    structure_delta,
)
from structperc.model.updates import SparseDelta
from structperc.progress import bar


@dataclass
class PartData:
    """S sentences as the label-chunk structure reads them.

    features: part type -> CSR features of every token (the same N tokens in each).
    gold:     the gold structures of all sentences, concatenated ([N] each), or None.
    """

    features: dict[str, FeatureMatrix]
    gold: LabelChunk | None = None

    unit = "sent"  # what an instance is, for progress bars

    @property
    def doc_offsets(self) -> Tensor:
        return next(iter(self.features.values())).doc_offsets

    def __len__(self) -> int:
        return len(self.doc_offsets) - 1

    @property
    def num_tokens(self) -> int:
        return int(self.doc_offsets[-1])


class LabelChunkStructure:
    """Label-chunk labelings over ``weights`` (a ``LabelChunkWeights``)."""

    capabilities = frozenset({"argmax"})

    def __init__(self, weights: LabelChunkWeights):
        self.weights = weights
        self.trainable: dict[str, Tensor] | None = None  # the back-off's rows (module docstring)

    def instance(self, data: PartData, d: int, device) -> tuple[PartBatch, LabelChunk]:
        """Sentence d as a one-sentence batch, and its gold structure ([n] each)."""
        if data.gold is None:
            raise ValueError("these sentences carry no gold structures")
        lo, hi = int(data.doc_offsets[d]), int(data.doc_offsets[d + 1])
        return make_part_batch(data.features, [d]).to(device), data.gold.slice(lo, hi).to(device)

    def potentials(self, batch: PartBatch) -> LabelChunkPotentials:
        return self.weights.potentials(batch)

    def argmax(self, batch: PartBatch) -> LabelChunk:
        """Flat best structures [N] of the batch's sentences."""
        best, _ = decode(self.potentials(batch))  # [B, T] each
        fb = batch.any
        if fb.num_docs == 1:
            n = int(fb.lengths[0])
            return LabelChunk(best.pos[0, :n], best.chunk[0, :n], best.start[0, :n])
        return LabelChunk(fb.unpad(best.pos), fb.unpad(best.chunk), fb.unpad(best.start))

    def constrained_argmax(
        self,
        batch: PartBatch,
        pos_allowed: Tensor | None = None,
        tag_allowed: Tensor | None = None,
        forbidden: list[list[tuple[int, int, int]]] | None = None,
    ) -> LabelChunk:
        """Flat best structures [N] of the batch's sentences among those that keep the
        constraints (``decode/label_chunk_constraints.py``): the POS tags each token may carry
        ``pos_allowed`` [B, T, P], its chunk tags in token form ``tag_allowed`` [B, T, 2C-1]
        (O, B-NP, I-NP), and per sentence the chunks (start, end exclusive, tag) it may not
        contain.  Exact: the DP of the restricted parts."""
        pot = constrained_potentials(self.potentials(batch), pos_allowed, tag_allowed, forbidden)
        best, _ = decode(pot)  # [B, T] each
        fb = batch.any
        return LabelChunk(fb.unpad(best.pos), fb.unpad(best.chunk), fb.unpad(best.start))

    def score(self, batch: PartBatch, y: LabelChunk) -> Tensor:
        """s(x, y) [B] of flat structures y ([N] each)."""
        fb = batch.any
        padded = LabelChunk(fb.pad(y.pos), fb.pad(y.chunk), fb.pad(y.start, fill=False))
        return structure_scores(self.potentials(batch), padded)

    def delta(self, batch: PartBatch, gold: LabelChunk, pred: LabelChunk) -> SparseDelta:
        """Φ(x, y*) − Φ(x, y'), restricted to ``trainable`` rows during the back-off."""
        delta = structure_delta(self.weights, batch, gold, pred)
        if self.trainable is not None:
            delta = restrict(delta, self.trainable, self.weights.widths)
        return delta

    def errors(self, gold: LabelChunk, pred: LabelChunk) -> int:
        """Tokens whose POS tag or NP tag is wrong."""
        (gp, gn), (pp, pn) = token_codes(gold), token_codes(pred)
        return int(((gp != pp) | (gn != pn)).sum())

    def loss(self, gold: LabelChunk, pred: LabelChunk) -> float:
        """Hamming loss over POS and NP tags."""
        return float(sum(hamming(gold, pred)))

    @torch.no_grad()
    def predict(
        self, data: PartData, batch_size: int = 32, device: Device = "cpu", progress: bool = False
    ) -> list[LabelChunk]:
        """The best structure of every sentence, decoded in batches of similar length."""
        lengths = (data.doc_offsets[1:] - data.doc_offsets[:-1]).tolist()
        out: list[LabelChunk | None] = [None] * len(lengths)
        batches = length_sorted_batches(lengths, batch_size)
        for docs in bar(batches, enabled=progress, desc="decode", unit="batch"):
            best, _ = decode(self.potentials(make_part_batch(data.features, docs).to(device)))
            best = LabelChunk(best.pos.cpu(), best.chunk.cpu(), best.start.cpu())
            for b, d in enumerate(docs):
                n = lengths[d]
                out[d] = LabelChunk(best.pos[b, :n], best.chunk[b, :n], best.start[b, :n])
        return out  # type: ignore[return-value]
