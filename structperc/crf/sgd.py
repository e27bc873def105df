"""Mini-batch SGD with sparse updates and an exact, lazy Gaussian prior.

The objective f(w) = sum_d l_d(w) + ||w||^2 / (2 sigma^2) over N documents is split evenly:
f = sum_d f_d with f_d(w) = l_d(w) + (lambda / 2) ||w||^2, lambda = 1 / (sigma^2 N).  A step on a
mini-batch S of documents is

    w <- (1 - eta lambda |S|) w - eta sum_{d in S} grad l_d(w),

whose first part touches every weight.  Keeping w = a v (Shalev-Shwartz et al. 2007; Bottou 2010;
CRFsuite's ``l2sgd``) makes it O(1): a <- a (1 - eta lambda |S|), and the loss gradient, non-zero
only on the features of S, goes into v: v <- v - eta g / a_new.  Gradients arrive sparse (coalesced
COO rows from ``lookup``) and are added with ``index_add_``.  The learning rate decays as
eta_t = eta_0 / (1 + eta_0 lambda t), t the number of documents seen (CRFsuite:
1 / (lambda (t_0 + t)) with t_0 = 1 / (lambda eta_0)).  When a gets small the scale is folded into
v (``fold``); callers fold before reading the weights.

``SGDTraining`` is the CRF's mini-batch training (``learner.optimizer=sgd``): mini-batches are
length-sorted groups of ``batch_tokens`` padded tokens, visited in a shuffled order each epoch.
"""

from __future__ import annotations

import logging

import torch
from torch import Tensor

from structperc.crf.lookup import lookup
from structperc.crf.objective import bucket_loss, dtype_of, posterior_errors
from structperc.crf.optimization import Iteration, Optimization
from structperc.learn.fitting import epoch_order
from structperc.progress import bar

log = logging.getLogger(__name__)


class ScaledSGD:
    """SGD on tables w = scale * v (``tables`` hold v and are updated in place).

    Args:
        tables: the weight tensors v, updated in place.
        sigma2: the Gaussian prior's variance.
        num_docs: N, the number of training documents (the prior is split over them).
        lr: eta_0, the initial learning rate.
    """

    def __init__(self, tables: list[Tensor], sigma2: float, num_docs: int, lr: float):
        if lr <= 0 or sigma2 <= 0 or num_docs <= 0:
            raise ValueError(f"need lr, sigma2, num_docs > 0, got {lr}, {sigma2}, {num_docs}")
        self.tables = tables
        self.lam = 1.0 / (sigma2 * num_docs)
        self.lr0 = lr
        self.scale = 1.0
        self.seen = 0

    def lr(self) -> float:
        """The current learning rate eta_t."""
        return self.lr0 / (1.0 + self.lr0 * self.lam * self.seen)

    def step(self, grads_v: list[Tensor], docs: int) -> None:
        """One update from the gradients of sum_{d in S} l_d with respect to v (= scale * dl/dw).

        Args:
            grads_v: per table, a sparse COO [F, D] (coalesced rows) or dense gradient.
            docs: |S|, the number of documents in the mini-batch.
        """
        eta = self.lr()
        decay = 1.0 - eta * self.lam * docs
        if decay <= 0:
            raise ValueError(
                f"learning rate {eta} too large for the prior (eta * lambda * |S| = {1 - decay})"
            )
        old = self.scale
        self.scale *= decay
        alpha = -eta / (old * self.scale)  # dl/dw = grad_v / old; v -= eta dl/dw / new
        for v, g in zip(self.tables, grads_v, strict=True):
            if g.is_sparse:
                v.index_add_(0, g._indices()[0], g._values().to(v.dtype), alpha=alpha)
            else:
                v.add_(g.to(v.dtype), alpha=alpha)
        self.seen += docs
        if self.scale < 1e-4:
            self.fold()

    def fold(self) -> None:
        """Multiply the scale into the tables (afterwards tables == w and scale == 1)."""
        if self.scale != 1.0:
            for v in self.tables:
                v.mul_(self.scale)
            self.scale = 1.0


class SGDTraining(Optimization):
    """Mini-batch SGD with the lazily scaled prior: an epoch visits the buckets of
    ``batch_tokens`` padded tokens in a shuffled order, one sparse step each."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        learner = self.learner
        self.buckets = self.training_buckets(learner.batch_tokens, with_index=True)
        log.info(
            "CRF SGD: %d documents in %d mini-batches, sigma2 %g, lr %g",
            self.features.num_docs,
            len(self.buckets),
            learner.sigma2,
            learner.lr,
        )
        self.tables = self.weights.dense_tables
        self.opt = ScaledSGD(self.tables, learner.sigma2, self.features.num_docs, learner.lr)

    def resume_after(self, k: int) -> None:
        """Epochs 1..k saw every training document once each (the rate depends on that
        count); the tables were folded at each epoch's end, so scale = 1 holds already."""
        self.opt.seen = k * self.features.num_docs

    def iteration(self, k: int) -> Iteration:
        learner, opt, tables = self.learner, self.opt, self.tables
        L = self.weights.num_labels
        dtype = dtype_of(learner.dtype)
        order = epoch_order(len(self.buckets), True, self.seed, k)
        total, errors = 0.0, 0
        shown = bar(order, enabled=self.progress, desc=f"epoch {k}", unit="batch")
        for b in shown:
            bucket = self.buckets[b]
            batch = bucket.batch
            leaves = [t.detach().requires_grad_(True) for t in tables]
            with torch.enable_grad():
                # [N_b, L + L*L] (node | edge, the joint table), or [N_b, L]
                token = lookup(leaves[0], batch.ids, batch.offsets, bucket.index)
                scores = token.to(dtype) * opt.scale
                transition = None
                if not self.weights.edges:  # the one transition matrix [1, L*L]
                    transition = leaves[1].to(dtype) * opt.scale
                scores.retain_grad()
                loss = bucket_loss(learner, scores, bucket, L, transition)
                loss.backward()
            total += float(loss.detach())
            errors += posterior_errors(scores.grad[:, :L], bucket.labels)
            opt.step([leaf.grad for leaf in leaves], bucket.batch.num_docs)
        opt.fold()
        sq = sum(float(torch.dot(w.view(-1), w.view(-1))) for w in tables)
        return Iteration(
            objective=total + sq / (2.0 * learner.sigma2),
            nll=total,
            errors=errors,
            updates=len(self.buckets),
            extra={"lr": opt.lr()},
        )
