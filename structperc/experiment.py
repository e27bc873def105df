"""One training run end to end, from plain objects: data -> features -> weights -> learner.

``run.py`` builds the pieces from the Hydra config and calls ``run_experiment``; everything here
takes ordinary arguments, so tests and scripts use it without Hydra.  A run writes into its
output folder:

    results.json          dev/test precision, recall, F1, epochs, stopped_by, timings, history
    model.safetensors     weight tables and feature keys   } loading never runs code
    model.json            labels, feature settings, vocab  }
    tb/                   TensorBoard events
    {dev,test}.pred.txt   the documents with the predicted tag as last column
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch

from structperc.checkpoint import load_checkpoint, save_checkpoint
from structperc.data.conll import write_conll
from structperc.data.document import Document
from structperc.eval.chunks import ChunkScores, evaluate
from structperc.features.cache import cached_features, file_identity
from structperc.features.document import NonLocalFeatures
from structperc.features.extract import FeatureMatrix
from structperc.features.pipeline import LocalFeatures
from structperc.io import atomic_write_json
from structperc.model.document_weights import DocumentWeights
from structperc.model.files import save_model
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.monitor import Monitor
from structperc.train import (
    Convergence,
    EpochLog,
    FitSettings,
    fit,
    fit_learner,
    predict,
    predict_documents,
)

log = logging.getLogger(__name__)


def label_set(docs: list[Document]) -> list[str]:
    """Sorted label set of the training documents, "O" first."""
    tags = {t for d in docs for t in (d.tags or [])}
    if not tags:
        raise ValueError("the training documents carry no tags")
    return sorted(tags, key=lambda t: (t != "O", t))


def encode_labels(docs: list[Document], labels: list[str]) -> torch.Tensor:
    """[N] label ids of every token; a tag outside the training label set maps to "O"."""
    index = {t: i for i, t in enumerate(labels)}
    fallback = index.get("O", 0)
    return torch.tensor([index.get(t, fallback) for d in docs for t in (d.tags or [])])


def extract_features(
    features: LocalFeatures,
    corpus: dict[str, list[Document]],
    cache_dir: str | Path | None,
    key: dict,
) -> tuple[LocalFeatures, dict[str, FeatureMatrix], float, bool]:
    """Fit the vocabulary on train and transform every split, through the on-disk cache."""
    t0 = time.perf_counter()

    def build():
        log.info("extracting features (%d training documents)", len(corpus["train"]))
        features.fit(corpus["train"])
        mats = {s: features.transform(docs, training=(s == "train")) for s, docs in corpus.items()}
        meta, tensors = features.state()
        return meta, tensors, mats

    meta, tensors, mats, hit = cached_features(cache_dir, key, build)
    if hit:
        features = LocalFeatures.from_state(meta, tensors)
        log.info("features loaded from the cache (%d features)", features.num_features)
    return features, mats, time.perf_counter() - t0, hit


def feature_cache_key(features_cfg: dict, data_files: list[Path], max_docs: int | None) -> dict:
    return {
        "features": features_cfg,
        "files": [file_identity(p) for p in data_files],
        "max_docs": max_docs,
    }


def scores_dict(s: ChunkScores) -> dict:
    return {
        "f1": s.f1,
        "precision": s.precision,
        "recall": s.recall,
        "accuracy": s.accuracy,
        "per_type": {t: ts.f1 for t, ts in s.per_type.items()},
    }


def score_predictions(
    labels: list[str], docs: list[Document], pred_ids: list[list[int]]
) -> tuple[ChunkScores, list[list[str]]]:
    pred = [[labels[i] for i in p] for p in pred_ids]
    return evaluate([d.tags for d in docs], pred), pred


def bpm_initialize(learner, weights, features, labels, *, runs, seed, device, progress) -> None:
    """Kazama & Torisawa's BPM initialisation: average ``runs`` single epochs from zero, each
    over a differently shuffled order, and leave that average in ``weights``."""
    tables = weights.tables()
    total = {n: torch.zeros_like(t) for n, t in tables.items()}
    for k in range(runs):
        with torch.no_grad():
            for t in tables.values():
                t.zero_()
        fit(
            learner,
            Updater(weights),
            features,
            labels,
            max_epochs=1,
            shuffle=True,
            seed=seed * 1000 + k + 1,
            device=device,
            progress=progress,
        )
        for n, t in tables.items():
            total[n] += t
        log.info("BPM run %d/%d done", k + 1, runs)
    with torch.no_grad():
        for n, t in tables.items():
            t.copy_(total[n] / runs)


def run_experiment(
    *,
    corpus: dict[str, list[Document]],
    features: LocalFeatures,
    learner,
    out_dir: Path,
    cache_dir: str | Path | None,
    cache_key: dict,
    settings: FitSettings,
    eval_every: int,
    batch_size: int,
    save: bool,
    write_predictions: bool,
    hparams: dict,
    checkpoint: bool = True,
    resume: bool = False,
    doc_features=None,
    n_test: int = 100,
) -> dict:
    """Train on ``corpus["train"]`` for the epochs of ``settings``, evaluate on dev/test, write
    results; returns the results."""
    t_job = time.perf_counter()
    seed, device = settings.seed, settings.device
    torch.manual_seed(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    features, mats, feat_seconds, hit = extract_features(features, corpus, cache_dir, cache_key)
    labels = label_set(corpus["train"])
    y_train = encode_labels(corpus["train"], labels)
    if getattr(learner, "uses_document_features", False):  # Kazama & Torisawa Alg. 4.1/4.2
        doc_features = doc_features if doc_features is not None else NonLocalFeatures()
        doc_features.fit(corpus["train"], labels)
        weights = DocumentWeights(features.num_features, labels, doc_features.num_features)
        learner.bind(corpus["train"], doc_features)
    else:
        doc_features = None
        weights = ChainWeights(features.num_features, labels)
    weights = weights.to(device)
    updater = Updater(weights, average=getattr(learner, "average", False))

    def decode(split: str, n: int = n_test) -> list[list[int]]:
        if doc_features is None:
            return predict(weights, mats[split], batch_size=batch_size, device=device)
        return predict_documents(
            weights, mats[split], corpus[split], doc_features, n=n, device=device
        )

    monitor = Monitor(out_dir / "tb")
    eval_split = "dev" if "dev" in corpus else "test"
    log.info(
        "%d features, %d labels, %d training documents (%d tokens); learner %s",
        features.num_features,
        len(labels),
        len(corpus["train"]),
        len(y_train),
        type(learner).__name__,
    )

    def on_epoch(ep: EpochLog) -> None:
        values = {
            "train/word_error": ep.word_error,
            "train/updates": ep.updates,
            "train/epoch_seconds": ep.seconds,
            "train/weight_norm": float(
                torch.stack([t.norm() for t in weights.tables().values()]).norm()
            ),
        }
        # learner-specific numbers (the CRF's objective, step, ...) as train/<name>
        values.update({f"train/{k}": v for k, v in ep.extra.items() if isinstance(v, int | float)})
        msg = (
            f"epoch {ep.epoch}: word error {ep.word_error:.5f}, "
            f"{ep.updates} updates, {ep.seconds:.1f}s"
        )
        if eval_every and ep.epoch % eval_every == 0:
            with updater.averaged():
                # during training, non-local models decode with the training n (cheap)
                n_epoch = getattr(learner, "n", n_test)
                s, _ = score_predictions(labels, corpus[eval_split], decode(eval_split, n_epoch))
            values.update(
                {
                    f"{eval_split}/f1": s.f1,
                    f"{eval_split}/precision": s.precision,
                    f"{eval_split}/recall": s.recall,
                }
            )
            ep.extra[f"{eval_split}_f1"] = s.f1
            msg += f", {eval_split} F1 {s.f1:.2f}"
        monitor.scalars(ep.epoch, values)
        log.info(msg)

    convergence = Convergence(settings.tol, settings.patience)
    ckpt_dir = out_dir / "checkpoint"
    start_epoch, past = 0, []
    if resume and (ckpt_dir / "checkpoint.json").is_file():
        start_epoch, past = load_checkpoint(ckpt_dir, updater, convergence)
        log.info("resumed from %s after epoch %d", ckpt_dir, start_epoch)
    elif resume:
        log.warning("trainer.resume=true but no checkpoint in %s: starting afresh", ckpt_dir)
    done_epochs = list(past)
    bpm_runs = getattr(learner, "bpm_runs", 0)
    bpm_seconds = 0.0
    if bpm_runs and start_epoch == 0:
        t_bpm = time.perf_counter()
        bpm_initialize(
            learner,
            weights,
            mats["train"],
            y_train,
            runs=bpm_runs,
            seed=seed,
            device=device,
            progress=settings.progress,
        )
        bpm_seconds = time.perf_counter() - t_bpm

    def on_epoch_and_save(ep: EpochLog) -> None:
        on_epoch(ep)
        done_epochs.append(ep)
        if checkpoint and not batch_learner:
            save_checkpoint(ckpt_dir, updater, convergence, done_epochs)

    # a batch learner (the CRF, structperc/crf/learner.py) runs its own optimisation loop
    # (fit_learner), not checkpointed per iteration
    batch_learner = hasattr(learner, "fit_batch")
    result = fit_learner(
        learner,
        updater,
        mats["train"],
        y_train,
        settings,
        on_epoch=on_epoch_and_save,
        start_epoch=start_epoch,
        convergence=convergence,
    )
    result.history = done_epochs
    updater.finalize()

    results: dict = {
        "epochs": result.epochs,
        "stopped_by": result.stopped_by,
        "train_seconds": result.seconds + sum(h.seconds for h in past),
        "bpm_seconds": bpm_seconds,
        "resumed_from_epoch": start_epoch if resume else None,
        "feature_seconds": feat_seconds,
        "feature_cache_hit": hit,
        "num_features": features.num_features,
        "labels": labels,
    }
    for split in ("dev", "test"):
        if split not in corpus:
            continue
        t0 = time.perf_counter()
        s, pred = score_predictions(labels, corpus[split], decode(split))
        results[split] = scores_dict(s) | {"decode_seconds": time.perf_counter() - t0}
        log.info("%s: P %.2f R %.2f F1 %.2f", split, s.precision, s.recall, s.f1)
        if write_predictions:
            write_conll(out_dir / f"{split}.pred.txt", corpus[split], pred)
    results["history"] = [
        {
            "epoch": h.epoch,
            "word_error": h.word_error,
            "updates": h.updates,
            "seconds": h.seconds,
            **h.extra,
        }
        for h in result.history
    ]
    results["hparams"] = hparams
    if save:
        info = {"results": {k: results.get(k) for k in ("dev", "test")}, "n_test": n_test}
        save_model(out_dir, weights, features, info, doc_features=doc_features)
    # this process, from the corpus in memory to here: features (or the cache), BPM, training,
    # evaluation, model file
    results["job_seconds"] = time.perf_counter() - t_job
    atomic_write_json(out_dir / "results.json", results)
    final = {f"{s}_f1": results[s]["f1"] for s in ("dev", "test") if s in results}
    monitor.hparams(hparams, final)
    monitor.close()
    return results
