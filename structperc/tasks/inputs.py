"""What the task builders read from the composed config in common: the corpus, the local
features of CoNLL-2003 and the key of their cache, the non-local document features.

Each function takes ``config``, the ``run.ComposedConfig`` of the run: its Hydra config
(``config.cfg``), the data folder, and what Hydra makes of a node (``config.make``,
``config.plain``); nothing here imports Hydra.
"""

from __future__ import annotations

from pathlib import Path

from structperc.data.document import Document
from structperc.data.loading import load_corpus
from structperc.features.cache import feature_cache_key
from structperc.tasks.loading import ColumnTagger, check_column_tagger


def load_data(config) -> dict[str, list[Document]]:
    """The corpus's splits; train cut to ``data.train_docs`` documents when set."""
    cfg = config.cfg
    corpus = load_corpus(cfg.data.name, config.data_dir or cfg.data.dir, max_docs=cfg.data.max_docs)
    n = cfg.data.get("train_docs")
    if n is not None:
        corpus["train"] = corpus["train"][: int(n)]
    return corpus


def corpus_with_test(config) -> dict[str, list[Document]]:
    """``load_data``, which must have a test split (the tasks that test on it)."""
    corpus = load_data(config)
    if "test" not in corpus:
        cfg = config.cfg
        raise ValueError(f"{cfg.data.name} has no test split; the {cfg.task.name} task tests on it")
    return corpus


def data_files(config, corpus: dict) -> list[Path]:
    """The files of the corpus's splits (none without a data folder): the feature cache's key."""
    data_dir = config.data_dir
    return [data_dir / config.cfg.data.name / f"{s}.txt" for s in corpus] if data_dir else []


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


def tagging_inputs(config) -> tuple[dict, object, dict]:
    """(corpus, local features, their cache key) of a CoNLL-2003 task; with
    ``features.tags=auto`` the corpus's POS and chunk columns are the tagger's."""
    corpus = load_data(config)
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
    return corpus, features, feature_cache_key(extraction, files, config.cfg.data.max_docs)


def document_features(config):
    """The non-local document features the config names (``document_features``), or None (the
    defaults of the learners that need them)."""
    node = config.cfg.get("document_features")
    return config.make(node) if node else None
