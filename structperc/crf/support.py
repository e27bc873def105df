"""The weights an L-BFGS CRF moves with ``learner.support=observed``: CRFsuite's model.

The CRF's tables hold a weight for every (feature, label) pair (and, with edge features, every
(feature, previous label, label) triple), 2.8 M (27.9 M) on CoNLL-2003.  CRFsuite's default
(``feature.possible_states=0``) keeps only the pairs seen in training,

    node support  = {(f, y_t)             : feature f fires at a training token t},
    edge support  = {(f, y_{t-1} L + y_t) : f fires at t, t not its document's first token},

(506 k weights on CoNLL-2003; the one transition matrix of ``features.edges=false`` is kept
whole), and every other weight stays 0.  ``Support`` holds those sets as boolean masks shaped
like ``ChainWeights.dense_tables`` (one [F, L + L*L] mask over the joint node | edge table, or
[F, L] and [1, L*L] without edge features): L-BFGS then keeps its parameters, gradients and
history (2 m + 4 vectors) in the reduced space (``gather``), and the tables are written back
(``scatter_``) before each evaluation of the objective.  The objective and gradient restricted
to the support are those of the full model with the other weights fixed at 0 (the prior adds
nothing for them), so L-BFGS minimises the penalised likelihood over the support exactly.  On
several ranks the masks are the union over the shards (all-reduced), so every rank moves the
same weights.
"""

from __future__ import annotations

import torch
from torch import Tensor

from structperc.distributed import SERIAL, Group
from structperc.features.extract import FeatureMatrix
from structperc.model.weights import ChainWeights

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
    ) -> Support:
        """The (feature, label) pairs of ``features`` with gold ``labels`` [N] (CPU tensors),
        and with edge features the (feature, previous label, label) triples."""
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
            if weights.edges:
                inside = ~first[token]
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
