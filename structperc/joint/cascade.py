"""Baselines of Shimizu & Haas (2006, section 5.2): linear-chain POS tagger, NP chunker, cascade.

Both are first-order chains of the existing model (``model.weights.ChainWeights``: every feature
is a node feature x × y_0 and an edge feature x × y_-1 × y_0), decoded by Viterbi and trained by
``structperc.train.fit`` with the learners of ``learn.py`` (VP, MMVP), so the baselines and the
joint model share their update rules.  Features (``features.TAGGER_TEMPLATES``,
``CHUNKER_TEMPLATES``) are the joint model's POS-part features; the chunker adds the collapsed
POS tags around the token.

The cascade (section 5.1): "we trained a POS-tagger using the training set D.  We then used the
learned model and replaced the POS labels of the test set with the labels predicted by the learned
model.  The linear-chain NP chunker was again trained on D [with gold POS tags] and evaluated on
this new test set."  A learner with ``fit_batch`` (the CRF of ``structperc/crf/``, trained by
L-BFGS through torch-struct marginals) trains the chains by its own loop, which gives the paper's
CRF+CRF cascade with ``learner=crf``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from structperc.data.document import Document
from structperc.features.templates import Template
from structperc.joint.features import PartFeatures
from structperc.joint.structure import POS_TAGS, collapse_pos, np_tags
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.train import EpochLog, FitResult, FitSettings, fit_learner, predict

NP_LABELS = ("O", "B-NP", "I-NP")
GROUP = "token"


def pos_labels(doc: Document) -> list[str]:
    """The collapsed gold POS tags of a sentence (the tagger's labels)."""
    return [collapse_pos(p) for p in doc.columns["pos"]]


def np_labels(doc: Document) -> list[str]:
    """The B-NP / I-NP / O tags of a sentence (the chunker's labels)."""
    return np_tags(doc.tags or ["O"] * len(doc))


def with_pos(docs: list[Document], pos: list[list[str]]) -> list[Document]:
    """Copies of ``docs`` whose POS column is ``pos`` (the tagger's output, for the cascade)."""
    return [
        replace(d, columns={**d.columns, "pos": list(p)}) for d, p in zip(docs, pos, strict=True)
    ]


@dataclass
class ChainModel:
    """A trained linear-chain labeler: its features, weights and how training went."""

    features: PartFeatures
    weights: ChainWeights
    result: FitResult

    @torch.no_grad()
    def predict(self, docs: list[Document], batch_size: int = 32, device="cpu") -> list[list[str]]:
        mats = self.features.transform(docs)[GROUP]
        ids = predict(self.weights, mats, batch_size=batch_size, device=device)
        return [[self.weights.labels[i] for i in p] for p in ids]


def train_chain(
    learner,
    train: list[Document],
    labels_of: Callable[[Document], list[str]],
    labels: tuple[str, ...],
    templates: list[Template],
    settings: FitSettings,
    *,
    min_count: int = 1,
    on_epoch: Callable[[EpochLog], None] | None = None,
) -> ChainModel:
    """Fit features and a ``ChainWeights`` model on ``train``.

    Trains with ``structperc.train.fit``, or with the learner's own ``fit_batch`` (the CRF):
    ``structperc.train.fit_learner``.
    """
    features = PartFeatures({GROUP: templates}, min_count=min_count).fit(train)
    mats = features.transform(train)[GROUP]
    index = {t: i for i, t in enumerate(labels)}
    gold = torch.tensor([index[t] for d in train for t in labels_of(d)], dtype=torch.long)
    weights = ChainWeights(features.num_features[GROUP], list(labels)).to(settings.device)
    updater = Updater(weights, average=getattr(learner, "average", False))
    result = fit_learner(learner, updater, mats, gold, settings, on_epoch=on_epoch)
    updater.finalize()
    return ChainModel(features, weights, result)


def train_tagger(learner, train: list[Document], templates, **kw) -> ChainModel:
    """The POS tagger: labels are the five collapsed POS tags."""
    return train_chain(learner, train, pos_labels, POS_TAGS, templates, **kw)


def train_chunker(learner, train: list[Document], templates, **kw) -> ChainModel:
    """The NP chunker: labels B-NP / I-NP / O, features include the (gold) collapsed POS tags."""
    return train_chain(learner, train, np_labels, NP_LABELS, templates, **kw)


def timed(fn, *args, **kw):
    """(fn(*args, **kw), seconds)."""
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0
