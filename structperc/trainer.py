"""The training loop, as a plain function over a structure (no config objects below ``run.py``).

``fit`` trains any learner on any structure (``structperc.structures``):

1. it checks that the structure offers what the learner requires (``check_capabilities``);
2. it resumes from a per-epoch ``Checkpoint`` when asked, else runs the learner's BPM
   initialisation when it declares one (Kazama & Torisawa 2007, after Herbrich & Graepel 2000:
   ``bpm_runs`` single epochs from zero weights, each over a differently shuffled order,
   averaged, as the starting point; not when the weights continue a saved model,
   ``FitSettings.warm``);
3. an online learner then makes one ``step`` per instance (a document or a sentence), in an
   order shuffled per epoch with a seeded generator, until Kazama & Torisawa's convergence rule
   holds — the relative change of the per-word training error stays below ``tol`` for
   ``patience`` epochs in a row — or ``max_epochs`` is reached; the result says which stopped
   it.  A learner that optimises the whole set at once (``online = False``: the CRF's L-BFGS
   and SGD, boosting) runs its own ``fit`` instead.

The words of fitting (``FitSettings``, ``EpochLog``, ``FitResult``, ``Convergence``, the epoch
orders and shards) are ``learn/fitting.py``'s; decoding a data set is the structure's ``predict``.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import asdict, replace

import torch

from structperc.checkpoint import Checkpoint
from structperc.distributed import SERIAL, Group
from structperc.features.store import SHUFFLED_RELEASE_EVERY, release_pages
from structperc.forking import Child, SharedTables, can_fork
from structperc.learn.base import Learner, StepStats
from structperc.learn.fitting import (
    Convergence,
    EpochLog,
    FitResult,
    FitSettings,
    rank_shard,
    shard_order,
)
from structperc.learn.targets import StepTargets
from structperc.model.mixing import ParameterMixing
from structperc.model.updates import Updater
from structperc.native.online import compiled_epochs
from structperc.progress import bar
from structperc.structures.base import check_capabilities

log = logging.getLogger(__name__)


def fit(
    learner: Learner,
    structure,
    updater: Updater,
    data,
    settings: FitSettings = FitSettings(),
    *,
    on_epoch: Callable[[EpochLog], None] | None = None,
    on_epoch_start: Callable[[int], dict] | None = None,
    checkpoint: Checkpoint | None = None,
    resume: bool = False,
    group: Group = SERIAL,
) -> FitResult:
    """Train ``learner`` on every instance of ``data`` through ``structure``, in place.

    Args:
        learner: an update rule (``structperc.learn``) or the CRF.
        structure: its model of labelings (``structperc.structures``); ``updater.weights`` are
            the structure's tables.
        data: the training set in the structure's form (``ChainData``, ``PartData``).
        settings: epochs, stopping rule, order, device, progress bars.
        on_epoch: called with each epoch's log (after the convergence rule has seen its error);
            it may add to the log's ``extra`` (e.g. the dev F1), which the checkpoint keeps.
        on_epoch_start: called with the epoch number before each epoch; what it returns is added
            to the epoch's ``extra`` (the joint task's back-off schedule).
        checkpoint: save the weights, averaging sums, the learner's own state (``Learner.state``),
            convergence state and history after every epoch of an online learner.
        resume: continue from ``checkpoint`` when it holds one (same seed: the same orders).
        group: the processes training together (``distributed.py``).  Each trains on its
            token-balanced shard; an online learner's weights are mixed after every epoch
            (``model/mixing.py``), the CRF sums its objective over the ranks.  Every rank
            resumes from the checkpoint, which rank 0 alone writes.
    """
    check_capabilities(learner, structure)
    learner.start(updater)
    convergence = Convergence(settings.tol, settings.patience)
    start_epoch, past = 0, []
    if resume and checkpoint is not None and checkpoint.exists():
        start_epoch, state, logs = checkpoint.load(updater, learner)
        convergence.load_state(state)
        past = [EpochLog(**h) for h in logs]
        log.info("resumed from %s after epoch %d", checkpoint.directory, start_epoch)
    elif resume:
        where = checkpoint.directory if checkpoint is not None else "(no checkpoint folder)"
        log.warning("trainer.resume=true but no checkpoint in %s: starting afresh", where)
    bpm_seconds = 0.0
    if learner.bpm_runs and start_epoch == 0 and settings.warm:
        log.info("BPM initialisation not run: training continues a saved model")
    elif learner.bpm_runs and start_epoch == 0:
        t0 = time.perf_counter()
        bpm_initialize(learner, structure, updater, data, settings, on_epoch_start, group)
        bpm_seconds = time.perf_counter() - t0
    history = list(past)

    def save_checkpoint() -> None:
        if checkpoint is not None and (learner.online or learner.resumable) and group.is_main:
            logs = [asdict(h) for h in history]
            checkpoint.save(updater, convergence.state(), logs, learner.state())

    def after_epoch(ep: EpochLog) -> None:
        if on_epoch is not None:
            on_epoch(ep)
        history.append(ep)
        save_checkpoint()

    overlapped = None
    overlap = learner.online and settings.processes > 1 and not group.parallel
    if overlap and can_fork(settings.device) and getattr(on_epoch, "forkable", False):
        overlapped = OverlappedReports(on_epoch, history, save_checkpoint)
    if learner.online:
        try:
            result = run_epochs(
                learner,
                structure,
                updater,
                data,
                settings,
                on_epoch=after_epoch if overlapped is None else overlapped.submit,
                on_epoch_start=on_epoch_start,
                start_epoch=start_epoch,
                convergence=convergence,
                group=group,
            )
        except BaseException:
            if overlapped is not None:
                overlapped.abandon()
            raise
        if overlapped is not None:
            overlapped.finish()
    else:
        hooks = {"past": past} if learner.resumable else {}
        result = learner.fit(
            structure, updater, data, settings, on_epoch=after_epoch, group=group, **hooks
        )
    result.history = history
    result.bpm_seconds = bpm_seconds
    result.resumed_from = start_epoch if resume else None
    result.previous_seconds = sum(h.seconds for h in past)
    return result


class OverlappedReports:
    """``fit``'s end-of-epoch work with epoch k's evaluation and checkpoint in a forked child
    while the parent trains epoch k + 1 (``settings.processes`` > 1).

    ``report`` is a two-phase ``on_epoch`` hook marked ``forkable``: ``measure(ep)`` reads the
    weights (the evaluation) and changes nothing but ``ep.extra``; ``publish(ep, measured)``
    logs it.  The child, holding the weights as they were at the end of epoch k, measures and
    writes the checkpoint with the complete history; the parent takes the child's result before
    it forks the next one, so checkpoints are written in order and the logs, TensorBoard scalars
    and history are those of the serial loop, one epoch later in time.
    """

    def __init__(self, report, history: list[EpochLog], save_checkpoint: Callable[[], None]):
        self.report, self.history, self.save_checkpoint = report, history, save_checkpoint
        self.pending: tuple[EpochLog, Child] | None = None

    def submit(self, ep: EpochLog) -> None:
        self.finish()

        def work() -> tuple[dict, dict]:
            measured = self.report.measure(ep)
            self.history.append(ep)
            self.save_checkpoint()
            return measured, ep.extra

        child = Child(work, name=f"epoch {ep.epoch}'s evaluation and checkpoint")
        self.pending = (ep, child)
        self.history.append(ep)

    def finish(self) -> None:
        """Take the pending epoch's result and publish it."""
        if self.pending is None:
            return
        ep, child = self.pending
        self.pending = None
        measured, extra = child.result()
        ep.extra.update(extra)
        self.report.publish(ep, measured)

    def abandon(self) -> None:
        """After an error in the parent: let the pending checkpoint finish, drop the report."""
        if self.pending is not None:
            try:
                self.finish()
            except Exception:  # noqa: BLE001 - the parent's own error is the one raised
                log.exception("the overlapped evaluation of the last epoch failed as well")


def run_epochs(
    learner: Learner,
    structure,
    updater: Updater,
    data,
    settings: FitSettings,
    *,
    on_epoch: Callable[[EpochLog], None] | None = None,
    on_epoch_start: Callable[[int], dict] | None = None,
    start_epoch: int = 0,
    convergence: Convergence | None = None,
    group: Group = SERIAL,
) -> FitResult:
    """The epoch loop of online training: epochs ``start_epoch + 1 ... settings.max_epochs``,
    each calling ``learner.step`` on the instances of ``data`` in ``epoch_order`` and summing
    the ``StepStats`` it returns, until ``convergence`` (default: a fresh
    ``Convergence(settings.tol, settings.patience)``) holds.

    An epoch's ``EpochLog.extra`` is the learner's summed extra counts, then what
    ``on_epoch_start`` returned.  Each instance's batch is built once and kept, unless the
    data's features are mapped from disk (``features/store.py``: a corpus larger than
    memory): then it is read again at each visit (by ``pread``, ``store.MatrixFiles``) and
    any pages of the maps released now and then, the same steps in the same order in memory
    that does not grow with the data.

    On several ranks (``group``) each rank steps through its shard in its own order
    (``shard_order``), the weights are mixed after the epoch (``ParameterMixing``, its seconds in
    ``extra["mix_seconds"]``) and the statistics are summed over the ranks, so every rank's
    convergence rule sees the global per-word error and all stop in the same epoch.
    """
    convergence = convergence or Convergence(settings.tol, settings.patience)
    history: list[EpochLog] = []
    instances: dict[int, tuple] = {}
    stopped_by = "max_epochs"
    t_start = time.perf_counter()
    epoch = start_epoch
    unit = data.unit
    shard = rank_shard(data, group)
    mixing = ParameterMixing(group, updater, settings.mixing) if group.parallel else None
    targets = StepTargets(learner, structure, data)
    fast = settings.compiled and not targets.active
    fast = fast and compiled_epochs(learner, structure, updater, data, settings.device)
    if targets.active and start_epoch == 0 and group.is_main:
        log.info("training with %s: the Python loop over the instances", targets.describe())
    mapped = getattr(getattr(data, "features", None), "mapped", False)
    for epoch in range(start_epoch + 1, settings.max_epochs + 1):
        extra = on_epoch_start(epoch) if on_epoch_start is not None else {}
        order = shard_order(len(data), shard, settings.shuffle, settings.seed, epoch, group.rank)
        stats = StepStats()
        t0 = time.perf_counter()
        enabled = settings.progress and group.is_main
        if mixing is not None:
            mixing.begin()
        if fast:  # the whole epoch in compiled code (native/online.py)
            stats = fast(order, progress=enabled, desc=f"epoch {epoch}")
        else:
            shown = bar(order, enabled=enabled, desc=f"epoch {epoch}", unit=unit)
            for step, i in enumerate(shown):
                if mapped:  # read from the mapped files at each visit (memory: store.py)
                    batch, gold = structure.instance(data, i, settings.device)
                    if step % SHUFFLED_RELEASE_EVERY == 0:
                        release_pages()
                else:
                    if i not in instances:
                        instances[i] = structure.instance(data, i, settings.device)
                    batch, gold = instances[i]
                if targets.active:
                    batch, gold = targets(i, batch, gold)
                stats += learner.step(structure, updater, batch, gold)
                updater.tick()
        if mixing is not None:
            before = mixing.seconds
            mixing.end(stats.updates)
            stats = group_stats(group, stats)
            extra["mix_seconds"] = mixing.seconds - before
        ep = EpochLog(
            epoch=epoch,
            word_error=stats.errors / max(stats.tokens, 1),
            errors=stats.errors,
            tokens=stats.tokens,
            updates=stats.updates,
            seconds=time.perf_counter() - t0,
            extra={**stats.extra, **extra},
        )
        history.append(ep)
        done = convergence.update(ep.word_error)
        if on_epoch is not None:
            on_epoch(ep)
        if done:
            stopped_by = "converged"
            break
    return FitResult(epoch, stopped_by, time.perf_counter() - t_start, history)


def bpm_initialize(
    learner: Learner,
    structure,
    updater: Updater,
    data,
    settings: FitSettings,
    on_epoch_start: Callable[[int], dict] | None = None,
    group: Group = SERIAL,
) -> None:
    """Kazama & Torisawa's BPM initialisation: average ``learner.bpm_runs`` single epochs from
    zero, each over a differently shuffled order (seeds ``seed * 1000 + k``, k = 1, 2, ...),
    without averaging inside a run, and leave that average in ``updater.weights``.  On several
    ranks each single epoch is a mixed one.

    With ``settings.processes`` > 1 (one rank, CPU tables) up to that many single epochs run at
    once in forked children (``forking.py``); their tables are summed in run order, so the
    average is bit-identical to the serial loop's.  Only the tables come back from a child: this
    relies on a training step changing nothing else that later steps read (true of every
    learner and structure here; the non-local vocabulary, for one, is fixed before training)."""
    weights = updater.weights
    tables = weights.tables()
    total = {n: torch.zeros_like(t) for n, t in tables.items()}
    runs = learner.bpm_runs

    def single_run(k: int, progress: bool = settings.progress) -> None:
        with torch.no_grad():
            for t in tables.values():
                t.zero_()
        seed = settings.seed * 1000 + k + 1
        one = replace(settings, max_epochs=1, shuffle=True, seed=seed, progress=progress)
        run_epochs(
            learner,
            structure,
            Updater(weights),
            data,
            one,
            on_epoch_start=on_epoch_start,
            group=group,
        )

    def add(run_tables: dict[str, torch.Tensor], k: int) -> None:
        for n, t in run_tables.items():
            total[n] += t
        log.info("BPM run %d/%d done", k + 1, runs)

    workers = min(settings.processes, runs)
    if workers > 1 and not group.parallel and can_fork(settings.device):
        slots = [SharedTables(tables) for _ in range(workers)]
        pending: deque[tuple[int, Child]] = deque()

        def in_child(k: int) -> Callable[[], None]:
            def work() -> None:  # no progress bars from the children
                single_run(k, progress=False)
                slots[k % workers].copy_from(tables)

            return work

        def collect() -> None:  # the oldest run, so the sum keeps the serial order
            j, child = pending.popleft()
            child.result()
            add(slots[j % workers].tables, j)

        try:
            for k in range(runs):
                if len(pending) == workers:  # its slot is the one run k will write
                    collect()
                pending.append((k, Child(in_child(k), name=f"BPM run {k + 1}")))
            while pending:
                collect()
        finally:
            for _, child in pending:
                child.kill()
    else:
        for k in range(runs):
            single_run(k)
            add(tables, k)
    with torch.no_grad():
        for n, t in tables.items():
            t.copy_(total[n] / runs)


def group_stats(group: Group, stats: StepStats) -> StepStats:
    """The epoch's statistics summed over the ranks (learner extras included)."""
    keys = sorted({k for ks in group.all_gather_objects(list(stats.extra)) for k in ks})
    values = group.all_sum(
        stats.tokens, stats.errors, stats.updates, *(stats.extra[k] for k in keys)
    )
    tokens, errors, updates = (int(v) for v in values[:3])
    extra = Counter({k: _number(v) for k, v in zip(keys, values[3:], strict=True)})
    return StepStats(tokens=tokens, errors=errors, updates=updates, extra=extra)


def _number(v: float) -> int | float:
    return int(v) if float(v).is_integer() else v
