"""The fitting vocabulary every learner is written against, online or not.

    FitSettings   what a run's configuration tells a training loop (epochs, stopping rule,
                  order, device, progress bars, mixing, processes)
    EpochLog      one epoch (or one iteration of a batch optimiser): errors, updates, seconds
    FitResult     how training went: the epochs, what stopped it, the history
    Convergence   Kazama & Torisawa's (2007) stopping rule: the relative change of a tracked
                  quantity (the per-word training error; the CRF's objective, as CRF++ does)
                  stays below ``tol`` for ``patience`` epochs in a row
    epoch_order, shard_order, rank_shard
                  the order of the training instances in an epoch: a permutation seeded by
                  (seed, epoch, rank), and each rank's token-balanced shard

The loop that runs an online learner is ``trainer.fit``; a learner that optimises the whole set
at once (the CRF's L-BFGS and SGD, ``crf/``; boosting, ``learn/boosting.py``) runs its own
``fit`` and reports in the same terms, so that every learner is a peer of the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from structperc.distributed import Group, token_balanced_shards


@dataclass(frozen=True)
class FitSettings:
    """What a run's configuration tells a training loop: at most ``max_epochs`` epochs, the
    convergence rule (``tol``, ``patience``), the order of the training data (``shuffle``,
    ``seed``), where the tables live (``device``), whether to show progress bars, and how
    ranks mix their weights after an epoch (``mixing``: "uniform" or "updates").

    ``processes`` > 1 lets a serial training on CPU fork children to use more cores, with
    bit-identical results: BPM's single epochs run side by side, and each epoch's evaluation and
    checkpoint run while the next epoch trains (``forking.py``).

    ``compiled``: run an online epoch in compiled code where ``native.online`` has it for the
    learner and structure (numba installed; the same results), else the Python loop.

    ``warm``: the tables hold a saved model that this training continues (``trainer.init_from``,
    ``tasks/warm_start.py``): BPM initialisation, which starts from zero weights, is not run."""

    max_epochs: int = 50
    tol: float = 1e-4
    patience: int = 3
    shuffle: bool = True
    seed: int = 0
    device: str | torch.device = "cpu"
    progress: bool = True
    mixing: str = "uniform"
    processes: int = 1
    compiled: bool = True
    warm: bool = False


@dataclass
class EpochLog:
    """One epoch of training: the online statistics and how long it took."""

    epoch: int
    word_error: float
    errors: int
    tokens: int
    updates: int
    seconds: float
    extra: dict = field(default_factory=dict)


@dataclass
class FitResult:
    """How training went.

    epochs:       the last epoch trained.
    stopped_by:   "converged", "max_epochs" (or the CRF's "no_progress", "interrupted").
    seconds:      this process's training time (BPM excluded).
    history:      every epoch's log, those before a resume included.
    bpm_seconds:  time of the BPM initialisation (0 without one).
    resumed_from: the epoch a resumed run started after (None: not resumed).
    previous_seconds: training time of the epochs before the resume.
    summary:      what the learner reports of the trained model (the CRF: its parameters and
                  non-zero weights), for results.json.
    """

    epochs: int
    stopped_by: str
    seconds: float
    history: list[EpochLog]
    bpm_seconds: float = 0.0
    resumed_from: int | None = None
    previous_seconds: float = 0.0
    summary: dict = field(default_factory=dict)

    @property
    def train_seconds(self) -> float:
        """Training time over all processes (the epochs before a resume included)."""
        return self.seconds + self.previous_seconds


class Convergence:
    """Stop once |e_k - e_{k-1}| / e_{k-1} < tol for ``patience`` consecutive epochs.

    An error that stays at zero counts as no change.
    """

    def __init__(self, tol: float = 1e-4, patience: int = 3):
        self.tol, self.patience = tol, patience
        self.previous: float | None = None
        self.streak = 0

    def update(self, error: float) -> bool:
        if self.previous is not None:
            if self.previous == 0:
                change = 0.0 if error == 0 else float("inf")
            else:
                change = abs(error - self.previous) / self.previous
            self.streak = self.streak + 1 if change < self.tol else 0
        self.previous = error
        return self.streak >= self.patience

    def state(self) -> dict:
        return {"previous": self.previous, "streak": self.streak}

    def load_state(self, state: dict) -> None:
        self.previous, self.streak = state["previous"], state["streak"]


def epoch_order(n: int, shuffle: bool, seed: int, epoch: int) -> list[int]:
    """Items 0 ... n-1 in the order of ``epoch``: a permutation seeded by (seed, epoch), or
    0 ... n-1 when not ``shuffle``."""
    return shard_order(n, None, shuffle, seed, epoch, 0)


def shard_order(
    n: int, shard: list[int] | None, shuffle: bool, seed: int, epoch: int, rank: int
) -> list[int]:
    """The items of ``shard`` (None: all n) in the order of ``epoch`` on ``rank``: a permutation
    seeded by (seed, epoch, rank), rank 0's seed that of the serial run."""
    items = list(range(n)) if shard is None else shard
    if not shuffle:
        return list(items)
    gen = torch.Generator().manual_seed(seed * 100_003 + epoch + 1_000_003 * rank)
    return [items[j] for j in torch.randperm(len(items), generator=gen).tolist()]


def instance_sizes(data) -> list[int]:
    """Tokens of each instance of ``data`` (1 each where the data has no token offsets)."""
    offsets = getattr(data, "doc_offsets", None)
    if offsets is None and hasattr(data, "features") and hasattr(data.features, "doc_offsets"):
        offsets = data.features.doc_offsets
    if offsets is None:
        return [1] * len(data)
    return (offsets[1:] - offsets[:-1]).tolist()


def rank_shard(data, group: Group) -> list[int] | None:
    """This rank's instances of ``data`` (token-balanced); None on one rank (all of them)."""
    if not group.parallel:
        return None
    return token_balanced_shards(instance_sizes(data), group.world)[group.rank]
