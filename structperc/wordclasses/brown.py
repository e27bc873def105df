"""Brown clusters: a binary merge tree over the vocabulary, each word's path in it a bit string.

Brown et al. (1992, "Class-based n-gram models of natural language") choose a hard class c(w) for
every word to maximise the likelihood of a class bigram model, which comes to maximising the
average mutual information of adjacent classes,

    AMI = Σ_{c, c'} p(c, c') log [ p(c, c') / (p(c) p(c')) ],

by greedy agglomeration: start from one class per word and repeatedly merge the pair that loses
the least AMI.  Liang (2005, "Semi-supervised learning for natural language", MIT M.Eng. thesis)
keeps only m active clusters: the words enter in order of frequency, each as a new cluster, and
whenever there are m + 1 the best pair is merged; at the end the m clusters are merged into one
tree.  A word's path (0 left, 1 right, from the root to its cluster) is its class at every
granularity, and the prefixes of lengths 4, 6, 10 and 20 are the usual features (Miller et al.
2004; Turian et al. 2010).  The library also prepends a bit to a cluster's words at each merge of
the windowed phase, which makes paths of hundreds of bits whose tails only record when a word
joined its cluster; those bits are cut, leaving Liang's paths: the words of one of the m
clusters share one path.

The library is ``brown-clustering`` (PyPI; numba-compiled merges): each new word costs O(m²) for
the merge table and O(n) Python work for its bigram counts, so the vocabulary is cut at
``brown_min_count`` (see experiments/wordclasses/README.md for its times on this machine).  The
merge order is fixed by the counts (ties: the word's spelling), so the result is deterministic.
Its smoothing adds ``alpha`` to every cell of the V × V bigram table; ``alpha`` is kept small
(the default 1e-4 adds V² · 1e-4 counts, ~0.2M for V = 40k, against ~6M observed bigrams).
"""

from __future__ import annotations

from collections.abc import Sequence

from structperc.progress import bar


def brown_paths(
    sentences: Sequence[Sequence[str]],
    *,
    clusters: int,
    min_count: int,
    alpha: float,
    progress: bool = False,
) -> dict[str, str]:
    """{word: bit-string path} of Brown clustering with ``clusters`` active clusters over the
    words seen at least ``min_count`` times in ``sentences``."""
    try:
        from brown_clustering import BigramCorpus, BrownClustering
    except ImportError as e:
        raise ImportError(
            "Brown clusters need brown-clustering: pip install 'structperc[brown]'"
        ) from e
    if clusters < 2:
        raise ValueError(f"features.word_classes.brown must be 0 or at least 2, got {clusters}")
    corpus = BigramCorpus(sentences, alpha=alpha, min_count=min_count)
    if len(corpus.vocabulary) <= clusters:
        raise ValueError(
            f"features.word_classes.brown={clusters} clusters, but only "
            f"{len(corpus.vocabulary)} words are seen {min_count} times or more"
        )
    model = BrownClustering(corpus, clusters)
    # BrownClustering.train, with our progress bar and the codes kept between its two phases
    for word, _ in bar(corpus.ranks(), enabled=progress, desc="brown", unit="word"):
        model.helper.append_cluster([word])
        if model.helper.m > model.m:
            model.merge_best()
    windowed = model.codes()
    for _ in range(model.helper.m - 1):
        model.merge_best()
    full = model.codes()
    # each merge prepends a bit, so a code is the tree's path + the windowed phase's bits
    return {w: code[: len(code) - len(windowed.get(w, ""))] for w, code in full.items()}
