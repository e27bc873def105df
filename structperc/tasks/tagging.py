"""The tagging task: sequence labeling (CoNLL-2003 NER) end to end, from plain objects.

``run.py`` builds the pieces from the Hydra config and calls ``run_tagging``; everything here
takes ordinary arguments, so tests and scripts use it without Hydra.  The structure is chosen
once, by what the learner requires (``build_structure``): the first-order chain, or Kazama &
Torisawa's document rescoring with non-local features for the learners that need it (Alg.
4.1/4.2).  A run writes into its output folder:

    results.json          dev/test precision, recall, F1, epochs, stopped_by, timings, history
    model.safetensors     weight tables and feature keys   } loading never runs code
    model.json            labels, feature settings, vocab  }
    checkpoint/           the last epoch's weights (``trainer.resume=true`` continues from it)
    tb/                   TensorBoard events
    {dev,test}.pred.txt   the documents with the predicted tag as last column
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

import torch

from structperc.checkpoint import Checkpoint
from structperc.data.conll import with_columns, write_conll
from structperc.data.document import Document
from structperc.data.tags import encode_labels, iobes_to_iob2, label_set
from structperc.distributed import SERIAL, Group
from structperc.eval.chunks import ChunkScores, evaluate
from structperc.features.cache import extract_features
from structperc.features.document import NonLocalFeatures
from structperc.features.pipeline import LocalFeatures
from structperc.model.document_weights import DocumentWeights
from structperc.model.files import save_model
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.monitor import Monitor
from structperc.structures.chain import ChainData, ChainStructure
from structperc.structures.rescoring import DocumentRescoring
from structperc.tasks.report import EpochReporter, chunk_scores, finish, history_rows
from structperc.train import FitSettings, fit

log = logging.getLogger(__name__)


def build_structure(
    learner,
    num_features: int,
    labels: list[str],
    train: list[Document],
    doc_features: NonLocalFeatures | None = None,
    *,
    n_test: int = 100,
    constraints: str = "none",
    edges: bool = True,
) -> tuple[ChainStructure | DocumentRescoring, ChainStructure | DocumentRescoring]:
    """(the structure, the one that evaluates during training) for ``learner``.

    A learner that requires "rescoring" gets the document rescoring structure (``doc_features``
    fitted on ``train``, default ``NonLocalFeatures()``), rescoring the ``n_test`` best at
    prediction and the learner's own n-best size during training; any other the chain.
    """
    if "rescoring" not in learner.requires:
        structure = ChainStructure(ChainWeights(num_features, labels, edges), constraints)
        return structure, structure
    doc_features = doc_features if doc_features is not None else NonLocalFeatures()
    doc_features.fit(train, labels)
    weights = DocumentWeights(num_features, labels, doc_features.num_features, edges)
    structure = DocumentRescoring(weights, doc_features, n=n_test, constraints=constraints)
    return structure, structure.with_n(learner.nbest)


def carry_tagger(source: Path, target: Path) -> None:
    """Copy the POS and chunk models of a tagchunk run folder into ``target``."""
    for part in ("pos", "chunk"):
        (target / part).mkdir(parents=True, exist_ok=True)
        for name in ("model.json", "model.safetensors"):
            shutil.copyfile(source / part / name, target / part / name)


def has_chunks(labels: list[str]) -> bool:
    """Whether ``labels`` are chunk tags (IOB2 or IOBES), scored by conlleval's F1; a tag set
    such as the Penn Treebank's POS tags has none and is scored by token accuracy."""
    return any(t[:2] in ("B-", "I-", "E-", "S-") for t in labels)


def score_predictions(
    labels: list[str], docs: list[Document], pred_ids: list[list[int]]
) -> tuple[ChunkScores, list[list[str]]]:
    """conlleval scores of predicted label ids against the documents' tags, and the tags; both in
    IOB2 (a chain trained on IOBES, such as the tagchunk chunker, is scored and written in IOB2)."""
    pred = [iobes_to_iob2([labels[i] for i in p]) for p in pred_ids]
    gold = [iobes_to_iob2(d.tags) for d in docs]
    return evaluate(gold, pred, [d.sentence_starts for d in docs]), pred


def run_tagging(
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
    doc_features: NonLocalFeatures | None = None,
    n_test: int = 100,
    constraints: str = "none",
    group: Group = SERIAL,
) -> dict:
    """Train on ``corpus["train"]`` for the epochs of ``settings``, evaluate on dev/test, write
    results; returns the results.

    On several ranks (``group``) every rank trains on its shard (``train.fit``); rank 0 alone
    builds the feature cache first, evaluates, and writes the run's files; the others return {}.
    """
    t_job = time.perf_counter()
    device = settings.device
    torch.manual_seed(settings.seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    with group.main_first():  # rank 0 builds the cache, the others read it
        features, mats, feat_seconds, hit = extract_features(features, corpus, cache_dir, cache_key)
    labels = label_set(corpus["train"])
    data = {s: ChainData(mats[s], documents=docs) for s, docs in corpus.items()}
    data["train"].labels = encode_labels(corpus["train"], labels)
    structure, during_training = build_structure(
        learner,
        features.num_features,
        labels,
        corpus["train"],
        doc_features,
        n_test=n_test,
        constraints=constraints,
        edges=features.edges,
    )
    weights = structure.weights.to(device)
    updater = Updater(weights, average=learner.average)
    monitor = Monitor(out_dir / "tb" if group.is_main else None)
    eval_split = "dev" if "dev" in corpus else "test"
    log.info(
        "%d features, %d labels, %d training documents (%d tokens); learner %s",
        features.num_features,
        len(labels),
        len(corpus["train"]),
        data["train"].num_tokens,
        learner.name,
    )

    def decode(split: str, structure=structure) -> list[list[int]]:
        return structure.predict(data[split], batch_size=batch_size, device=device)

    # chunk tags are scored by F1; other tags (the tagchunk POS tagger's) by token accuracy
    metric = "f1" if has_chunks(labels) else "accuracy"

    def evaluate_during_training() -> dict[str, float]:
        s, _ = score_predictions(labels, corpus[eval_split], decode(eval_split, during_training))
        out = {"f1": s.f1, "precision": s.precision, "recall": s.recall, "accuracy": s.accuracy}
        if s.f1_document is not None:  # whole documents: TensorBoard <split>/f1_document
            out["f1_document"] = s.f1_document
        return out

    every = eval_every if group.is_main else 0
    report = EpochReporter(monitor, updater, every, eval_split, evaluate_during_training, (metric,))
    checkpoints = Checkpoint(out_dir / "checkpoint", {"labels": labels}) if checkpoint else None
    hooks = {"on_epoch": report, "checkpoint": checkpoints, "resume": resume, "group": group}
    result = fit(learner, structure, updater, data["train"], settings, **hooks)
    updater.finalize()
    if not group.is_main:
        return {}

    results: dict = {
        "epochs": result.epochs,
        "stopped_by": result.stopped_by,
        "train_seconds": result.train_seconds,
        "bpm_seconds": result.bpm_seconds,
        "resumed_from_epoch": result.resumed_from,
        "feature_seconds": feat_seconds,
        "feature_cache_hit": hit,
        "num_features": features.num_features,
        "labels": labels,
        "world_size": group.world,
    }
    for split in ("dev", "test"):
        if split not in corpus:
            continue
        t0 = time.perf_counter()
        s, pred = score_predictions(labels, corpus[split], decode(split))
        results[split] = chunk_scores(s) | {"decode_seconds": time.perf_counter() - t0}
        if metric == "f1":
            log.info(
                "%s: P %.2f R %.2f F1 %.2f (conlleval; whole documents %.2f)",
                split,
                s.precision,
                s.recall,
                s.f1,
                s.f1 if s.f1_document is None else s.f1_document,
            )
        else:
            log.info("%s: accuracy %.2f%%", split, s.accuracy)
        if write_predictions:  # gold in IOB2 beside the predictions, as they are scored
            gold = [with_columns(d) for d in corpus[split]]
            for d in gold:
                d.tags = iobes_to_iob2(d.tags)
            write_conll(out_dir / f"{split}.pred.txt", gold, pred)
    results["history"] = history_rows(result.history)
    results["hparams"] = hparams
    if save:
        info = {"results": {k: results.get(k) for k in ("dev", "test")}, "n_test": n_test}
        info["constraints"] = constraints
        rescoring = isinstance(structure, DocumentRescoring)
        doc_features = structure.doc_features if rescoring else None
        save_model(out_dir, weights, features, info, doc_features=doc_features)
        if features.tagger:  # the column tagger travels with the model (tags=given: for
            carry_tagger(Path(features.tagger), out_dir / "tagger")  # input without columns)
    # this process, from the corpus in memory to here: features (or the cache), BPM, training,
    # evaluation, model file
    results["job_seconds"] = time.perf_counter() - t_job
    final = {f"{s}_{metric}": results[s][metric] for s in ("dev", "test") if s in results}
    finish(out_dir, monitor, results, final)
    return results
