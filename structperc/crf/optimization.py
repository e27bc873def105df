"""The CRF's two optimisers, full-batch L-BFGS and mini-batch SGD, and the loop they share.

**The loop** (``Optimization.fit``).  Each L-BFGS iteration or SGD epoch is logged as an
``EpochLog`` under the stopping rules of CRF++: the relative change of the objective,
|f_k - f_{k-1}| / f_k, stays below ``tol`` for ``patience`` consecutive iterations; or L-BFGS
makes no progress; or SIGUSR1 asks it to stop (``StopRequest``); or the iteration limit is
reached.

**L-BFGS** (Nocedal 1980; Liu & Nocedal 1989), the optimizer of CRF training since Sha &
Pereira (2003) and in CRF++ / CRFsuite: with the last m pairs s_k = x_{k+1} - x_k,
y_k = g_{k+1} - g_k, the two-loop recursion gives the direction d = -H g, H the L-BFGS
inverse-Hessian estimate with H_0 = (s.y / y.y) I.  The step t along d is found by backtracking
from t = 1 (the first iteration tries t = 1 / ||g||) until the Armijo condition
f(x + t d) <= f(x) + c1 t g.d holds, shrinking t by safeguarded quadratic interpolation.  The
CRF objective is strictly convex (the Gaussian prior), so s.y > 0 and backtracking suffices; a
pair with s.y <= 0 (rounding) is skipped.  The parameters are updated in place (they can be the
``EmbeddingBag`` tables themselves).  Memory: 2 m + 2 copies of the parameters (history,
direction, gradient).  Each iteration costs the line search's evaluations (usually 1) and about
4 m inner products and 2 m updates over the parameters.  ``torch.optim.LBFGS`` is not used
because it re-evaluates the objective at the start of every ``step()``, so stepping one
iteration at a time (to log and test convergence per iteration) would cost an extra full pass
per iteration.

**OWL-QN** (Andrew & Gao 2007, "Scalable Training of L1-Regularized Log-Linear Models", ICML;
CRFsuite's ``c1`` through liblbfgs's ``orthantwise_c``): with ``l1`` = c1 > 0 the objective is
F(x) = f(x) + c1 ||x||_1, f the smooth part (the likelihood and the Gaussian prior), and
``LBFGS.step`` becomes an OWL-QN iteration:

* the pseudo-gradient  pg_i = g_i + c1 sign(x_i)  where x_i != 0; at x_i = 0 it is g_i + c1 if
  that is < 0, g_i - c1 if that is > 0, else 0 (the steepest descent of F, negated);
* the direction d = -H pg by the same two-loop recursion, with the (s, y) pairs of the smooth
  part's gradients, then zeroed where it disagrees in sign with -pg;
* the orthant xi_i = sign(x_i), or sign(-pg_i) where x_i = 0, and the line search over the
  projected points x(t) = pi(x + t d; xi), pi zeroing every coordinate whose sign leaves xi;
  backtracking until F(x(t)) <= F(x) + c1_armijo pg . (x(t) - x), t shrunk as L-BFGS
  shrinks it (the quadratic through F(x), pg . d and F(x(t)), kept within [0.1 t, 0.5 t]).

A weight that reaches 0 stays there until its pseudo-gradient points out of 0, so the model gets
sparse.  At the optimum of F, |df/dx_i| <= c1 where x_i = 0 and df/dx_i = -c1 sign(x_i)
elsewhere (``tests/test_crf_owlqn.py`` checks it against a slow reference).  With c1 = 0 the
L-BFGS code path is the one above, unchanged.  Memory: one more copy of the parameters (x).

``LBFGSTraining`` is the CRF's full-batch training (``learner.optimizer=lbfgs``, Kazama &
Torisawa's setting: CRF++ with an L-BFGS module): one iteration per "epoch", each evaluation one
lookup pass over all training tokens, the DP over buckets of documents (``dp_batch_tokens``
padded tokens each, or one bucket of every row for the sequential scan), one transposed lookup
for the gradient.

**SGD with a lazy prior.**  The objective f(w) = sum_d l_d(w) + ||w||^2 / (2 sigma^2) over N
documents is split evenly: f = sum_d f_d with f_d(w) = l_d(w) + (lambda / 2) ||w||^2,
lambda = 1 / (sigma^2 N).  A step on a mini-batch S of documents is

    w <- (1 - eta lambda |S|) w - eta sum_{d in S} grad l_d(w),

whose first part touches every weight.  Keeping w = a v (Shalev-Shwartz et al. 2007; Bottou
2010; CRFsuite's ``l2sgd``) makes it O(1): a <- a (1 - eta lambda |S|), and the loss gradient,
non-zero only on the features of S, goes into v: v <- v - eta g / a_new.  Gradients arrive
sparse (coalesced COO rows from ``lookup``) and are added with ``index_add_``.  The learning
rate decays as eta_t = eta_0 / (1 + eta_0 lambda t), t the number of documents seen (CRFsuite:
1 / (lambda (t_0 + t)) with t_0 = 1 / (lambda eta_0)).  When a gets small the scale is folded
into v (``fold``); callers fold before reading the weights.

``SGDTraining`` is the CRF's mini-batch training (``learner.optimizer=sgd``): mini-batches are
length-sorted groups of ``batch_tokens`` padded tokens, visited in a shuffled order each epoch.
"""

from __future__ import annotations

import logging
import math
import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from structperc.crf.buckets import Bucket, make_buckets
from structperc.crf.compiled import CompiledEdgeObjective, CompiledObjective, CompiledSGD
from structperc.crf.factored import lookup_index
from structperc.crf.objective import (
    CRFSettings,
    bucket_loss,
    dtype_of,
    features_cpu,
    full_objective,
    posterior_errors,
)
from structperc.crf.sparse import Support, lookup
from structperc.decode.marginals import check_scan
from structperc.distributed import SERIAL, Group
from structperc.features.extract import FeatureMatrix
from structperc.learn.fitting import Convergence, EpochLog, FitResult, epoch_order
from structperc.progress import bar
from structperc.structures.chain import ChainStructure

log = logging.getLogger(__name__)

#: evaluates the objective at the current parameters: (value, gradient per parameter)
Objective = Callable[[], tuple[float, list[Tensor]]]


class StopRequest:
    """``kill -USR1 <pid>`` asks a running ``CRF.fit`` to stop after the current iteration.

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


def rel_objective(f: float) -> float:
    """The objective as ``Convergence`` tracks it (it takes |e_k - e_{k-1}| / e_{k-1})."""
    return f if math.isfinite(f) else float("inf")


@dataclass
class Iteration:
    """What one L-BFGS iteration or SGD epoch did, for its ``EpochLog``."""

    objective: float  # f(w): after the iteration (L-BFGS), summed during the epoch (SGD)
    nll: float  # its negative log-likelihood part
    errors: int  # tokens whose most probable label is wrong
    updates: int  # objective evaluations (L-BFGS), mini-batches (SGD)
    extra: dict  # the optimizer's own numbers, logged after objective and nll
    accepted: bool = True  # False: L-BFGS found no step that lowers the objective


class Optimization:
    """One ``CRF.fit`` run: the loop both optimizers share.

    A subclass sets its optimizer up in ``__init__`` and makes one L-BFGS iteration or one SGD
    epoch in ``iteration``.  ``fit`` logs each as an ``EpochLog`` (wall and CPU seconds, the
    objective, its nll and the optimizer's numbers) and stops when the relative change of the
    objective stays below the learner's ``tol`` for ``patience`` iterations, when L-BFGS makes
    no progress, when SIGUSR1 asks it to (``StopRequest``) or after ``limit`` iterations.
    """

    bar_label: str | None = None  # a progress bar over the iterations, under this label

    def __init__(
        self,
        learner: CRFSettings,
        structure: ChainStructure,
        features,
        labels,
        seed,
        device,
        progress,
        group: Group = SERIAL,
        warm: bool = False,
        targets=None,
    ):
        self.t_start = time.perf_counter()
        if learner.scan != "compiled":  # (crf/compiled.py checks its own needs)
            check_scan(learner.scan)  # resolved by ``CRF.resolved``
        self.learner, self.structure, self.weights = learner, structure, structure.weights
        self.features, self.labels = features, labels
        self.targets = targets  # crf/targets.py: partial annotation and costs, or None
        if targets is not None:
            self.labels = targets.labels  # a compatible label at every open token
        self.seed, self.device, self.progress = seed, device, progress
        self.group = group  # the ranks whose shards (``features``) make up the training set
        self.warm = warm  # the tables hold a saved model to continue (``FitSettings.warm``)

    def training_buckets(
        self, budget: int, *, with_index: bool, packed: bool = False, sequential: bool = False
    ) -> list[Bucket]:
        """``make_buckets`` of the training documents, ``budget`` padded tokens each."""
        return make_buckets(
            features_cpu(self.features),
            self.labels.cpu(),
            budget,
            with_index=with_index,
            num_features=self.weights.num_features,
            device=self.device,
            packed=packed,
            sequential=sequential,
            targets=self.targets,
        )

    def iteration(self, k: int) -> Iteration:
        raise NotImplementedError

    def trainable(self) -> list[Tensor]:
        """The weights that training moves (default: the whole tables)."""
        return self.weights.dense_tables

    def summary(self) -> dict:
        """The trained model's size: its trainable ``parameters``, the ``nonzero_weights`` among
        them and their fraction (an L1 model's sparsity)."""
        params = self.trainable()
        total = sum(p.numel() for p in params)
        nonzero = sum(int(torch.count_nonzero(p)) for p in params)
        return {
            "parameters": total,
            "nonzero_weights": nonzero,
            "nonzero_fraction": nonzero / max(total, 1),
        }

    def report(self, ep: EpochLog) -> None:
        """Called with each iteration's log before the stopping rules (default: nothing)."""

    def resume_after(self, k: int) -> None:
        """Set the optimizer's own state for going on after iteration ``k`` from restored
        weights (default: nothing; L-BFGS starts a fresh memory)."""

    def fit(self, limit: int, on_epoch, stop: StopRequest, past: list | None = None) -> FitResult:
        """Iterations after those of ``past`` (a resumed run's logs) up to ``limit``."""
        convergence = Convergence(self.learner.tol, self.learner.patience)
        past = list(past or [])
        for ep in past:  # the stopping rule's state is a function of the objectives so far
            convergence.update(rel_objective(ep.extra["objective"]))
        history: list[EpochLog] = []
        stopped_by = "max_epochs"
        n_tokens = int(self.group.all_sum(self.features.num_tokens)[0])
        k = past[-1].epoch if past else 0
        if past:
            self.resume_after(k)
        hide = not self.progress or self.bar_label is None
        steps = range(k + 1, limit + 1)
        shown = bar(steps, enabled=not hide, desc=self.bar_label, unit="it")
        for k in shown:
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
            shown.set_postfix(objective=f"{step.objective:.6g}")
            self.report(ep)
            done = convergence.update(rel_objective(step.objective))
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
        seconds = time.perf_counter() - self.t_start
        return FitResult(k, stopped_by, seconds, history, summary=self.summary())


def dot(a: list[Tensor], b: list[Tensor]) -> float:
    """Inner product of two tensor lists."""
    return float(sum(torch.dot(x.reshape(-1), y.reshape(-1)) for x, y in zip(a, b, strict=True)))


def axpy_(alpha: float, x: list[Tensor], y: list[Tensor]) -> None:
    """y += alpha * x, in place."""
    for xi, yi in zip(x, y, strict=True):
        yi.add_(xi, alpha=alpha)


@dataclass
class LBFGSInfo:
    """One iteration: the objective after it, the accepted step, and the evaluations it took."""

    loss: float
    step: float
    evaluations: int
    grad_norm: float
    accepted: bool = True


def norm1(x: list[Tensor]) -> float:
    """||x||_1 of a tensor list."""
    return float(sum(torch.linalg.vector_norm(xi, 1) for xi in x))


def pseudo_gradient(x: list[Tensor], g: list[Tensor], l1: float) -> list[Tensor]:
    """OWL-QN's pseudo-gradient of f + l1 ||x||_1 at x, from the gradient g of f (Andrew & Gao
    2007, eq. 4): g + l1 sign(x) off zero; at zero the one-sided derivative that descends, or 0
    where neither does (|g_i| <= l1): g - clamp(g, -l1, l1).

    As one expression, with s = sign(x):  g - c + |s| (c + l1 s),  c = clamp(g, -l1, l1)
    (elementwise passes only: ``torch.where`` over tables of millions is several times slower).
    """
    out = []
    for xi, gi in zip(x, g, strict=True):
        s = xi.sign()
        c = gi.clamp(-l1, l1)
        pg = gi - c
        c.add_(s, alpha=l1).mul_(s.abs_())
        out.append(pg.add_(c))
    return out


def shrunk(t: float, f: float, gd: float, f_new: float) -> float:
    """The next step of a backtracking line search after step ``t`` failed: the minimiser of
    the quadratic through f, the slope g.d and f_new (the objective at t), kept within
    [0.1 t, 0.5 t]; 0.1 t where f_new is not finite."""
    if not math.isfinite(f_new):
        return 0.1 * t
    t_q = -gd * t * t / (2.0 * (f_new - f - gd * t))
    return min(max(t_q, 0.1 * t), 0.5 * t)


class LBFGS:
    """L-BFGS with backtracking (Armijo) line search; ``step(objective)`` runs one iteration.
    With ``l1`` > 0 it is OWL-QN on objective + l1 ||params||_1 (module docstring).

    Args:
        params: tensors optimised in place.
        history: m, the number of (s, y) pairs kept.
        c1: sufficient-decrease constant of the Armijo condition.
        max_linesearch: evaluations allowed per line search before giving up.
        l1: the L1 coefficient (0: plain L-BFGS).
    """

    def __init__(
        self,
        params: list[Tensor],
        history: int = 6,
        c1: float = 1e-4,
        max_linesearch: int = 20,
        l1: float = 0.0,
    ):
        if l1 < 0:
            raise ValueError(f"l1 must be >= 0, got {l1}")
        self.params = params
        self.history = history
        self.c1 = c1
        self.max_linesearch = max_linesearch
        self.l1 = l1
        self.pseudo: list[Tensor] | None = None  # OWL-QN: the pseudo-gradient at params
        self.pairs: deque[tuple[list[Tensor], list[Tensor], float]] = deque(maxlen=history)
        self.loss: float | None = None
        self.grad: list[Tensor] | None = None

    def direction(self, grad: list[Tensor]) -> list[Tensor]:
        """d = -H g by the two-loop recursion (Nocedal & Wright 2006, Algorithm 7.4)."""
        q = [-g for g in grad]
        alphas = []
        for s, y, rho in reversed(self.pairs):
            a = rho * dot(s, q)
            axpy_(-a, y, q)
            alphas.append(a)
        if self.pairs:
            s, y, _ = self.pairs[-1]
            gamma = dot(s, y) / dot(y, y)
            for qi in q:
                qi.mul_(gamma)
        for (s, y, rho), a in zip(self.pairs, reversed(alphas), strict=True):
            b = rho * dot(y, q)
            axpy_(a - b, s, q)
        return q

    def step(self, objective: Objective) -> LBFGSInfo:
        """One iteration: direction, line search, history update.  Parameters move in place.

        If no step along the direction decreases the objective enough (rounding at the optimum),
        the parameters stay put and the result has ``accepted=False``.
        """
        if self.l1 > 0:
            return self.orthant_wise_step(objective)
        evaluations = 0
        if self.grad is None:
            self.loss, self.grad = objective()
            evaluations += 1
        f, g = self.loss, self.grad
        d = self.direction(g)
        gd = dot(g, d)
        if not gd < 0:  # not a descent direction (should not happen): restart from -g
            self.pairs.clear()
            d = [-gi for gi in g]
            gd = dot(g, d)
        t = 1.0 if self.pairs else 1.0 / max(math.sqrt(-gd), 1e-12)
        moved = 0.0
        for _ in range(self.max_linesearch):
            axpy_(t - moved, d, self.params)
            moved = t
            f_new, g_new = objective()
            evaluations += 1
            if math.isfinite(f_new) and f_new <= f + self.c1 * t * gd:
                break
            t = shrunk(t, f, gd, f_new)
        else:
            axpy_(-moved, d, self.params)  # back to x
            return LBFGSInfo(f, 0.0, evaluations, math.sqrt(dot(g, g)), accepted=False)
        for di in d:  # d becomes s = t d
            di.mul_(t)
        self.moved(d, g, f_new, g_new)
        return LBFGSInfo(f_new, t, evaluations, math.sqrt(dot(g_new, g_new)))

    def moved(self, s: list[Tensor], g: list[Tensor], f_new: float, g_new: list[Tensor]) -> None:
        """After a step s = x_new - x: the pair (s, y = g_new - g) kept (``g`` becomes y in
        place) unless s.y is not positive enough, and the loss and gradient at x_new made the
        current ones."""
        for gi, gn in zip(g, g_new, strict=True):  # g becomes y = g_new - g
            gi.sub_(gn).neg_()
        sy = dot(s, g)
        if sy > 1e-10 * dot(g, g):
            self.pairs.append((s, g, 1.0 / sy))
        self.loss, self.grad = f_new, g_new

    def orthant_wise_step(self, objective: Objective) -> LBFGSInfo:
        """One OWL-QN iteration (module docstring); ``loss`` is f + l1 ||x||_1.

        The projection needs no orthant tensor: where x_i = 0 the direction already has the
        sign of -pg_i (or is 0), which is xi_i, so pi only zeroes the coordinates that cross
        zero, x_i(t) x_i < 0.  The pseudo-gradient and F at the new point are kept for the next
        iteration."""
        evaluations = 0
        if self.grad is None:
            self.loss, self.grad = objective()
            evaluations += 1
            self.pseudo = None
        x, l1 = self.params, self.l1
        g = self.grad
        total = self.loss + l1 * norm1(x)
        if self.pseudo is None:
            self.pseudo = pseudo_gradient(x, g, l1)
        pg = self.pseudo
        d = self.direction(pg)
        for di, pgi in zip(d, pg, strict=True):  # only where it descends along -pg
            di.masked_fill_(di * pgi >= 0, 0.0)
        gd = dot(pg, d)
        if not gd < 0:  # the direction left nothing: restart from -pg
            self.pairs.clear()
            d = [-pgi for pgi in pg]
            gd = dot(pg, d)
            if not gd < 0:  # pg = 0: x is the optimum
                return LBFGSInfo(total, 0.0, evaluations, 0.0, accepted=False)
        start = [xi.clone() for xi in x]
        t = 1.0 if self.pairs else 1.0 / max(math.sqrt(-gd), 1e-12)
        for _ in range(self.max_linesearch):
            for xi, x0, di in zip(x, start, d, strict=True):
                torch.add(x0, di, alpha=t, out=xi)
                xi.masked_fill_(xi * x0 < 0, 0.0)  # pi: a coordinate that crosses 0 stops there
            f_new, g_new = objective()
            evaluations += 1
            total_new = f_new + l1 * norm1(x)
            moved = sum(  # pg . (x(t) - x)
                float(torch.dot(p.reshape(-1), (xi - x0).reshape(-1)))
                for p, xi, x0 in zip(pg, x, start, strict=True)
            )
            armijo = total_new <= total + self.c1 * moved
            if math.isfinite(total_new) and armijo and total_new < total:  # (< : no stalling at
                break  # the optimum, where rounding makes the Armijo test hold with F unchanged)
            t = shrunk(t, total, gd, total_new)  # as L-BFGS: through F, pg.d, F(x(t))
        else:
            for xi, x0 in zip(x, start, strict=True):  # back to x
                xi.copy_(x0)
            return LBFGSInfo(total, 0.0, evaluations, math.sqrt(dot(pg, pg)), accepted=False)
        for x0, xi in zip(start, x, strict=True):  # start becomes s = x_new - x
            x0.sub_(xi).neg_()
        self.moved(start, g, f_new, g_new)
        self.pseudo = pseudo_gradient(x, g_new, l1)
        return LBFGSInfo(total_new, t, evaluations, math.sqrt(dot(self.pseudo, self.pseudo)))


CHECK_EVERY = 5  # iterations between the ranks' weight checksums (several ranks)


class LBFGSTraining(Optimization):
    """Full batch: an iteration is one ``LBFGS.step`` on ``full_objective``, the DP over
    buckets of ``dp_batch_tokens`` padded tokens."""

    bar_label = "L-BFGS"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        device, weights = self.device, self.weights
        groups = self.features.groups  # (the lookup's, ``crf/factored.py``)
        self.features = FeatureMatrix(*(t.to(device) for t in self.features.tensors().values()))
        self.compiled = None  # scan="compiled": the objective by native/crf_kernels.py
        self.buckets: list = []
        edge_kernel = self.learner.scan == "compiled" and weights.edges
        if self.learner.scan == "compiled" and not weights.edges:
            self.compiled = CompiledObjective(weights, self.features, self.labels, self.targets)
        elif not edge_kernel:
            f = features_cpu(self.features)
            self.index = lookup_index(f, groups, weights.num_features).to(device)
            self.buckets = self.training_buckets(
                self.learner.dp_batch_tokens,
                with_index=False,
                packed=self.learner.pack,
                sequential=self.learner.scan == "sequential",
            )
        self.tables = tables = weights.dense_tables  # (updated in place)
        self.support = None
        if self.learner.support == "observed":  # CRFsuite's model (sparse.py)
            features = features_cpu(self.features)
            allowed = None if self.targets is None else self.targets.allowed
            support = Support.observed(weights, features, self.labels.cpu(), self.group, allowed)
            self.support = support.to(device)
            if self.warm:  # a saved model's weights stay trainable (``Support.with_nonzero``)
                self.support = self.support.with_nonzero(tables)
            self.support.zero_outside_(tables)
        log.info(
            "CRF L-BFGS: %d documents in %d DP buckets, %d parameters%s, sigma2 %g%s",
            self.features.num_docs,
            len(self.buckets),
            sum(t.numel() for t in tables),
            f" ({self.support.size} in the observed support)" if self.support else "",
            self.learner.sigma2,
            f", c1 {self.learner.c1:g} (OWL-QN)" if self.learner.c1 > 0 else "",
        )
        params = self.support.gather(tables) if self.support else tables
        if edge_kernel:  # (native/edge_crf_kernels.py: over the support's parameters)
            self.compiled = CompiledEdgeObjective(weights, self.features, self.labels, self.support)
        self.opt = LBFGS(params, history=self.learner.history, l1=self.learner.c1)
        self.last: dict = {}  # nll and posterior errors of the last evaluation

    def objective(self) -> tuple[float, list[Tensor]]:
        if isinstance(self.compiled, CompiledEdgeObjective):  # it reads the parameters
            f, total, grads, errors = self.compiled(self.learner, self.opt.params, self.group)
            self.last.update(nll=total, errors=errors)
            return f, grads
        if self.support:  # L-BFGS moved the reduced parameters: the tables follow
            self.support.scatter_(self.tables, self.opt.params)
        if self.compiled is not None:
            f, total, grads, errors = self.compiled(self.learner, self.group)
        else:
            f, total, grads, errors = full_objective(
                self.learner, self.structure, self.features, self.index, self.buckets, self.group
            )
        self.last.update(nll=total, errors=errors)
        return f, self.support.gather(grads) if self.support else grads

    def iteration(self, k: int) -> Iteration:
        info = self.opt.step(self.objective)
        if self.support:  # where the step ended (a rejected step moves back after evaluating)
            self.support.scatter_(self.tables, self.opt.params)
        if k % CHECK_EVERY == 0:
            self.group.check_identical(self.weights.tables(), f"CRF L-BFGS iteration {k}")
        extra = {"step": info.step, "grad_norm": info.grad_norm}
        if self.learner.c1 > 0:  # the sparsity OWL-QN reaches, iteration by iteration
            extra["nonzero_weights"] = sum(int(torch.count_nonzero(p)) for p in self.opt.params)
        return Iteration(
            objective=info.loss,
            nll=self.last["nll"],
            errors=self.last["errors"],
            updates=info.evaluations,
            extra=extra,
            accepted=info.accepted,
        )

    def trainable(self) -> list[Tensor]:
        return self.opt.params  # the observed support's entries, or the whole tables

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
        self.compiled = None  # scan="compiled": the epochs by native/crf_kernels.py
        if learner.scan == "compiled":
            self.compiled = CompiledSGD(self.weights, self.features, self.labels, learner)
            self.buckets = self.compiled.buckets
        else:
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
        if self.compiled is not None:  # the whole epoch in compiled code
            total, errors = self.compiled.epoch(order, opt)
        else:
            shown = bar(order, enabled=self.progress, desc=f"epoch {k}", unit="batch")
            for b in shown:
                bucket = self.buckets[b]
                batch = bucket.batch
                leaves = [t.detach().requires_grad_(True) for t in tables]
                with torch.enable_grad():
                    # [N_b, L + L*L] (node | edge, the joint table), or [N_b, L]
                    token = lookup(leaves[0], batch.ids, batch.offsets, bucket.index, batch.values)
                    scores = token.to(dtype) * opt.scale
                    transition = None
                    if not self.weights.edges:  # the one transition matrix [1, L*L]
                        transition = leaves[1].to(dtype) * opt.scale
                    scores.retain_grad()
                    loss = bucket_loss(learner, self.structure, scores, bucket, transition)
                    loss.backward()
                total += float(loss.detach())
                errors += posterior_errors(scores.grad[:, :L], bucket.labels, bucket.known)
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
