"""The structure interface: potentials, decoding, scores and feature differences of a batch.

A *structure* couples the weight tables of one kind of labeling with its decoder and its feature
map (docs/architecture.md: the pattern of torch-struct's one-DP-many-structures and of
CRFsuite's trainers written once against an encoder).  For a batch of instances it gives

    instance(data, i, device)  the batch and gold labeling of instance i of a data set
    potentials(batch)          the part scores its decoder reads
    argmax(batch)              y' = argmax_y s(x, y), flat over the batch's tokens
    nbest(batch, n)            the n best labelings [n, N] and scores [n] of a one-instance batch
    score(batch, y)            s(x, y) = Φ(x, y)·w of a given labeling of every instance, [B]
    delta(batch, y*, y')       Φ(x, y*) − Φ(x, y'), a ``model.updates.SparseDelta``
    errors(y*, y')             tokens y' gets wrong (the per-word training error counts them)
    loss(y*, y')               the loss l(y') of the max-margin step (Hamming)
    predict(data, ...)         the best labeling of every instance of a data set, batched

and declares the capabilities it offers (``capabilities``): "argmax"; "nbest" (exact n-best
lists); "rescoring" (n-best lists rescored with non-local features: ``candidates`` and
``candidate_delta``); "ranking" (whole candidate lists); "marginals", the distribution
p(y | x) = exp s(x, y) / Z(x) of its labelings (the CRF's likelihood):

    log_partition(batch)       log Z(x) = logsumexp_y s(x, y) of every instance, [B]
    marginals(batch)           the expected parts of a labeling under p(y | x)
    nll(batch, y*)             -log p(y* | x) = log Z(x) - s(x, y*), [B]

log Z and the nll differentiable in the potentials.  A learner declares what it requires
(``learn/base.py``); ``check_capabilities`` compares the two.

A labeling is whatever the structure's decoder returns: label ids [N] for a chain, a
``data.label_chunk.LabelChunk`` for the label-chunk structure.  Instances are documents or
sentences; ``len(gold)`` is an instance's number of tokens.
"""

from __future__ import annotations

from typing import Protocol

from torch import Tensor

from structperc.model.updates import SparseDelta


class Structure(Protocol):
    """What ``trainer.fit`` and the learners call; see the module docstring."""

    capabilities: frozenset[str]
    weights: object  # an nn.Module with ``tables()``: name -> [F, width] tensor

    def instance(self, data, i: int, device) -> tuple[object, object]: ...

    def potentials(self, batch) -> object: ...

    def argmax(self, batch) -> object: ...

    def score(self, batch, labeling) -> Tensor: ...

    def delta(self, batch, gold, pred) -> SparseDelta: ...

    def errors(self, gold, pred) -> int: ...

    def loss(self, gold, pred) -> float: ...

    def predict(self, data, batch_size: int, device, progress: bool) -> list: ...


def check_capabilities(learner, structure) -> None:
    """ValueError unless ``structure`` offers everything ``learner.requires``."""
    missing = sorted(set(learner.requires) - set(structure.capabilities))
    if missing:
        raise ValueError(
            f"learner {learner.name} requires {missing}, which the {type(structure).__name__} "
            f"structure does not offer (it offers {sorted(structure.capabilities)})"
        )
