"""Brown clustering (structperc/wordclasses/brown.py, brown_merges.py) against a slow reference.

The reference runs the same greedy algorithm (Liang 2005: words enter by frequency into the
lowest free slot, the best of the m + 1 clusters' pairs is merged, then the m clusters are merged
into one tree) but scores every candidate merge by recomputing the whole class-bigram AMI before
and after it, with none of the incremental losses of the compiled merges.
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

pytest.importorskip("numba", reason="Brown clusters are compiled with numba")

from structperc.wordclasses.brown import bigram_tables, brown_paths, tree_paths, vocabulary


def _ami(clusters: dict[int, set[int]], bigrams: dict, counts: np.ndarray) -> float:
    """Σ_{c,d} n(c,d) log[n(c,d) / (n(c) n(d))] over the clusters (AMI · N up to a constant)."""
    of = {w: c for c, ws in clusters.items() for w in ws}
    n2: dict[tuple[int, int], float] = {}
    for (w, v), n in bigrams.items():
        if w in of and v in of:
            n2[of[w], of[v]] = n2.get((of[w], of[v]), 0.0) + n
    size = {c: sum(counts[w] for w in ws) for c, ws in clusters.items()}
    return sum(n * math.log(n / (size[c] * size[d])) for (c, d), n in n2.items())


def _best_merge(clusters, bigrams, counts) -> tuple[int, int]:
    before = _ami(clusters, bigrams, counts)
    best, pair = math.inf, None
    for a, b in itertools.combinations(sorted(clusters), 2):
        merged = {c: ws for c, ws in clusters.items() if c != b}
        merged[a] = clusters[a] | clusters[b]
        loss = before - _ami(merged, bigrams, counts)
        if loss < best:
            best, pair = loss, (a, b)
    return pair


def reference_paths(sentences, clusters: int, min_count: int) -> dict[str, str]:
    words, counts = vocabulary(sentences, min_count)
    rank = {w: i for i, w in enumerate(words)}
    bigrams: dict[tuple[int, int], float] = {}
    for s in sentences:
        for w, v in itertools.pairwise(s):
            if w in rank and v in rank:
                bigrams[rank[w], rank[v]] = bigrams.get((rank[w], rank[v]), 0.0) + 1
    active: dict[int, set[int]] = {}
    for word in range(len(words)):
        slot = min(set(range(clusters + 1)) - set(active))
        active[slot] = {word}
        if len(active) > clusters:
            a, b = _best_merge(active, bigrams, counts)
            active[a] |= active.pop(b)
    leaf = {w: c for c, ws in active.items() for w in ws}
    leaves = sorted(active)
    merges = []
    while len(active) > 1:
        a, b = _best_merge(active, bigrams, counts)
        merges.append((a, b))
        active[a] |= active.pop(b)
    paths = tree_paths(np.array(merges, dtype=np.int64).reshape(-1, 2), leaves)
    return {words[w]: paths[c] for w, c in leaf.items()}


def _random_text(seed: int, vocab: int = 14, sentences: int = 60) -> list[list[str]]:
    rng = random.Random(seed)
    # a class structure, so that the merges are not near ties
    kinds = [[f"a{i}" for i in range(vocab // 3)], [f"b{i}" for i in range(vocab // 3)],
             [f"c{i}" for i in range(vocab - 2 * (vocab // 3))]]  # fmt: skip
    out = []
    for _ in range(sentences):
        k = rng.randrange(3)
        sentence = []
        for _ in range(rng.randint(2, 9)):
            sentence.append(
                rng.choice(kinds[k]) if rng.random() < 0.8 else rng.choice(rng.choice(kinds))
            )
            k = (k + 1) % 3
        out.append(sentence)
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("clusters", [2, 3, 5])
def test_compiled_merges_equal_the_slow_reference(seed, clusters):
    text = _random_text(seed)
    assert brown_paths(text, clusters=clusters, min_count=1) == reference_paths(text, clusters, 1)


def test_paths_are_a_tree_of_the_m_clusters():
    text = _random_text(7, vocab=30, sentences=200)
    paths = brown_paths(text, clusters=6, min_count=2)
    leaves = set(paths.values())
    assert len(leaves) == 6
    assert not any(a != b and b.startswith(a) for a in leaves for b in leaves)  # prefix-free
    # a full binary tree: the Kraft sum of its leaves is 1
    assert sum(2.0 ** -len(p) for p in leaves) == 1.0
    words, _ = vocabulary(text, 2)
    assert set(paths) == set(words)


def test_bigram_tables_count_within_sentences_only():
    text = [["x", "y", "x"], ["y", "z"], ["x", "rare", "y"]]
    words, counts = vocabulary(text, 2)
    assert words == ["x", "y"] and counts.tolist() == [3, 3]
    (r_ptr, r_word, r_count), (l_ptr, l_word, _) = bigram_tables(text, words)
    right = {
        (w, int(r_word[k])): r_count[k] for w in range(2) for k in range(r_ptr[w], r_ptr[w + 1])
    }
    assert right == {(0, 1): 1.0, (1, 0): 1.0}  # x y, y x; not y|y across sentences, not x rare
    assert l_ptr.tolist() == [0, 1, 2] and l_word.tolist() == [1, 0]


def test_too_few_words_is_a_clear_error():
    with pytest.raises(ValueError, match="only 2 words are seen 2 times"):
        brown_paths([["x", "y", "x", "y"]], clusters=3, min_count=2)
