"""Weights of a reranker: the base score's weight, global feature weights, optional chain tables.

A candidate x of a fixed list scores (Collins 2002, section 4.1; Kazama & Torisawa 2007, 6.3)

    F(x) = w_0 · β L(x)  +  Σ_s w_s h_s(x)  [ + Φ^l(x)·α^l ]

    base:   [1, 1]          w_0, the weight of the first model's score L(x) (β: its scale)
    global: EmbeddingBag(G, 1, mode="sum")   w_s of the global features h_s (binary or counts)
    node, edge:             the chain tables of ``ChainWeights`` when the local features are
                            re-trained too (Kazama & Torisawa's re-ranking 2)

All tables start at zero and are written in place by the rankers (no autograd).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from structperc.model.weights import ChainWeights, bag_sums


class RankerWeights(nn.Module):
    """The tables above over ``num_global`` global features (and a chain when ``chain``)."""

    def __init__(self, num_global: int, chain: ChainWeights | None = None):
        super().__init__()
        self.base = nn.Parameter(torch.zeros(1, 1), requires_grad=False)
        self.global_ = nn.EmbeddingBag(max(num_global, 1), 1, mode="sum")
        self.global_.weight.requires_grad_(False)
        nn.init.zeros_(self.global_.weight)
        self.chain = chain

    def tables(self) -> dict[str, Tensor]:
        out = {"base": self.base, "global": self.global_.weight}
        if self.chain is not None:
            out.update(self.chain.tables())
        return out

    def global_scores(self, ids: Tensor, offsets: Tensor) -> Tensor:
        """Σ_s w_s h_s [r] of r candidates given as CSR rows (ids [nnz], offsets [r + 1])."""
        return bag_sums(self.global_.weight, ids, offsets)[:, 0]
