"""What the task builders read from the composed config in common: the corpus (``data``: a
column corpus, of which conll2003 and conll2000 are presets), the local features and the key of
their cache, the non-local document features.

Each function takes ``config``, the ``run.ComposedConfig`` of the run: its Hydra config
(``config.cfg``), the data folder, and what Hydra makes of a node (``config.make``,
``config.plain``); nothing here imports Hydra.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from structperc.data.column_corpus import SPLITS, ColumnCorpus, ColumnFormat
from structperc.data.corpus_stream import STREAM_FROM, stream_corpus, training_tokens
from structperc.data.document import Document, runs_of
from structperc.data.document_store import DocumentStore, StoredDocuments
from structperc.data.loading import HUB_REPOS, load_corpus
from structperc.data.partial import UNKNOWN
from structperc.features.cache import cache_key, feature_cache_key, file_identity
from structperc.inference.column_tagger import ColumnTagger
from structperc.inference.loading import check_column_tagger
from structperc.io import atomic_write_json, read_json
from structperc.wordclasses.corpus import unlabeled_dir

log = logging.getLogger(__name__)
FILL_TOKENS = 50_000  # tokens of a stored corpus the column tagger fills at a time


def column_corpus(config) -> ColumnCorpus:
    """The ``data`` node as a column corpus (``conf/data/columns.yaml``)."""
    d = config.plain(config.cfg.data)
    fmt = ColumnFormat(
        columns=tuple(d["columns"]),
        label=d.get("label"),
        scheme=d.get("scheme", "auto"),
        encoding=d.get("encoding", "utf-8"),
        separator=d.get("separator", "whitespace"),
        documents=d.get("documents", "sentence"),
        comments=bool(d.get("comments", False)),
        tag_columns=d.get("tag_columns") or {},
        unknown=d.get("unknown", UNKNOWN),
        any_of=d.get("any_of"),
    )
    return ColumnCorpus(
        format=fmt,
        train=d["train"],
        dev=d.get("dev"),
        test=d.get("test"),
        name=d.get("name", "columns"),
        dev_holdout=d.get("dev_holdout", 0.1),
        dev_seed=d.get("dev_seed", 0),
        max_docs=d.get("max_docs"),
        train_docs=d.get("train_docs"),
    )


def load_columns(config) -> tuple[dict[str, Sequence[Document]], ColumnFormat]:
    """(the corpus's splits, its column format with the scheme told).  A preset without local
    files (conll2003, conll2000) comes from the Hugging Face hub (``data.loading``).  A corpus
    that ``streams`` is read into document stores (``data/corpus_stream.py``) under the cache
    folder and its splits are ``StoredDocuments``: lists in memory otherwise."""
    spec, data_dir = column_corpus(config), config.data_dir
    if spec.name in HUB_REPOS and preset_files(spec):
        try:
            spec.files(data_dir)
        except FileNotFoundError:
            corpus = load_corpus(spec.name, data_dir, max_docs=spec.max_docs)
            if spec.train_docs is not None:
                corpus["train"] = corpus["train"][: spec.train_docs]
            return corpus, spec.format
    if streams(config, spec, data_dir):
        return stored_corpus(config, spec, data_dir)
    return spec.load(data_dir)


def preset_files(spec: ColumnCorpus) -> bool:
    """Whether every split file ``spec`` names is its preset's own (``<name>/<split>.txt``):
    only then may missing files come from the hub.  A file the user named instead (``data.train=
    mine.txt``) that is missing is an error naming it, never the preset's corpus in its place."""
    given = {s: getattr(spec, s) for s in SPLITS if getattr(spec, s)}
    return all(str(p) == f"{spec.name}/{s}.txt" for s, p in given.items())


def streams(config, spec: ColumnCorpus, data_dir) -> bool:
    """Whether the corpus is read into document stores: ``data.stream`` (true, false, or
    ``auto``: a training set of more than ``STREAM_FROM`` tokens)."""
    mode = config.cfg.data.get("stream", "auto")
    if mode not in ("auto", True, False):
        raise ValueError(f"data.stream must be auto, true or false, got {mode!r}")
    if mode != "auto":
        return bool(mode)
    return training_tokens(spec, data_dir) > STREAM_FROM


def stored_corpus(
    config, spec: ColumnCorpus, data_dir
) -> tuple[dict[str, Sequence[Document]], ColumnFormat]:
    """The corpus's splits as document stores, made once in the cache folder under a key of
    the files' content and the corpus's settings (a temporary folder without a cache)."""
    files = spec.files(data_dir)
    key = cache_key(
        {
            "corpus": {**spec.format.to_json(), **asdict(spec), "format": None},
            "files": {s: [file_identity(p) for p in ps] for s, ps in files.items()},
        }
    )
    cache = config.cfg.get("cache_dir")
    folder = Path(cache) / "corpus" / key if cache else Path(tempfile.mkdtemp(prefix="corpus-"))
    told = folder / "format.json"
    if told.is_file():
        fmt = ColumnFormat.from_json(read_json(told))
        stored = {s: folder / f"{s}.docs" for s in SPLITS}  # (a corpus may lack a split)
        return {s: StoredDocuments(p) for s, p in stored.items() if p.is_file()}, fmt
    log.info("reading the corpus into document stores in %s", folder)
    corpus, fmt = stream_corpus(spec, data_dir, folder)
    atomic_write_json(told, fmt.to_json())
    return corpus, fmt


def load_data(config) -> dict[str, list[Document]]:
    """The corpus's splits; train cut to ``data.train_docs`` documents when set."""
    return load_columns(config)[0]


def chunking_corpus(config) -> dict[str, list[Document]]:
    """The splits, which must include test, of a corpus for the tasks built on CoNLL-2000 (joint,
    cascade, tagchunk): they read a ``pos`` column and chunk tags as the label.  Any other
    corpus is one ValueError naming what they need and what the corpus has (before a file is
    read where the columns say it)."""
    cfg, fmt = config.cfg, column_corpus(config).format
    if "pos" not in fmt.columns or fmt.label != "chunk":
        raise ValueError(
            f"the {cfg.task.name} task reads CoNLL-2000-style chunking data: a 'pos' column and "
            f"the label column 'chunk', but data {cfg.data.name!r} has columns "
            f"{list(fmt.columns)} with label {fmt.label!r} (data=conll2000, or name the "
            "columns so: 'data.columns=[token,pos,chunk]')"
        )
    corpus, told = load_columns(config)
    if told.scheme == "plain":
        raise ValueError(
            f"the {cfg.task.name} task reads chunk tags (B-NP, I-VP ...), but the 'chunk' "
            f"column of data {cfg.data.name!r} has labels without chunk prefixes"
        )
    if "test" not in corpus:
        raise ValueError(f"{cfg.data.name} has no test split; the {cfg.task.name} task tests on it")
    return corpus


def data_files(config, corpus: dict) -> list[Path]:
    """The files of the corpus's splits (none without them: the hub's): the feature cache's key."""
    try:
        files = column_corpus(config).files(config.data_dir)
    except FileNotFoundError:
        return []
    return [f for split in corpus for f in files.get(split, [])]


def training_files(config) -> list[str]:
    """The training split's files, as paths (none for a corpus from the hub)."""
    try:
        files = column_corpus(config).files(config.data_dir)
    except FileNotFoundError:
        return []
    return [str(f) for f in files.get("train", [])]


def corpus_record(config, fmt: ColumnFormat) -> dict:
    """What a model records of its corpus (``model.json``'s ``info.corpus``): its name and
    column format, so prediction reads and writes files the way the training files were."""
    return {"name": config.cfg.data.get("name", "columns"), **fmt.to_json()}


def _in_data_dir(path: str, data_dir: Path | None) -> str:
    """``path`` as given when it names a file (or is absolute), else in the data folder."""
    if path and data_dir and not Path(path).is_absolute() and not Path(path).is_file():
        if (data_dir / path).is_file():
            return str(data_dir / path)
    return path


def local_features(config):
    """Instantiate the feature pipeline, relative gazetteer paths (``gazetteer_path``,
    ``gazetteer_files``' paths) and the template file taken from the data folder when they name
    no file here; returns (features, the settings as a dict)."""
    fcfg = config.plain(config.cfg.features)
    gaz, data_dir = fcfg.get("gazetteer_path"), config.data_dir
    if gaz and fcfg.get("gazetteer") != "none" and not Path(gaz).is_absolute() and data_dir:
        if not Path(gaz).is_file():
            fcfg["gazetteer_path"] = str(data_dir / gaz)
    if fcfg.get("template_file"):
        fcfg["template_file"] = _in_data_dir(fcfg["template_file"], data_dir)
    classes = fcfg.get("word_classes")
    if isinstance(classes, dict) and classes.get("dir") and data_dir is not None:
        classes["dir"] = str(unlabeled_dir(classes["dir"], data_dir))
    if fcfg.get("gazetteer_files"):
        fcfg["gazetteer_files"] = [
            {**item, "path": _in_data_dir(str(item["path"]), data_dir)}
            if isinstance(item, dict) and "path" in item
            else item
            for item in fcfg["gazetteer_files"]
        ]
    return config.make(fcfg), fcfg


def extraction_settings(fcfg: dict) -> dict:
    """The feature settings that decide the feature ids (the cache key's): ``edges`` is the
    model's, not the ids', and the tagger's columns enter through its files; an empty
    ``gazetteers``, ``trigram_attributes``, ``gazetteer_files``, ``templates`` or
    ``template_file``, and a null ``hash_bits``, is left out, so runs keep the key they had
    before those settings existed (the files of the gazetteer files and templates enter the key
    by their content: ``feature_files``)."""
    out = {k: v for k, v in fcfg.items() if k not in ("edges", "tags", "tagger")}
    optional = (
        "gazetteers",
        "trigram_attributes",
        "gazetteer_files",
        "templates",
        "template_file",
        "hash_bits",
    )
    for key in optional:
        if key in out and not out[key]:
            del out[key]
    return out


def feature_files(features) -> list[Path]:
    """The files the features read besides the corpus: the template file (a preset's too) and
    the gazetteer files, whose content the cache key holds."""
    files = []
    if getattr(features, "template_source", None):
        files.append(Path(features.template_source))
    files += [Path(f.spec.path) for f in getattr(features, "gazetteer_families", ())]
    return files


def tagging_inputs(config) -> tuple[dict, object, dict, dict]:
    """(corpus, local features, their cache key, the corpus's record for the model) of a
    labeling task; with ``features.tags=auto`` the corpus's POS and chunk columns are the
    tagger's."""
    corpus, fmt = load_columns(config)
    features, fcfg = local_features(config)
    files = data_files(config, corpus)
    if fcfg.get("gazetteer") != "none" and fcfg.get("gazetteer_path"):
        files.append(Path(fcfg["gazetteer_path"]))
    files += feature_files(features)
    extraction = extraction_settings(fcfg)
    if features.gazetteers:  # their lists change with their packages' versions
        extraction["gazetteer_versions"] = features.gazetteer_versions
        extraction["external_outside"] = "no feature"  # (the first version had an "O" value)
    if features.tagger:  # (tags=given: carried by the run folder, checked before training)
        check_column_tagger(features.tagger)
    if features.tags == "auto":
        tagger = ColumnTagger.load(features.tagger)
        corpus = {s: filled(tagger, docs) for s, docs in corpus.items()}
        files += [Path(features.tagger) / m / "model.safetensors" for m in ("pos", "chunk")]
        # how the tagger reads: Penn Treebank brackets and quotes, one sentence at a time
        extraction["tagger_input"] = "treebank sentences"
    record = corpus_record(config, fmt)
    if record["name"] not in HUB_REPOS:  # (the presets keep the key they had before)
        extraction["corpus"] = record | {
            k: config.cfg.data.get(k) for k in ("dev_holdout", "dev_seed", "train_docs")
        }
    key = feature_cache_key(extraction, files, config.cfg.data.max_docs)
    return corpus, features, key, record


def document_features(config):
    """The non-local document features the config names (``document_features``), or None (the
    defaults of the learners that need them)."""
    node = config.cfg.get("document_features")
    return config.make(node) if node else None


def filled(tagger: ColumnTagger, docs: Sequence[Document]) -> Sequence[Document]:
    """``tagger.fill`` of the documents: a list for a list; for a document store, a store
    beside it (made once), filled a run of documents at a time."""
    if not isinstance(docs, StoredDocuments):
        return tagger.fill(docs)
    path = docs.path.with_name(docs.path.name + ".tagged")
    if path.is_file():
        return StoredDocuments(path)
    store = DocumentStore(path)
    for _, run in runs_of(docs, FILL_TOKENS):
        store.add(tagger.fill(run))
    return store.close()
