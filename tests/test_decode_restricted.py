"""Constrained decoding against brute force over the allowed labelings, for every decoder of the
chain (Viterbi in each of its kernels, the n-best in each algorithm, log Z and the marginals in
each scan), forbidden entity spans (the augmented lattice), and the label-chunk DP."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles.chain import path_score
from oracles.label_chunk import as_lists, enumerate_structures, part_score

from structperc.data.label_chunk import token_codes
from structperc.data.tags import spans as entity_spans
from structperc.decode.constraints import allowed_transitions, constrain
from structperc.decode.forbidden_spans import (
    augment,
    fold_marginals,
    nbest_forbidding,
    viterbi_forbidding,
)
from structperc.decode.label_chunk import decode
from structperc.decode.label_chunk_constraints import constrained_potentials
from structperc.decode.marginals import log_partition, node_marginals
from structperc.decode.nbest import kbest_beam, kbest_dp, nbest, two_best
from structperc.decode.node_offsets import cost_offsets, offset_potentials, restriction
from structperc.decode.sidetracks import kbest_sidetracks
from structperc.decode.viterbi import (
    token_path,
    viterbi,
    viterbi_packed,
    viterbi_steps,
    viterbi_tokens,
)
from structperc.model.batch import packed_order

LABELS = ["O", "B-A", "I-A", "B-B", "I-B"]


@st.composite
def restricted_chains(draw, max_b=3, max_t=4, labels=LABELS):
    """Potentials [B, T, L, L] with integer scores (ties broken the same way everywhere), lengths,
    and an allowed mask [B, T, L] with at least one label per token (maybe several)."""
    L = len(labels)
    B, T = draw(st.integers(1, max_b)), draw(st.integers(1, max_t))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    pot = torch.randn(B, T, L, L, generator=gen, dtype=torch.float64)
    lengths = torch.randint(1, T + 1, (B,), generator=gen)
    lengths[0] = T
    allowed = torch.rand(B, T, L, generator=gen) < draw(st.sampled_from([0.3, 0.6, 1.0]))
    allowed[torch.arange(B), :, torch.randint(0, L, (B,), generator=gen)] = True
    return pot, lengths, allowed


def allowed_paths(pot, length, allowed_b, keep=lambda path: True):
    """Every labeling of one sequence whose labels are allowed (and ``keep``), best first."""
    L = pot.shape[-1]
    out = []
    for path in itertools.product(range(L), repeat=length):
        if all(allowed_b[t, y] for t, y in enumerate(path)) and keep(path):
            out.append((path_score(pot, list(path)), path))
    out.sort(key=lambda sp: -sp[0])
    return out


def restricted(pot, lengths, allowed):
    return offset_potentials(pot, restriction(allowed, pot.dtype))


@settings(max_examples=40, deadline=None)
@given(restricted_chains())
def test_viterbi_kernels_find_the_best_allowed_labeling(problem):
    pot, lengths, allowed = problem
    within = restricted(pot, lengths, allowed)
    for decoder in (viterbi, viterbi_steps):
        paths, scores = decoder(within, lengths)
        for b in range(len(lengths)):
            n = int(lengths[b])
            truth = allowed_paths(pot[b], n, allowed[b])
            assert scores[b].item() == pytest.approx(truth[0][0])
            path = paths[b, :n].tolist()
            assert all(allowed[b, t, y] for t, y in enumerate(path))
            assert path_score(pot[b], path) == pytest.approx(truth[0][0])
    # one sequence from its token scores: the blocked scan and the recursion
    n = int(lengths[0])
    node = pot[0, :n, 0].clone()
    node[0] = pot[0, 0, 0]
    edge = pot[0, :n] - node.unsqueeze(1)
    node = node.masked_fill(~allowed[0, :n], float("-inf"))
    truth = allowed_paths(pot[0], n, allowed[0])[0]
    for blocked in (True, False):
        path, score = viterbi_tokens(node, edge, blocked=blocked)
        assert score.item() == pytest.approx(truth[0])
        assert path_score(pot[0], path.tolist()) == pytest.approx(truth[0])
    assert path_score(pot[0], token_path(node, edge).tolist()) == pytest.approx(truth[0])


@settings(max_examples=30, deadline=None)
@given(restricted_chains())
def test_packed_viterbi_restricts_every_document(problem):
    pot, lengths, allowed = problem
    B = len(lengths)
    nodes, edges = [], []
    for b in range(B):
        n = int(lengths[b])
        node = pot[b, :n, 0].clone()
        node[0] = pot[b, 0, 0]
        nodes.append(node.masked_fill(~allowed[b, :n], float("-inf")))
        edges.append(pot[b, :n] - pot[b, :n, 0].unsqueeze(1))
        edges[-1][0] = 0
    node, edge = torch.cat(nodes), torch.cat(edges)
    edge = edge.clone()
    doc_offsets = torch.zeros(B + 1, dtype=torch.long)
    doc_offsets[1:] = torch.cumsum(lengths, 0)
    perm, sizes = packed_order(doc_offsets)
    labels = torch.empty(len(node), dtype=torch.long)
    labels[perm] = viterbi_packed(node[perm], edge[perm], sizes)
    for b in range(B):
        n = int(lengths[b])
        path = labels[int(doc_offsets[b]) : int(doc_offsets[b + 1])].tolist()
        truth = allowed_paths(pot[b], n, allowed[b])
        assert path_score(pot[b], path) == pytest.approx(truth[0][0])


@settings(max_examples=30, deadline=None)
@given(restricted_chains(max_b=2, max_t=3), st.sampled_from([2, 3, 7, 70]))
def test_every_nbest_algorithm_lists_the_best_allowed_labelings(problem, n):
    pot, lengths, allowed = problem
    within = restricted(pot, lengths, allowed)
    runs = {
        "nbest": nbest(within, lengths, n),
        "kbest_sidetracks": kbest_sidetracks(within, lengths, n),
    }
    runs["kbest_dp"] = kbest_dp(within, lengths, n)
    runs["kbest_beam"] = kbest_beam(within, lengths, n)
    if n == 2:
        runs["two_best"] = two_best(within, lengths)
    for name, (paths, scores) in runs.items():
        for b in range(len(lengths)):
            length = int(lengths[b])
            truth = allowed_paths(pot[b], length, allowed[b])
            for k in range(n):
                if k < len(truth):
                    assert scores[b, k].item() == pytest.approx(truth[k][0]), name
                    path = paths[b, k, :length].tolist()
                    assert all(allowed[b, t, y] for t, y in enumerate(path)), name
                    assert path_score(pot[b], path) == pytest.approx(truth[k][0]), name
                else:
                    assert scores[b, k].item() == float("-inf"), name


@pytest.mark.parametrize("scan", ["log", "scaled", "sequential"])
@settings(max_examples=25, deadline=None)
@given(problem=restricted_chains())
def test_log_partition_and_marginals_sum_the_allowed_labelings(scan, problem):
    pot, lengths, allowed = problem
    within = restricted(pot, lengths, allowed).clamp_min(-1e5)  # the scans' log-zero
    logz = log_partition(within, lengths, scan)
    marg = node_marginals(within, lengths, scan)
    for b in range(len(lengths)):
        n = int(lengths[b])
        truth = allowed_paths(pot[b], n, allowed[b])
        scores = torch.tensor([s for s, _ in truth], dtype=torch.float64)
        assert logz[b].item() == pytest.approx(torch.logsumexp(scores, 0).item(), abs=1e-6)
        probs = torch.softmax(scores, 0)
        expect = torch.zeros(n, pot.shape[-1], dtype=torch.float64)
        for p, (_, path) in zip(probs, truth, strict=True):
            expect[torch.arange(n), torch.tensor(path)] += p
        assert torch.allclose(marg[b, :n], expect, atol=1e-6)


def test_cost_offsets_add_the_weighted_hamming_loss():
    gold = torch.tensor([0, 1, -1, 2])
    costs = torch.tensor([1.0, 3.0, 0.5])
    off = cost_offsets(gold, costs)
    assert off.tolist() == [[0, 1, 1], [3, 0, 3], [0, 0, 0], [0.5, 0.5, 0]]
    known = torch.tensor([True, False, True, True])
    assert cost_offsets(gold, costs, known)[1].tolist() == [0, 0, 0]


def conlleval_entities(path):
    return {(s, e, t) for s, e, t in entity_spans([LABELS[y] for y in path])}


def forbid_spec(draw_spans, lengths):
    """(start, end, B id, I id) of entities A or B."""
    out = []
    for s, e, kind in draw_spans:
        out.append((s, e, LABELS.index(f"B-{kind}"), LABELS.index(f"I-{kind}")))
    return out


@st.composite
def forbidden_problems(draw):
    pot, lengths, allowed = draw(restricted_chains(max_b=2, max_t=4))
    allowed[:] = True  # forbidden spans alone (with IOB2 moves sometimes)
    T = pot.shape[1]
    per_seq = []
    for _ in range(len(lengths)):
        k = draw(st.integers(1, 3))
        spans = []
        for _ in range(k):
            s = draw(st.integers(0, T - 1))
            e = draw(st.integers(s + 1, T + 1))  # maybe past the end: forbids nothing
            spans.append((s, e, draw(st.sampled_from(["A", "B"]))))
        per_seq.append(spans)
    iob2 = draw(st.booleans())
    if iob2:
        pot = constrain(pot, *allowed_transitions(LABELS, "iob2"))
    return pot, lengths, per_seq


@settings(max_examples=60, deadline=None)
@given(forbidden_problems(), st.sampled_from([1, 2, 5]))
def test_forbidden_spans_exclude_exactly_their_entities(problem, n):
    pot, lengths, per_seq = problem
    spec = [forbid_spec(s, lengths) for s in per_seq]
    paths, scores = viterbi_forbidding(pot, lengths, spec)
    kpaths, kscores = nbest_forbidding(pot, lengths, spec, n)
    augmented, orig = augment(pot, lengths, spec)
    logz = log_partition(augmented.clamp_min(-1e5), lengths, "log")
    marg = fold_marginals(node_marginals(augmented.clamp_min(-1e5), lengths), orig, len(LABELS))
    for b in range(len(lengths)):
        m = int(lengths[b])
        bad = {x for x in per_seq[b]}

        def keep(path, bad=bad):
            return not (conlleval_entities(path) & bad)

        truth = [
            sp
            for sp in allowed_paths(pot[b], m, torch.ones(m, len(LABELS), dtype=torch.bool), keep)
            if sp[0] > float("-inf")
        ]
        assert scores[b].item() == pytest.approx(truth[0][0])
        assert keep(paths[b, :m].tolist())
        assert path_score(pot[b], paths[b, :m].tolist()) == pytest.approx(truth[0][0])
        for k in range(n):
            if k < len(truth):
                assert kscores[b, k].item() == pytest.approx(truth[k][0])
                assert keep(kpaths[b, k, :m].tolist())
            else:
                assert kscores[b, k].item() == float("-inf")
        listed = {tuple(kpaths[b, k, :m].tolist()) for k in range(min(n, len(truth)))}
        assert len(listed) == min(n, len(truth))  # distinct labelings
        s = torch.tensor([x for x, _ in truth], dtype=torch.float64)
        assert logz[b].item() == pytest.approx(torch.logsumexp(s, 0).item(), abs=1e-6)
        probs = torch.softmax(s, 0)
        expect = torch.zeros(m, len(LABELS), dtype=torch.float64)
        for p, (_, path) in zip(probs, truth, strict=True):
            expect[torch.arange(m), torch.tensor(path)] += p
        assert torch.allclose(marg[b, :m], expect, atol=1e-6)


@st.composite
def label_chunk_problems(draw):
    """Part scores of 1-2 sentences of up to 3 tokens (C = 2, P = 2) and random constraints."""
    B, T, C, P = draw(st.integers(1, 2)), draw(st.integers(1, 3)), 2, 2
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    lengths = torch.randint(1, T + 1, (B,), generator=gen)
    lengths[0] = T

    def r(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    from structperc.decode.label_chunk import LabelChunkPotentials

    pot = LabelChunkPotentials(
        r(B, T, C, P), r(B, T, C, P, P), r(B, T, T, C), r(B, T, C, C), lengths
    )
    pos_allowed = torch.rand(B, T, P, generator=gen) < 0.7
    pos_allowed[:, :, 0] |= ~pos_allowed.any(-1)
    tag_allowed = torch.rand(B, T, 2 * C - 1, generator=gen) < 0.7
    tag_allowed[:, :, 0] |= ~tag_allowed.any(-1)
    forbidden = []
    for b in range(B):
        n = int(lengths[b])
        q = draw(st.integers(0, n - 1))
        forbidden.append([(q, draw(st.integers(q + 1, n)), 1)])
    return pot, pos_allowed, tag_allowed, forbidden


@settings(max_examples=40, deadline=None)
@given(label_chunk_problems())
def test_label_chunk_dp_finds_the_best_structure_that_respects_the_constraints(problem):
    pot, pos_allowed, tag_allowed, forbidden = problem
    best, scores = decode(constrained_potentials(pot, pos_allowed, tag_allowed, forbidden))
    _, _, C, P = pot.shape
    for b in range(len(pot.lengths)):
        n = int(pot.lengths[b])
        lists = as_lists(pot, b)
        top = float("-inf")
        for y in enumerate_structures(n, C, P):
            pos, tags = token_codes(y)
            ok = all(pos_allowed[b, t, pos[t]] and tag_allowed[b, t, tags[t]] for t in range(n))
            from structperc.data.label_chunk import chunks

            ok = ok and not any((q, r + 1, c) in forbidden[b] for q, r, c in chunks(y))
            if ok:
                top = max(top, part_score(lists, b, y))
        assert math.isclose(float(scores[b]), top, rel_tol=1e-9, abs_tol=1e-9)
