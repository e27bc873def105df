"""The CRF's objective, gradient and SGD epochs by the compiled forward-backward
(``learner.scan="compiled"``).

``CompiledObjective`` gives what ``crf.objective.full_objective`` gives (f(w), sum_d nll_d, the
gradients of ``weights.dense_tables``, the posterior errors) for a chain with one transition
matrix (``ChainWeights(edges=False)``, CRFsuite's model) on the CPU, from
``crf_kernels.nll_gradient``: one pass over each document's tokens, no lookup tables, buckets
or autograd.  The sums go through ``with_prior`` as the torch path's do (all-reduced over the
ranks, then the prior), so L-BFGS, OWL-QN and the observed support see the same interface.
``CompiledSGD`` runs ``SGDTraining``'s epochs (the same mini-batches of documents of similar
length, the same order, ``ScaledSGD``'s steps and state) by ``crf_kernels.sgd_epoch``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from structperc.crf.buckets import length_buckets
from structperc.crf.objective import CRFSettings, with_prior
from structperc.crf.sparse import Support
from structperc.distributed import SERIAL, Group
from structperc.features.extract import FeatureMatrix
from structperc.features.store import RELEASE_EVERY, SHUFFLED_RELEASE_EVERY, release_pages
from structperc.model.weights import ChainWeights
from structperc.native import available as numba_available
from structperc.native.inputs import csr_arrays, table_arrays

ROWS = 1 << 16  # rows of a support mask turned into column indices at a time


def check_compiled(weights: ChainWeights, device, sgd: bool = False) -> None:
    """ValueError naming what is missing when ``scan="compiled"`` cannot run here (SGD's
    epochs: one transition matrix only)."""
    if weights.edges and sgd:
        raise ValueError(
            "learner.scan=compiled runs SGD with one transition matrix (features.edges=false); "
            "with edge features use learner.optimizer=lbfgs or scan=sequential"
        )
    if torch.device(device).type != "cpu":
        raise ValueError(f"learner.scan=compiled runs on the CPU, not on {device}")
    if not numba_available():
        raise ValueError(
            "learner.scan=compiled needs numba (pip install 'structperc[sklearn]'); "
            "or use scan=sequential"
        )


class KernelInputs:
    """The arrays the kernels read: the CSR features, values and gold labels of the documents,
    and the weights whose tables they read (``check_compiled``: where they can run).  With
    ``targets`` (``crf/targets.py``) the gold has -1 at open tokens, and the cost offsets and
    allowed labels go to the kernel (empty arrays: none)."""

    def __init__(
        self,
        weights: ChainWeights,
        features: FeatureMatrix,
        labels: Tensor,
        targets=None,
        sgd: bool = False,
    ):
        check_compiled(weights, features.ids.device, sgd)
        self.weights = weights
        self.mapped = features.mapped  # (from disk: features/store.py)
        self.csr = csr_arrays(features)  # doc_offsets, ids, offsets, values, weighted
        self.doc_offsets = self.csr[0]  # [D + 1]
        L = weights.num_labels
        self.offset = np.zeros((0, L))  # [N, L] float64 cost offsets, or none
        self.allowed = np.zeros((0, L), np.uint8)  # [N, L] allowed labels, or none
        if targets is not None:
            labels = targets.gold
            if targets.offset is not None:
                self.offset = np.ascontiguousarray(targets.offset.numpy(), np.float64)
            if targets.allowed is not None:
                self.allowed = np.ascontiguousarray(targets.allowed.numpy(), np.uint8)
        self.labels = labels.cpu().numpy().astype(np.int64)  # [N]


class CompiledObjective(KernelInputs):
    """f(w) and its gradient over ``features`` with gold ``labels`` [N] (this rank's shard)."""

    def __init__(
        self, weights: ChainWeights, features: FeatureMatrix, labels: Tensor, targets=None
    ):
        from structperc.native.crf_kernels import targets_nll_gradient

        super().__init__(weights, features, labels, targets)
        self.kernel = targets_nll_gradient
        D = len(self.doc_offsets) - 1
        # features mapped from disk are read RELEASE_EVERY documents a call, their pages
        # released after each (features/store.py); the sums are the same
        step = RELEASE_EVERY if self.mapped else max(D, 1)
        self.blocks = [(a, min(a + step, D)) for a in range(0, D, step)]
        L, F = weights.num_labels, weights.num_features
        self.grad_node = np.zeros((F, L))  # [F, L] float64
        self.grad_trans = np.zeros((L, L))  # [L, L] float64

    def _run(self, doc_offsets, total: float = 0.0) -> tuple[float, int]:
        return self.kernel(
            doc_offsets, *self.csr[1:], self.labels, *table_arrays(self.weights),
            self.grad_node, self.grad_trans, total, self.offset, self.allowed,
        )  # fmt: skip

    def warm(self) -> None:
        """Load the kernel in this process (numba's cache, else a compilation) by running it
        on no documents."""
        self._run(self.doc_offsets[:1])

    def __call__(
        self, learner: CRFSettings, group: Group = SERIAL
    ) -> tuple[float, float, list[Tensor], int]:
        w = self.weights
        L = w.num_labels
        self.grad_node.fill(0.0)
        self.grad_trans.fill(0.0)
        total, errors = 0.0, 0
        for a, b in self.blocks:  # (documents a..b-1: the sums of one call, in its order)
            total, wrong = self._run(self.doc_offsets[a : b + 1], total)
            errors += wrong
            if self.mapped:
                release_pages()
        dtype = w.node.weight.dtype
        grads = [
            # copies (float64 tables too): L-BFGS keeps the gradient of one evaluation while it
            # asks for the next, which refills these buffers
            torch.from_numpy(self.grad_node).to(dtype, copy=True),
            torch.from_numpy(self.grad_trans.reshape(1, L * L)).to(dtype, copy=True),
        ]
        return with_prior(learner, w.dense_tables, grads, float(total), int(errors), group)


class CompiledEdgeObjective(KernelInputs):
    """f(w) and its gradient with edge features (``ChainWeights(edges=True)``) over the
    parameters a ``Support`` keeps (None: every entry of the joint table), in
    ``Support.gather``'s order: ``native/edge_crf_kernels.py``.  L-BFGS moves those
    parameters; the kernel reads them, not the tables."""

    def __init__(
        self,
        weights: ChainWeights,
        features: FeatureMatrix,
        labels: Tensor,
        support: Support | None = None,
    ):
        from structperc.native.edge_crf_kernels import edge_nll_gradient

        super().__init__(weights, features, labels)
        self.kernel = edge_nll_gradient
        L, F = weights.num_labels, weights.num_features
        D = L + L * L
        if support is None:  # every entry: row f's parameters are its D columns
            self.row_ptr = np.arange(F + 1, dtype=np.int64) * D
            self.n_node = np.full(F, L, dtype=np.int64)
            self.cols = np.tile(np.arange(D, dtype=np.int16), F)
        else:
            mask = support.masks[0]  # [F, D] over the joint node | edge table
            self.n_node = mask[:, :L].sum(dim=1).numpy().astype(np.int64)  # [F]
            self.row_ptr = np.zeros(F + 1, dtype=np.int64)
            np.cumsum(mask.sum(dim=1).numpy(), out=self.row_ptr[1:])
            self.cols = np.empty(int(self.row_ptr[-1]), dtype=np.int16)  # [P]
            for a in range(0, F, ROWS):  # (nonzero of a block of rows at a time)
                cols = torch.nonzero(mask[a : a + ROWS])[:, 1].numpy()
                self.cols[self.row_ptr[a] : self.row_ptr[a] + len(cols)] = cols
        docs = len(self.doc_offsets) - 1
        step = RELEASE_EVERY if self.mapped else max(docs, 1)
        self.blocks = [(a, min(a + step, docs)) for a in range(0, docs, step)]
        self.grad = np.zeros(len(self.cols))  # [P] float64

    def _run(self, doc_offsets, params: np.ndarray, total: float = 0.0) -> tuple[float, int]:
        return self.kernel(
            doc_offsets, *self.csr[1:], self.labels, self.weights.num_labels, self.row_ptr,
            self.n_node, self.cols, params, self.grad, total,
        )  # fmt: skip

    def warm(self) -> None:
        """Load the kernel in this process by running it on no documents."""
        self._run(self.doc_offsets[:1], np.zeros(len(self.cols), np.float32))

    def __call__(
        self, learner: CRFSettings, params: list[Tensor], group: Group = SERIAL
    ) -> tuple[float, float, list[Tensor], int]:
        """(f, sum nll, [gradient of ``params``], errors) at ``params`` ([P], or the joint
        table itself without a support)."""
        values = params[0].detach().reshape(-1).numpy()  # [P]
        self.grad.fill(0.0)
        total, errors = 0.0, 0
        for a, b in self.blocks:  # (documents a..b-1: the sums of one call, in its order)
            total, wrong = self._run(self.doc_offsets[a : b + 1], values, total)
            errors += wrong
            if self.mapped:
                release_pages()
        grad = torch.from_numpy(self.grad).to(params[0].dtype, copy=True)  # (as above)
        grad = grad.reshape(params[0].shape)
        return with_prior(learner, params, [grad], float(total), int(errors), group)


class CompiledSGD(KernelInputs):
    """``SGDTraining``'s epochs over ``features`` with gold ``labels``: mini-batches of
    ``learner.batch_tokens`` padded tokens (``buckets.length_buckets``)."""

    def __init__(
        self, weights: ChainWeights, features: FeatureMatrix, labels: Tensor, learner: CRFSettings
    ):
        from structperc.native.crf_kernels import sgd_epoch

        super().__init__(weights, features, labels, sgd=True)
        self.kernel = sgd_epoch
        lengths = np.diff(self.doc_offsets).tolist()
        self.buckets = length_buckets(lengths, learner.batch_tokens)  # documents per batch
        sizes = [len(b) for b in self.buckets]
        self.bucket_offsets = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=self.bucket_offsets[1:])
        self.bucket_docs = np.array([d for b in self.buckets for d in b], np.int64)
        L, F = weights.num_labels, weights.num_features
        self.acc_node = np.zeros(F * L)
        self.mark_node = np.zeros(F * L, np.uint8)
        self.list_node = np.empty(F, np.int64)
        self.acc_trans = np.zeros(L * L)

    def _run(self, order: np.ndarray, state: np.ndarray, lr0: float, lam: float, total=0.0):
        return self.kernel(
            order, self.bucket_offsets, self.bucket_docs, *self.csr, self.labels,
            *table_arrays(self.weights), state, lr0, lam, self.acc_node, self.mark_node,
            self.list_node, self.acc_trans, total,
        )  # fmt: skip

    def warm(self) -> None:
        """Load the kernel in this process by running it on no mini-batch."""
        self._run(np.empty(0, np.int64), np.array([1.0, 0.0]), 0.1, 0.0)

    def epoch(self, order: list[int], opt) -> tuple[float, int]:
        """The mini-batches of ``order``, stepping ``opt`` (``ScaledSGD``: its tables, scale and
        count of documents seen); (sum of the batches' nll, posterior errors)."""
        state = np.array([opt.scale, opt.seen], np.float64)
        order = np.asarray(order, np.int64)
        total, errors, failed = 0.0, 0, 0
        step = SHUFFLED_RELEASE_EVERY if self.mapped else max(len(order), 1)
        for a in range(0, len(order), step):  # (the state carries over: the same epoch)
            total, wrong, failed = self._run(order[a : a + step], state, opt.lr0, opt.lam, total)
            errors += wrong
            if failed:
                break
            if self.mapped:
                release_pages()
        if failed:
            raise ValueError(
                f"learning rate {opt.lr()} too large for the prior (eta * lambda * |S| >= 1)"
            )
        opt.scale, opt.seen = float(state[0]), int(state[1])
        return float(total), int(errors)
