"""The tagchunk task: a POS tagger and a full chunker on CoNLL-2000 (WSJ), as two chains.

Kazama & Torisawa (2007, Table 5) replace the given POS and chunk columns of CoNLL-2003 by a
tagger's (TagChunk), and a user's text has no such columns at all: this task trains that
tagger with structperc's own learners.  Both are first-order chains, each trained as the
tagging task trains its labeler (``labeler.train_labeler``), on the training sentences minus the
last ``dev_sentences`` (their dev set; ``dev_sentences=0``: on all of them, the final fit once
the settings are chosen on dev):

    pos/     the POS tagger: the 45 Penn Treebank tags of the data's POS column, from token
             attributes only (words, affixes, shapes; ``pos_attributes``)
    chunk/   the chunker: every CoNLL-2000 chunk type, from the token attributes and the POS tags
             (``chunk_attributes``): at prediction the tagger's; in training the data's
             (``chunk_train_pos=given``) or the tagger's, jackknifed (``jackknife``).  It is
             trained on IOB2 or IOBES tags (``chunk_encoding``); its output is IOB2 either way
             (``data.tags.iobes_to_iob2``).

Jackknifing (``pos_folds`` = K): the training sentences are cut into K contiguous blocks; a POS
tagger trained on the other K - 1 blocks tags each block, so the chunker trains on POS tags with
the errors it will meet when it reads the tagger's output, not on the data's column (the usual
stacking remedy for cascades; Wolpert 1992).  The fold taggers are not kept, but the column they
tag is cached (``cached_jackknife``) by what decides it, so a run that changes only the chunker
(its templates, ``chunk_edges``, ``chunk_encoding``) skips them.

Cascaded chains, not the joint label-chunk model: that one (``tasks/joint.py``) tags five
collapsed POS classes and noun phrases only.  The run folder is what
``inference.column_tagger.ColumnTagger`` loads.  results.json: POS accuracy against the data's
tag column, chunk F1 with gold POS and with the tagger's own (the cascade), on dev and test, and
seconds and tokens per second of training and tagging.
"""

from __future__ import annotations

import copy
import logging
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from structperc.data.conll import with_columns
from structperc.data.document import Document
from structperc.data.tags import iob2_to_iobes
from structperc.data.treebank import as_treebank
from structperc.distributed import SERIAL, Group
from structperc.eval.chunks import evaluate
from structperc.features.cache import cache_key, feature_cache_key
from structperc.features.pipeline import LocalFeatures
from structperc.inference.column_tagger import ColumnTagger
from structperc.inference.loading import load_tagger, predict_labels
from structperc.io import atomic_write_json, read_json
from structperc.tasks.inputs import chunking_corpus, data_files, extraction_settings
from structperc.tasks.labeler import LabelerSettings, train_labeler
from structperc.tasks.registry import task
from structperc.tasks.training import FitSettings

log = logging.getLogger(__name__)


def as_pos_task(docs: list[Document]) -> list[Document]:
    """Documents whose tags are their POS column (and which carry no POS column to read)."""
    out = []
    for d in docs:
        columns = {k: v for k, v in d.columns.items() if k != "pos"}
        copy = with_columns(d)
        copy.columns, copy.tags = columns, list(d.columns["pos"])
        out.append(copy)
    return out


def split_dev(corpus: dict[str, list[Document]], dev_sentences: int) -> dict[str, list[Document]]:
    """train minus its last ``dev_sentences`` sentences, those as dev, and test; with
    ``dev_sentences=0`` every training sentence trains and there is no dev split (the final
    fit, once the settings are chosen on dev)."""
    if not 0 <= dev_sentences < len(corpus["train"]):
        raise ValueError(
            f"task.dev_sentences must be in 0..{len(corpus['train']) - 1}, got {dev_sentences}"
        )
    train, test = corpus["train"], corpus["test"]
    if dev_sentences == 0:
        return {"train": train, "test": test}
    return {"train": train[:-dev_sentences], "dev": train[-dev_sentences:], "test": test}


CHUNK_TRAIN_POS = ("given", "jackknife")
CHUNK_ENCODINGS = ("iob2", "iobes")


def check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    """ValueError naming the setting ``task.<name>`` unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"task.{name} must be one of {allowed}, got {value!r}")


def encode_chunks(docs: list[Document], encoding: str) -> list[Document]:
    """``docs`` with their chunk tags in ``encoding`` (copies for ``iobes``; the data is IOB2)."""
    check_choice("chunk_encoding", encoding, CHUNK_ENCODINGS)
    if encoding == "iob2":
        return docs
    out = [with_columns(d) for d in docs]
    for d in out:
        d.tags = iob2_to_iobes(d.tags)
    return out


def fold_of(index: int, count: int, folds: int) -> int:
    """The block (0..folds-1) of sentence ``index`` of ``count``: contiguous, sizes within one."""
    return index * folds // count


def jackknife_pos(
    train: list[Document],
    *,
    folds: int,
    pos_features: LocalFeatures,
    pos_learner,
    settings: FitSettings,
    batch_size: int,
) -> list[Document]:
    """Copies of the ``train`` sentences whose POS column is a held-out tagger's: each of the
    ``folds`` blocks tagged by a POS tagger (unfitted copies of ``pos_features`` and
    ``pos_learner``) trained on the other blocks."""
    if not 2 <= folds <= len(train):
        raise ValueError(f"task.pos_folds must be in 2..{len(train)}, got {folds}")
    pos_docs = as_pos_task(train)
    blocks = [fold_of(i, len(train), folds) for i in range(len(train))]
    tagged: list[list[str] | None] = [None] * len(train)
    with tempfile.TemporaryDirectory(prefix="pos_fold") as tmp:
        for k in range(folds):
            held = [i for i, b in enumerate(blocks) if b == k]
            rest = [d for d, b in zip(pos_docs, blocks, strict=True) if b != k]
            out = Path(tmp) / str(k)
            fold_tagger = LabelerSettings(
                corpus={"train": rest},
                features=copy.deepcopy(pos_features),
                learner=copy.deepcopy(pos_learner),
                fit=settings,
                eval_every=0,
                batch_size=batch_size,
                write_predictions=False,
                checkpoint=False,
            )
            train_labeler(fold_tagger, out)
            held_docs = [train[i] for i in held]
            pred = predict_labels(load_tagger(out), held_docs, batch_size, settings.device)
            for i, p in zip(held, pred, strict=True):
                tagged[i] = p
            log.info("POS fold %d of %d: %d sentences tagged", k + 1, folds, len(held))
    return [with_columns(d, pos=p) for d, p in zip(train, tagged, strict=True)]


def cached_jackknife(
    cache_dir: str | Path | None, key: dict | None, train: list[Document], compute
) -> tuple[list[Document], bool]:
    """(``compute()``'s jackknifed copies of ``train``, hit), through an entry of ``cache_dir``
    keyed by ``key`` (what decides the fold taggers' tags: their features, learner, trainer
    settings, seed, folds and the data files), so a second run that changes only the chunker
    skips the fold taggers; no cache without either.  A hit whose columns do not fit ``train``
    is an error naming the entry."""
    if cache_dir is None or key is None:
        return compute(), False
    entry = Path(cache_dir) / cache_key({"jackknife_pos": key}) / "pos.json"
    if entry.is_file():
        pos = read_json(entry)["pos"]
        lengths = [len(d) for d in train]
        if [len(p) for p in pos] != lengths:
            raise ValueError(
                f"jackknife cache {entry}: {len(pos)} sentences that do not fit the "
                f"{len(lengths)} training sentences; delete that folder"
            )
        log.info("jackknifed POS column loaded from the cache (%s)", entry.parent)
        return [with_columns(d, pos=p) for d, p in zip(train, pos, strict=True)], True
    out = compute()
    atomic_write_json(entry, {"pos": [d.columns["pos"] for d in out], "key": key})
    return out, False


@dataclass(frozen=True)
class TagchunkSettings:
    """What a tagchunk run needs: the corpus (``train`` and ``test``), each chain's local
    features and learner (fitted and trained in place), the training loop's settings, the dev
    sentences taken from the end of train (``split_dev``), the feature cache (``cache_dir``;
    ``cache_keys``: what decides each part's features), dev F1 every ``eval_every`` epochs, the
    decoding batch, the run's settings (``hparams``), and the chunker's training data:

    chunk_train_pos: the POS column it trains on, the data's (``given``) or a ``pos_folds``-fold
        jackknife of the tagger's (``jackknife``, ``jackknife_pos``);
    chunk_encoding: its training tags, ``iob2`` (the data's) or ``iobes``;
    jackknife_key: what decides the fold taggers' tags; given, their column is cached in
        ``cache_dir`` (``cached_jackknife``).

    The choices are checked here, before any training."""

    corpus: dict[str, list[Document]]
    pos_features: LocalFeatures
    chunk_features: LocalFeatures
    pos_learner: object
    chunk_learner: object
    fit: FitSettings
    dev_sentences: int
    cache_dir: str | Path | None = None
    cache_keys: dict[str, dict] = field(default_factory=dict)
    eval_every: int = 1
    batch_size: int = 64
    hparams: dict = field(default_factory=dict)
    chunk_train_pos: str = "given"
    pos_folds: int = 5
    chunk_encoding: str = "iob2"
    jackknife_key: dict | None = None

    def __post_init__(self):
        check_choice("chunk_train_pos", self.chunk_train_pos, CHUNK_TRAIN_POS)
        check_choice("chunk_encoding", self.chunk_encoding, CHUNK_ENCODINGS)


def tagchunk_settings(config) -> TagchunkSettings:
    """The tagchunk run of the composed ``config`` (``run.ComposedConfig``): the ``features``
    group with each part's templates (``task.<part>_attributes``, ``_bigrams``, ``_trigrams``),
    no gazetteer, and the chunker's ``task.chunk_edges``; the cache keys of both parts and of
    the jackknifed POS column."""
    cfg = config.cfg
    corpus = chunking_corpus(config)
    task, keys, built = cfg.task, {}, {}
    files = data_files(config, corpus)
    for part in ("pos", "chunk"):
        fcfg = config.plain(cfg.features)
        fcfg.update(
            attributes=list(task[f"{part}_attributes"]),
            bigram_attributes=list(task[f"{part}_bigrams"]),
            trigram_attributes=list(task.get(f"{part}_trigrams") or []),
            gazetteer="none",
            gazetteers=[],
        )
        if part == "chunk" and task.get("chunk_edges") is not None:
            fcfg["edges"] = bool(task.chunk_edges)  # the weight tables', not the feature ids'
        built[part] = config.make(fcfg)
        extraction = extraction_settings(fcfg)
        extraction["part"] = part
        keys[part] = feature_cache_key(extraction, files, cfg.data.max_docs) | {
            "dev_sentences": task.dev_sentences
        }
    train_pos, jackknife_key = task.get("chunk_train_pos", "given"), None
    if train_pos != "given":  # the chunker's training POS column is the fold taggers'
        keys["chunk"] |= {
            "chunk_train_pos": train_pos,
            "pos_folds": task.pos_folds,
            "pos_tagger": {  # what decides the fold taggers' tags
                "features": keys["pos"],
                "learner": config.plain(cfg.learner),
                "trainer": {k: cfg.trainer[k] for k in ("max_epochs", "tol", "patience")},
                "shuffle": cfg.trainer.shuffle,
                "seed": cfg.seed,
            },
        }
        # the fold taggers' column is cached apart: a run that changes only the chunker reuses it
        jackknife_key = {k: keys["chunk"][k] for k in ("pos_folds", "pos_tagger")}
    return TagchunkSettings(
        corpus=corpus,
        pos_features=built["pos"],
        chunk_features=built["chunk"],
        pos_learner=config.make(cfg.learner),
        chunk_learner=config.make(cfg.learner),
        fit=config.fit_settings(),
        dev_sentences=task.dev_sentences,
        cache_dir=cfg.cache_dir,
        cache_keys=keys,
        eval_every=cfg.trainer.eval_every,
        batch_size=cfg.trainer.batch_size,
        hparams=config.hparams(),
        chunk_train_pos=train_pos,
        pos_folds=int(task.get("pos_folds", 5)),
        chunk_encoding=task.get("chunk_encoding", "iob2"),
        jackknife_key=jackknife_key,
    )


@task("tagchunk", build=tagchunk_settings, headline=("dev.chunk_f1",), missing=float("nan"))
def run_tagchunk(settings: TagchunkSettings, out_dir: Path, group: Group = SERIAL) -> dict:
    """Train the two chains into ``out_dir/pos`` and ``out_dir/chunk`` (``train_labeler``) and
    score the cascade; returns the results (no headline without a dev split: nan)."""
    s = settings
    t_job = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    treebank = {sp: [as_treebank(d) for d in docs] for sp, docs in s.corpus.items()}  # WSJ: no-op
    splits = split_dev(treebank, s.dev_sentences)
    unfitted = copy.deepcopy(s.pos_features), copy.deepcopy(s.pos_learner)

    def chain(corpus: dict, features: LocalFeatures, learner, part: str) -> dict:
        """One chain of the two, trained into ``out_dir/<part>``."""
        labeler = LabelerSettings(
            corpus=corpus,
            features=features,
            learner=learner,
            fit=s.fit,
            cache_dir=s.cache_dir,
            cache_key=s.cache_keys[part],
            eval_every=s.eval_every if "dev" in splits else 0,  # never test during training
            batch_size=s.batch_size,
            write_predictions=False,
            hparams=s.hparams,
        )
        return train_labeler(labeler, out_dir / part)

    pos = chain(
        {sp: as_pos_task(d) for sp, d in splits.items()}, s.pos_features, s.pos_learner, "pos"
    )
    chunk_splits, jackknife_seconds = splits, 0.0
    if s.chunk_train_pos == "jackknife":
        t0 = time.perf_counter()
        train, jackknife_hit = cached_jackknife(
            s.cache_dir,
            s.jackknife_key,
            splits["train"],
            lambda: jackknife_pos(
                splits["train"],
                folds=s.pos_folds,
                pos_features=unfitted[0],
                pos_learner=unfitted[1],
                settings=s.fit,
                batch_size=s.batch_size,
            ),
        )
        chunk_splits, jackknife_seconds = splits | {"train": train}, time.perf_counter() - t0
    encoded = {sp: encode_chunks(d, s.chunk_encoding) for sp, d in chunk_splits.items()}
    chunk = chain(encoded, s.chunk_features, s.chunk_learner, "chunk")
    tagger = ColumnTagger.load(out_dir, batch_size=s.batch_size, device=s.fit.device)
    results: dict = {
        "task": "tagchunk",
        "train_sentences": len(splits["train"]),
        "chunk_train_pos": s.chunk_train_pos,
        "chunk_encoding": s.chunk_encoding,
    }
    for split in ("dev", "test"):
        if split not in splits:
            continue
        docs = splits[split]
        blank = [with_columns(d) for d in docs]
        for d in blank:
            d.columns = {}
        t0 = time.perf_counter()
        tagged = tagger.fill(blank)
        seconds = time.perf_counter() - t0
        tokens = sum(len(d) for d in docs)
        right = sum(
            g == p
            for d, t in zip(docs, tagged, strict=True)
            for g, p in zip(d.columns["pos"], t.columns["pos"], strict=True)
        )
        cascade = evaluate(
            [d.tags for d in docs],
            [t.columns["chunk"] for t in tagged],
            [d.sentence_starts for d in docs],
        )
        results[split] = {
            "pos_accuracy": 100.0 * right / tokens,
            "chunk_f1_gold_pos": chunk[split]["f1"],
            "chunk_f1": cascade.f1,
            "chunk_per_type": {k: v.f1 for k, v in cascade.per_type.items()},
            "tagging_seconds": seconds,
            "tokens_per_second": tokens / seconds,
        }
        log.info(
            "%s: POS %.2f%%, chunk F1 %.2f (gold POS %.2f), %.0f tokens/s",
            split,
            results[split]["pos_accuracy"],
            cascade.f1,
            chunk[split]["f1"],
            tokens / seconds,
        )
    results["pos_epochs"], results["chunk_epochs"] = pos["epochs"], chunk["epochs"]
    results["train_seconds"] = {"pos": pos["train_seconds"], "chunk": chunk["train_seconds"]}
    if s.chunk_train_pos == "jackknife":
        results["pos_folds"], results["train_seconds"]["jackknife"] = s.pos_folds, jackknife_seconds
        results["jackknife_cache_hit"] = jackknife_hit
        train_tags = [t for d in chunk_splits["train"] for t in d.columns["pos"]]
        given = [t for d in splits["train"] for t in d.columns["pos"]]
        right = sum(a == b for a, b in zip(train_tags, given, strict=True))
        results["jackknife_pos_accuracy"] = 100.0 * right / len(given)
    results["job_seconds"] = time.perf_counter() - t_job
    results["hparams"] = s.hparams
    atomic_write_json(out_dir / "results.json", results)
    return results
