"""The joint task: Shimizu & Haas (2006) Table 7, POS tagging and NP chunking in one structure.

``run_joint`` trains the label-chunk model (``structures/label_chunk.py``) with any learner of
the label-chunk structure (VP = the averaged perceptron, MMVP = the max-margin update) on
``corpus["train"]`` and evaluates on ``corpus["test"]`` with the paper's three measures: POS
accuracy (five collapsed tags), NP accuracy (B/I/O per token) and NP F1 (conlleval).  The paper's
back-off (section 5.3) freezes the lexicalized weights for the first ``backoff_epochs`` epochs.
It writes into its output folder:

    results.json      test scores, epochs, stopped_by, seconds, per-epoch history, settings
    checkpoint/       the last epoch's weights (``trainer.resume=true`` continues from it)
    tb/               TensorBoard scalars (train/*, test/*) and hparams
    test.pred.txt     token, gold POS, gold NP, predicted POS, predicted NP (``write_predictions``)
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch

from structperc.checkpoint import Checkpoint
from structperc.data.document import Document
from structperc.data.label_chunk import (
    CHUNK_TAGS,
    POS_TAGS,
    LabelChunk,
    from_document,
    np_labels,
    pos_labels,
    to_tags,
)
from structperc.distributed import SERIAL, Group
from structperc.eval.chunks import evaluate
from structperc.features.part_features import PartFeatures
from structperc.io import atomic_write_text
from structperc.learn.fitting import FitSettings
from structperc.learn.max_margin import MaxMarginPerceptron
from structperc.learn.perceptron import Perceptron
from structperc.model.label_chunk_weights import LabelChunkWeights
from structperc.model.updates import Updater
from structperc.monitor import Monitor
from structperc.structures.label_chunk import LabelChunkStructure, PartData
from structperc.tasks.report import EpochReporter, finish, history_rows, timed
from structperc.train import fit

log = logging.getLogger(__name__)

TEST_RECORDED = ("pos_accuracy", "np_f1")  # test metrics kept in the per-epoch history


def paper_name(learner) -> str:
    """The paper's name of a learner: VP (the averaged perceptron), MMVP, CRF, else its class."""
    if isinstance(learner, MaxMarginPerceptron):
        return "MMVP"
    if isinstance(learner, Perceptron) and learner.average:
        return "VP"
    return learner.name


def scores(
    docs: list[Document], pos: list[list[str]] | None, np: list[list[str]] | None
) -> dict[str, float]:
    """POS accuracy, NP accuracy and NP P/R/F1 (percent) of predictions against ``docs``."""
    out: dict[str, float] = {}
    if pos is not None:
        gold = [pos_labels(d) for d in docs]
        pairs = (zip(gs, ps, strict=True) for gs, ps in zip(gold, pos, strict=True))
        right = sum(g == p for pair in pairs for g, p in pair)
        out["pos_accuracy"] = 100.0 * right / max(sum(map(len, gold)), 1)
    if np is not None:
        s = evaluate([np_labels(d) for d in docs], np, [d.sentence_starts for d in docs])
        out.update(np_accuracy=s.accuracy, np_f1=s.f1, np_precision=s.precision, np_recall=s.recall)
    return out


def write_predictions(path: Path, docs: list[Document], pos: list[list[str]], np) -> None:
    """Token, gold POS, gold NP, predicted POS, predicted NP per line; a blank line per sentence."""
    lines = []
    for d, ps, ns in zip(docs, pos, np, strict=True):
        for row in zip(d.tokens, pos_labels(d), np_labels(d), ps, ns, strict=True):
            lines.append(" ".join(row))
        lines.append("")
    atomic_write_text(path, "\n".join(lines) + "\n")


def log_test(out_dir: Path, test: dict) -> None:
    log.info(
        "test: POS %.2f, NP acc %.2f, NP F1 %.2f (%s)",
        test.get("pos_accuracy", float("nan")),
        test["np_accuracy"],
        test["np_f1"],
        out_dir / "results.json",
    )


def run_joint(
    *,
    corpus: dict[str, list[Document]],
    features: PartFeatures,
    learner,
    out_dir: Path,
    settings: FitSettings,
    eval_every: int = 1,
    batch_size: int = 32,
    backoff_epochs: int = 1,
    maximal_outside: bool = True,
    write_test_predictions: bool = True,
    hparams: dict | None = None,
    checkpoint: bool = True,
    resume: bool = False,
    group: Group = SERIAL,
) -> dict:
    """Train the joint model on ``corpus["train"]`` for the epochs of ``settings``, evaluate on
    ``corpus["test"]``; returns the results.  On several ranks (``group``) each trains on its
    shard of the sentences and rank 0 alone evaluates and writes; the others return {}."""
    torch.manual_seed(settings.seed)
    device = settings.device
    out_dir.mkdir(parents=True, exist_ok=True)
    train, test = corpus["train"], corpus["test"]
    t0 = time.perf_counter()
    features.fit(train)
    gold = LabelChunk.cat([from_document(d) for d in train])
    data = {
        "train": PartData(features.transform(train), gold),
        "test": PartData(features.transform(test)),
    }
    feature_seconds = time.perf_counter() - t0
    weights = LabelChunkWeights(features.num_features, maximal_outside=maximal_outside).to(device)
    structure = LabelChunkStructure(weights)
    updater = Updater(weights, average=learner.average)
    monitor = Monitor(out_dir / "tb" if group.is_main else None)
    name = paper_name(learner)
    log.info(
        "joint %s: %d training / %d test sentences, features %s",
        name,
        len(train),
        len(test),
        features.num_features,
    )

    def evaluate_test() -> tuple[dict, list, list]:
        structures = structure.predict(data["test"], batch_size=batch_size, device=device)
        tags = [to_tags(y) for y in structures]
        pos, np = [p for p, _ in tags], [n for _, n in tags]
        return scores(test, pos, np), pos, np

    unlexicalized = features.unlexicalized_rows() if backoff_epochs > 0 else None

    def back_off(epoch: int) -> dict:
        """The back-off schedule: lexicalized rows frozen for the first epochs."""
        on = unlexicalized is not None and epoch <= backoff_epochs
        structure.trainable = unlexicalized if on else None
        return {"backoff": on}

    signature = {"pos_tags": list(POS_TAGS), "chunk_tags": list(CHUNK_TAGS)}
    hooks = {
        "on_epoch": EpochReporter(
            monitor,
            updater,
            eval_every if group.is_main else 0,
            "test",
            lambda: evaluate_test()[0],
            TEST_RECORDED,
        ),
        "on_epoch_start": back_off,
        "checkpoint": Checkpoint(out_dir / "checkpoint", signature) if checkpoint else None,
        "resume": resume,
        "group": group,
    }
    result = fit(learner, structure, updater, data["train"], settings, **hooks)
    structure.trainable = None
    updater.finalize()
    if not group.is_main:
        return {}
    (test_scores, pos, np), decode_seconds = timed(evaluate_test)
    if write_test_predictions:
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
        "hparams": hparams or {},
        "resumed_from_epoch": result.resumed_from,
        "world_size": group.world,
    }
    finish(out_dir, monitor, results, {f"test_{k}": v for k, v in test_scores.items()})
    log_test(out_dir, test_scores)
    return results
