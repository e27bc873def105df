"""Weights of the label-chunk model: one ``EmbeddingBag`` table per part type, no autograd.

A part's score is the sum, over the features of its part type read at its token
(``features/part_features.py``), of one weight per feature and tag combination (C chunk tags, P POS
tags):

    pos_node     [F, C * P]        column C * P + P
    pos_edge     [F, C * P * P]    column (C * P + P0) * P + P
    chunk_start  [F, C]            column C     } the chunk node <C, q, r> is
    chunk_end    [F, C]            column C     } chunk_start at q + chunk_end at r
    chunk_edge   [F, C * C]        column C0 * C + C

so a batch's part scores are one ``embedding_bag`` call per table (``potentials``).  Learners see
only ``tables()`` (name -> [F, width] tensor) and ``SparseDelta``s of Phi(y*) - Phi(y'), so
``model.updates.Updater`` updates and averages them as it does a chain's tables.

Every part is read at one token and one column (``part_columns``), so Phi(y) of a batch is a list of
(token, column) pairs per table, and Phi(y*) - Phi(y') keeps only the tokens where the two columns
differ (``structure_delta``): identical parts cancel exactly.

With ``maximal_outside`` (default) an O chunk may not follow an O chunk (g[O, O] = -inf), which
makes decoded structures correspond one to one to (POS, IOB) tag sequences, like gold ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from structperc.data.label_chunk import CHUNK_TAGS, POS_TAGS, LabelChunk
from structperc.decode.label_chunk import LabelChunkPotentials
from structperc.features.extract import FeatureMatrix
from structperc.model.batch import FeatureBatch, make_batch
from structperc.model.updates import SparseDelta
from structperc.model.weights import bag_sums

GROUPS = ("pos_node", "pos_edge", "chunk_start", "chunk_end", "chunk_edge")


@dataclass
class PartBatch:
    """The features of B sentences, one ``FeatureBatch`` per part type (same tokens in each)."""

    groups: dict[str, FeatureBatch]

    @property
    def any(self) -> FeatureBatch:
        return next(iter(self.groups.values()))

    @property
    def lengths(self) -> Tensor:
        return self.any.lengths

    def to(self, device: torch.device | str) -> PartBatch:
        return PartBatch({g: b.to(device) for g, b in self.groups.items()})


def make_part_batch(mats: dict[str, FeatureMatrix], docs: list[int]) -> PartBatch:
    """Gather sentences ``docs`` of every part type's features into one batch."""
    return PartBatch({g: make_batch(m, docs) for g, m in mats.items()})


class LabelChunkWeights(nn.Module):
    """The part tables of a label-chunk model over ``num_features[part type]`` features.

    Memory: sum over part types of F * width floats (see the module docstring).
    """

    def __init__(
        self,
        num_features: dict[str, int],
        pos_tags: tuple[str, ...] = POS_TAGS,
        chunk_tags: tuple[str, ...] = CHUNK_TAGS,
        maximal_outside: bool = True,
    ):
        super().__init__()
        missing = set(GROUPS) - set(num_features)
        if missing:
            raise ValueError(f"num_features lacks part types {sorted(missing)}")
        self.pos_tags, self.chunk_tags = tuple(pos_tags), tuple(chunk_tags)
        self.maximal_outside = maximal_outside
        C, P = len(chunk_tags), len(pos_tags)
        self.widths = {
            "pos_node": C * P,
            "pos_edge": C * P * P,
            "chunk_start": C,
            "chunk_end": C,
            "chunk_edge": C * C,
        }
        self.parts = nn.ModuleDict(
            {g: nn.EmbeddingBag(num_features[g], w, mode="sum") for g, w in self.widths.items()}
        )
        for table in self.parts.values():
            table.weight.requires_grad_(False)
            nn.init.zeros_(table.weight)

    def tables(self) -> dict[str, Tensor]:
        """The weight tensors by part type, [F, width] each."""
        return {g: t.weight for g, t in self.parts.items()}

    def token_scores(self, batch: PartBatch) -> dict[str, Tensor]:
        """Part type -> [N, width] scores of the parts read at each of the batch's N tokens."""
        out = {}
        for g, table in self.parts.items():
            fb = batch.groups[g]
            out[g] = bag_sums(table.weight, fb.ids, fb.offsets)
        return out

    def potentials(self, batch: PartBatch) -> LabelChunkPotentials:
        """Padded part scores of the batch (0 past each length)."""
        C, P = len(self.chunk_tags), len(self.pos_tags)
        fb = batch.any
        B, T = fb.num_docs, fb.max_length
        scores = self.token_scores(batch)

        def pad(x: Tensor) -> Tensor:  # [N, w] -> [B, T, w]
            return x.unsqueeze(0) if B == 1 else fb.pad(x, fill=0)

        chunk_edge = pad(scores["chunk_edge"]).view(B, T, C, C)
        if self.maximal_outside:
            chunk_edge[:, :, 0, 0] = float("-inf")
        start, end = pad(scores["chunk_start"]), pad(scores["chunk_end"])  # [B, T, C]
        return LabelChunkPotentials(
            pos_node=pad(scores["pos_node"]).view(B, T, C, P),
            pos_edge=pad(scores["pos_edge"]).view(B, T, C, P, P),
            chunk_node=start.unsqueeze(2) + end.unsqueeze(1),  # [B, T(q), T(r), C]
            chunk_edge=chunk_edge,
            lengths=fb.lengths,
        )


def part_columns(y: LabelChunk, batch: FeatureBatch, num_chunk: int, num_pos: int) -> dict:
    """Part type -> [N] column of the part read at each token of flat structures y ([N] each).

    -1 where no part of that type is read at a token.
    """
    C, P = num_chunk, num_pos
    pos, chunk, start = y.pos, y.chunk, y.start.clone()
    start[batch.first_token] = True
    none = torch.full_like(pos, -1)
    prev_pos, prev_chunk = pos.roll(1), chunk.roll(1)
    end = start.roll(-1)
    end[batch.first_token + batch.lengths - 1] = True
    first = torch.zeros_like(start)
    first[batch.first_token] = True
    return {
        "pos_node": chunk * P + pos,
        "pos_edge": torch.where(start, none, (chunk * P + prev_pos) * P + pos),
        "chunk_start": torch.where(start, chunk, none),
        "chunk_end": torch.where(end, chunk, none),
        "chunk_edge": torch.where(start & ~first, prev_chunk * C + chunk, none),
    }


def column_delta(fb: FeatureBatch, gold: Tensor, pred: Tensor, width: int) -> tuple[Tensor, Tensor]:
    """Flat indices [K] and values [K] of Phi(gold) - Phi(pred) in one table.

    gold, pred: [N] columns per token (-1: no part).  Every feature f of a token where they differ
    gives +1 at f * width + gold and -1 at f * width + pred.
    """
    tokens = torch.nonzero(gold != pred).squeeze(1)  # [K] tokens that differ
    feats, owner = fb.token_features(tokens)  # [M] feature ids, [M] their tokens
    g, p = gold[owner], pred[owner]
    index = torch.cat([feats[g >= 0] * width + g[g >= 0], feats[p >= 0] * width + p[p >= 0]])
    values = torch.ones(len(index), device=gold.device)
    values[int((g >= 0).sum()) :] = -1
    return index, values


def structure_delta(
    weights: LabelChunkWeights, batch: PartBatch, gold: LabelChunk, pred: LabelChunk
) -> SparseDelta:
    """Phi(x, y*) - Phi(x, y') of flat structures ([N] each) over the batch's sentences."""
    C, P = len(weights.chunk_tags), len(weights.pos_tags)
    fb = batch.any
    g_cols = part_columns(gold, fb, C, P)
    p_cols = part_columns(pred, fb, C, P)
    return SparseDelta(
        {
            g: column_delta(batch.groups[g], g_cols[g], p_cols[g], w)
            for g, w in weights.widths.items()
        }
    )


def restrict(delta: SparseDelta, rows: dict[str, Tensor], widths: dict[str, int]) -> SparseDelta:
    """The entries of ``delta`` in the given rows only (rows[g]: [F] bool per table)."""
    out = {}
    for g, (index, values) in delta.parts.items():
        keep = rows[g].to(index.device)[index // widths[g]]
        out[g] = (index[keep], values[keep])
    return SparseDelta(out)
