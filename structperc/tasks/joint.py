"""The joint task: Shimizu & Haas (2006) Table 7, POS tagging and NP chunking in one structure.

``run_joint`` trains the label-chunk model (``structures/label_chunk.py``) with any learner of
the label-chunk structure (VP = the averaged perceptron, MMVP = the max-margin update) on
``corpus["train"]`` and evaluates on ``corpus["test"]`` with the paper's three measures
(``pos_np.scores``): POS accuracy (five collapsed tags), NP accuracy (B/I/O per token) and NP
F1 (conlleval).  The paper's back-off (section 5.3) freezes the lexicalized weights for the
first ``backoff_epochs`` epochs.  It runs on several ranks (``distributed=torch``) and writes
into its output folder:

    results.json      test scores, epochs, stopped_by, seconds, per-epoch history, settings
    checkpoint/       the last epoch's weights (``trainer.resume=true`` continues from it)
    tb/               TensorBoard scalars (train/*, test/*) and hparams
    test.pred.txt     token, gold POS, gold NP, predicted POS, predicted NP (``write_predictions``)
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from structperc.data.label_chunk import CHUNK_TAGS, POS_TAGS, LabelChunk, from_document, to_tags
from structperc.distributed import SERIAL, Group
from structperc.features.part_features import PartFeatures
from structperc.model.label_chunk_weights import LabelChunkWeights
from structperc.model.updates import Updater
from structperc.structures.label_chunk import LabelChunkStructure, PartData
from structperc.tasks.inputs import chunking_corpus
from structperc.tasks.pos_np import log_test, paper_name, scores, write_predictions
from structperc.tasks.registry import task
from structperc.tasks.report import timed
from structperc.tasks.training import Evaluation, ModelSettings, TrainingRun, history_rows

log = logging.getLogger(__name__)

TEST_RECORDED = ("pos_accuracy", "np_f1")  # test metrics kept in the per-epoch history


@dataclass(frozen=True, kw_only=True)
class JointSettings(ModelSettings):
    """What a joint run needs: the common settings (``ModelSettings``; ``corpus`` with ``train``
    and ``test``, evaluated during training), the part features (fitted in place), the
    back-off epochs, and whether an O chunk may follow an O chunk (``maximal_outside``: not)."""

    features: PartFeatures
    batch_size: int = 32
    backoff_epochs: int = 1
    maximal_outside: bool = True


def joint_settings(config) -> JointSettings:
    """The joint run of the composed ``config`` (``run.ComposedConfig``)."""
    cfg = config.cfg
    corpus = chunking_corpus(config)
    t = cfg.trainer
    return JointSettings(
        corpus=corpus,
        features=config.make(cfg.features),
        learner=config.make(cfg.learner),
        fit=config.fit_settings(),
        eval_every=t.eval_every,
        batch_size=t.batch_size,
        backoff_epochs=int(cfg.task.backoff_epochs),
        maximal_outside=bool(cfg.task.maximal_outside),
        write_predictions=cfg.write_predictions,
        hparams=config.hparams(),
        checkpoint=t.checkpoint,
        resume=config.resume(),
    )


@task("joint", build=joint_settings, headline=("test.np_f1",), distributed=True)
def run_joint(settings: JointSettings, out_dir: Path, group: Group = SERIAL) -> dict:
    """Train the joint model on ``corpus["train"]`` for the epochs of ``settings.fit``, evaluate
    on ``corpus["test"]``; returns the results.  On several ranks (``group``) each trains on its
    shard of the sentences and rank 0 alone evaluates and writes; the others return {}."""
    s, features, learner = settings, settings.features, settings.learner
    torch.manual_seed(s.fit.seed)
    device = s.fit.device
    run = TrainingRun(out_dir, group)
    train, test = s.corpus["train"], s.corpus["test"]
    t0 = time.perf_counter()
    features.fit(train)
    gold = LabelChunk.cat([from_document(d) for d in train])
    data = {
        "train": PartData(features.transform(train), gold),
        "test": PartData(features.transform(test)),
    }
    feature_seconds = time.perf_counter() - t0
    weights = LabelChunkWeights(features.num_features, maximal_outside=s.maximal_outside)
    weights = weights.to(device)
    structure = LabelChunkStructure(weights)
    updater = Updater(weights, average=learner.average)
    name = paper_name(learner)
    log.info(
        "joint %s: %d training / %d test sentences, features %s",
        name,
        len(train),
        len(test),
        features.num_features,
    )

    def evaluate_test() -> tuple[dict, list, list]:
        structures = structure.predict(data["test"], batch_size=s.batch_size, device=device)
        tags = [to_tags(y) for y in structures]
        pos, np = [p for p, _ in tags], [n for _, n in tags]
        return scores(test, pos, np), pos, np

    unlexicalized = features.unlexicalized_rows() if s.backoff_epochs > 0 else None

    def back_off(epoch: int) -> dict:
        """The back-off schedule: lexicalized rows frozen for the first epochs."""
        on = unlexicalized is not None and epoch <= s.backoff_epochs
        structure.trainable = unlexicalized if on else None
        return {"backoff": on}

    result = run.fit_model(
        s,
        structure,
        updater,
        data["train"],
        evaluation=Evaluation("test", lambda: evaluate_test()[0], TEST_RECORDED),
        signature={"pos_tags": list(POS_TAGS), "chunk_tags": list(CHUNK_TAGS)},
        on_epoch_start=back_off,
    )
    structure.trainable = None
    if not group.is_main:
        return {}
    (test_scores, pos, np), decode_seconds = timed(evaluate_test)
    if s.write_predictions:
        write_predictions(out_dir / "test.pred.txt", test, pos, np)
    results = {
        "task": "joint",
        "learner": name,
        "train_sentences": len(train),
        "test_sentences": len(test),
        "epochs": result.epochs,
        "stopped_by": result.stopped_by,
        "train_seconds": sum(h.seconds for h in result.history),
        "fit_seconds": result.seconds,
        "feature_seconds": feature_seconds,
        "test_decode_seconds": decode_seconds,
        "test_sentences_per_second": len(test) / decode_seconds,
        "num_features": features.num_features,
        "test": test_scores,
        "history": history_rows(result.history),
        "hparams": s.hparams,
        "resumed_from_epoch": result.resumed_from,
        "world_size": group.world,
    }
    run.finish(results, {f"test_{k}": v for k, v in test_scores.items()})
    log_test(out_dir, test_scores)
    return results
