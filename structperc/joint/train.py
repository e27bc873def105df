"""Training and decoding loops of the joint model (Shimizu & Haas 2006, Alg. 4.1).

``fit_joint`` is ``structperc.train.fit`` for label-chunk structures, through the same epoch loop
(``structperc.train.run_epochs``): one sentence per step, shuffled per epoch with a seeded
generator (or in corpus order, as Alg. 4.1 has it), until the per-word training error settles
(``Convergence``) or ``max_epochs``.  It adds the paper's back-off (section 5.3): during the
first ``backoff_epochs`` epochs the weights of lexicalized features are not updated, "to have more
weights on the unlexicalized features, so that when lexical feature is not found, unlexicalized
features could provide useful information".  Freezing means the update
d = Phi(y*) - Phi(y') keeps only the entries of unlexicalized features (``weights.restrict``), and
the max-margin step is computed for that restricted d.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from structperc.features.extract import FeatureMatrix
from structperc.joint.dp import decode
from structperc.joint.structure import LabelChunk, hamming, token_codes
from structperc.joint.weights import (
    JointBatch,
    JointWeights,
    make_joint_batch,
    restrict,
    structure_delta,
)
from structperc.learn.base import StepStats
from structperc.model.updates import SparseDelta, Updater
from structperc.train import EpochLog, FitResult, FitSettings, length_sorted_batches, run_epochs


class JointProblem:
    """The label-chunk structure as a learner sees it (``learn.Problem``).

    ``trainable``: part type -> [F] bool rows that may change (None: all), for the back-off.
    """

    def __init__(self, weights: JointWeights, trainable: dict[str, torch.Tensor] | None = None):
        self.weights = weights
        self.trainable = trainable

    def decode(self, batch: JointBatch) -> LabelChunk:
        """Flat best structures [N] of the batch's sentences."""
        best, _ = decode(self.weights.potentials(batch))  # [B, T] each
        fb = batch.any
        if fb.num_docs == 1:
            n = int(fb.lengths[0])
            return LabelChunk(best.pos[0, :n], best.chunk[0, :n], best.start[0, :n])
        return LabelChunk(fb.unpad(best.pos), fb.unpad(best.chunk), fb.unpad(best.start))

    def errors(self, gold: LabelChunk, pred: LabelChunk) -> int:
        """Tokens whose POS tag or NP tag is wrong."""
        (gp, gn), (pp, pn) = token_codes(gold), token_codes(pred)
        return int(((gp != pp) | (gn != pn)).sum())

    def loss(self, gold: LabelChunk, pred: LabelChunk) -> float:
        """Hamming loss over POS and NP tags."""
        return float(sum(hamming(gold, pred)))

    def delta(self, batch: JointBatch, gold: LabelChunk, pred: LabelChunk) -> SparseDelta:
        delta = structure_delta(self.weights, batch, gold, pred)
        if self.trainable is not None:
            delta = restrict(delta, self.trainable, self.weights.widths)
        return delta


def fit_joint(
    learner,
    updater: Updater,
    mats: dict[str, FeatureMatrix],
    gold: LabelChunk,
    settings: FitSettings,
    *,
    unlexicalized: dict[str, torch.Tensor] | None = None,
    backoff_epochs: int = 1,
    on_epoch: Callable[[EpochLog], None] | None = None,
) -> FitResult:
    """Train ``learner`` on every sentence of ``mats`` with gold structures ``gold`` ([N] each),
    for the epochs, order and stopping rule of ``settings`` (``structperc.train.run_epochs``).

    ``unlexicalized`` (part type -> [F] bool) enables the back-off for ``backoff_epochs``; each
    epoch's log says whether it was on (``extra["backoff"]``).
    """
    weights: JointWeights = updater.weights
    doc_offsets = next(iter(mats.values())).doc_offsets.tolist()
    full = JointProblem(weights)
    backed_off = JointProblem(weights, unlexicalized)
    batches: dict[int, tuple[JointBatch, LabelChunk]] = {}

    def backoff(epoch: int) -> bool:
        return unlexicalized is not None and epoch <= backoff_epochs

    def train_sentence(epoch: int, d: int) -> StepStats:
        if d not in batches:
            lo, hi = doc_offsets[d], doc_offsets[d + 1]
            batches[d] = (
                make_joint_batch(mats, [d]).to(settings.device),
                gold.slice(lo, hi).to(settings.device),
            )
        batch, y = batches[d]
        stats = learner.update(updater, backed_off if backoff(epoch) else full, batch, y)
        updater.tick()
        return stats

    return run_epochs(
        len(doc_offsets) - 1,
        train_sentence,
        settings,
        unit="sent",
        epoch_extra=lambda epoch, _: {"backoff": backoff(epoch)},
        on_epoch=on_epoch,
    )


@torch.no_grad()
def predict_joint(
    weights: JointWeights,
    mats: dict[str, FeatureMatrix],
    *,
    batch_size: int = 32,
    device: str | torch.device = "cpu",
) -> list[LabelChunk]:
    """The best structure of every sentence, decoded in batches of similar length."""
    doc_offsets = next(iter(mats.values())).doc_offsets
    lengths = (doc_offsets[1:] - doc_offsets[:-1]).tolist()
    out: list[LabelChunk | None] = [None] * len(lengths)
    for docs in length_sorted_batches(lengths, batch_size):
        best, _ = decode(weights.potentials(make_joint_batch(mats, docs).to(device)))
        best = LabelChunk(best.pos.cpu(), best.chunk.cpu(), best.start.cpu())
        for b, d in enumerate(docs):
            n = lengths[d]
            out[d] = LabelChunk(best.pos[b, :n], best.chunk[b, :n], best.start[b, :n])
    return out  # type: ignore[return-value]
