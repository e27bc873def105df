"""What the task builders read from the composed config in common: the corpus (``data``: a
column corpus, of which conll2003 and conll2000 are presets), the local features and the key of
their cache, the non-local document features.

Each function takes ``config``, the ``run.ComposedConfig`` of the run: its Hydra config
(``config.cfg``), the data folder, and what Hydra makes of a node (``config.make``,
``config.plain``); nothing here imports Hydra.
"""

from __future__ import annotations

from pathlib import Path

from structperc.data.column_corpus import ColumnCorpus, ColumnFormat
from structperc.data.document import Document
from structperc.data.loading import HUB_REPOS, load_corpus
from structperc.features.cache import feature_cache_key
from structperc.tasks.loading import ColumnTagger, check_column_tagger


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


def load_columns(config) -> tuple[dict[str, list[Document]], ColumnFormat]:
    """(the corpus's splits, its column format with the scheme told).  A preset without local
    files (conll2003, conll2000) comes from the Hugging Face hub (``data.loading``)."""
    cfg, spec = config.cfg, column_corpus(config)
    data_dir = config.data_dir or cfg.data.dir
    if spec.name in HUB_REPOS:
        try:
            spec.files(data_dir)
        except FileNotFoundError:
            corpus = load_corpus(spec.name, data_dir, max_docs=spec.max_docs)
            if spec.train_docs is not None:
                corpus["train"] = corpus["train"][: spec.train_docs]
            return corpus, spec.format
    return spec.load(data_dir)


def load_data(config) -> dict[str, list[Document]]:
    """The corpus's splits; train cut to ``data.train_docs`` documents when set."""
    return load_columns(config)[0]


def corpus_with_test(config) -> dict[str, list[Document]]:
    """``load_data``, which must have a test split (the tasks that test on it)."""
    corpus = load_data(config)
    if "test" not in corpus:
        cfg = config.cfg
        raise ValueError(f"{cfg.data.name} has no test split; the {cfg.task.name} task tests on it")
    return corpus


def data_files(config, corpus: dict) -> list[Path]:
    """The files of the corpus's splits (none without them: the hub's): the feature cache's key."""
    try:
        files = column_corpus(config).files(config.data_dir or config.cfg.data.dir)
    except FileNotFoundError:
        return []
    return [f for split in corpus for f in files.get(split, [])]


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
    ``template_file`` is left out, so runs keep the key they had before those settings existed
    (the files of the last three enter the key by their content: ``feature_files``)."""
    out = {k: v for k, v in fcfg.items() if k not in ("edges", "tags", "tagger")}
    optional = ("gazetteers", "trigram_attributes", "gazetteer_files", "templates", "template_file")
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
        corpus = {s: tagger.fill(docs) for s, docs in corpus.items()}
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
