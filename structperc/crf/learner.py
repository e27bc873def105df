"""Training a linear-chain CRF on the local features, through torch-struct marginals.

The CRF (Lafferty et al. 2001) shares the perceptrons' model: node and edge ``EmbeddingBag``
tables W, token scores S = X W, potentials as in ``ChainWeights.potentials``.  Training minimises
the negative log-likelihood with a Gaussian prior (Chen & Rosenfeld 2000), as in Kazama &
Torisawa's (2007) CRF baseline (Table 2: sigma^2 = 100 chosen on dev):

    f(w) = sum_d [log Z(x_d) - s(x_d, y*_d)] + ||w||^2 / (2 sigma^2),
    grad f = sum_d [E_{p(y|x_d)} Phi(x_d, y) - Phi(x_d, y*_d)] + w / sigma^2.

The expectation is the marginals, obtained as the gradient of torch-struct's log-partition by
autograd (``adapter.py``); the chain rule through the sparse lookups (``lookup.py``) turns the
per-token gradients into table gradients.  This is the only module of structperc that calls
``.backward()``.

Two optimizers (``optimizer=``):

* ``"lbfgs"``: full-batch L-BFGS (``lbfgs.py``), one iteration per "epoch" — Kazama &
  Torisawa's setting (CRF++ with an L-BFGS module).  One evaluation = one lookup pass over all
  training tokens, the DP over length-sorted buckets of documents (``dp_batch_tokens`` padded
  tokens each), one transposed lookup for the gradient.
* ``"sgd"``: mini-batch SGD with sparse updates and the lazy prior (``sgd.py``); mini-batches are
  length-sorted groups of ``batch_tokens`` tokens, visited in a shuffled order each epoch.

Convergence as in CRF++: stop when the relative change of the objective, |f_k - f_{k-1}| / f_k,
stays below ``tol`` for ``patience`` consecutive iterations (SGD: epochs, on the objective summed
during the epoch), or after ``min(max_iterations, trainer max_epochs)``.
"""

from __future__ import annotations

import logging
import math
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor
from tqdm.auto import tqdm

from structperc.crf.adapter import nll
from structperc.crf.lbfgs import LBFGS
from structperc.crf.lookup import TransposedIndex, chain_potentials, lookup
from structperc.crf.semiring import get_semiring
from structperc.crf.sgd import ScaledSGD
from structperc.features.extract import FeatureMatrix
from structperc.model.batch import FeatureBatch, make_batch
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.train import Convergence, EpochLog, FitResult, epoch_order

log = logging.getLogger(__name__)


class StopRequest:
    """``kill -USR1 <pid>`` asks a running ``fit_batch`` to stop after the current iteration.

    The run then ends normally (``stopped_by="interrupted"``): evaluation, results.json and the
    model are written.  Without a main thread or SIGUSR1 (Windows) it is inert.
    """

    def __init__(self) -> None:
        self.requested = False
        self._previous = None

    def _handle(self, signum, frame) -> None:
        self.requested = True
        log.warning("SIGUSR1: stopping after this iteration")

    def __enter__(self) -> StopRequest:
        try:
            self._previous = signal.signal(signal.SIGUSR1, self._handle)
        except (ValueError, AttributeError):  # not the main thread / no SIGUSR1
            self._previous = None
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGUSR1, self._previous)


@dataclass
class Bucket:
    """Documents decoded together: their batch layout, gold labels and global token positions.

    batch:  FeatureBatch of the documents (CSR features, lengths, layout maps).
    gold:   [B, T] long gold labels, -1 past each length.
    labels: [N_b] long gold labels of the bucket's tokens (batch token order).
    tokens: [N_b] long positions of the bucket's tokens in the whole training set.
    index:  X^T of the bucket's tokens (mini-batch training only).
    """

    batch: FeatureBatch
    gold: Tensor
    labels: Tensor
    tokens: Tensor
    index: TransposedIndex | None = None

    @property
    def num_docs(self) -> int:
        return self.batch.num_docs


def length_buckets(lengths: list[int], budget: int) -> list[list[int]]:
    """Documents sorted by length, grouped so that B * (longest length) <= ``budget``.

    A document longer than the budget gets a bucket of its own.
    """
    order = sorted(range(len(lengths)), key=lambda d: (lengths[d], d))
    buckets: list[list[int]] = []
    current: list[int] = []
    for d in order:
        if current and (len(current) + 1) * lengths[d] > budget:
            buckets.append(current)
            current = []
        current.append(d)
    if current:
        buckets.append(current)
    return buckets


def make_buckets(
    features: FeatureMatrix,
    labels: Tensor,
    budget: int,
    *,
    with_index: bool,
    num_features: int,
    device: str | torch.device,
) -> list[Bucket]:
    """``Bucket``s of all documents of ``features`` (gold ``labels`` [N] over all tokens)."""
    doc_offsets = features.doc_offsets
    lengths = (doc_offsets[1:] - doc_offsets[:-1]).tolist()
    out = []
    for docs in length_buckets(lengths, budget):
        batch = make_batch(features, docs)
        tokens = torch.cat(
            [torch.arange(int(doc_offsets[d]), int(doc_offsets[d + 1])) for d in docs]
        )
        gold_tokens = labels[tokens]  # [N_b]
        index = (
            TransposedIndex.build(batch.ids, batch.offsets, num_features).to(device)
            if with_index
            else None
        )
        out.append(
            Bucket(
                batch=batch.to(device),
                gold=batch.pad(gold_tokens).to(device),
                labels=gold_tokens.to(device),
                tokens=tokens.to(device),
                index=index,
            )
        )
    return out


class CRF:
    """L2-regularised linear-chain CRF trained through torch-struct (``fit_batch``).

    Args:
        sigma2: variance of the Gaussian prior (Kazama & Torisawa tune 13 ... 800; 100 best).
        optimizer: ``"lbfgs"`` (full batch) or ``"sgd"`` (mini-batch, sparse updates).
        max_iterations: upper bound on iterations (L-BFGS) or epochs (SGD); the trainer's
            ``max_epochs`` bounds it too (the smaller wins).
        tol, patience: stop when |f_k - f_{k-1}| / f_k < tol for ``patience`` iterations in a row.
        history: L-BFGS memory m.
        lr: SGD initial learning rate eta_0.
        batch_tokens: SGD mini-batch size in padded tokens (B * longest document).
        dp_batch_tokens: L-BFGS bucket size for the DP, in padded tokens.
        semiring: ``"scaled"`` (``ScaledLogSemiring``, fast) or ``"log"`` (torch-struct's own).
        dtype: floating type of the DP (``"float64"``: exact log Z over 1,000-token documents).

    Cost of one L-BFGS iteration: ~1 evaluation = 2 lookups + 2 transposed lookups over all
    training features (O(nnz (L + L^2))), the DP O(N L^3), and O(m (F L^2)) for the update;
    memory (2 m + 4) copies of the tables.
    """

    def __init__(
        self,
        sigma2: float = 100.0,
        optimizer: str = "lbfgs",
        max_iterations: int = 1000,
        tol: float = 1e-4,
        patience: int = 3,
        history: int = 6,
        lr: float = 0.05,
        batch_tokens: int = 2000,
        dp_batch_tokens: int = 8000,
        semiring: str = "scaled",
        dtype: str = "float64",
    ):
        self.sigma2 = sigma2
        self.optimizer = optimizer
        self.max_iterations = max_iterations
        self.tol = tol
        self.patience = patience
        self.history = history
        self.lr = lr
        self.batch_tokens = batch_tokens
        self.dp_batch_tokens = dp_batch_tokens
        self.semiring = semiring
        self.dtype = dtype

    # ------------------------------------------------------------------------------------------
    def _validate(self) -> None:
        if self.optimizer not in ("lbfgs", "sgd"):
            raise ValueError(f"optimizer must be 'lbfgs' or 'sgd', got {self.optimizer!r}")
        if not self.sigma2 > 0:
            raise ValueError(f"sigma2 must be > 0, got {self.sigma2}")
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {self.dtype!r}")
        get_semiring(self.semiring)

    def fit_batch(
        self,
        updater: Updater,
        features: FeatureMatrix,
        labels: Tensor,
        *,
        max_epochs: int | None = None,
        seed: int = 0,
        device: str | torch.device = "cpu",
        on_epoch: Callable[[EpochLog], None] | None = None,
        progress: bool = True,
        **_: object,
    ) -> FitResult:
        """Train ``updater.weights`` in place on the documents of ``features`` (gold ``labels``).

        Called like ``train.fit`` (without the learner).  Returns a ``FitResult`` whose epochs are
        L-BFGS iterations (or SGD epochs); each ``EpochLog`` carries ``extra = {"objective",
        "nll", ...}``.  ``fit``'s other keyword arguments (``tol``, ``patience``, ``shuffle``,
        ``start_epoch``, ``convergence``) are accepted and ignored: the learner's own settings
        apply, and training always starts from the current weights with a fresh L-BFGS memory.
        """
        self._validate()
        limit = self.max_iterations if max_epochs is None else min(self.max_iterations, max_epochs)
        optimization = _LBFGSOptimization if self.optimizer == "lbfgs" else _SGDOptimization
        with StopRequest() as stop:
            run = optimization(self, updater.weights, features, labels, seed, device, progress)
            return run.fit(limit, on_epoch, stop)


def _dtype(name: str) -> torch.dtype:
    return torch.float64 if name == "float64" else torch.float32


def _bucket_loss(learner: CRF, scores: Tensor, bucket: Bucket, num_labels: int) -> Tensor:
    """Sum of -log p(y* | x) over the bucket's documents, from their token scores.

    scores: [N_b, L + L*L] token scores (node, then edge flattened (from, to)), requires grad.
    """
    L = num_labels
    node, edge = scores[:, :L], scores[:, L:].reshape(-1, L, L)
    potentials = chain_potentials(node, edge, bucket.batch)  # [B, T, L, L]
    loss = nll(potentials, bucket.batch.lengths, bucket.gold, get_semiring(learner.semiring))
    return loss.sum()


def _posterior_errors(node_grad: Tensor, labels: Tensor) -> int:
    """Tokens whose most probable label (marginal = node gradient + gold one-hot) is wrong."""
    marg = node_grad.detach().clone()
    marg[torch.arange(len(labels), device=labels.device), labels] += 1.0
    return int((marg.argmax(dim=1) != labels).sum())


def full_objective(
    learner: CRF,
    weights: ChainWeights,
    features: FeatureMatrix,
    index: TransposedIndex,
    buckets: list[Bucket],
) -> tuple[float, float, list[Tensor], int]:
    """f(w), sum_d nll_d, [grad_node [F, L], grad_edge [F, L*L]], posterior token errors.

    One lookup over all training tokens; per bucket, the DP and its backward pass into the
    token scores; one transposed lookup for the table gradients; the prior added in closed form.
    """
    L = weights.num_labels
    dtype = _dtype(learner.dtype)
    tables = [weights.node.weight, weights.edge.weight]
    leaves = [t.detach().requires_grad_(True) for t in tables]
    ids, offsets = features.ids, features.offsets
    with torch.enable_grad():
        token_node = lookup(leaves[0], ids, offsets, index)  # [N, L]
        token_edge = lookup(leaves[1], ids, offsets, index)  # [N, L*L]
    scores = torch.cat([token_node, token_edge], dim=1).detach()  # [N, L + L*L]
    grad_scores = torch.zeros_like(scores)
    total, errors = 0.0, 0
    for bucket in buckets:
        s = scores[bucket.tokens].to(dtype).requires_grad_(True)  # [N_b, L + L*L]
        with torch.enable_grad():
            loss = _bucket_loss(learner, s, bucket, L)
            loss.backward()
        grad_scores[bucket.tokens] = s.grad.to(grad_scores.dtype)
        total += float(loss.detach())
        errors += _posterior_errors(s.grad[:, :L], bucket.labels)
    torch.autograd.backward([token_node, token_edge], [grad_scores[:, :L], grad_scores[:, L:]])
    grads = []
    sq = 0.0
    for w, leaf in zip(tables, leaves, strict=True):
        g = leaf.grad.to_dense() if leaf.grad.is_sparse else leaf.grad
        g.add_(w, alpha=1.0 / learner.sigma2)
        grads.append(g)
        sq += float(torch.dot(w.view(-1), w.view(-1)))
    return total + sq / (2.0 * learner.sigma2), total, grads, errors


def _rel_objective(f: float) -> float:
    """The objective as ``Convergence`` tracks it (it takes |e_k - e_{k-1}| / e_{k-1})."""
    return f if math.isfinite(f) else float("inf")


def features_cpu(features: FeatureMatrix) -> FeatureMatrix:
    return FeatureMatrix(*(t.cpu() for t in features.tensors().values()))


@dataclass
class _Iteration:
    """What one L-BFGS iteration or SGD epoch did, for its ``EpochLog``."""

    objective: float  # f(w): after the iteration (L-BFGS), summed during the epoch (SGD)
    nll: float  # its negative log-likelihood part
    errors: int  # tokens whose most probable label is wrong
    updates: int  # objective evaluations (L-BFGS), mini-batches (SGD)
    extra: dict  # the optimizer's own numbers, logged after objective and nll
    accepted: bool = True  # False: L-BFGS found no step that lowers the objective


class _Optimization:
    """One ``CRF.fit_batch`` run: the loop both optimizers share.

    A subclass sets its optimizer up in ``__init__`` and makes one L-BFGS iteration or one SGD
    epoch in ``iteration``.  ``fit`` logs each as an ``EpochLog`` (wall and CPU seconds, the
    objective, its nll and the optimizer's numbers) and stops when the relative change of the
    objective stays below the learner's ``tol`` for ``patience`` iterations, when L-BFGS makes
    no progress, when SIGUSR1 asks it to (``StopRequest``) or after ``limit`` iterations.
    """

    bar_label: str | None = None  # a progress bar over the iterations, under this label

    def __init__(
        self, learner: CRF, weights: ChainWeights, features, labels, seed, device, progress
    ):
        self.t_start = time.perf_counter()
        self.learner, self.weights = learner, weights
        self.features, self.labels = features, labels
        self.seed, self.device, self.progress = seed, device, progress

    def training_buckets(self, budget: int, *, with_index: bool) -> list[Bucket]:
        """``make_buckets`` of the training documents, ``budget`` padded tokens each."""
        return make_buckets(
            features_cpu(self.features),
            self.labels.cpu(),
            budget,
            with_index=with_index,
            num_features=self.weights.num_features,
            device=self.device,
        )

    def iteration(self, k: int) -> _Iteration:
        raise NotImplementedError

    def report(self, ep: EpochLog) -> None:
        """Called with each iteration's log before the stopping rules (default: nothing)."""

    def fit(self, limit: int, on_epoch, stop: StopRequest) -> FitResult:
        convergence = Convergence(self.learner.tol, self.learner.patience)
        history: list[EpochLog] = []
        stopped_by = "max_epochs"
        n_tokens = self.features.num_tokens
        k = 0
        hide = not self.progress or self.bar_label is None
        bar = tqdm(range(1, limit + 1), desc=self.bar_label, unit="it", disable=hide, leave=False)
        for k in bar:
            t0, c0 = time.perf_counter(), time.process_time()
            step = self.iteration(k)
            ep = EpochLog(
                epoch=k,
                word_error=step.errors / max(n_tokens, 1),
                errors=step.errors,
                tokens=n_tokens,
                updates=step.updates,
                seconds=time.perf_counter() - t0,
                extra={
                    "objective": step.objective,
                    "nll": step.nll,
                    **step.extra,
                    "cpu_seconds": time.process_time() - c0,
                },
            )
            history.append(ep)
            bar.set_postfix(objective=f"{step.objective:.6g}")
            self.report(ep)
            done = convergence.update(_rel_objective(step.objective))
            if on_epoch is not None:
                on_epoch(ep)
            if not step.accepted:
                stopped_by = "no_progress"
                break
            if done:
                stopped_by = "converged"
                break
            if stop.requested:
                stopped_by = "interrupted"
                break
        return FitResult(k, stopped_by, time.perf_counter() - self.t_start, history)


class _LBFGSOptimization(_Optimization):
    """Full batch: an iteration is one ``LBFGS.step`` on ``full_objective``, the DP over
    buckets of ``dp_batch_tokens`` padded tokens."""

    bar_label = "L-BFGS"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        device, weights = self.device, self.weights
        self.features = FeatureMatrix(*(t.to(device) for t in self.features.tensors().values()))
        index = TransposedIndex.build(
            self.features.ids.cpu(), self.features.offsets.cpu(), weights.num_features
        )
        self.index = index.to(device)
        self.buckets = self.training_buckets(self.learner.dp_batch_tokens, with_index=False)
        log.info(
            "CRF L-BFGS: %d documents in %d DP buckets, %d parameters, sigma2 %g",
            self.features.num_docs,
            len(self.buckets),
            weights.node.weight.numel() + weights.edge.weight.numel(),
            self.learner.sigma2,
        )
        self.opt = LBFGS([weights.node.weight, weights.edge.weight], history=self.learner.history)
        self.last: dict = {}  # nll and posterior errors of the last evaluation

    def objective(self) -> tuple[float, list[Tensor]]:
        f, total, grads, errors = full_objective(
            self.learner, self.weights, self.features, self.index, self.buckets
        )
        self.last.update(nll=total, errors=errors)
        return f, grads

    def iteration(self, k: int) -> _Iteration:
        info = self.opt.step(self.objective)
        return _Iteration(
            objective=info.loss,
            nll=self.last["nll"],
            errors=self.last["errors"],
            updates=info.evaluations,
            extra={"step": info.step, "grad_norm": info.grad_norm},
            accepted=info.accepted,
        )

    def report(self, ep: EpochLog) -> None:
        log.info(
            "iteration %d: objective %.6g (nll %.6g), step %.3g, %d evaluation(s), %.1fs",
            ep.epoch,
            ep.extra["objective"],
            ep.extra["nll"],
            ep.extra["step"],
            ep.updates,
            ep.seconds,
        )


class _SGDOptimization(_Optimization):
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
        self.tables = [self.weights.node.weight, self.weights.edge.weight]
        self.opt = ScaledSGD(self.tables, learner.sigma2, self.features.num_docs, learner.lr)

    def iteration(self, k: int) -> _Iteration:
        learner, opt, tables = self.learner, self.opt, self.tables
        L = self.weights.num_labels
        dtype = _dtype(learner.dtype)
        order = epoch_order(len(self.buckets), True, self.seed, k)
        total, errors = 0.0, 0
        bar = tqdm(order, desc=f"epoch {k}", unit="batch", disable=not self.progress, leave=False)
        for b in bar:
            bucket = self.buckets[b]
            batch = bucket.batch
            leaves = [t.detach().requires_grad_(True) for t in tables]
            with torch.enable_grad():
                node = lookup(leaves[0], batch.ids, batch.offsets, bucket.index)  # [N_b, L]
                edge = lookup(leaves[1], batch.ids, batch.offsets, bucket.index)  # [N_b, L*L]
                scores = torch.cat([node, edge], dim=1).to(dtype) * opt.scale
                scores.retain_grad()
                loss = _bucket_loss(learner, scores, bucket, L)
                loss.backward()
            total += float(loss.detach())
            errors += _posterior_errors(scores.grad[:, :L], bucket.labels)
            opt.step([leaf.grad for leaf in leaves], bucket.num_docs)
        opt.fold()
        sq = sum(float(torch.dot(w.view(-1), w.view(-1))) for w in tables)
        return _Iteration(
            objective=total + sq / (2.0 * learner.sigma2),
            nll=total,
            errors=errors,
            updates=len(self.buckets),
            extra={"lr": opt.lr()},
        )
