"""Limited-memory BFGS over a list of tensors, one iteration per call, and full-batch CRF training.

L-BFGS (Nocedal 1980; Liu & Nocedal 1989), the optimizer of CRF training since Sha & Pereira
(2003) and in CRF++ / CRFsuite: with the last m pairs s_k = x_{k+1} - x_k, y_k = g_{k+1} - g_k,
the two-loop recursion gives the direction d = -H g, H the L-BFGS inverse-Hessian estimate with
H_0 = (s.y / y.y) I.  The step t along d is found by backtracking from t = 1 (the first iteration
tries t = 1 / ||g||) until the Armijo condition f(x + t d) <= f(x) + c1 t g.d holds, shrinking t by
safeguarded quadratic interpolation.  The CRF objective is strictly convex (the Gaussian prior), so
s.y > 0 and backtracking suffices; a pair with s.y <= 0 (rounding) is skipped.

The parameters are updated in place (they can be the ``EmbeddingBag`` tables themselves).  Memory:
2 m + 2 copies of the parameters (history, direction, gradient).  Each iteration costs the line
search's evaluations (usually 1) and about 4 m inner products and 2 m updates over the parameters.

``LBFGSTraining`` is the CRF's full-batch training (``learner.optimizer=lbfgs``, Kazama &
Torisawa's setting: CRF++ with an L-BFGS module): one iteration per "epoch", each evaluation one
lookup pass over all training tokens, the DP over length-sorted buckets of documents
(``dp_batch_tokens`` padded tokens each), one transposed lookup for the gradient.

``torch.optim.LBFGS`` is not used because it re-evaluates the objective at the start of every
``step()``, so stepping one iteration at a time (to log and test convergence per iteration) would
cost an extra full pass per iteration.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from structperc.crf.lookup import TransposedIndex
from structperc.crf.objective import features_cpu, full_objective, resolve_semiring
from structperc.crf.optimization import Iteration, Optimization
from structperc.crf.support import Support
from structperc.features.extract import FeatureMatrix
from structperc.learn.fitting import EpochLog

log = logging.getLogger(__name__)

#: evaluates the objective at the current parameters: (value, gradient per parameter)
Objective = Callable[[], tuple[float, list[Tensor]]]


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


class LBFGS:
    """L-BFGS with backtracking (Armijo) line search; ``step(objective)`` runs one iteration.

    Args:
        params: tensors optimised in place.
        history: m, the number of (s, y) pairs kept.
        c1: sufficient-decrease constant of the Armijo condition.
        max_linesearch: evaluations allowed per line search before giving up.
    """

    def __init__(
        self,
        params: list[Tensor],
        history: int = 6,
        c1: float = 1e-4,
        max_linesearch: int = 20,
    ):
        self.params = params
        self.history = history
        self.c1 = c1
        self.max_linesearch = max_linesearch
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
            if math.isfinite(f_new):  # minimiser of the quadratic through f, g.d and f_new
                t_q = -gd * t * t / (2.0 * (f_new - f - gd * t))
                t = min(max(t_q, 0.1 * t), 0.5 * t)
            else:
                t *= 0.1
        else:
            axpy_(-moved, d, self.params)  # back to x
            return LBFGSInfo(f, 0.0, evaluations, math.sqrt(dot(g, g)), accepted=False)
        for di in d:  # d becomes s = t d
            di.mul_(t)
        for gi, gn in zip(g, g_new, strict=True):  # g becomes y = g_new - g
            gi.sub_(gn).neg_()
        sy = dot(d, g)
        if sy > 1e-10 * dot(g, g):
            self.pairs.append((d, g, 1.0 / sy))
        self.loss, self.grad = f_new, g_new
        return LBFGSInfo(f_new, t, evaluations, math.sqrt(dot(g_new, g_new)))


CHECK_EVERY = 5  # iterations between the ranks' weight checksums (several ranks)


class LBFGSTraining(Optimization):
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
        scan = resolve_semiring(self.learner.semiring, weights.edges, "lbfgs", device)
        self.buckets = self.training_buckets(
            self.learner.dp_batch_tokens,
            with_index=False,
            packed=self.learner.pack,
            sequential=scan == "sequential",
        )
        self.tables = tables = weights.dense_tables  # (updated in place)
        self.support = None
        if self.learner.support == "observed":  # CRFsuite's model (crf/support.py)
            features = features_cpu(self.features)
            support = Support.observed(weights, features, self.labels.cpu(), self.group)
            self.support = support.to(device)
            self.support.zero_outside_(tables)
        log.info(
            "CRF L-BFGS: %d documents in %d DP buckets, %d parameters%s, sigma2 %g",
            self.features.num_docs,
            len(self.buckets),
            sum(t.numel() for t in tables),
            f" ({self.support.size} in the observed support)" if self.support else "",
            self.learner.sigma2,
        )
        params = self.support.gather(tables) if self.support else tables
        self.opt = LBFGS(params, history=self.learner.history)
        self.last: dict = {}  # nll and posterior errors of the last evaluation

    def objective(self) -> tuple[float, list[Tensor]]:
        if self.support:  # L-BFGS moved the reduced parameters: the tables follow
            self.support.scatter_(self.tables, self.opt.params)
        f, total, grads, errors = full_objective(
            self.learner, self.weights, self.features, self.index, self.buckets, self.group
        )
        self.last.update(nll=total, errors=errors)
        return f, self.support.gather(grads) if self.support else grads

    def iteration(self, k: int) -> Iteration:
        info = self.opt.step(self.objective)
        if self.support:  # where the step ended (a rejected step moves back after evaluating)
            self.support.scatter_(self.tables, self.opt.params)
        if k % CHECK_EVERY == 0:
            self.group.check_identical(self.weights.tables(), f"CRF L-BFGS iteration {k}")
        return Iteration(
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
