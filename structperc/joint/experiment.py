"""Runs of Shimizu & Haas (2006) Table 7, end to end, from plain objects (no config below here).

``run_joint`` trains the label-chunk model (VP or MMVP) and ``run_cascade`` the linear-chain POS
tagger and NP chunker and their cascade, on ``corpus["train"]``, and evaluate on
``corpus["test"]`` with the paper's three measures: POS accuracy (five collapsed tags), NP accuracy
(B/I/O per token) and NP F1 (conlleval).  Each writes into its output folder:

    results.json      test scores, epochs, stopped_by, seconds, per-epoch history, settings
    tb/               TensorBoard scalars (train/*, test/*) and hparams
    test.pred.txt     token, gold POS, gold NP, predicted POS, predicted NP (``write_predictions``)
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch

from structperc.data.document import Document
from structperc.eval.chunks import evaluate
from structperc.io import atomic_write_json, atomic_write_text
from structperc.joint import cascade
from structperc.joint.features import CHUNKER_TEMPLATES, TAGGER_TEMPLATES, PartFeatures
from structperc.joint.structure import LabelChunk, from_document, to_tags
from structperc.joint.train import fit_joint, predict_joint
from structperc.joint.weights import JointWeights
from structperc.model.updates import Updater
from structperc.monitor import Monitor
from structperc.train import EpochLog, FitSettings

log = logging.getLogger(__name__)

SHORT_NAMES = {"VotedPerceptron": "VP", "MaxMarginPerceptron": "MMVP", "CRF": "CRF"}


def learner_name(learner) -> str:
    """The paper's name of a learner: VP or MMVP."""
    return SHORT_NAMES.get(type(learner).__name__, type(learner).__name__)


def scores(
    docs: list[Document], pos: list[list[str]] | None, np: list[list[str]] | None
) -> dict[str, float]:
    """POS accuracy, NP accuracy and NP P/R/F1 (percent) of predictions against ``docs``."""
    out: dict[str, float] = {}
    if pos is not None:
        gold = [cascade.pos_labels(d) for d in docs]
        pairs = (zip(gs, ps, strict=True) for gs, ps in zip(gold, pos, strict=True))
        right = sum(g == p for pair in pairs for g, p in pair)
        out["pos_accuracy"] = 100.0 * right / max(sum(map(len, gold)), 1)
    if np is not None:
        s = evaluate([cascade.np_labels(d) for d in docs], np)
        out.update(np_accuracy=s.accuracy, np_f1=s.f1, np_precision=s.precision, np_recall=s.recall)
    return out


def write_predictions(path: Path, docs: list[Document], pos: list[list[str]], np) -> None:
    """Token, gold POS, gold NP, predicted POS, predicted NP per line; a blank line per sentence."""
    lines = []
    for d, ps, ns in zip(docs, pos, np, strict=True):
        gold_pos, gold_np = cascade.pos_labels(d), cascade.np_labels(d)
        for row in zip(d.tokens, gold_pos, gold_np, ps, ns, strict=True):
            lines.append(" ".join(row))
        lines.append("")
    atomic_write_text(path, "\n".join(lines) + "\n")


def _history(logs: list[EpochLog]) -> list[dict]:
    return [
        {"epoch": h.epoch, "word_error": h.word_error, "updates": h.updates, "seconds": h.seconds}
        | h.extra
        for h in logs
    ]


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
) -> dict:
    """Train the joint model on ``corpus["train"]`` for the epochs of ``settings``, evaluate on
    ``corpus["test"]``."""
    torch.manual_seed(settings.seed)
    device = settings.device
    out_dir.mkdir(parents=True, exist_ok=True)
    train, test = corpus["train"], corpus["test"]
    t0 = time.perf_counter()
    features.fit(train)
    mats = {s: features.transform(docs) for s, docs in (("train", train), ("test", test))}
    feature_seconds = time.perf_counter() - t0
    gold = LabelChunk.cat([from_document(d) for d in train])
    weights = JointWeights(features.num_features, maximal_outside=maximal_outside).to(device)
    updater = Updater(weights, average=getattr(learner, "average", False))
    monitor = Monitor(out_dir / "tb")
    name = learner_name(learner)
    log.info(
        "joint %s: %d training / %d test sentences, features %s",
        name,
        len(train),
        len(test),
        features.num_features,
    )

    def evaluate_test() -> tuple[dict, list, list]:
        structures = predict_joint(weights, mats["test"], batch_size=batch_size, device=device)
        tags = [to_tags(y) for y in structures]
        pos, np = [p for p, _ in tags], [n for _, n in tags]
        return scores(test, pos, np), pos, np

    def on_epoch(ep: EpochLog) -> None:
        values = {
            "train/word_error": ep.word_error,
            "train/updates": ep.updates,
            "train/epoch_seconds": ep.seconds,
        }
        msg = f"epoch {ep.epoch}: word error {ep.word_error:.4f}, {ep.updates} updates, "
        msg += f"{ep.seconds:.1f}s"
        if eval_every and ep.epoch % eval_every == 0:
            with updater.averaged():
                s, _, _ = evaluate_test()
            values.update({f"test/{k}": v for k, v in s.items()})
            ep.extra.update({f"test_{k}": s[k] for k in ("pos_accuracy", "np_f1")})
            msg += f", test POS {s['pos_accuracy']:.2f} NP F1 {s['np_f1']:.2f}"
        monitor.scalars(ep.epoch, values)
        log.info(msg)

    result = fit_joint(
        learner,
        updater,
        mats["train"],
        gold,
        settings,
        unlexicalized=features.unlexicalized_rows() if backoff_epochs > 0 else None,
        backoff_epochs=backoff_epochs,
        on_epoch=on_epoch,
    )
    updater.finalize()
    t0 = time.perf_counter()
    test_scores, pos, np = evaluate_test()
    decode_seconds = time.perf_counter() - t0
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
        "history": _history(result.history),
        "hparams": hparams or {},
    }
    _finish(out_dir, monitor, results)
    return results


def run_cascade(
    *,
    corpus: dict[str, list[Document]],
    learner,
    out_dir: Path,
    settings: FitSettings,
    min_count: int = 1,
    batch_size: int = 32,
    write_test_predictions: bool = True,
    hparams: dict | None = None,
) -> dict:
    """Train the POS tagger and the NP chunker on ``corpus["train"]`` (each for the epochs of
    ``settings``), evaluate on test.

    Evaluates each alone and the cascade (the chunker reading the tagger's POS tags).
    """
    torch.manual_seed(settings.seed)
    device = settings.device
    out_dir.mkdir(parents=True, exist_ok=True)
    train, test = corpus["train"], corpus["test"]
    monitor = Monitor(out_dir / "tb")
    kw = dict(settings=settings, min_count=min_count)

    def logger(stage: str):
        def on_epoch(ep: EpochLog) -> None:
            monitor.scalars(ep.epoch, {f"{stage}/word_error": ep.word_error})
            log.info(
                "%s epoch %d: word error %.4f, %.1fs", stage, ep.epoch, ep.word_error, ep.seconds
            )

        return on_epoch

    tagger = cascade.train_tagger(learner, train, TAGGER_TEMPLATES, on_epoch=logger("tagger"), **kw)
    chunker = cascade.train_chunker(
        learner, train, CHUNKER_TEMPLATES, on_epoch=logger("chunker"), **kw
    )
    t0 = time.perf_counter()
    pos = tagger.predict(test, batch_size, device)
    np_given = chunker.predict(test, batch_size, device)
    np_cascade = chunker.predict(cascade.with_pos(test, pos), batch_size, device)
    decode_seconds = time.perf_counter() - t0
    if write_test_predictions:
        write_predictions(out_dir / "test.pred.txt", test, pos, np_cascade)

    def stage(model: cascade.ChainModel) -> dict:
        r = model.result
        return {
            "epochs": r.epochs,
            "stopped_by": r.stopped_by,
            "train_seconds": sum(h.seconds for h in r.history),
            "num_features": model.features.num_features[cascade.GROUP],
            "history": _history(r.history),
        }

    results = {
        "task": "cascade",
        "learner": learner_name(learner),
        "train_sentences": len(train),
        "test_sentences": len(test),
        "tagger": stage(tagger) | {"test": scores(test, pos, None)},
        "chunker": stage(chunker) | {"test_given_gold_pos": scores(test, None, np_given)},
        "epochs": max(tagger.result.epochs, chunker.result.epochs),
        "stopped_by": f"{tagger.result.stopped_by}/{chunker.result.stopped_by}",
        "train_seconds": sum(sum(h.seconds for h in m.result.history) for m in (tagger, chunker)),
        "test_decode_seconds": decode_seconds,
        "test": scores(test, pos, np_cascade),
        "hparams": hparams or {},
    }
    _finish(out_dir, monitor, results)
    return results


def _finish(out_dir: Path, monitor: Monitor, results: dict) -> None:
    atomic_write_json(out_dir / "results.json", results)
    final = {f"test_{k}": v for k, v in results["test"].items()}
    monitor.hparams(results["hparams"], final)
    monitor.close()
    t = results["test"]
    log.info(
        "test: POS %.2f, NP acc %.2f, NP F1 %.2f (%s)",
        t.get("pos_accuracy", float("nan")),
        t["np_accuracy"],
        t["np_f1"],
        out_dir / "results.json",
    )
