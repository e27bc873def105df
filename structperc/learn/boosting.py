"""Boosting for ranking with the exponential loss (Collins 2002, section 4.2 and Figure 2).

Over units i with reference x_{i,1} and candidates x_{i,j} (j >= 2), with F(x, w) = w_0 L(x) +
Σ_k w_k h_k(x) for binary features h_k, boosting greedily lowers

    Loss(w) = Σ_i Σ_{j>=2} exp(-M_ij),    M_ij = F(x_{i,1}, w) − F(x_{i,j}, w)

one feature at a time.  w_0 = argmin_w Σ exp(w (L(x_ij) − L(x_i1))) (a 1-D convex problem, here
by bisection on its derivative), the other weights start at 0.  With the index arrays

    A_k^+ = {(i, j): h_k(x_i1) − h_k(x_ij) = 1},  A_k^− = {... = −1}    (features -> pairs)
    B_ij^+ = {k: h_k(x_i1) − h_k(x_ij) = 1},      B_ij^− = {... = −1}    (pairs -> features)

and W_k^± = Σ_{(i,j) in A_k^±} exp(-M_ij), Z = Σ exp(-M_ij), a round picks

    k* = argmax_k |sqrt(W_k^+) − sqrt(W_k^−)|,   δ* = ½ log((W_{k*}^+ + εZ) / (W_{k*}^− + εZ))

sets w_{k*} += δ*, and updates M, W^± and Z for the pairs in A_{k*}^± only (through B^±).  At
ε = 0 the step is the exact minimiser of the loss along w_{k*} (tests/test_rankers.py checks it
against a line search); where one of A^± is empty that minimiser is at infinity and the step
is ±50.  W_{k*}^± are summed afresh from their pairs before the step (the running sums lose
values far below their size to cancellation).  Every ``report_every`` rounds it reports an
``EpochLog`` (loss, ranking errors, rounds), which the rerank task evaluates on dev; the number
of rounds is chosen there.  Boosting stops after ``rounds``, or once the loss has moved by less
than ``tol`` times its starting value in each of ``patience`` reports in a row.
Rounds touch only the candidates that contain k*; a round's cost is one pass over the W arrays
(the argmax) plus the pairs and features it changes.
"""

from __future__ import annotations

import math
import time

import torch
from torch import Tensor

from structperc.learn.base import Learner
from structperc.learn.fitting import EpochLog, FitResult, FitSettings
from structperc.model.updates import Updater


def csr_transpose(rows: Tensor, cols: Tensor, num_cols: int) -> tuple[Tensor, Tensor]:
    """(offsets [num_cols + 1], rows sorted by column) of (row, col) incidence pairs."""
    order = torch.argsort(cols, stable=True)
    counts = torch.bincount(cols, minlength=num_cols)
    offsets = torch.zeros(num_cols + 1, dtype=torch.long)
    torch.cumsum(counts, 0, out=offsets[1:])
    return offsets, rows[order]


def gather_csr(offsets: Tensor, values: Tensor, which: Tensor) -> tuple[Tensor, Tensor]:
    """The values of CSR rows ``which`` flattened, and the position in ``which`` of each."""
    lo, hi = offsets[which], offsets[which + 1]
    n = hi - lo
    owner = torch.repeat_interleave(torch.arange(len(which)), n)
    pos = (
        torch.repeat_interleave(lo, n)
        + torch.arange(int(n.sum()))
        - torch.repeat_interleave(n.cumsum(0) - n, n)
    )
    return values[pos], owner


def initial_base_weight(d: Tensor, lo: float = -1e3, hi: float = 1e3) -> float:
    """argmin_w Σ exp(−w d) for d [P] = L(x_i1) − L(x_ij), by bisection on the derivative
    −Σ d exp(−w d) (increasing in w); clipped to [lo, hi] when the minimum is at infinity."""
    d = d.double()
    if not len(d):
        return 0.0

    def slope(w: float) -> float:
        z = -w * d
        shift = float(z.max())
        return float(-(d * torch.exp(z - shift)).sum())  # the sign of the derivative

    if slope(lo) >= 0:
        return lo
    if slope(hi) <= 0:
        return hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if slope(mid) < 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


class RankBoost(Learner):
    """Figure 2 for ``rounds`` rounds with smoothing ``epsilon`` (on the candidate-list
    structure, which offers "ranking": its data are the whole lists)."""

    requires = frozenset({"ranking"})
    online = False

    def __init__(
        self,
        rounds: int = 100_000,
        epsilon: float = 1e-4,
        report_every: int = 1000,
        tol: float = 1e-4,
        patience: int = 3,
    ):
        if rounds < 0 or epsilon < 0 or report_every < 1 or tol < 0 or patience < 1:
            raise ValueError(
                f"ranker: rounds >= 0, epsilon >= 0, report_every >= 1, tol >= 0, patience >= 1; "
                f"got {rounds}, {epsilon}, {report_every}, {tol}, {patience}"
            )
        self.rounds, self.epsilon, self.report_every = rounds, epsilon, report_every
        self.tol, self.patience = tol, patience

    def fit(
        self, structure, updater: Updater, data, settings: FitSettings, on_epoch=None, group=None
    ) -> FitResult:
        """Boost on the units of ``data`` (``RankingData`` with references); the weights go into
        ``updater.weights``'s "base" and "global" tables.  One process only (``group``)."""
        if group is not None and group.parallel:
            raise ValueError("boosting runs in one process; use distributed=none")
        t_start = time.perf_counter()
        problem = BoostingProblem.build(data, structure.weights.global_.num_embeddings)
        tables = updater.weights.tables()
        w0 = initial_base_weight(problem.d_base)
        with torch.no_grad():
            tables["base"].fill_(w0)
        state = BoostingState.start(problem, w0)
        history: list[EpochLog] = [state.log(0, 0, 0.0)]  # w_0 alone: N = 0 can win on dev
        if on_epoch is not None:
            on_epoch(history[0])
        start, previous, streak = state.loss(), state.loss(), 0
        stopped_by = "max_epochs"
        t0 = time.perf_counter()
        for t in range(1, self.rounds + 1):
            k, delta = state.round(problem, self.epsilon)
            if k < 0:
                stopped_by = "no_feature"
                break
            with torch.no_grad():
                tables["global"][k, 0] += delta
            if t % self.report_every == 0 or t == self.rounds:
                ep = state.log(t // self.report_every, t, time.perf_counter() - t0)
                t0 = time.perf_counter()
                history.append(ep)
                # settled: the loss moved by less than tol of its start, patience reports running
                streak = streak + 1 if previous - state.loss() < self.tol * start else 0
                previous = state.loss()
                if on_epoch is not None:
                    on_epoch(ep)
                if streak >= self.patience:
                    stopped_by = "converged"
                    break
        epochs = history[-1].epoch if history else 0
        return FitResult(epochs, stopped_by, time.perf_counter() - t_start, history)


MAX_STEP = 50.0  # |δ*| when one side has no pair at ε = 0 (the exact step is infinite)


def step_size(w_plus: float, w_minus: float, smoothing: float) -> float:
    """δ* = ½ log((W⁺ + εZ) / (W⁻ + εZ)), ``smoothing`` = εZ; ±MAX_STEP for an empty side."""
    num, den = w_plus + smoothing, w_minus + smoothing
    if num <= 0 or den <= 0:  # no pair on that side
        return MAX_STEP if num > 0 else -MAX_STEP
    return 0.5 * math.log(num / den)


class BoostingProblem:
    """The pairs (reference, candidate) of every unit and the index arrays A^±, B^± of Figure 2.

    d_base: [P] L(x_i1) − L(x_ij).  B^± as CSR over pairs (b_plus_*), A^± over features.
    """

    def __init__(self, d_base, b_plus, b_minus, a_plus, a_minus, num_features):
        self.d_base = d_base
        self.b_plus, self.b_minus = b_plus, b_minus  # (offsets [P + 1], features)
        self.a_plus, self.a_minus = a_plus, a_minus  # (offsets [K + 1], pairs)
        self.num_features = num_features

    @classmethod
    def build(cls, data, num_features: int) -> BoostingProblem:
        if not data.has_reference:
            raise ValueError("boosting needs units with a reference row (training data)")
        sets = [
            set(data.ids[int(data.id_offsets[r]) : int(data.id_offsets[r + 1])].tolist())
            for r in range(len(data.base))
        ]
        d_base, plus_rows, plus_cols, minus_rows, minus_cols = [], [], [], [], []
        for u in range(len(data)):
            ref = int(data.offsets[u])
            for r in data.candidate_rows(u):
                if torch.equal(data.row(r), data.row(ref)):
                    continue  # the reference itself is not a competitor
                p = len(d_base)
                d_base.append(float(data.base[ref] - data.base[r]))
                for k in sets[ref] - sets[r]:
                    plus_rows.append(p)
                    plus_cols.append(k)
                for k in sets[r] - sets[ref]:
                    minus_rows.append(p)
                    minus_cols.append(k)
        P = len(d_base)

        def index(rows: list[int], cols: list[int]):
            rows_t = torch.tensor(rows, dtype=torch.long)
            cols_t = torch.tensor(cols, dtype=torch.long)
            by_pair = csr_transpose(cols_t, rows_t, P)  # pairs -> features
            by_feature = csr_transpose(rows_t, cols_t, num_features)  # features -> pairs
            return by_pair, by_feature

        b_plus, a_plus = index(plus_rows, plus_cols)
        b_minus, a_minus = index(minus_rows, minus_cols)
        d = torch.tensor(d_base, dtype=torch.float64)
        return cls(d, b_plus, b_minus, a_plus, a_minus, num_features)


class BoostingState:
    """M [P], exp(-M) [P], W^± [K] and Z during boosting."""

    def __init__(self, margins: Tensor, w_plus: Tensor, w_minus: Tensor):
        self.margins = margins
        self.exp = torch.exp(-margins)
        self.w_plus, self.w_minus = w_plus, w_minus
        self.z = float(self.exp.sum())

    @classmethod
    def start(cls, problem: BoostingProblem, w0: float) -> BoostingState:
        margins = w0 * problem.d_base
        exp = torch.exp(-margins)
        K = problem.num_features

        def weights(a) -> Tensor:
            offsets, pairs = a
            out = torch.zeros(K, dtype=torch.float64)
            owner = torch.repeat_interleave(torch.arange(K), offsets.diff())
            out.index_add_(0, owner, exp[pairs])
            return out

        return cls(margins, weights(problem.a_plus), weights(problem.a_minus))

    def round(self, problem: BoostingProblem, epsilon: float) -> tuple[int, float]:
        """One round of Figure 2: (k*, δ*), the state updated; (-1, 0) when nothing is left."""
        gain = (self.w_plus.sqrt() - self.w_minus.sqrt()).abs()
        k = int(gain.argmax())
        if not float(gain[k]) > 0:
            return -1, 0.0
        # W_k^± afresh from their pairs: the running sums lose tiny values to cancellation
        exact = []
        for offsets, pairs in (problem.a_plus, problem.a_minus):
            exact.append(float(self.exp[pairs[offsets[k] : offsets[k + 1]]].sum()))
        self.w_plus[k], self.w_minus[k] = exact
        delta = step_size(*exact, epsilon * self.z)
        for (offsets, pairs), sign in ((problem.a_plus, 1.0), (problem.a_minus, -1.0)):
            p = pairs[offsets[k] : offsets[k + 1]]
            if not len(p):
                continue
            new = self.exp[p] * math.exp(-sign * delta)
            change = new - self.exp[p]  # Δ of each pair
            self.margins[p] += sign * delta
            self.exp[p] = new
            self.z += float(change.sum())
            for (b_off, b_feats), w in (
                (problem.b_plus, self.w_plus),
                (problem.b_minus, self.w_minus),
            ):
                feats, owner = gather_csr(b_off, b_feats, p)
                w.index_add_(0, feats, change[owner])
        # rounding drift: weights of exp(-M) sums can go a hair below zero
        self.w_plus.clamp_(min=0.0)
        self.w_minus.clamp_(min=0.0)
        return k, delta

    def loss(self) -> float:
        return self.z

    def log(self, epoch: int, rounds: int, seconds: float) -> EpochLog:
        errors = int((self.margins <= 0).sum())
        pairs = len(self.margins)
        return EpochLog(
            epoch=epoch,
            word_error=errors / max(pairs, 1),
            errors=errors,
            tokens=pairs,
            updates=rounds,
            seconds=seconds,
            extra={"loss": self.z, "rounds": rounds},
        )
