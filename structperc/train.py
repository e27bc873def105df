"""Training and prediction loops, as plain functions (no config objects below ``run.py``).

``fit`` runs online learners over documents, one document per step, shuffled per epoch with a
seeded generator, until Kazama & Torisawa's (2007) convergence rule holds — the relative change of
the per-word training error stays below ``tol`` for ``patience`` epochs in a row — or
``max_epochs`` is reached; the result says which stopped it.  The epoch loop itself
(``run_epochs``) knows nothing of chains: the joint model's ``fit_joint`` runs through it too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial

import torch
from tqdm.auto import tqdm

from structperc.decode.nbest import nbest_batched
from structperc.decode.viterbi import viterbi, viterbi_packed
from structperc.features.extract import FeatureMatrix
from structperc.learn.base import StepStats
from structperc.learn.proposed import rescore_argmax
from structperc.model.batch import make_batch, packed_order
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights


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
    epochs: int
    stopped_by: str  # "converged" or "max_epochs"
    seconds: float
    history: list[EpochLog]


@dataclass(frozen=True)
class FitSettings:
    """What a run's configuration tells a training loop: at most ``max_epochs`` epochs, the
    convergence rule (``tol``, ``patience``), the order of the training data (``shuffle``,
    ``seed``), where the tables live (``device``) and whether to show progress bars.

    As a dict (``dataclasses.asdict``) they are keyword arguments of ``fit`` and of a batch
    learner's ``fit_batch`` (``fit_learner`` passes them on)."""

    max_epochs: int = 50
    tol: float = 1e-4
    patience: int = 3
    shuffle: bool = True
    seed: int = 0
    device: str | torch.device = "cpu"
    progress: bool = True


def doc_labels(labels: torch.Tensor, features: FeatureMatrix, d: int) -> torch.Tensor:
    """The gold label ids [T] of document d (``labels`` is [N] over all tokens)."""
    return labels[int(features.doc_offsets[d]) : int(features.doc_offsets[d + 1])]


def fit(
    learner,
    updater: Updater,
    features: FeatureMatrix,
    labels: torch.Tensor,
    *,
    max_epochs: int = 50,
    tol: float = 1e-4,
    patience: int = 3,
    shuffle: bool = True,
    seed: int = 0,
    device: str | torch.device = "cpu",
    on_epoch: Callable[[EpochLog], None] | None = None,
    progress: bool = True,
    start_epoch: int = 0,
    convergence: Convergence | None = None,
) -> FitResult:
    """Train ``learner`` online on every document of ``features`` (gold ``labels`` [N])."""
    settings = FitSettings(max_epochs, tol, patience, shuffle, seed, device, progress)

    def train_document(epoch: int, d: int) -> StepStats:
        batch = make_batch(features, [d]).to(device)
        gold = doc_labels(labels, features, d).to(device)
        stats = learner.step(updater, batch, gold)
        updater.tick()
        return stats

    return run_epochs(
        features.num_docs,
        train_document,
        settings,
        on_epoch=on_epoch,
        start_epoch=start_epoch,
        convergence=convergence,
    )


def fit_learner(
    learner, updater: Updater, features, labels, settings: FitSettings, **hooks
) -> FitResult:
    """``fit`` with ``learner``, or the learner's own loop where it has one (``fit_batch``: the
    CRF's L-BFGS or SGD, ``structperc/crf/learner.py``).  ``hooks``: ``fit``'s ``on_epoch``,
    ``start_epoch``, ``convergence``."""
    train = learner.fit_batch if hasattr(learner, "fit_batch") else partial(fit, learner)
    return train(updater, features, labels, **asdict(settings), **hooks)


def run_epochs(
    num_items: int,
    train_item: Callable[[int, int], StepStats],
    settings: FitSettings,
    *,
    unit: str = "doc",
    epoch_extra: Callable[[int, StepStats], dict] | None = None,
    on_epoch: Callable[[EpochLog], None] | None = None,
    start_epoch: int = 0,
    convergence: Convergence | None = None,
) -> FitResult:
    """The epoch loop of online training: epochs ``start_epoch + 1 ... settings.max_epochs``,
    each calling ``train_item(epoch, i)`` on the items 0 ... ``num_items - 1`` (documents,
    sentences) in ``epoch_order`` and summing the ``StepStats`` it returns, until
    ``convergence`` (default: a fresh ``Convergence(settings.tol, settings.patience)``) holds.

    An epoch's ``EpochLog.extra`` is ``epoch_extra(epoch, stats)``, by default the learner's
    summed extra counts.  ``on_epoch`` gets each epoch's log (after the convergence rule has
    seen its error) and may add to its ``extra``.
    """
    convergence = convergence or Convergence(settings.tol, settings.patience)
    history: list[EpochLog] = []
    stopped_by = "max_epochs"
    t_start = time.perf_counter()
    epoch = start_epoch
    for epoch in range(start_epoch + 1, settings.max_epochs + 1):
        order = epoch_order(num_items, settings.shuffle, settings.seed, epoch)
        stats = StepStats()
        t0 = time.perf_counter()
        disable = not settings.progress
        for i in tqdm(order, desc=f"epoch {epoch}", unit=unit, disable=disable, leave=False):
            stats += train_item(epoch, i)
        log = EpochLog(
            epoch=epoch,
            word_error=stats.errors / max(stats.tokens, 1),
            errors=stats.errors,
            tokens=stats.tokens,
            updates=stats.updates,
            seconds=time.perf_counter() - t0,
            extra=dict(stats.extra) if epoch_extra is None else epoch_extra(epoch, stats),
        )
        history.append(log)
        done = convergence.update(log.word_error)
        if on_epoch is not None:
            on_epoch(log)
        if done:
            stopped_by = "converged"
            break
    return FitResult(epoch, stopped_by, time.perf_counter() - t_start, history)


def epoch_order(n: int, shuffle: bool, seed: int, epoch: int) -> list[int]:
    """Items 0 ... n-1 in the order of ``epoch``: a permutation seeded by (seed, epoch), or
    0 ... n-1 when not ``shuffle``."""
    if not shuffle:
        return list(range(n))
    gen = torch.Generator().manual_seed(seed * 100_003 + epoch)
    return torch.randperm(n, generator=gen).tolist()


@torch.no_grad()
def predict(
    weights: ChainWeights,
    features: FeatureMatrix,
    *,
    batch_size: int = 256,
    device: str | torch.device = "cpu",
    progress: bool = False,
) -> list[list[int]]:
    """Viterbi label ids of every document.

    ``batch_size`` documents at a time (consecutive ones, so their CSR rows are one slice) are
    scored in one lookup and decoded together by ``viterbi_packed``: sorted by length and packed
    time-major, without padding.  ``batch_size=1`` decodes each document alone with the blocked
    scan instead.  Memory: ~100 floats per token of a batch.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    out: list[list[int]] = [[] for _ in range(features.num_docs)]
    if batch_size == 1:
        for docs, batch in _length_batches(features, 1, device, progress):
            paths, _ = viterbi(weights.potentials(batch), batch.lengths)  # [1, T]
            out[docs[0]] = paths[0].tolist()
        return out
    doc_offsets = features.doc_offsets
    starts = range(0, features.num_docs, batch_size)
    for d0 in tqdm(starts, desc="decode", unit="batch", disable=not progress, leave=False):
        d1 = min(d0 + batch_size, features.num_docs)
        s, e = int(doc_offsets[d0]), int(doc_offsets[d1])
        lo, hi = int(features.offsets[s]), int(features.offsets[e])
        node, edge = weights.csr_scores(
            features.ids[lo:hi].to(device), (features.offsets[s : e + 1] - lo).to(device)
        )  # [N, L], [N, L, L]
        perm, sizes = packed_order(doc_offsets[d0 : d1 + 1] - s)  # [N], [T]
        perm = perm.to(device)
        labels = torch.empty(e - s, dtype=torch.long, device=device)
        labels[perm] = viterbi_packed(node[perm], edge[perm], sizes)
        flat = labels.tolist()
        for d in range(d0, d1):
            out[d] = flat[int(doc_offsets[d]) - s : int(doc_offsets[d + 1]) - s]
    return out


def length_sorted_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Document indices in batches of ``batch_size``, shortest documents first, so that
    documents of similar length share a batch (little padding)."""
    order = sorted(range(len(lengths)), key=lambda d: lengths[d])
    return [order[s : s + batch_size] for s in range(0, len(order), batch_size)]


def _length_batches(features: FeatureMatrix, batch_size: int, device, progress: bool):
    """Yield (document indices, FeatureBatch) for batches of documents of similar length."""
    lengths = (features.doc_offsets[1:] - features.doc_offsets[:-1]).tolist()
    batches = length_sorted_batches(lengths, batch_size)
    for docs in tqdm(batches, desc="decode", unit="batch", disable=not progress, leave=False):
        yield docs, make_batch(features, docs).to(device)


@torch.no_grad()
def predict_documents(
    weights,
    features: FeatureMatrix,
    documents: list,
    doc_features,
    *,
    n: int = 100,
    batch_size: int = 16,
    device: str | torch.device = "cpu",
    progress: bool = False,
) -> list[list[int]]:
    """Kazama & Torisawa's prediction with non-local features: the argmax of Φ^a·α over the
    n-best labelings of Φ^l·α.  The n-best lists are decoded in batches of documents of similar
    length (``nbest_batched`` bounds the memory); the rescoring is per document."""
    out: list[list[int]] = [[] for _ in range(features.num_docs)]
    for docs, batch in _length_batches(features, batch_size, device, progress):
        paths, local = nbest_batched(weights.potentials(batch), batch.lengths, n)  # [B, n, T]
        for b, d in enumerate(docs):
            valid = torch.isfinite(local[b])
            cands = paths[b, valid, : int(batch.lengths[b])]  # [m, T_d]
            ids, offsets = doc_features.vectorize(documents[d], cands)
            best = rescore_argmax(cands, local[b, valid], weights.global_scores(ids, offsets))
            out[d] = best.tolist()
    return out
