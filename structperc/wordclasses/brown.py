"""Brown clusters: a binary merge tree over the vocabulary, each word's path in it a bit string.

Brown et al. (1992, "Class-based n-gram models of natural language") choose a hard class c(w) for
every word to maximise the likelihood of a class bigram model, which comes to maximising the
average mutual information of adjacent classes,

    AMI = Σ_{c, c'} p(c, c') log [ p(c, c') / (p(c) p(c')) ],

by greedy agglomeration.  Liang (2005, "Semi-supervised learning for natural language", MIT
M.Eng. thesis) keeps only m active clusters: the words enter in order of frequency, each as a new
cluster, and whenever there are m + 1 the best pair is merged; at the end the m clusters are
merged into one tree.  A word's path (0 left, 1 right, from the root to its cluster) is its class
at every granularity, and the prefixes of lengths 4, 6, 10 and 20 are the usual features (Miller
et al. 2004; Turian et al. 2010).  The words of one of the m clusters share one path.

The merges run in ``brown_merges.py`` (numba, O(V m²) time, O(m²) memory; Liang's incremental
merge losses).  No package on the index does this at the usual scale (m = 1000 over a 40k
vocabulary) on a small machine: ``brown-clustering`` 0.1.6 spends O(n) Python work per word and
had done 9,300 of 17,000 words after ~3 min at m = 100, at a falling rate
(experiments/wordclasses/README.md).  Bigrams are counted between adjacent tokens of a sentence
whose words are both in the vocabulary (seen ``min_count`` times or more); the order of entry is
by count, ties by spelling, so the paths are a function of the text and the settings alone.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Sequence

import numpy as np

from structperc.progress import bar

log = logging.getLogger(__name__)

CHUNK = 256  # words entered per compiled call (the progress bar's step)
REPORT_SECONDS = 60.0  # how often a log line says how far it is (for logs without a bar)


def vocabulary(sentences: Sequence[Sequence[str]], min_count: int) -> tuple[list[str], np.ndarray]:
    """The words seen ``min_count`` times or more, most frequent first (ties: spelling), and their
    counts (V,)."""
    counts = Counter(w for sentence in sentences for w in sentence)
    words = sorted((w for w, n in counts.items() if n >= min_count), key=lambda w: (-counts[w], w))
    return words, np.array([counts[w] for w in words], dtype=np.float64)


Table = tuple[np.ndarray, np.ndarray, np.ndarray]  # CSR: ptr (V+1,), word (E,), count (E,)


def bigram_tables(sentences: Sequence[Sequence[str]], words: Sequence[str]) -> tuple[Table, Table]:
    """The bigram counts of adjacent vocabulary words as two CSR tables over word ranks: ``right``
    lists the words that follow each word, ``left`` those that precede it."""
    rank = {w: i for i, w in enumerate(words)}
    size = len(words)
    ids = np.fromiter(
        (rank.get(w, -1) for sentence in sentences for w in [*sentence, None]),
        dtype=np.int64,
    )  # a None (-1) after each sentence: no bigram across sentences
    first, second = ids[:-1], ids[1:]
    keep = (first >= 0) & (second >= 0)
    codes, counts = np.unique(first[keep] * size + second[keep], return_counts=True)
    left_word, right_word = codes // size, codes % size

    def csr(rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> Table:
        order = np.lexsort((cols, rows))
        ptr = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=size), out=ptr[1:])
        return ptr, cols[order].astype(np.int64), values[order].astype(np.float64)

    return csr(left_word, right_word, counts), csr(right_word, left_word, counts)


def tree_paths(merges: np.ndarray, leaves: Sequence[int]) -> dict[int, str]:
    """{slot: path} of the tree the merges build over the ``leaves`` slots: merge (a, b) makes a
    node whose left child (bit 0) is a's subtree and right child (bit 1) b's, and the node takes
    a's slot."""
    node_of_slot = {s: s for s in leaves}
    children: dict[int, tuple[int, int]] = {}
    next_node = max(leaves) + 1
    for a, b in merges.tolist():
        children[next_node] = (node_of_slot[a], node_of_slot.pop(b))
        node_of_slot[a] = next_node
        next_node += 1
    (root,) = node_of_slot.values()
    paths, stack = {}, [(root, "")]
    while stack:
        node, path = stack.pop()
        if node in children:
            left, right = children[node]
            stack += [(left, path + "0"), (right, path + "1")]
        else:
            paths[node] = path
    return paths


def brown_paths(
    sentences: Sequence[Sequence[str]],
    *,
    clusters: int,
    min_count: int,
    progress: bool = False,
) -> dict[str, str]:
    """{word: bit-string path} of Brown clustering with ``clusters`` active clusters over the
    words seen at least ``min_count`` times in ``sentences``."""
    try:
        from structperc.wordclasses.brown_merges import merge_all, run_words
    except ImportError as e:
        raise ImportError("Brown clusters need numba: pip install 'structperc[wordclasses]'") from e
    if clusters < 2:
        raise ValueError(f"features.word_classes.brown must be 0 or at least 2, got {clusters}")
    words, counts = vocabulary(sentences, min_count)
    if len(words) <= clusters:
        raise ValueError(
            f"features.word_classes.brown={clusters} clusters, but only "
            f"{len(words)} words are seen {min_count} times or more"
        )
    right, left = bigram_tables(sentences, words)
    slots = clusters + 1
    word_slot = np.full(len(words), -1, dtype=np.int64)
    n2 = np.zeros((slots, slots))  # bigram counts between active clusters
    q = np.zeros((slots, slots))  # f(c, d) of brown_merges
    log_pair = np.zeros((slots, slots))  # log(n(c) + n(d))
    cnt, logc = np.zeros(slots), np.zeros(slots)  # unigram counts of the clusters, their logs
    loss = np.zeros((slots, slots))  # L(c, d), c < d
    active = np.zeros(slots, dtype=np.bool_)
    state = (word_slot, n2, q, log_pair, cnt, logc, loss, active)
    start = reported = time.perf_counter()
    with bar(
        None, total=len(words) + clusters - 1, enabled=progress, desc="brown", unit="word"
    ) as pb:
        for first in range(0, len(words), CHUNK):
            stop = min(first + CHUNK, len(words))
            run_words(counts, right, left, clusters, first, stop, state)
            pb.update(stop - first)
            if time.perf_counter() - reported > REPORT_SECONDS:
                reported = time.perf_counter()
                log.info("brown: %d of %d words in %.0f s", stop, len(words), reported - start)
        leaf_of_word = word_slot.copy()  # the m clusters of the windowed phase
        leaves = np.flatnonzero(active).tolist()
        merges = np.zeros((clusters - 1, 2), dtype=np.int64)
        merge_all(state, merges)
        pb.update(clusters - 1)
    paths = tree_paths(merges, leaves)
    return {w: paths[s] for w, s in zip(words, leaf_of_word.tolist(), strict=True)}
