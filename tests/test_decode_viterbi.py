"""Tests for structperc.decode: batched block Viterbi against brute force and the textbook loop."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import chain as reference

from structperc.decode.maxplus import mp_identity, mp_matmul, mp_vecmat
from structperc.decode.viterbi import (
    backpointers,
    backtrace,
    backtrace_doubling,
    forward_scores,
    viterbi,
    viterbi_packed,
    viterbi_steps,
    viterbi_tokens,
)
from structperc.model.batch import packed_order

SETTINGS = settings(max_examples=50, deadline=None)


def random_problem(seed: int, B: int, T: int, L: int, *, integer: bool = False, full=False):
    """Potentials [B, T, L, L] float64 and lengths [B] in 1..T (one of them T when ``full``).

    Real-valued potentials are standard normal, so no two paths tie (almost surely); integer ones
    come from {-1, 0, 1} and tie a lot.
    """
    gen = torch.Generator().manual_seed(seed)
    if integer:
        pot = torch.randint(-1, 2, (B, T, L, L), generator=gen).double()
    else:
        pot = torch.randn(B, T, L, L, generator=gen, dtype=torch.float64)
    lengths = torch.randint(1, T + 1, (B,), generator=gen)
    if full:
        lengths[int(torch.randint(0, B, (1,), generator=gen))] = T
    return pot, lengths


def sequential_alpha(pot: torch.Tensor, length: int) -> torch.Tensor:
    """alpha [T, L] of one sequence by the plain recursion, held constant past ``length``."""
    T = pot.shape[0]
    alpha = [pot[0, 0]]
    for t in range(1, T):
        if t < length:
            alpha.append((alpha[-1].unsqueeze(1) + pot[t]).amax(dim=0))
        else:
            alpha.append(alpha[-1])
    return torch.stack(alpha)


problems = st.tuples(
    st.integers(0, 2**31 - 1),  # seed
    st.integers(1, 3),  # B
    st.integers(1, 6),  # T
    st.integers(1, 4),  # L
)


# ---------------------------------------------------------------- max-plus algebra


def test_maxplus_products_by_hand():
    a = torch.tensor([[0.0, 1.0], [2.0, -1.0]])
    b = torch.tensor([[3.0, 0.0], [1.0, 5.0]])
    # (a x b)[i, j] = max_k a[i, k] + b[k, j]
    expected = torch.tensor([[max(3.0, 2.0), max(0.0, 6.0)], [max(5.0, 0.0), max(2.0, 4.0)]])
    assert torch.equal(mp_matmul(a, b), expected)
    v = torch.tensor([1.0, 0.0])
    assert torch.equal(mp_vecmat(v, b), torch.tensor([4.0, 5.0]))
    eye = mp_identity(2, dtype=torch.float64, device="cpu")
    assert torch.equal(mp_matmul(a.double(), eye), a.double())
    assert torch.equal(mp_matmul(eye, b.double()), b.double())


# ---------------------------------------------------------------- against brute force


@SETTINGS
@given(problems)
def test_viterbi_matches_brute_force_and_loop(problem):
    seed, B, T, L = problem
    pot, lengths = random_problem(seed, B, T, L, full=True)
    paths, scores = viterbi(pot, lengths)
    assert paths.shape == (B, T) and paths.dtype == torch.long
    assert scores.shape == (B,)
    for b in range(B):
        n = int(lengths[b])
        # brute force over all L**n paths (numpy indexing keeps it fast; same reference code)
        ranked = reference.enumerate_paths(pot[b].numpy(), n)
        best_score, best_path = ranked[0]
        if len(ranked) > 1:
            assert ranked[0][0] - ranked[1][0] > 1e-9  # the jitter leaves no tie
        assert paths[b, :n].tolist() == list(best_path)
        assert scores[b].item() == pytest.approx(best_score, abs=1e-9)
        loop_path, loop_score = reference.viterbi_loop(pot[b], n)
        assert paths[b, :n].tolist() == loop_path
        assert scores[b].item() == pytest.approx(loop_score, abs=1e-9)


@SETTINGS
@given(problems)
def test_padding_is_minus_one_and_score_is_path_score(problem):
    seed, B, T, L = problem
    pot, lengths = random_problem(seed, B, T, L)
    paths, scores = viterbi(pot, lengths)
    for b in range(B):
        n = int(lengths[b])
        assert (paths[b, n:] == -1).all()
        assert ((paths[b, :n] >= 0) & (paths[b, :n] < L)).all()
        assert scores[b].item() == pytest.approx(
            reference.path_score(pot[b], paths[b, :n].tolist()), abs=1e-9
        )
        assert torch.equal(paths[b], reference.as_tensor_path(paths[b, :n].tolist(), T))


@SETTINGS
@given(problems)
def test_batched_equals_one_at_a_time(problem):
    seed, B, T, L = problem
    pot, lengths = random_problem(seed, B, T, L)
    paths, scores = viterbi(pot, lengths)
    for b in range(B):
        n = int(lengths[b])
        # the sequence alone, cut to its own length (no padding at all)
        p1, s1 = viterbi(pot[b : b + 1, :n], lengths[b : b + 1])
        assert p1.shape == (1, n)
        assert torch.equal(p1[0], paths[b, :n])
        assert s1[0].item() == pytest.approx(scores[b].item(), abs=1e-12)


def test_padding_values_do_not_matter():
    """Whatever sits in the potentials past a length must not change the result."""
    pot, _ = random_problem(7, 3, 8, 4)
    lengths = torch.tensor([8, 3, 1])
    paths, scores = viterbi(pot, lengths)
    junk = pot.clone()
    junk[1, 3:] = 1e6
    junk[2, 1:] = -1e6
    junk_paths, junk_scores = viterbi(junk, lengths)
    assert torch.equal(paths, junk_paths)
    assert torch.equal(scores, junk_scores)


@SETTINGS
@given(st.integers(0, 2**31 - 1), st.integers(1, 3), st.integers(1, 6), st.integers(1, 5))
def test_length_one_sequences(seed, B, T, L):
    pot, _ = random_problem(seed, B, T, L)
    lengths = torch.ones(B, dtype=torch.long)
    paths, scores = viterbi(pot, lengths)
    # one position: the best start label, read from row 0 only
    assert torch.equal(paths[:, 0], pot[:, 0, 0].argmax(dim=1))
    assert torch.equal(scores, pot[:, 0, 0].amax(dim=1))
    assert (paths[:, 1:] == -1).all()


def test_only_row_zero_is_read_at_t0():
    pot = torch.zeros(1, 2, 3, 3, dtype=torch.float64)
    pot[0, 0, 0] = torch.tensor([0.0, 1.0, 0.0])  # row 0: start in label 1
    pot[0, 0, 1:] = 100.0  # other rows at t = 0 are meaningless
    paths, scores = viterbi(pot, torch.tensor([1]))
    assert paths.tolist() == [[1, -1]]
    assert scores.item() == 1.0


# ---------------------------------------------------------------- pieces


@SETTINGS
@given(problems)
def test_forward_scores_equal_sequential_recursion(problem):
    seed, B, T, L = problem
    pot, lengths = random_problem(seed, B, T, L)
    alpha = forward_scores(pot, lengths)
    assert alpha.shape == (B, T, L)
    for b in range(B):
        expected = sequential_alpha(pot[b], int(lengths[b]))
        torch.testing.assert_close(alpha[b], expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("T", [2, 5, 10, 17, 50, 101])
def test_forward_scores_exact_on_integers_many_block_sizes(T):
    """T - 1 not a square, a square, prime...: every block layout, compared exactly."""
    pot, lengths = random_problem(T, 4, T, 3, integer=True, full=True)
    alpha = forward_scores(pot, lengths)
    for b in range(4):
        assert torch.equal(alpha[b], sequential_alpha(pot[b], int(lengths[b])))


@SETTINGS
@given(problems, st.booleans())
def test_list_backtrace_equals_doubling(problem, integer):
    seed, B, T, L = problem
    pot, lengths = random_problem(seed, B, T, L, integer=integer)
    alpha = forward_scores(pot, lengths)
    _, last = alpha[:, -1].max(dim=1)
    bp = backpointers(pot, alpha)
    assert torch.equal(bp[:, 0], torch.arange(L).expand(B, L))
    a = backtrace(bp, last, lengths)
    d = backtrace_doubling(bp, last, lengths)
    assert torch.equal(a, d)


def test_backtrace_by_hand():
    # L = 2, T = 4: bp[t, j] = label at t-1 given label j at t
    bp = torch.tensor([[[0, 1], [1, 0], [1, 1], [0, 0]]])
    last = torch.tensor([1])
    # t=3: 1 -> bp[3,1]=0 at t=2 -> bp[2,0]=1 at t=1 -> bp[1,1]=0 at t=0
    for fn in (backtrace, backtrace_doubling):
        assert fn(bp, last, torch.tensor([4])).tolist() == [[0, 1, 0, 1]]
        # length 2: ends at t = 1 with label 1 -> bp[1, 1] = 0
        assert fn(bp, last, torch.tensor([2])).tolist() == [[0, 1, -1, -1]]


# ---------------------------------------------------------------- ties


@SETTINGS
@given(st.integers(0, 2**31 - 1), st.integers(1, 3), st.integers(1, 12), st.integers(1, 4))
def test_integer_potentials_with_ties_give_the_loops_path(seed, B, T, L):
    pot, lengths = random_problem(seed, B, T, L, integer=True)
    paths, scores = viterbi(pot, lengths)
    for b in range(B):
        n = int(lengths[b])
        loop_path, loop_score = reference.viterbi_loop(pot[b], n)
        assert paths[b, :n].tolist() == loop_path
        assert scores[b].item() == loop_score  # exact: integers


def test_all_zero_potentials_pick_label_zero():
    pot = torch.zeros(2, 7, 5, 5, dtype=torch.float64)
    paths, scores = viterbi(pot, torch.tensor([7, 4]))
    assert paths.tolist() == [[0] * 7, [0] * 4 + [-1] * 3]
    assert scores.tolist() == [0.0, 0.0]


def test_tie_goes_to_smallest_label():
    # two optimal paths, [1, 2] and [2, 1], both scoring 2
    pot = torch.full((1, 2, 3, 3), -5.0, dtype=torch.float64)
    pot[0, 0, 0] = torch.tensor([-5.0, 1.0, 1.0])
    pot[0, 1, 1, 2] = 1.0
    pot[0, 1, 2, 1] = 1.0
    paths, scores = viterbi(pot, torch.tensor([2]))
    assert scores.item() == 2.0
    # final labels 1 and 2 tie -> 1; its best predecessor is 2
    assert paths[0].tolist() == [2, 1] == reference.viterbi_loop(pot[0], 2)[0]


# ---------------------------------------------------------------- long sequences


@pytest.mark.parametrize("T", [300, 1000])
@pytest.mark.parametrize("integer", [False, True])
def test_long_sequences_agree_with_loop(T, integer):
    L = 3
    pot, _ = random_problem(T + integer, 2, T, L, integer=integer)
    lengths = torch.tensor([T, T // 2 + 1])
    paths, scores = viterbi(pot, lengths)
    for b in range(2):
        n = int(lengths[b])
        loop_path, loop_score = reference.viterbi_loop(pot[b], n)
        assert paths[b, :n].tolist() == loop_path
        assert (paths[b, n:] == -1).all()
        if integer:
            assert scores[b].item() == loop_score
        else:
            assert scores[b].item() == pytest.approx(loop_score, rel=1e-12, abs=1e-9)


@SETTINGS
@given(
    seed=st.integers(0, 2**31 - 1),
    B=st.integers(1, 6),
    T=st.integers(1, 12),
    L=st.integers(1, 4),
    integer=st.booleans(),
)
def test_step_kernel_equals_blocked_scan(seed, B, T, L, integer):
    """The batch kernel (sorted, shrinking prefix) gives the blocked scan's paths and scores,
    ties included, on every layout of lengths."""
    pot, lengths = random_problem(seed, B, T, L, integer=integer)
    paths, scores = viterbi_steps(pot, lengths)
    for b in range(B):
        n = int(lengths[b])
        p1, s1 = viterbi(pot[b : b + 1, :n], lengths[b : b + 1])  # one sequence: blocked scan
        assert torch.equal(paths[b, :n], p1[0]) and (paths[b, n:] == -1).all()
        assert torch.allclose(scores[b], s1[0])


@SETTINGS
@given(
    seed=st.integers(0, 2**31 - 1),
    D=st.integers(1, 6),
    T=st.integers(1, 10),
    L=st.integers(1, 4),
    integer=st.booleans(),
)
def test_packed_kernel_equals_viterbi_one_document_at_a_time(seed, D, T, L, integer):
    """viterbi_packed on token scores packed by packed_order gives, for every document, the path
    of the blocked scan on that document's potentials (ties included)."""
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T + 1, (D,), generator=gen)
    doc_offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
    N = int(doc_offsets[-1])
    if integer:
        node = torch.randint(-1, 2, (N, L), generator=gen).double()
        edge = torch.randint(-1, 2, (N, L, L), generator=gen).double()
    else:
        node = torch.randn(N, L, generator=gen, dtype=torch.float64)
        edge = torch.randn(N, L, L, generator=gen, dtype=torch.float64)
    perm, sizes = packed_order(doc_offsets)
    assert sorted(perm.tolist()) == list(range(N)) and sum(sizes) == N
    labels = torch.empty(N, dtype=torch.long)
    labels[perm] = viterbi_packed(node[perm], edge[perm], sizes)
    for d in range(D):
        s, e = int(doc_offsets[d]), int(doc_offsets[d + 1])
        pot = edge[s:e] + node[s:e].unsqueeze(1)  # [n, L, L]
        pot[0] = node[s].expand(L, L)  # t = 0: the start scores in every row
        path, _ = viterbi(pot.unsqueeze(0), torch.tensor([e - s]))
        assert labels[s:e].tolist() == path[0].tolist()


def test_packed_order_by_hand():
    # lengths 2, 3, 1 -> by decreasing length: doc 1 (tokens 2-4), doc 0 (0-1), doc 2 (5)
    perm, sizes = packed_order(torch.tensor([0, 2, 5, 6]))
    assert sizes == [3, 2, 1]
    assert perm.tolist() == [2, 0, 5, 3, 1, 4]
    with pytest.raises(ValueError, match="batch_sizes sum"):
        viterbi_packed(torch.zeros(5, 2), torch.zeros(5, 2, 2), sizes)


# ---------------------------------------------------------------- from token scores


def token_problem(seed: int, T: int, L: int, *, integer: bool, shared_edge: bool = False):
    """Token scores node [T, L], edge [T, L, L] of one sequence (``shared_edge``: one transition
    matrix expanded over the tokens, as ``ChainWeights(edges=False)`` gives it), and the
    potentials [1, T, L, L] that ``chain_potentials`` builds from them."""
    gen = torch.Generator().manual_seed(seed)
    if integer:
        node = torch.randint(-1, 2, (T, L), generator=gen).double()
        edge = torch.randint(-1, 2, (1 if shared_edge else T, L, L), generator=gen).double()
    else:
        node = torch.randn(T, L, generator=gen, dtype=torch.float64)
        edge = torch.randn(1 if shared_edge else T, L, L, generator=gen, dtype=torch.float64)
    edge = edge.expand(T, L, L)
    pot = edge + node.unsqueeze(1)
    pot[0] = node[0]  # the first token: node scores in every row
    return node, edge, pot.unsqueeze(0)


@SETTINGS
@given(
    seed=st.integers(0, 2**31 - 1),
    T=st.integers(1, 40),
    L=st.integers(1, 5),
    integer=st.booleans(),
    shared_edge=st.booleans(),
)
def test_token_scores_kernel_equals_blocked_scan(seed, T, L, integer, shared_edge):
    """``viterbi_tokens`` gives ``viterbi``'s path and score on the potentials built from the
    same token scores, ties included (integers) and with an expanded transition matrix."""
    node, edge, pot = token_problem(seed, T, L, integer=integer, shared_edge=shared_edge)
    path, score = viterbi_tokens(node, edge)
    ref_paths, ref_scores = viterbi(pot, torch.tensor([T]))
    assert path.dtype == torch.long and path.shape == (T,)
    assert torch.equal(path, ref_paths[0])
    assert score.item() == ref_scores[0].item()  # the same sums and maxima: exactly equal
    loop_path, loop_score = reference.viterbi_loop(pot[0], T)
    assert path.tolist() == loop_path
    if integer:
        assert score.item() == loop_score


@SETTINGS
@given(
    seed=st.integers(0, 2**31 - 1),
    T=st.integers(1, 40),
    L=st.integers(1, 12),
    integer=st.booleans(),
)
def test_both_token_kernels_give_the_loops_path(seed, T, L, integer):
    """The blocked scan and the recursion, each forced, against the plain loop: the same path
    (ties included), and the same score (exactly with integer scores)."""
    node, edge, pot = token_problem(seed, T, L, integer=integer)
    loop_path, loop_score = reference.viterbi_loop(pot[0], T)
    for blocked in (True, False):
        path, score = viterbi_tokens(node, edge, blocked=blocked)
        assert path.tolist() == loop_path, blocked
        assert score.item() == (loop_score if integer else pytest.approx(loop_score))


def test_the_blocked_scan_is_chosen_where_it_pays():
    """NER's 9 labels over a document: the scan; a sentence, or the 23 chunk tags, 44 POS tags
    or 315 joint labels of anything: the recursion (as measured); on a GPU always the scan."""
    from structperc.decode.viterbi import blocked_scan_pays

    assert blocked_scan_pays(200, 9, "cpu") and blocked_scan_pays(400, 5, "cpu")
    assert not blocked_scan_pays(24, 9, "cpu") and not blocked_scan_pays(4, 9, "cpu")
    assert not blocked_scan_pays(24, 45, "cpu") and not blocked_scan_pays(24, 315, "cpu")
    assert not blocked_scan_pays(24, 23, "cpu") and not blocked_scan_pays(200, 23, "cpu")
    assert blocked_scan_pays(24, 315, "cuda") and blocked_scan_pays(4, 9, torch.device("cuda"))


@pytest.mark.parametrize("T", [2, 3, 17, 215, 1000])
def test_token_scores_kernel_on_long_sequences(T):
    """Every block layout (a last block full or partial) against the plain loop."""
    node, edge, pot = token_problem(T, T, 9, integer=True)
    path, score = viterbi_tokens(node.float(), edge.float())
    loop_path, loop_score = reference.viterbi_loop(pot[0], T)
    assert path.tolist() == loop_path and score.item() == loop_score


def test_token_scores_kernel_by_hand():
    # two tokens, two labels: start scores [0, 1]; moving 1 -> 0 earns 5, so [1, 0] scores 1 + 5
    node = torch.tensor([[0.0, 1.0], [0.0, 0.0]])
    edge = torch.zeros(2, 2, 2)
    edge[1, 1, 0] = 5.0
    edge[0] = 100.0  # row 0 is never read: the first token has no previous label
    path, score = viterbi_tokens(node, edge)
    assert path.tolist() == [1, 0] and score.item() == 6.0
    one, s1 = viterbi_tokens(node[:1], edge[:1])
    assert one.tolist() == [1] and s1.item() == 1.0


def test_token_scores_kernel_reuses_buffers_safely(monkeypatch):
    """Sequences of one block shape in a row, more shapes than the per-thread cache keeps, and
    two threads at once: every result is that of the potentials' Viterbi."""
    import concurrent.futures

    import structperc.decode.viterbi as viterbi_mod

    monkeypatch.setattr(viterbi_mod, "REUSED_BUFFERS", 3)
    monkeypatch.setattr(viterbi_mod, "REUSED_TOTAL_MATRICES", 150)  # 99 + 36 + ... matrices
    problems = [
        token_problem(seed, T, 4, integer=seed % 2 == 0)
        for seed, T in enumerate([30, 30, 31, 5, 6, 7, 8, 9, 30, 100, 5, 30])
    ]
    expected = [viterbi(pot, torch.tensor([pot.shape[1]]))[0][0] for _, _, pot in problems]

    def decode_all(order):
        return [(i, viterbi_tokens(*problems[i][:2])[0]) for i in order]

    for i, path in decode_all(range(len(problems))):
        assert torch.equal(path, expected[i])
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(decode_all, list(range(len(problems)))[::step]) for step in (1, -1)]
        for run in runs:
            for i, path in run.result():
                assert torch.equal(path, expected[i])
    kept = viterbi_mod._reused.buffers
    assert len(kept) <= 3 and sum(k[0] * k[2] for k in kept) <= 150
