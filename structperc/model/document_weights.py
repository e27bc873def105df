"""Chain weights plus a table of non-local (document-level) feature weights.

Kazama & Torisawa (2007): the total score is  Φ^a·α = Φ^l·α^l + Φ^g·α^g, where the local part
is the chain model of ``weights.py`` and the non-local part weights the document features of
``features/document.py``:

    global: EmbeddingBag(G, 1, mode="sum")     global[g, 0]

Φ^g is not decomposable over label pairs, so it cannot enter the potentials: it rescores whole
candidate labelings (n-best lists).  ``global_scores`` scores all n candidates of a document in
one ``embedding_bag`` call over the CSR rows of ``NonLocalFeatures.vectorize``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from structperc.model.weights import ChainWeights, bag_sums


class DocumentWeights(ChainWeights):
    """``ChainWeights`` and a zero-initialised non-local table over ``num_global`` features."""

    def __init__(self, num_features: int, labels: list[str], num_global: int, edges: bool = True):
        super().__init__(num_features, labels, edges)
        self.global_ = nn.EmbeddingBag(num_global, 1, mode="sum")
        self.global_.weight.requires_grad_(False)
        nn.init.zeros_(self.global_.weight)

    def tables(self) -> dict[str, Tensor]:
        out = super().tables()
        out["global"] = self.global_.weight
        return out

    def global_scores(self, ids: Tensor, offsets: Tensor) -> Tensor:
        """Φ^g·α^g [n] of n candidates given as CSR rows (ids [nnz], offsets [n + 1])."""
        return bag_sums(self.global_.weight, ids, offsets)[:, 0]

    @staticmethod
    def global_counts(ids: Tensor, offsets: Tensor, num_global: int) -> Tensor:
        """Dense Φ^g [n, G] of the same CSR rows (for the sparse update differences)."""
        n = len(offsets) - 1
        rows = torch.repeat_interleave(torch.arange(n), offsets[1:] - offsets[:-1])
        out = torch.zeros(n * num_global)
        out.index_add_(0, rows * num_global + ids.long(), torch.ones(len(ids)))
        return out.view(n, num_global)
