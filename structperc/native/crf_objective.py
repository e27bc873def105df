"""The CRF's objective and gradient by the compiled forward-backward (``learner.scan="compiled"``).

``CompiledObjective`` gives what ``crf.objective.full_objective`` gives (f(w), sum_d nll_d, the
gradients of ``weights.dense_tables``, the posterior errors) for a chain with one transition
matrix (``ChainWeights(edges=False)``, CRFsuite's model) on the CPU, from
``crf_kernels.nll_gradient``: one pass over each document's tokens, no lookup tables, buckets
or autograd.  The sums go through ``with_prior`` as the torch path's do (all-reduced over the
ranks, then the prior), so L-BFGS, OWL-QN and the observed support see the same interface.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from structperc import native
from structperc.crf.objective import CRFSettings, with_prior
from structperc.distributed import SERIAL, Group
from structperc.features.extract import FeatureMatrix
from structperc.model.weights import ChainWeights


def check_compiled(weights: ChainWeights, device) -> None:
    """ValueError naming what is missing when ``scan="compiled"`` cannot run here."""
    if weights.edges:
        raise ValueError(
            "learner.scan=compiled needs one transition matrix (features.edges=false); "
            "with edge features use scan=sequential"
        )
    if torch.device(device).type != "cpu":
        raise ValueError(f"learner.scan=compiled runs on the CPU, not on {device}")
    if not native.available():
        raise ValueError(
            "learner.scan=compiled needs numba (pip install 'structperc[sklearn]'); "
            "or use scan=sequential"
        )


class CompiledObjective:
    """f(w) and its gradient over ``features`` with gold ``labels`` [N] (this rank's shard)."""

    def __init__(self, weights: ChainWeights, features: FeatureMatrix, labels: Tensor):
        from structperc.native.crf_kernels import nll_gradient

        check_compiled(weights, features.ids.device)
        self.kernel = nll_gradient
        self.weights = weights
        self.doc_offsets = features.doc_offsets.numpy().astype(np.int64)
        self.ids = features.ids.numpy()
        self.offsets = features.offsets.numpy().astype(np.int64)
        self.weighted = features.values is not None
        self.values = features.values.numpy() if self.weighted else np.ones(1, np.float32)
        self.labels = labels.cpu().numpy().astype(np.int64)
        L, F = weights.num_labels, weights.num_features
        self.grad_node = np.zeros((F, L))  # [F, L] float64
        self.grad_trans = np.zeros((L, L))  # [L, L] float64

    def __call__(
        self, learner: CRFSettings, group: Group = SERIAL
    ) -> tuple[float, float, list[Tensor], int]:
        w = self.weights
        L = w.num_labels
        self.grad_node.fill(0.0)
        self.grad_trans.fill(0.0)
        node = w.node.weight.detach().numpy()  # [F, L]
        trans = w.edge.weight.detach().numpy().reshape(L, L)  # [L (from), L (to)]
        total, errors = self.kernel(
            self.doc_offsets, self.ids, self.offsets, self.values, self.weighted, self.labels,
            node, trans, self.grad_node, self.grad_trans,
        )  # fmt: skip
        dtype = w.node.weight.dtype
        grads = [
            torch.from_numpy(self.grad_node).to(dtype),
            torch.from_numpy(self.grad_trans.reshape(1, L * L)).to(dtype),
        ]
        return with_prior(learner, w.dense_tables, grads, float(total), int(errors), group)
