"""Word vectors (word2vec) and their k-means clusters: one word class per word and cluster count.

Word2vec (Mikolov et al. 2013, "Efficient estimation of word representations in vector space";
"Distributed representations of words and phrases and their compositionality") learns a vector
v_w per word from its contexts: skip-gram maximises, over every position t and offset
0 < |j| <= window,

    log σ(v'_{w_{t+j}} · v_{w_t}) + Σ_{i=1..k} E_{w_i ~ P_n} log σ(-v'_{w_i} · v_{w_t})

(negative sampling with k noise words from the unigram distribution to the 3/4 power); CBOW
predicts w_t from the mean of its context vectors instead (~4x faster, weaker on rare words).

Guo et al. (2014, "Revisiting embedding features for simple semi-supervised learning") found
embeddings most useful to a linear NER model as *discrete* features: the vectors, normalised to
unit length, are clustered by k-means at several granularities (they used 500 to 3000), and the
cluster id of a word at each granularity is a token attribute.  k-means (Lloyd's algorithm,
k-means++ seeding) minimises Σ_w ||u_w − μ_{c(w)}||² over assignments c and centroids μ.

The library is gensim (Řehůřek & Sojka 2010): its compiled word2vec trains ~0.5M words a second
(CBOW) or ~0.1M (skip-gram) on one core of this machine.  It is deterministic with one worker
thread, a fixed seed, and a hash of the initial vectors that does not depend on Python's salted
``hash`` (``stable_hash``: no PYTHONHASHSEED needed).  k-means is scikit-learn's, with
``random_state`` and one BLAS/OpenMP thread, which makes it deterministic too.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Sequence

import numpy as np

from structperc.progress import bar

log = logging.getLogger(__name__)

ARCHITECTURES = {"skipgram": 1, "cbow": 0}


def stable_hash(text: str) -> int:
    """A hash of a string that is the same in every process (gensim seeds each word's initial
    vector with ``hashfxn(str(seed) + word)``; Python's ``hash`` of a str is salted)."""
    return zlib.crc32(text.encode("utf-8"))


def _gensim():
    try:
        from gensim.models import Word2Vec
        from gensim.models.callbacks import CallbackAny2Vec
    except ImportError as e:
        raise ImportError(
            "word classes from vectors need gensim and scikit-learn: "
            "pip install 'structperc[wordclasses]'"
        ) from e
    return Word2Vec, CallbackAny2Vec


def train_vectors(
    sentences: Sequence[Sequence[str]],
    *,
    min_count: int,
    vector_size: int,
    window: int,
    epochs: int,
    architecture: str,
    negative: int,
    seed: int,
    progress: bool = False,
) -> tuple[list[str], np.ndarray]:
    """(words, vectors [V, vector_size] float32) of word2vec on ``sentences``; the words are
    those seen at least ``min_count`` times, most frequent first (ties in first-seen order)."""
    if architecture not in ARCHITECTURES:
        raise ValueError(
            f"features.word_classes.architecture must be one of {list(ARCHITECTURES)}, "
            f"got {architecture!r}"
        )
    Word2Vec, CallbackAny2Vec = _gensim()

    class Epochs(CallbackAny2Vec):
        def __init__(self):
            self.bar = bar(range(epochs), enabled=progress, desc="word2vec", unit="epoch")
            self.t0 = time.perf_counter()

        def on_epoch_end(self, model):
            self.bar.update(1)
            log.info("word2vec: epoch done at %.0f s", time.perf_counter() - self.t0)

        def on_train_end(self, model):
            self.bar.close()

    model = Word2Vec(
        sentences,
        vector_size=vector_size,
        window=window,
        min_count=min_count,
        sg=ARCHITECTURES[architecture],
        negative=negative,
        epochs=epochs,
        seed=seed,
        workers=1,  # more threads make the result depend on their scheduling
        hashfxn=stable_hash,
        callbacks=[Epochs()],
    )
    kv = model.wv
    return list(kv.index_to_key), np.asarray(kv.vectors, dtype=np.float32)


def kmeans_classes(vectors: np.ndarray, k: int, seed: int) -> np.ndarray:
    """The k-means cluster [V] (ids 0..k-1) of each unit-normalised row of ``vectors``."""
    try:
        from sklearn.cluster import KMeans
        from threadpoolctl import threadpool_limits
    except ImportError as e:
        raise ImportError(
            "k-means word classes need scikit-learn: pip install 'structperc[wordclasses]'"
        ) from e
    if not 1 <= k <= len(vectors):
        raise ValueError(
            f"features.word_classes.kmeans: {k} clusters of {len(vectors)} words is impossible"
        )
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.maximum(norms, 1e-12)
    with threadpool_limits(1):  # one thread: the same sums in the same order, every run
        km = KMeans(n_clusters=k, n_init=1, max_iter=100, random_state=seed).fit(unit)
    return km.labels_.astype(np.int32)
