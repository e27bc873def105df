"""The cascade task: Shimizu & Haas (2006, section 5.2) linear-chain POS tagger, NP chunker and
their cascade.

Both are first-order chains (``structures/chain.py`` over ``model.weights.ChainWeights``: every
feature is a node feature x × y_0 and an edge feature x × y_-1 × y_0), trained by
``structperc.trainer.fit`` with the same learners as the joint model (VP, MMVP) or the CRF (which
gives the paper's CRF+CRF cascade with ``learner=crf``).  Features
(``features.part_features.TAGGER_TEMPLATES``, ``CHUNKER_TEMPLATES``) are the joint model's
POS-part features; the chunker adds the collapsed POS tags around the token.

The cascade (section 5.1): "we trained a POS-tagger using the training set D.  We then used the
learned model and replaced the POS labels of the test set with the labels predicted by the learned
model.  The linear-chain NP chunker was again trained on D [with gold POS tags] and evaluated on
this new test set."  A run writes ``results.json``, ``tb/`` and ``test.pred.txt`` (token, gold
POS, gold NP, predicted POS, cascaded NP).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from structperc.data.document import Document
from structperc.data.label_chunk import POS_TAGS, np_labels, pos_labels, with_pos
from structperc.distributed import SERIAL, Group
from structperc.features.part_features import CHUNKER_TEMPLATES, TAGGER_TEMPLATES, PartFeatures
from structperc.features.templates import Template
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.native.chain_predict import decode
from structperc.structures.chain import ChainData, ChainStructure
from structperc.tasks.inputs import chunking_corpus
from structperc.tasks.pos_np import log_test, paper_name, scores, write_predictions
from structperc.tasks.registry import task
from structperc.tasks.report import timed
from structperc.tasks.training import (
    EpochLog,
    FitResult,
    FitSettings,
    RunSettings,
    TrainingRun,
    history_rows,
)

log = logging.getLogger(__name__)

NP_LABELS = ("O", "B-NP", "I-NP")
GROUP = "token"


@dataclass
class ChainModel:
    """A trained linear-chain labeler: its features, structure and how training went."""

    features: PartFeatures
    structure: ChainStructure
    result: FitResult

    @torch.no_grad()
    def predict(self, docs: list[Document], batch_size: int = 32, device="cpu") -> list[list[str]]:
        data = ChainData(self.features.transform(docs)[GROUP])
        ids = decode(self.structure, data, batch_size=batch_size, device=device)
        labels = self.structure.weights.labels
        return [[labels[i] for i in p] for p in ids]


@dataclass(frozen=True, kw_only=True)
class CascadeSettings(RunSettings):
    """What a cascade run needs: the common settings (``RunSettings``; ``corpus`` with
    ``train`` and ``test``, ``learner`` the learner of both chains) and the features' count
    cutoff (``min_count``)."""

    min_count: int = 1
    batch_size: int = 32


def cascade_settings(config) -> CascadeSettings:
    """The cascade run of the composed ``config`` (``run.ComposedConfig``)."""
    cfg = config.cfg
    return CascadeSettings(
        corpus=chunking_corpus(config),
        learner=config.make(cfg.learner),
        fit=config.fit_settings(),
        min_count=int(cfg.features.get("min_count", 1)),
        batch_size=cfg.trainer.batch_size,
        write_predictions=cfg.write_predictions,
        hparams=config.hparams(),
    )


def train_chain(
    run: TrainingRun,
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
    """Fit features and a chain model on ``train`` into ``run`` (``TrainingRun.fit``)."""
    features = PartFeatures({GROUP: templates}, min_count=min_count).fit(train)
    mats = features.transform(train)[GROUP]
    index = {t: i for i, t in enumerate(labels)}
    gold = torch.tensor([index[t] for d in train for t in labels_of(d)], dtype=torch.long)
    weights = ChainWeights(features.num_features[GROUP], list(labels)).to(settings.device)
    structure = ChainStructure(weights)
    updater = Updater(weights, average=learner.average)
    result = run.fit(
        learner, structure, updater, ChainData(mats, gold), settings, on_epoch=on_epoch
    )
    return ChainModel(features, structure, result)


def train_tagger(run: TrainingRun, learner, train: list[Document], templates, **kw) -> ChainModel:
    """The POS tagger: labels are the five collapsed POS tags."""
    return train_chain(run, learner, train, pos_labels, POS_TAGS, templates, **kw)


def train_chunker(run: TrainingRun, learner, train: list[Document], templates, **kw) -> ChainModel:
    """The NP chunker: labels B-NP / I-NP / O, features include the (gold) collapsed POS tags."""
    return train_chain(run, learner, train, np_labels, NP_LABELS, templates, **kw)


@task("cascade", build=cascade_settings, headline=("test.np_f1",))
def run_cascade(settings: CascadeSettings, out_dir: Path, group: Group = SERIAL) -> dict:
    """Train the POS tagger and the NP chunker on ``corpus["train"]`` (each for the epochs of
    ``settings.fit``), evaluate on test: each alone and the cascade (the chunker reading the
    tagger's POS tags)."""
    s, learner = settings, settings.learner
    torch.manual_seed(s.fit.seed)
    device = s.fit.device
    run = TrainingRun(out_dir, group)
    train, test = s.corpus["train"], s.corpus["test"]
    kw = dict(settings=s.fit, min_count=s.min_count)

    def logger(stage: str):
        def on_epoch(ep: EpochLog) -> None:
            run.monitor.scalars(ep.epoch, {f"{stage}/word_error": ep.word_error})
            log.info(
                "%s epoch %d: word error %.4f, %.1fs", stage, ep.epoch, ep.word_error, ep.seconds
            )

        return on_epoch

    tagger = train_tagger(run, learner, train, TAGGER_TEMPLATES, on_epoch=logger("tagger"), **kw)
    chunker = train_chunker(
        run, learner, train, CHUNKER_TEMPLATES, on_epoch=logger("chunker"), **kw
    )

    def decode_test():
        pos = tagger.predict(test, s.batch_size, device)
        np_given = chunker.predict(test, s.batch_size, device)
        np_cascade = chunker.predict(with_pos(test, pos), s.batch_size, device)
        return pos, np_given, np_cascade

    (pos, np_given, np_cascade), decode_seconds = timed(decode_test)
    if s.write_predictions:
        write_predictions(out_dir / "test.pred.txt", test, pos, np_cascade)

    def stage(model: ChainModel) -> dict:
        r = model.result
        return {
            "epochs": r.epochs,
            "stopped_by": r.stopped_by,
            "train_seconds": sum(h.seconds for h in r.history),
            "num_features": model.features.num_features[GROUP],
            "history": history_rows(r.history),
        }

    results = {
        "task": "cascade",
        "learner": paper_name(learner),
        "train_sentences": len(train),
        "test_sentences": len(test),
        "tagger": stage(tagger) | {"test": scores(test, pos, None)},
        "chunker": stage(chunker) | {"test_given_gold_pos": scores(test, None, np_given)},
        "epochs": max(tagger.result.epochs, chunker.result.epochs),
        "stopped_by": f"{tagger.result.stopped_by}/{chunker.result.stopped_by}",
        "train_seconds": sum(sum(h.seconds for h in m.result.history) for m in (tagger, chunker)),
        "test_decode_seconds": decode_seconds,
        "test": scores(test, pos, np_cascade),
        "hparams": s.hparams,
    }
    run.finish(results, {f"test_{k}": v for k, v in results["test"].items()})
    log_test(out_dir, results["test"])
    return results
