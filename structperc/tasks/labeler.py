"""A sequence labeler trained end to end from plain objects: the tagging task's run, and each
chain of the tagchunk task's (its POS tagger, its chunker, the jackknife's fold taggers).

``train_labeler(settings, out_dir)`` extracts the local features (through the cache), builds the
structure the learner requires (``structure.labeler_structure``: the first-order chain, or
Kazama & Torisawa's document rescoring with non-local features), trains it (``TrainingRun``),
scores dev and test and writes into ``out_dir``:

    results.json          dev/test precision, recall, F1, epochs, stopped_by, timings, history
    model.safetensors     weight tables and feature keys   } loading never runs code
    model.json            labels, feature settings, vocab  }
    checkpoint/           the last epoch's weights (``trainer.resume=true`` continues from it)
    tb/                   TensorBoard events
    {dev,test}.pred.txt   the documents with the predicted tag as last column

Chunk tags are scored by conlleval's F1, other tags (a POS tagger's: a plain tagging task) by
token accuracy, with each label's precision, recall and F1 (``eval/tokens.py``).  A model
records its corpus (``corpus_record``: the column format, ``data/column_corpus.py``), so
prediction reads and writes files the way its training files were.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from structperc.data.conll import with_columns, write_conll
from structperc.data.document import Document, MappedDocuments
from structperc.data.partial import has_partial
from structperc.data.tags import encode_partial, iobes_to_iob2, label_set, valid_iob2
from structperc.distributed import SERIAL, Group
from structperc.eval.chunks import ChunkScores, evaluate
from structperc.eval.tokens import token_scores
from structperc.features.cache import extract_features
from structperc.features.document import NonLocalFeatures
from structperc.features.pipeline import LocalFeatures
from structperc.model.files import save_model
from structperc.model.updates import Updater
from structperc.native.chain_predict import decode as decode_labels
from structperc.structures.chain import ChainData
from structperc.structures.rescoring import DocumentRescoring
from structperc.tasks.completion import Completion
from structperc.tasks.report import chunk_curves, chunk_scores, token_results
from structperc.tasks.structure import labeler_structure
from structperc.tasks.training import Evaluation, ModelSettings, TrainingRun, history_rows
from structperc.tasks.warm_start import InitialModel, grown_labels, start_from

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class LabelerSettings(ModelSettings):
    """What one sequence labeler's run needs (the tagging task's settings): the common ones
    (``ModelSettings``; dev is evaluated during training, else test) and

    features: the local feature pipeline (fitted in place); cache_dir, cache_key: the feature
    cache (None: none) and what decides the features; save: write the model; doc_features:
    the non-local features of a rescoring learner (None: the defaults); n_test: candidates
    rescored at prediction; constraints: the decoder's (``none`` or ``iob2``); corpus_record:
    the corpus's name and column format, kept in the model (``inputs.corpus_record``);
    train_files: the training split's files (the model's ``info["training"]``); init_from: a
    saved model this run continues (``warm_start.py``; ``fit.warm`` then set), or None;
    init_average: how the averaged perceptron's average counts it (``auto``, ``continue`` or
    ``restart``: ``warm_start.py``); complete_with: a saved model that fills the open tokens of
    partially labelled training documents before training (``completion.py``), or None.
    """

    features: LocalFeatures
    cache_dir: str | Path | None = None
    cache_key: dict = field(default_factory=dict)
    save: bool = True
    doc_features: NonLocalFeatures | None = None
    n_test: int = 100
    constraints: str = "none"
    corpus_record: dict | None = None
    train_files: tuple[str, ...] = ()
    init_from: InitialModel | None = None
    init_average: str = "auto"
    complete_with: Completion | None = None


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


def check_evaluated_splits(corpus: dict) -> None:
    """ValueError naming the first dev or test document whose labels leave tokens open: those
    splits are scored, and a score needs every gold label (partial annotation trains only)."""
    for split in ("dev", "test"):
        for doc in corpus.get(split, ()):
            if has_partial(doc.tags):
                raise ValueError(
                    f"{doc.source or split}: the {split} split leaves tokens open (unknown "
                    "labels): only training data may be partially annotated"
                )


def train_labeler(settings: LabelerSettings, out_dir: Path, group: Group = SERIAL) -> dict:
    """Train on ``corpus["train"]`` for the epochs of ``settings.fit``, evaluate on dev/test,
    write the run folder; returns the results.

    On several ranks (``group``) every rank trains on its shard (``trainer.fit``); rank 0 alone
    builds the feature cache first, evaluates, and writes the run's files; the others return {}.
    """
    s, corpus, learner = settings, settings.corpus, settings.learner
    t_job = time.perf_counter()
    cache_key = s.cache_key
    if s.complete_with is not None:  # the completed labels decide the jackknife's folds
        corpus = {**corpus, "train": s.complete_with.complete(corpus["train"])}
        cache_key = {**cache_key, "complete_with": s.complete_with.digest}
    device = s.fit.device
    torch.manual_seed(s.fit.seed)
    run = TrainingRun(out_dir, group)
    if s.init_from is not None:  # its features are kept (the fit inherits them)
        s.features.inherit(s.init_from.features)
    with group.main_first():  # rank 0 builds the cache, the others read it
        features, mats, feat_seconds, hit = extract_features(
            s.features, corpus, s.cache_dir, cache_key
        )
    labels = grown_labels(label_set(corpus["train"]), s.init_from)
    check_evaluated_splits(corpus)
    data = {split: ChainData(mats[split], documents=docs) for split, docs in corpus.items()}
    data["train"].labels, data["train"].allowed = encode_partial(corpus["train"], labels)
    structure, during_training = labeler_structure(
        learner,
        features.num_features,
        labels,
        corpus["train"],
        s.doc_features,
        n_test=s.n_test,
        constraints=s.constraints,
        edges=features.edges,
        node_only=features.node_only_mask(),
    )
    weights = structure.weights.to(device)
    updater = Updater(weights, average=learner.average)
    carried = None
    if s.init_from is not None:
        rescoring = isinstance(structure, DocumentRescoring)
        doc_features = structure.doc_features if rescoring else None
        carried = start_from(s.init_from, weights, features, updater, doc_features, s.init_average)
    if features.hash_bits is not None:
        log.info(
            "feature hashing: %d features in 2^%d rows, %d collisions",
            len(features.vocab),
            features.hash_bits,
            features.vocab.collisions(),
        )
    eval_split = "dev" if "dev" in corpus else "test"
    table_bytes = updater.table_bytes()
    log.info(
        "%d features, %d labels, %d training documents (%d tokens%s); learner %s; tables %.0f MB",
        features.num_features,
        len(labels),
        len(corpus["train"]),
        data["train"].num_tokens,
        ", read from disk" if data["train"].features.mapped else "",
        learner.name,
        table_bytes / 2**20,
    )

    def decode(split: str, structure=structure) -> list[list[int]]:
        return decode_labels(structure, data[split], batch_size=s.batch_size, device=device)

    metric = "f1" if has_chunks(labels) else "accuracy"

    def evaluate_during_training() -> dict[str, float]:
        docs = corpus[eval_split]
        sc, pred = score_predictions(labels, docs, decode(eval_split, during_training))
        out = {"f1": sc.f1, "precision": sc.precision, "recall": sc.recall, "accuracy": sc.accuracy}
        if sc.f1_document is not None:  # whole documents: TensorBoard <split>/f1_document
            out["f1_document"] = sc.f1_document
        if metric == "f1":  # per type, and the error classes
            gold = [iobes_to_iob2(d.tags) for d in docs]
            out.update(chunk_curves(sc, gold, pred, [d.sentence_starts for d in docs]))
        return out

    result = run.fit_model(
        s,
        structure,
        updater,
        data["train"],
        evaluation=Evaluation(eval_split, evaluate_during_training, (metric,)),
        signature={"labels": labels},
    )
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
        "train_tokens": data["train"].num_tokens,
        "feature_keys": len(features.vocab),
        "table_bytes": table_bytes,
        "streamed": data["train"].features.mapped,
        "labels": labels,
        "world_size": group.world,
        **result.summary,  # the CRF: parameters, nonzero_weights, nonzero_fraction
    }
    if features.hash_bits is not None:
        results["hash_bits"] = features.hash_bits
        results["collisions"] = features.vocab.collisions()
    if carried is not None:
        results["init_from"] = str(s.init_from.folder)
        results["warm_start"] = carried
    if s.complete_with is not None:
        results["complete_with"] = str(s.complete_with.folder)
    for split in ("dev", "test"):
        if split in corpus:
            t0 = time.perf_counter()
            sc, pred = score_predictions(labels, corpus[split], decode(split))
            if metric == "f1":
                results[split] = chunk_scores(sc)
            else:  # plain tags: accuracy and each label's scores
                results[split] = token_results(token_scores([d.tags for d in corpus[split]], pred))
            results[split]["decode_seconds"] = time.perf_counter() - t0
            log_scores(split, sc, metric)
            if s.write_predictions:
                write_predictions(out_dir / f"{split}.pred.txt", corpus[split], pred)
    results["history"] = history_rows(result.history)
    results["hparams"] = s.hparams
    if s.save:
        info = {"results": {k: results.get(k) for k in ("dev", "test")}, "n_test": s.n_test}
        info["constraints"] = s.constraints
        info["seen"] = updater.seen  # the instances the average is over (warm_start.py)
        info["training"] = training_record(s, data["train"].num_tokens, result.epochs)
        info["lineage"] = s.init_from.lineage() if s.init_from is not None else []
        if s.complete_with is not None:  # the model that filled the open training labels
            done = s.complete_with
            info["completed_by"] = {"folder": str(done.folder), "model_sha256": done.digest}
        if s.corpus_record is not None:
            info["corpus"] = s.corpus_record
        rescoring = isinstance(structure, DocumentRescoring)
        doc_features = structure.doc_features if rescoring else None
        save_model(out_dir, weights, features, info, doc_features=doc_features)
    # this process, from the corpus in memory to here: features (or the cache), BPM, training,
    # evaluation, model file
    results["job_seconds"] = time.perf_counter() - t_job
    final = {f"{sp}_{metric}": results[sp][metric] for sp in ("dev", "test") if sp in results}
    return run.finish(results, final)


def training_record(s: LabelerSettings, tokens: int, epochs: int) -> dict:
    """What a model was trained on (its ``info["training"]``, a lineage's entry): the corpus's
    name, the training files, documents, tokens and epochs."""
    return {
        "corpus": (s.corpus_record or {}).get("name"),
        "train_files": list(s.train_files),
        "documents": len(s.corpus["train"]),
        "tokens": tokens,
        "epochs": epochs,
    }


def log_scores(split: str, s: ChunkScores, metric: str) -> None:
    """The log line of a split's scores: conlleval's, or the token accuracy of other tags."""
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


def write_predictions(path: Path, docs: list[Document], pred: list[list[str]]) -> None:
    """``docs`` with their gold tags in IOB2 beside the predictions, as valid IOB2 sentence
    by sentence (``tags.valid_iob2``: the chunks conlleval reads in them, which it scores)."""

    def in_iob2(d: Document) -> Document:
        copy = with_columns(d)
        copy.tags = iobes_to_iob2(d.tags)
        return copy

    written = [valid_iob2(p, d.sentence_spans()) for d, p in zip(docs, pred, strict=True)]
    write_conll(path, MappedDocuments(docs, in_iob2), written)  # (one document at a time)
