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


def local_features(config):
    """Instantiate the feature pipeline, a relative gazetteer path taken from the data folder;
    returns (features, the settings as a dict)."""
    fcfg = config.plain(config.cfg.features)
    gaz, data_dir = fcfg.get("gazetteer_path"), config.data_dir
    if gaz and fcfg.get("gazetteer") != "none" and not Path(gaz).is_absolute() and data_dir:
        if not Path(gaz).is_file():
            fcfg["gazetteer_path"] = str(data_dir / gaz)
    return config.make(fcfg), fcfg


def extraction_settings(fcfg: dict) -> dict:
    """The feature settings that decide the feature ids (the cache key's): ``edges`` is the
    model's, not the ids', and the tagger's columns enter through its files; an empty
    ``gazetteers`` or ``trigram_attributes`` is left out, so runs keep the key they had before
    those settings existed."""
    out = {k: v for k, v in fcfg.items() if k not in ("edges", "tags", "tagger")}
    for optional in ("gazetteers", "trigram_attributes"):
        if optional in out and not out[optional]:
            del out[optional]
    return out


def tagging_inputs(config) -> tuple[dict, object, dict]:
    """(corpus, local features, their cache key) of a CoNLL-2003 task; with
    ``features.tags=auto`` the corpus's POS and chunk columns are the tagger's."""
    corpus = load_data(config)
    features, fcfg = local_features(config)
    files = data_files(config, corpus)
    if fcfg.get("gazetteer") != "none" and fcfg.get("gazetteer_path"):
        files.append(Path(fcfg["gazetteer_path"]))
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
