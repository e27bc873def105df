"""The scikit-learn face's online training against references written out in full.

The averaged perceptron of ``CRF(algorithm="ap")`` on random sequences equals Collins' (2002)
rule run here one sentence at a time in float64 — Phi(x, y*) - Phi(x, y') added whole, the best
path by the textbook Viterbi (``oracles/chain.viterbi_loop``, ties to the smallest label),
the average taken over every instance — in the estimator's own epoch orders.  With +-1 updates
the weights are integers, so both sides are exact up to the final division of the average.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("sklearn")

from oracles.chain import viterbi_loop  # noqa: E402

from structperc.decode.viterbi import _token_steps, token_path, viterbi_tokens  # noqa: E402
from structperc.learn.fitting import shard_order  # noqa: E402
from structperc.model.updates import label_pairs  # noqa: E402
from structperc.sklearn import CRF  # noqa: E402

LABELS = ["O", "B", "I"]


def random_corpus(n: int, seed: int) -> tuple[list, list]:
    """n sequences of 1..6 items with 2-3 string attributes each from small vocabularies."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        T = int(rng.integers(1, 7))
        X.append(
            [
                {
                    "w": f"w{rng.integers(8)}",
                    "s": f"s{rng.integers(3)}",
                    "up": bool(rng.random() < 0.3),
                }
                for _ in range(T)
            ]
        )
        y.append([LABELS[int(k)] for k in rng.integers(0, 3, size=T)])
    return X, y


def reference_perceptron(X, y, names, labels, epochs, seed) -> tuple[np.ndarray, np.ndarray]:
    """Collins' averaged perceptron over (X, y): node [A, L] and edge [L, L] averages."""
    return continued_perceptron([(X, y, epochs)], names, labels, seed)


def continued_perceptron(phases, names, labels, seed) -> tuple[np.ndarray, np.ndarray]:
    """Collins' averaged perceptron trained in ``phases`` [(X, y, epochs[, "restart"])] one
    after another, the epochs numbered on across them (an epoch's order
    ``shard_order(len(X), ..., epoch)``); a phase decodes among the labels seen up to it
    (``labels``' first ones: the label set grows); the average is over every instance of every
    phase, or, from a phase marked "restart", over its own and later ones, its weights
    starting at the average so far."""
    A, L = len(names), len(labels)
    index = {n: a for a, n in enumerate(names)}
    lid = {label: j for j, label in enumerate(labels)}
    node, edge = np.zeros((A, L)), np.zeros((L, L))
    node_sum, edge_sum, count = np.zeros((A, L)), np.zeros((L, L)), 0
    done, seen_labels = 0, set()  # epochs trained, labels met
    for X, y, epochs, *restart in phases:
        if restart == ["restart"]:
            node, edge = node_sum / count, edge_sum / count
            node_sum, edge_sum, count = np.zeros((A, L)), np.zeros((L, L)), 0
        feats = [
            [
                [
                    index[k + ":" + v if isinstance(v, str) else k]
                    for k, v in item.items()
                    if v is not False
                ]
                for item in xseq
            ]
            for xseq in X
        ]
        gold = [[lid[t] for t in yseq] for yseq in y]
        seen_labels.update(t for yseq in y for t in yseq)
        K = len(seen_labels)  # the labels so far: the first K

        def phi(s: int, path: list[int], feats=feats) -> tuple[np.ndarray, np.ndarray]:
            n, e = np.zeros((A, L)), np.zeros((L, L))
            for t, j in enumerate(path):
                for a in feats[s][t]:
                    n[a, j] += 1
                if t:
                    e[path[t - 1], j] += 1
            return n, e

        for epoch in range(done + 1, done + epochs + 1):
            for s in shard_order(len(X), None, True, seed, epoch, 0):
                T = len(gold[s])
                pot = torch.zeros(T, K, K, dtype=torch.float64)
                for t in range(T):
                    scores = sum((node[a, :K] for a in feats[s][t]), np.zeros(K))
                    trans = torch.from_numpy(edge[:K, :K]) if t else 0
                    pot[t] = torch.from_numpy(scores)[None, :] + trans
                pred, _ = viterbi_loop(pot, T)
                if pred != gold[s]:
                    (gn, ge), (pn, pe) = phi(s, gold[s]), phi(s, pred)
                    node += gn - pn
                    edge += ge - pe
                node_sum += node
                edge_sum += edge
                count += 1
        done += epochs
    return node_sum / count, edge_sum / count


@pytest.mark.parametrize("seed", [0, 1])
def test_averaged_perceptron_equals_collins_rule_sentence_by_sentence(seed):
    X, y = random_corpus(40, seed)
    crf = CRF(algorithm="ap", max_iterations=4, random_state=seed).fit(X, y)
    epochs = len(crf.training_log_.iterations)
    node, edge = reference_perceptron(X, y, crf.attributes_, crf.classes_, epochs, seed)
    assert np.abs(node).max() > 0  # it learned something
    np.testing.assert_allclose(crf.model_.node.numpy(), node, rtol=0, atol=1e-5)
    np.testing.assert_allclose(crf.model_.edge.numpy(), edge, rtol=0, atol=1e-5)


def test_token_steps_read_a_shared_transition_matrix_as_a_whole_one():
    """The recursion over an expanded [L, L] matrix (stride 0: edges=False) and over the same
    matrix copied per token give the same path and score."""
    gen = torch.Generator().manual_seed(3)
    for T in (2, 5, 13):
        node = torch.randn(T, 4, generator=gen)
        shared = torch.randn(4, 4, generator=gen).expand(T, 4, 4)
        path, score = _token_steps(node, shared)
        whole_path, whole_score = _token_steps(node, shared.contiguous())
        assert path.tolist() == whole_path.tolist()
        assert float(score) == float(whole_score)
        pot = shared.contiguous().clone() + node[:, None, :]
        pot[0] = node[0].expand(4, 4)
        assert path.tolist() == viterbi_loop(pot.double(), T)[0]


def test_label_pairs_are_previous_times_labels_plus_current():
    labels = np.array([2, 0, 1, 1])
    assert label_pairs(labels, 3).tolist() == [2, 6, 1, 4]


def test_token_path_is_viterbi_tokens_path():
    """The path-only decode of a training step equals ``viterbi_tokens``'s path, through the
    recursion (short sequences) and the blocked scan (long ones), shared or per-token edges."""
    gen = torch.Generator().manual_seed(4)
    for T in (1, 2, 9, 120):
        node = torch.randint(-2, 3, (T, 5), generator=gen).float()  # integer scores: ties
        for edge in (
            torch.randint(-2, 3, (5, 5), generator=gen).float().expand(T, 5, 5),
            torch.randint(-2, 3, (T, 5, 5), generator=gen).float(),
        ):
            assert token_path(node, edge).tolist() == viterbi_tokens(node, edge)[0].tolist()
