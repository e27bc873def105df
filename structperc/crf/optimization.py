"""The iteration loop that CRF training shares between its optimizers (L-BFGS, SGD).

``Optimization.fit`` logs each L-BFGS iteration or SGD epoch as an ``EpochLog`` and applies the
stopping rules of CRF++: the relative change of the objective, |f_k - f_{k-1}| / f_k, stays below
``tol`` for ``patience`` consecutive iterations; or L-BFGS makes no progress; or SIGUSR1 asks it
to stop (``StopRequest``); or the iteration limit is reached.
"""

from __future__ import annotations

import logging
import math
import signal
import time
from dataclasses import dataclass

from structperc.crf.objective import Bucket, CRFSettings, features_cpu, make_buckets
from structperc.distributed import SERIAL, Group
from structperc.learn.fitting import Convergence, EpochLog, FitResult
from structperc.model.weights import ChainWeights
from structperc.progress import bar

log = logging.getLogger(__name__)


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
        weights: ChainWeights,
        features,
        labels,
        seed,
        device,
        progress,
        group: Group = SERIAL,
    ):
        self.t_start = time.perf_counter()
        self.learner, self.weights = learner, weights
        self.features, self.labels = features, labels
        self.seed, self.device, self.progress = seed, device, progress
        self.group = group  # the ranks whose shards (``features``) make up the training set

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
        )

    def iteration(self, k: int) -> Iteration:
        raise NotImplementedError

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
        return FitResult(k, stopped_by, time.perf_counter() - self.t_start, history)
