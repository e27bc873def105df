"""Word classes built once and kept: settings, cache keys, and the build on a cache miss.

Each family is a small derived file under the cache folder (default ``.cache/wordclasses``),
named by a hash of everything that decides it — the settings, the input files' names, sizes and
sha256s, the tokeniser's version and the libraries' versions — and written atomically:

    vectors-<key>.safetensors + .json   word2vec vectors and their words
    kmeans<k>-<key>.json                the k-means class of every word (one file per k)
    brown<m>-<key>.json                 the Brown path of every word

A second run with the same settings reads them (well under a second); a run that changes only
the cluster counts reuses the vectors.  ``load_word_classes`` is what the feature pipeline
calls; ``python -m structperc.wordclasses`` builds the same files from the command line.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

import numpy as np
import torch

from structperc.io import atomic_save_tensors, atomic_write_json, file_digest, load_tensors
from structperc.io import read_json as _read_json
from structperc.wordclasses.corpus import ALL, corpus_files, read_sentences, unlabeled_dir
from structperc.wordclasses.table import BROWN, WordClasses, attribute_names

log = logging.getLogger(__name__)

TOKENISER_VERSION = 1  # bump when tokens.conll_tokens changes what it returns
BROWN_VERSION = "brown_merges 1"  # bump when brown.py / brown_merges.py change their paths
DEFAULT_CACHE_DIR = ".cache/wordclasses"
WORD2VEC = ("min_count", "architecture", "vector_size", "window", "epochs", "negative", "seed")


@dataclasses.dataclass(frozen=True)
class WordClassSettings:
    """The settings of ``features.word_classes`` (conf/features/kazama_wordclasses.yaml).

    Args:
        dir: the folder of unlabeled text; relative: taken from the data folder.
        corpora: ``all`` or a list of file stems in ``dir`` (``[reuters21578]``).
        min_count: the vocabulary cut-off of word2vec: words seen fewer times get no class.
        architecture: ``skipgram`` or ``cbow`` (``vectors.py``).
        vector_size, window, epochs, negative: word2vec's dimension, context window (words on
            each side), passes over the text and noise words per example.
        kmeans: the cluster counts, one attribute ``wc<k>`` each; empty: no vectors.
        brown: the number of Brown clusters (0: none); attributes ``bc<p>`` per prefix length.
        brown_min_count: the vocabulary cut-off of Brown clustering (its time grows with the
            vocabulary: O(V m²)).
        brown_prefixes: the path prefix lengths p of the ``bc<p>`` attributes.
        seed: word2vec's and k-means's random seed.
        cache_dir: where the built classes are kept (not part of any key).
    """

    dir: str = "unlabeled"
    corpora: str | tuple[str, ...] = ALL
    min_count: int = 5
    architecture: str = "skipgram"
    vector_size: int = 100
    window: int = 5
    epochs: int = 5
    negative: int = 5
    kmeans: tuple[int, ...] = (100, 500, 1000)
    brown: int = 0
    brown_min_count: int = 5
    brown_prefixes: tuple[int, ...] = (4, 6, 10, 20)
    seed: int = 0
    cache_dir: str = DEFAULT_CACHE_DIR

    @classmethod
    def from_config(cls, cfg: Mapping) -> WordClassSettings:
        """From a dict (Hydra's ``features.word_classes``): an unknown key is an error naming it;
        lists become tuples."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(cfg) - known)
        if unknown:
            raise ValueError(
                f"features.word_classes: unknown setting(s) {unknown}; known: {sorted(known)}"
            )
        values = {
            k: tuple(v) if isinstance(v, Sequence) and not isinstance(v, str) else v
            for k, v in cfg.items()
        }
        if isinstance(values.get("kmeans"), int):
            values["kmeans"] = (values["kmeans"],)
        settings = cls(**values)
        if not settings.kmeans and not settings.brown:
            raise ValueError("features.word_classes: no family (kmeans is empty and brown is 0)")
        return settings

    @property
    def attributes(self) -> list[str]:
        return attribute_names(self.kmeans, bool(self.brown), self.brown_prefixes)

    @property
    def word2vec(self) -> dict:
        """word2vec's settings: ``vectors.train_vectors``'s keywords, and what the vectors'
        cache key holds of the settings."""
        return {f: getattr(self, f) for f in WORD2VEC}


@functools.lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    return file_digest(path)["sha256"]


def _identity(path: Path) -> list:
    """[name, bytes, sha256] of an input file (its content, not where it lies)."""
    st = path.stat()
    return [path.name, st.st_size, _sha256(str(path.resolve()), st.st_size, st.st_mtime_ns)]


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _key(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:20]


def identities(settings: WordClassSettings) -> dict:
    """What decides each family (its cache key's parts); also the feature cache key's part."""
    files = corpus_files(unlabeled_dir(settings.dir), settings.corpora)
    text = {"files": [_identity(p) for p in files], "tokeniser": TOKENISER_VERSION}
    out: dict[str, dict] = {}
    if settings.kmeans:
        vec = {
            **text,
            "word2vec": settings.word2vec,
            "gensim": _version("gensim"),
        }
        out["vectors"] = vec
        for k in settings.kmeans:
            out[f"kmeans{k}"] = {
                "vectors": _key(vec),
                "k": k,
                "seed": settings.seed,
                "scikit-learn": _version("scikit-learn"),
            }
    if settings.brown:
        out[f"brown{settings.brown}"] = {
            **text,
            "brown": settings.brown,
            "min_count": settings.brown_min_count,
            "merges": BROWN_VERSION,
        }
    return out


def identity(settings: WordClassSettings) -> dict:
    """{family file: its key} of ``settings``: what a model records, and what the feature cache
    key holds for them (so that new unlabeled text or a new library version rebuilds both)."""
    return {name: _key(p) for name, p in identities(settings).items()}


class _Text:
    """The tokenised unlabeled text, read once and only when some family must be built."""

    def __init__(self, settings: WordClassSettings, progress: bool):
        self.settings, self.progress = settings, progress

    @functools.cached_property
    def sentences(self) -> list[list[str]]:
        t0 = time.perf_counter()
        files = corpus_files(unlabeled_dir(self.settings.dir), self.settings.corpora)
        out = read_sentences(files, progress=self.progress)
        log.info(
            "word classes: read %d tokens in %d lines of %s in %.1f s",
            sum(map(len, out)),
            len(out),
            ", ".join(p.name for p in files),
            time.perf_counter() - t0,
        )
        return out


def _vectors(
    settings: WordClassSettings, parts: dict, cache: Path, text: _Text, progress: bool
) -> tuple[list[str], np.ndarray]:
    from structperc.wordclasses.vectors import train_vectors

    base = cache / f"vectors-{_key(parts)}"
    meta_path, tensor_path = base.with_suffix(".json"), base.with_suffix(".safetensors")
    if meta_path.is_file() and tensor_path.is_file():
        words = _read_json(meta_path)["words"]
        return words, load_tensors(tensor_path)["vectors"].numpy()
    t0 = time.perf_counter()
    words, vectors = train_vectors(text.sentences, **settings.word2vec, progress=progress)
    seconds = time.perf_counter() - t0
    log.info("word classes: word2vec on %d words in %.0f s", len(words), seconds)
    atomic_save_tensors(tensor_path, {"vectors": torch.from_numpy(vectors)})
    atomic_write_json(meta_path, {"key": parts, "seconds": round(seconds, 1), "words": words})
    return words, vectors


def _family_file(path: Path, parts: dict, build) -> dict[str, str]:
    """{word: class} from ``path``, or built by ``build()`` (timed) and written there."""
    if path.is_file():
        got = _read_json(path)
        return dict(zip(got["words"], got["values"], strict=True))
    t0 = time.perf_counter()
    table = build()
    seconds = time.perf_counter() - t0
    log.info("word classes: %s for %d words in %.0f s", path.name, len(table), seconds)
    atomic_write_json(
        path,
        {
            "key": parts,
            "seconds": round(seconds, 1),
            "words": list(table),
            "values": list(table.values()),
        },
    )
    return table


def load_word_classes(settings: WordClassSettings, progress: bool = False) -> WordClasses:
    """The word classes of ``settings``: from the cache folder, or built (and written there)."""
    from structperc.wordclasses.vectors import kmeans_classes

    cache = Path(settings.cache_dir)
    parts = identities(settings)
    text = _Text(settings, progress)
    families: dict[str, dict[str, str]] = {}
    vectors = functools.cache(lambda: _vectors(settings, parts["vectors"], cache, text, progress))
    for k in settings.kmeans:
        name = f"kmeans{k}"
        path = cache / f"{name}-{_key(parts[name])}.json"
        if not path.is_file():
            vectors()  # read or trained before the clustering's clock starts

        def build(k=k):
            words, matrix = vectors()
            labels = kmeans_classes(matrix, k, settings.seed)
            return {w: str(c) for w, c in zip(words, labels, strict=True)}

        families[f"wc{k}"] = _family_file(path, parts[name], build)
    if settings.brown:
        from structperc.wordclasses.brown import brown_paths

        name = f"brown{settings.brown}"
        families[BROWN] = _family_file(
            cache / f"{name}-{_key(parts[name])}.json",
            parts[name],
            lambda: brown_paths(
                text.sentences,
                clusters=settings.brown,
                min_count=settings.brown_min_count,
                progress=progress,
            ),
        )
    keys = {name: _key(p) for name, p in parts.items()}
    return WordClasses(families, settings.attributes, keys)
