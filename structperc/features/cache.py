"""An on-disk cache of extracted features, keyed by everything that determines them.

The key hashes the feature settings, the identity of the input files (name, size, sha256) and the
cache format version, so a second run on the same data and settings skips extraction, and any
change rebuilds it.  Entries are safetensors + JSON, written atomically.  ``extract_features``
fits a ``LocalFeatures`` on the training split and transforms every split through the cache.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from structperc.data.document import Document
from structperc.data.document_store import StoredDocuments
from structperc.features.chunked_extraction import extract_chunked
from structperc.features.extract import FeatureMatrix
from structperc.features.pipeline import LocalFeatures
from structperc.features.store import open_matrix
from structperc.features.word_classes import word_class_cache_key
from structperc.io import (
    atomic_save_tensors,
    atomic_write_json,
    file_digest,
    load_tensors,
    read_json,
)

FORMAT_VERSION = 1

log = logging.getLogger(__name__)


def file_identity(path: str | Path) -> list:
    """[file name, bytes, sha256] of an input file: its content, not where it lies or when it
    was copied, so a data folder that is moved, mounted elsewhere or copied afresh (new
    modification times) keeps its caches, and any edit rebuilds them."""
    p = Path(path).resolve()
    st = p.stat()
    return [p.name, st.st_size, _sha256(str(p), st.st_size, st.st_mtime_ns)]


@functools.lru_cache(maxsize=256)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of a file, hashed once per process while its size and mtime stay."""
    return file_digest(path)["sha256"]


def cache_key(parts: dict) -> str:
    blob = json.dumps({"v": FORMAT_VERSION, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def cached_features(
    cache_dir: str | Path | None,
    key_parts: dict,
    build: Callable[[], tuple[dict, dict[str, torch.Tensor], dict[str, FeatureMatrix]]],
) -> tuple[dict, dict[str, torch.Tensor], dict[str, FeatureMatrix], bool]:
    """(meta, vocabulary tensors, matrices per split, hit) from the cache or from ``build()``."""
    if cache_dir is None:
        return (*build(), False)
    entry = Path(cache_dir) / cache_key(key_parts)
    if (entry / "meta.json").is_file() and (entry / "features.safetensors").is_file():
        meta = read_json(entry / "meta.json")
        tensors = load_tensors(entry / "features.safetensors")
        vocab = {k[6:]: v for k, v in tensors.items() if k.startswith("vocab.")}
        splits = {
            s: FeatureMatrix(
                tensors[f"{s}.ids"], tensors[f"{s}.offsets"], tensors[f"{s}.doc_offsets"]
            )
            for s in meta["splits"]
        }
        return meta["features"], vocab, splits, True
    meta, vocab, splits = build()
    tensors = {f"vocab.{k}": v for k, v in vocab.items()}
    for s, fm in splits.items():
        tensors.update({f"{s}.{k}": v for k, v in fm.tensors().items()})
    atomic_save_tensors(entry / "features.safetensors", tensors)
    atomic_write_json(
        entry / "meta.json", {"features": meta, "splits": list(splits), "key": key_parts}
    )
    return meta, vocab, splits, False


def feature_cache_key(features_cfg: dict, data_files: list[Path], max_docs: int | None) -> dict:
    """The cache key of a run's features: their settings, the files read, the document cut.

    ``word_classes`` (``features/word_classes.py``) enters as its settings and the keys of its
    class files (which hash the unlabeled text); left out when None, so runs without word
    classes keep the key they had before the setting existed."""
    features_cfg = dict(features_cfg)
    if "word_classes" in features_cfg:
        wc = features_cfg.pop("word_classes")
        if wc is not None:
            features_cfg["word_classes"] = word_class_cache_key(wc)
    return {
        "features": features_cfg,
        "files": [file_identity(p) for p in data_files],
        "max_docs": max_docs,
    }


def extract_features(
    features: LocalFeatures,
    corpus: dict[str, list[Document]],
    cache_dir: str | Path | None,
    key: dict,
) -> tuple[LocalFeatures, dict[str, FeatureMatrix], float, bool]:
    """Fit the vocabulary on ``corpus["train"]`` and transform every split, through the cache.

    Returns (fitted features, matrix per split, seconds, cache hit).  The key is completed with
    the number of documents and tokens of every split, so a corpus cut after reading
    (``data.train_docs``) never meets the matrices of another cut; a hit whose matrices do not
    fit the corpus is an error naming the cache folder.
    """
    t0 = time.perf_counter()
    if any(isinstance(docs, StoredDocuments) for docs in corpus.values()):
        return extract_mapped(features, corpus, cache_dir, key)
    shape = {s: [len(docs), sum(len(d.tokens) for d in docs)] for s, docs in corpus.items()}
    key = {**key, "documents": shape}

    def build():
        log.info("extracting features (%d training documents)", len(corpus["train"]))
        features.fit(corpus["train"])
        mats = {s: features.transform(docs, training=(s == "train")) for s, docs in corpus.items()}
        meta, tensors = features.state()
        return meta, tensors, mats

    meta, tensors, mats, hit = cached_features(cache_dir, key, build)
    for split, (n_docs, n_tokens) in shape.items():
        got = (mats[split].num_docs, len(mats[split].offsets) - 1)
        if got != (n_docs, n_tokens):
            raise ValueError(
                f"feature cache {Path(cache_dir) / cache_key(key)}: split {split!r} has "
                f"{got[0]} documents and {got[1]} tokens, the corpus {n_docs} and {n_tokens}; "
                "delete that folder"
            )
    if hit:
        cached = LocalFeatures.from_state(meta, tensors)
        # the settings outside the key are the caller's, not those of the run that built the
        # entry: edges (the weight tables'), tags and tagger (the key holds the tagger's files)
        cached.edges, cached.tags, cached.tagger = features.edges, features.tags, features.tagger
        features = cached
        log.info("features loaded from the cache (%d features)", features.num_features)
    groups = features.lookup_groups()
    for matrix in mats.values():
        matrix.groups = groups
    return features, mats, time.perf_counter() - t0, hit


def extract_mapped(
    features: LocalFeatures,
    corpus: dict[str, Sequence[Document]],
    cache_dir: str | Path | None,
    key: dict,
) -> tuple[LocalFeatures, dict[str, FeatureMatrix], float, bool]:
    """``extract_features`` of a corpus in document stores: ``chunked_extraction`` into mapped
    matrices (``store.py``), kept in the cache entry of the key (a temporary folder without a
    cache), whose ``vocabulary.safetensors`` and ``meta.json`` are written last."""
    t0 = time.perf_counter()
    shape = {s: [len(docs), stored_tokens(docs)] for s, docs in corpus.items()}
    key = {**key, "documents": shape, "matrices": "mapped"}
    if cache_dir is None:
        entry = Path(tempfile.mkdtemp(prefix="features-"))
    else:
        entry = Path(cache_dir) / cache_key(key)
    meta_path, vocab_path = entry / "meta.json", entry / "vocabulary.safetensors"
    hit = meta_path.is_file() and vocab_path.is_file()
    if hit:
        meta = read_json(meta_path)
        cached = LocalFeatures.from_state(meta["features"], load_tensors(vocab_path))
        cached.edges, cached.tags, cached.tagger = features.edges, features.tags, features.tagger
        features = cached
        mats = {s: open_matrix(entry, s) for s in meta["splits"]}
        log.info("features mapped from the cache (%d features)", features.num_features)
    else:
        log.info("extracting features run by run into %s", entry)
        mats = extract_chunked(features, corpus, entry)
        meta, tensors = features.state()
        atomic_save_tensors(vocab_path, tensors)
        atomic_write_json(meta_path, {"features": meta, "splits": list(mats), "key": key})
    for split, (n_docs, n_tokens) in shape.items():
        if (mats[split].num_docs, mats[split].num_tokens) != (n_docs, n_tokens):
            raise ValueError(f"feature cache {entry}: split {split!r} does not fit: delete it")
    return features, mats, time.perf_counter() - t0, hit


def stored_tokens(docs: Sequence[Document]) -> int:
    if isinstance(docs, StoredDocuments):
        return docs.num_tokens
    return sum(len(d) for d in docs)
