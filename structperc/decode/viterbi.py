"""Batched Viterbi decoding of first-order chains, as tensor operations.

Potentials ``[B, T, L, L]``: ``potentials[b, t, i, j]`` scores label j at position t after label i
at t-1 (node and edge scores summed).  At t = 0 only row 0 is read: ``potentials[b, 0, 0, j]``
scores starting in j.  ``lengths[b]`` (1 <= lengths[b] <= T) marks the real positions.

The forward pass is the max-plus prefix product alpha_t = alpha_0 (x) M_1 (x) ... (x) M_t
(``maxplus.py``).  Computed naively that is T dependent steps, each a few tensor operations of a
few microseconds' overhead — on a CPU the overhead, not the arithmetic, dominates for the small
label sets of NER (L = 9).  We regroup the product into ``K = ceil(T / m)`` blocks of m ~ sqrt(T)
matrices:

1. within every block at once, the running products P[k, s] = M[k, 0] (x) ... (x) M[k, s]
   (m - 1 steps over [B, K, L, L] matrices);
2. the entering vectors of the blocks, beta_{k+1} = beta_k (x) P[k, m-1] (K steps over [B, L]);
3. all alpha at once: alpha[k, s] = beta_k (x) P[k, s].

That is O(sqrt(T)) operations instead of O(T), for L times more arithmetic.  Positions past a
sequence's length are padded with the max-plus identity, so alpha stays put there.  Back-pointers
``bp[t, j] = argmax_i alpha_{t-1}[i] + M_t[i, j]`` are one batched argmax (ties go to the smallest
label index, as in a plain loop), and the back-trace composes them by pointer doubling
(log2(T) gathers).  With integer-valued weights (every perceptron update is +-1) the grouping
changes no value, so the result is exactly that of the plain loop in ``tests/oracles/chain.py``.

The blocked scan serves one sequence (online training) where it pays (``blocked_scan_pays``: a
few labels over a long sequence, as NER's documents; every sequence on a GPU); ``viterbi_tokens``
runs it from the token scores of ``ChainWeights`` directly, with the back-pointers taken in the
block layout.  For a sentence, or many labels (44 POS tags: L times the arithmetic), the plain
recursion in NumPy is faster (``_token_steps``).  For many sequences the plain
recursion wins, run one position at a time for all of them: ``viterbi_steps`` on padded
potentials of a batch, and ``viterbi_packed`` on the token scores of documents packed
time-major (``model.batch.packed_order``), which builds no padding at all;
``ChainStructure.predict`` decodes with it.  Their steps do not grow with the batch, only the
arithmetic of each step does.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import OrderedDict

import numpy as np
import torch
from torch import Tensor

from structperc.decode.maxplus import mp_identity


def block_layout(n: int) -> tuple[int, int]:
    """m matrices per block (m ~ sqrt(n)) and the K = ceil(n / m) blocks of n matrices."""
    m = max(1, math.isqrt(n))
    return m, math.ceil(n / m)


class ScanBuffers:
    """The tensors of one blocked scan over [B, m, L, L, K] blocks, and their per-step views.

    ``blocks[b, s, :, :, k] = M_{1 + k * m + s}`` with the block index innermost: a step then adds
    and reduces slabs whose contiguous inner runs are K long, about twice as fast on a CPU as
    with the label index of 9 innermost.  Making the views (``unbind``) costs about a microsecond
    each, so the one-sequence decoder keeps its buffers for reuse (``reusable_buffers``).
    """

    def __init__(self, B: int, m: int, L: int, K: int, dtype: torch.dtype, device):
        new = dict(dtype=dtype, device=device)
        self.blocks = torch.empty((B, m, L, L, K), **new)
        self.by_block = self.blocks.permute(0, 4, 1, 2, 3)  # [B, K, m, i, j] view
        self.prefix = torch.empty_like(self.blocks)  # running products within each block
        self.steps = self.prefix.unbind(1)  # m x [B, i, j, K]
        self.lefts = self.prefix.unsqueeze(4).unbind(1)  # m x [B, i, l, 1, K]
        self.rights = self.blocks.unsqueeze(2).unbind(1)  # m x [B, 1, l, j, K]
        self.work = torch.empty((B, L, L, L, K), **new)  # [B, i, l, j, K]
        self.totals_t = torch.empty((K, B, L, L), **new)  # each block's product
        self.totals = self.totals_t.unbind(0)  # K x [B, i, j]
        self.beta_t = torch.empty((K, B, L), **new)  # entering vector of each block
        self.beta = self.beta_t.unbind(0)  # K x [B, L]
        self.beta_col = self.beta_t.unsqueeze(-1).unbind(0)  # K x [B, L, 1]
        self.vec = torch.empty((B, L, L), **new)
        self.eye = mp_identity(L, dtype=dtype, device=device)
        self.cand = torch.empty_like(self.blocks)  # scratch of the same shape (back-pointers)
        self.prev = torch.empty((B, m, L, K), **new)  # alpha before each block position


REUSED_BUFFERS = 64  # per thread: the shapes (m, K) of the last this many sequence lengths
REUSED_MAX_MATRICES = 4096  # longer sequences get fresh buffers (not kept)
REUSED_TOTAL_MATRICES = 32_768  # and at most this many block matrices kept per thread
# (~3 [L, L] matrices each: ~32 MB at L = 9 in float32, 64 MB in float64)
_reused = threading.local()


def reusable_buffers(m: int, L: int, K: int, dtype: torch.dtype, device) -> ScanBuffers:
    """``ScanBuffers`` of one sequence (B = 1), kept per thread for the next call of that shape.

    Online training decodes one document after another, whose lengths fall on a few dozen block
    shapes; reusing their buffers saves the allocations and the views (~80 us of a 200-token
    document's 400).  Only what the caller returns is fresh, so nothing escapes the buffers.
    """
    if m * K > REUSED_MAX_MATRICES:
        return ScanBuffers(1, m, L, K, dtype, device)
    cache = getattr(_reused, "buffers", None)
    if cache is None:
        cache = _reused.buffers = OrderedDict()
    key = (m, L, K, dtype, str(device))
    buf = cache.get(key)
    if buf is None:
        buf = cache[key] = ScanBuffers(1, m, L, K, dtype, device)
        kept = sum(k[0] * k[2] for k in cache)  # block matrices held
        while len(cache) > 1 and (len(cache) > REUSED_BUFFERS or kept > REUSED_TOTAL_MATRICES):
            (m_old, _, k_old, _, _), _ = cache.popitem(last=False)
            kept -= m_old * k_old
    else:
        cache.move_to_end(key)
    return buf


def scan_blocks(buf: ScanBuffers, alpha0: Tensor) -> None:
    """Steps 1 and 2 of the blocked scan, from ``buf.blocks`` and alpha0 [B, L] (the scores of
    the first position): the running products within each block, ``buf.prefix``
    (``prefix[:, s] = blocks[:, 0] (x) ... (x) blocks[:, s]``), and the entering vectors
    ``buf.beta_t`` [K, B, L]: ``beta[k]`` is alpha at position k * m."""
    m = buf.blocks.shape[1]
    steps, lefts, rights, work = buf.steps, buf.lefts, buf.rights, buf.work
    steps[0].copy_(buf.blocks[:, 0])
    for s in range(1, m):  # prefix[s] = prefix[s - 1] (x) blocks[s]  (mp_matmul, over l)
        torch.add(lefts[s - 1], rights[s], out=work)
        torch.amax(work, dim=2, out=steps[s])
    buf.totals_t.copy_(steps[m - 1].permute(3, 0, 1, 2))
    beta, beta_col, totals, vec = buf.beta, buf.beta_col, buf.totals, buf.vec
    beta[0].copy_(alpha0)
    for k in range(len(beta) - 1):  # beta[k + 1] = beta[k] (x) totals[k]  (mp_vecmat)
        torch.add(beta_col[k], totals[k], out=vec)
        torch.amax(vec, dim=-2, out=beta[k + 1])


def forward_scores(potentials: Tensor, lengths: Tensor) -> Tensor:
    """alpha [B, T, L]: the best score of a path over 0..t ending in each label.

    For t >= lengths[b], alpha[b, t] = alpha[b, lengths[b] - 1].
    """
    B, T, L, _ = potentials.shape
    alpha0 = potentials[:, 0, 0, :]  # [B, L]
    if T == 1:
        return alpha0.unsqueeze(1)
    n = T - 1  # transition matrices M_1..M_{T-1}
    m, K = block_layout(n)
    if B == 1:  # one sequence (the n-best of online training): reused buffers
        buf = reusable_buffers(m, L, K, potentials.dtype, potentials.device)
    else:
        buf = ScanBuffers(B, m, L, K, potentials.dtype, potentials.device)
    mats = potentials[:, 1:]  # M_1..M_n, [B, n, L, L]: the identity past each length
    if not bool((lengths == T).all()):  # position t is real when t < lengths[b]
        real = torch.arange(1, T, device=potentials.device).unsqueeze(0) < lengths.unsqueeze(1)
        mats = torch.where(real[:, :, None, None], mats, buf.eye)
    # blocks[b, s, :, :, k] = M_{1 + k * m + s}, the identity past n
    q, r = divmod(n, m)  # full blocks, matrices of the last one
    buf.by_block[:, :q] = mats[:, : q * m].view(B, q, m, L, L)
    if r:
        buf.by_block[:, q, :r] = mats[:, q * m :]
        buf.by_block[:, q, r:] = buf.eye
    scan_blocks(buf, alpha0)
    # alpha[b, 1 + k * m + s, j] = max_i beta[k][b, i] + prefix[b, s, i, j, k]
    entering = buf.beta_t.permute(1, 2, 0)[:, None, :, None, :]  # [B, 1, i, 1, K]
    inner = (entering + buf.prefix).amax(dim=2)  # [B, m, j, K]
    alpha = potentials.new_empty((B, T, L))
    alpha[:, 0] = alpha0
    alpha[:, 1:] = inner.permute(0, 3, 1, 2).reshape(B, K * m, L)[:, :n]
    return alpha


# Costs of decoding one sequence on a CPU (one thread, microseconds), fitted to medians of
# ``viterbi_tokens`` both ways for L in 5..315 and T in 8..200: the blocked scan costs a fixed
# ~100 us, ~12 us per block step (sqrt(T) of them) and its running products' T L^3 arithmetic;
# the recursion (``_token_steps``) ~3 us a position and its T L^2 arithmetic.
BLOCKED_FIXED_US, BLOCKED_US_PER_ROOT, BLOCKED_US_PER_CUBE = 100.0, 12.0, 0.00074
STEP_US, STEP_US_PER_SQUARE = 3.0, 0.0014


def blocked_scan_pays(T: int, L: int, device: torch.device | str) -> bool:
    """Whether the blocked scan decodes one sequence of T positions and L labels faster than
    the plain recursion.  On a GPU always: there a step's cost is its launch, not its arithmetic.
    On a CPU the scan's O(sqrt(T)) steps pay for NER's 9 labels over documents (T > ~70), but
    its running products are max-plus matrix products, L times the recursion's arithmetic: for
    45 labels (the POS tagger has 44) and a 24-token sentence the scan is 11 times slower (1.75
    against 0.16 ms), for 315 labels 180 times.  Called once a training step: ``device`` as a
    ``torch.device`` costs nothing to read, a string is parsed."""
    kind = device.type if isinstance(device, torch.device) else torch.device(device).type
    if kind != "cpu":
        return True
    blocked = BLOCKED_FIXED_US + BLOCKED_US_PER_ROOT * math.sqrt(T) + BLOCKED_US_PER_CUBE * T * L**3
    return blocked < T * (STEP_US + STEP_US_PER_SQUARE * L * L)


def viterbi_tokens(
    node: Tensor, edge: Tensor, blocked: bool | None = None
) -> tuple[Tensor, Tensor]:
    """The best path [T] (long) of one sequence and its score [], from its token scores.

    node [T, L], edge [T, L, L] (from, to; row 0 unused: the first token has no previous label)
    as ``ChainWeights.token_scores`` gives them.  ``blocked`` (None: ``blocked_scan_pays``)
    chooses the kernel.  The blocked scan of ``forward_scores`` with its blocks written straight
    from ``edge + node`` (no [T, L, L] potentials first), and the back-pointers taken in the same
    block layout from the entering vectors and the running products: the same sums and maxima as
    ``viterbi`` on ``chain_potentials``, so the same path and score.  The buffers are reused from
    call to call (``reusable_buffers``).  Otherwise the recursion of ``viterbi_steps``
    (``_token_steps``): the same path, and with integer weights the same score.
    """
    T, L = node.shape
    if T == 1:
        score, last = node[0].max(0)
        return last.view(1), score
    if not (blocked_scan_pays(T, L, node.device) if blocked is None else blocked):
        return _token_steps(node, edge)
    n = T - 1
    m, K = block_layout(n)
    q, r = divmod(n, m)
    buf = reusable_buffers(m, L, K, node.dtype, node.device)
    by_block = buf.by_block[0]  # [K, m, i, j] view
    if q:  # M_t[i, j] = edge[t, i, j] + node[t, j]
        head = slice(1, 1 + q * m)
        torch.add(edge[head].view(q, m, L, L), node[head].view(q, m, 1, L), out=by_block[:q])
    if r:
        torch.add(edge[1 + q * m :], node[1 + q * m :].unsqueeze(1), out=by_block[q, :r])
        by_block[q, r:] = buf.eye
    scan_blocks(buf, node[:1])
    prefix, beta, blocks = buf.prefix[0], buf.beta_t[:, 0], buf.blocks[0]  # [m, i, j, K], [K, L]
    cand, prev = buf.cand[0], buf.prev[0]  # [m, i, j, K], [m, i, K]
    # prev[s, :, k] = alpha at position k * m + s, the one before M_{1 + k * m + s}
    prev[0] = beta.T
    torch.add(beta.T[None, :, None, :], prefix[:-1], out=cand[:-1])
    torch.amax(cand[:-1], dim=1, out=prev[1:])
    k, s = divmod(n - 1, m)  # the last position, 1 + k * m + s = T - 1
    score, last = (beta[k].unsqueeze(1) + prefix[s, :, :, k]).amax(0).max(0)
    # bp[s, j, k] = argmax_i alpha_{t-1}[i] + M_t[i, j] (first maximum), t = 1 + k * m + s
    bp = torch.add(prev.unsqueeze(2), blocks, out=cand).max(dim=1).indices
    rows = bp.permute(2, 0, 1).reshape(K * m, L)[:n].cpu().numpy().tolist()  # rows[t - 1]
    path = trace_path([None, *rows], int(last), T)
    return torch.from_numpy(np.array(path, dtype=np.int64)).to(node.device), score


def _token_steps(node: Tensor, edge: Tensor) -> tuple[Tensor, Tensor]:
    """``viterbi_tokens`` by the textbook recursion over M_t = edge[t] + node[t] (T >= 2), on a
    CPU: one add, argmax and gather a position, in NumPy, whose calls on [L, L] arrays cost a
    microsecond where torch's cost five (the same float sums, so the same path and score); ties
    go to the smallest label."""
    path, alpha, last = _token_recursion(node, edge)
    score = torch.from_numpy(alpha[last : last + 1].copy()).view(())
    return path_tensor(path, node.device), score if node.device.type == "cpu" else score.to(
        node.device
    )


def _token_recursion(node: Tensor, edge: Tensor) -> tuple[list[int], np.ndarray, int]:
    """``_token_steps``'s recursion: (the path, the last alpha [L] float, its best label)."""
    T, L = node.shape
    scores = node.detach().cpu().numpy()  # [T, L]
    if edge.stride(0) == 0:  # one transition matrix expanded over the tokens (edges=False)
        trans = edge[0].detach().cpu().numpy() + scores[1:, None, :]  # [T - 1, L, L]
    else:
        trans = edge[1:].detach().cpu().numpy() + scores[1:, None, :]  # M_1..M_{T-1}
    alpha = scores[0]
    labels = label_range(L)
    rows: list = [None]
    for t in range(T - 1):
        cand = alpha[:, None] + trans[t]  # [i, j]
        arg = cand.argmax(axis=0)  # the first maximum
        alpha = cand[arg, labels]
        rows.append(arg.tolist())
    last = int(alpha.argmax())
    return trace_path(rows, last, T), alpha, last


def token_path(node: Tensor, edge: Tensor) -> Tensor:
    """``viterbi_tokens``'s best path [T] alone (no score tensor made: a training step's decode,
    ``ChainStructure.decode_tokens``)."""
    T, L = node.shape
    if T > 1 and not blocked_scan_pays(T, L, node.device):
        return path_tensor(_token_recursion(node, edge)[0], node.device)
    return viterbi_tokens(node, edge)[0]


@functools.lru_cache(maxsize=64)
def label_range(L: int) -> np.ndarray:
    """0..L-1 (read-only: shared between calls)."""
    labels = np.arange(L)
    labels.flags.writeable = False
    return labels


def path_tensor(path: list[int], device: torch.device) -> Tensor:
    """A path as a long tensor on ``device`` (``torch.from_numpy``: 7x ``torch.tensor``)."""
    out = torch.from_numpy(np.array(path, dtype=np.int64))
    return out if device.type == "cpu" else out.to(device)


def backpointers(potentials: Tensor, alpha: Tensor) -> Tensor:
    """bp [B, T, L]: bp[b, t, j] = argmax_i alpha[b, t-1, i] + M_t[i, j]; bp[:, 0] = j."""
    B, T, L, _ = potentials.shape
    bp = torch.empty((B, T, L), dtype=torch.long, device=potentials.device)
    bp[:, 0] = torch.arange(L, device=potentials.device)
    if T > 1:
        cand = alpha[:, :-1].unsqueeze(-1) + potentials[:, 1:]  # [B, T-1, L(i), L(j)]
        # max(dim).indices: first maximum, like argmax, and several times faster on CPU
        bp[:, 1:] = cand.max(dim=2).indices
    return bp


def backtrace(bp: Tensor, last: Tensor, lengths: Tensor) -> Tensor:
    """Paths [B, T] (-1 past each length) from back-pointers and the last labels [B].

    On the CPU a plain loop over Python lists is cheapest; elsewhere ``backtrace_doubling``.
    """
    if bp.device.type != "cpu":
        return backtrace_doubling(bp, last, lengths)
    B, T, _ = bp.shape
    paths = torch.full((B, T), -1, dtype=torch.long)
    for b, (rows, y, n) in enumerate(
        zip(bp.numpy().tolist(), last.tolist(), lengths.tolist(), strict=True)
    ):
        path = trace_path(rows, y, n)
        paths[b, :n] = torch.from_numpy(np.array(path, dtype=np.int64))  # (torch.tensor: 7x)
    return paths


def trace_path(rows: list, last: int, n: int) -> list[int]:
    """The labels of positions 0..n-1 ending in ``last``: ``rows[t][j]`` is the label at t - 1
    before label j at t (``rows[0]`` is not read).  A plain loop over Python lists: on a CPU
    cheaper than any tensor formulation for one sequence."""
    if n == 0:
        return []
    path = [0] * n
    y = last
    for t in range(n - 1, 0, -1):
        path[t] = y
        y = rows[t][y]
    path[0] = y
    return path


def backtrace_doubling(bp: Tensor, last: Tensor, lengths: Tensor) -> Tensor:
    """``backtrace`` as log2(T) batched gathers (for accelerators).

    Pointer doubling: G_t maps the label at t+d to the label at t; composing G_t with G_{t+d}
    doubles d, so log2(T) gathers give every position's label from the label at T-1.
    """
    B, T, L = bp.shape
    device = bp.device
    ident = torch.arange(L, device=device).expand(B, 1, L)
    real = torch.arange(T, device=device).unsqueeze(0) < lengths.unsqueeze(1)  # [B, T]
    # G[t] maps the label at t+1 to the label at t; identity where t+1 is not a real position
    nxt_real = torch.cat([real[:, 1:], torch.zeros_like(real[:, :1])], dim=1)
    G = torch.cat([bp[:, 1:], ident], dim=1)  # [B, T, L]
    G = torch.where(nxt_real.unsqueeze(-1), G, ident)
    d = 1
    while d < T:
        shifted = torch.cat([G[:, d:], ident.expand(B, d, L)], dim=1)  # G[t + d]
        G = torch.gather(G, 2, shifted)  # G[t] o G[t+d]
        d *= 2
    paths = torch.gather(G, 2, last.view(B, 1, 1).expand(B, T, 1)).squeeze(2)
    return paths.masked_fill(~real, -1)


def backward_scores(potentials: Tensor, lengths: Tensor) -> Tensor:
    """beta [B, T, L]: the best score of positions t+1..len-1 given label i at t (0 at len-1).

    Computed as ``forward_scores`` of the reversed chain, whose matrices are the transposed
    M_t in reverse order; beta is 0 past each length.
    """
    B, T, L, _ = potentials.shape
    device = potentials.device
    t_rev = torch.arange(T, device=device).unsqueeze(0)  # [1, T]
    real = t_rev < lengths.unsqueeze(1)  # [B, T]
    src = torch.where(real, lengths.unsqueeze(1) - t_rev, torch.zeros_like(t_rev))  # [B, T]
    src = src.clamp(max=T - 1)
    rev = potentials.gather(1, src.view(B, T, 1, 1).expand(B, T, L, L)).transpose(-1, -2)
    rev = rev.clone()
    rev[:, 0] = 0.0  # the reversed chain starts anywhere at no cost
    alpha_rev = forward_scores(rev, lengths)  # alpha_rev[b, t'] = beta[b, len - 1 - t']
    back = torch.where(real, lengths.unsqueeze(1) - 1 - t_rev, t_rev)  # [B, T]
    beta = alpha_rev.gather(1, back.unsqueeze(-1).expand(B, T, L))
    return beta.masked_fill(~real.unsqueeze(-1), 0.0)


def viterbi(potentials: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """Best paths [B, T] (long, -1 past each length) and their scores [B].

    One sequence (online training) goes through the blocked scan, O(sqrt(T)) tensor operations,
    where it pays (``blocked_scan_pays``); a batch through ``viterbi_steps``, whose T small steps
    serve all sequences at once.
    """
    B, T, L, _ = potentials.shape
    if B > 1 or not blocked_scan_pays(T, L, potentials.device):
        return viterbi_steps(potentials, lengths)
    alpha = forward_scores(potentials, lengths)  # [B, T, L]
    final = alpha[:, -1]  # == alpha at lengths - 1 (identity padding)
    scores, last = final.max(dim=1)  # [B], [B]
    bp = backpointers(potentials, alpha)
    return backtrace(bp, last, lengths), scores


def viterbi_steps(potentials: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """``viterbi`` by the textbook recursion, one position at a time for the whole batch.

    The sequences are put in order of decreasing length, so the ones still running at position t
    are a prefix ``[:k_t]`` of the batch: each step is an add and a max over ``[k_t, L, L]``
    (no masking), and the back-trace walks back the same way with one gather per position.  For
    a batch of many documents this is cheaper than the blocked scan, whose extra arithmetic grows
    with the batch while the number of steps here does not.  Ties go to the smallest label, as
    in the loop of ``tests/oracles/chain.py``; the result equals ``viterbi`` exactly.
    """
    B, T, L, _ = potentials.shape
    device = potentials.device
    order = torch.argsort(lengths.to(device), descending=True, stable=True)  # [B]
    pot = potentials[order]  # [B, T, L, L]
    lens = lengths.to(device)[order]
    running = [int(k) for k in (lens.view(1, B) > torch.arange(T, device=device).view(T, 1)).sum(1)]
    alpha = pot[:, 0, 0, :].clone()  # [B, L]
    bp = torch.empty((B, T, L), dtype=torch.long, device=device)
    for t in range(1, T):
        k = running[t]
        if k == 0:
            break
        best, arg = (alpha[:k].unsqueeze(-1) + pot[:k, t]).max(dim=1)  # [k, L]
        alpha[:k] = best
        bp[:k, t] = arg
    scores, last = alpha.max(dim=1)  # [B]
    paths = torch.full((B, T), -1, dtype=torch.long, device=device)
    cur = last.clone()  # the label at each sequence's current position
    for t in range(T - 1, -1, -1):
        k, k_next = running[t], (running[t + 1] if t + 1 < T else 0)
        if k == 0:
            continue
        if k_next:  # still inside these sequences: follow the pointers back from t + 1
            cur[:k_next] = bp[:k_next, t + 1].gather(1, cur[:k_next, None]).squeeze(1)
        paths[:k, t] = cur[:k]  # sequences k_next..k end at t: cur holds their last label
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(B, device=device)
    return paths[inverse], scores[inverse]


def viterbi_packed(node: Tensor, edge: Tensor, batch_sizes: list[int]) -> Tensor:
    """Best labels of sequences packed time-major, from token scores (no padded potentials).

    node [N, L], edge [N, L, L] (edge[n, i, j]: from label i to j) are the scores of every token
    of a batch of sequences sorted by decreasing length and packed as a
    ``torch.nn.utils.rnn.PackedSequence`` packs them: rows ``offsets[t] : offsets[t] + k_t`` hold
    position t of the k_t = ``batch_sizes[t]`` sequences that reach it.  At t = 0 the node scores
    alone start a path (no previous label).  Returns the labels [N] in the same packed order.

    The recursion of ``viterbi_steps`` over slices of the packed rows: per position one add and
    one max over ``[k_t, L, L]``; no padding is built or read, which makes it the
    fastest way to decode many documents at once.  Ties go to the smallest label.
    """
    N, L = node.shape
    offsets = [0]
    for k in batch_sizes:
        offsets.append(offsets[-1] + k)
    if offsets[-1] != N:
        raise ValueError(f"batch_sizes sum to {offsets[-1]}, but there are {N} token rows")
    T = len(batch_sizes)
    alpha = node[: batch_sizes[0]].clone()  # [B, L]
    # M_t[i, j] of every packed row at once, in one add, unless ``edge`` is one transition matrix
    # expanded over the rows (edges=False): then a position at a time, so that it is never
    # copied N times ([N, L, L]: 46 MB for 256 sentences of 44 POS tags, out of the cache)
    shared = edge.stride(0) == 0
    every = None if shared else edge + node.unsqueeze(1)  # [N, L, L]
    bp = torch.empty((N, L), dtype=torch.long, device=node.device)  # packed back-pointers
    for t in range(1, T):
        k, a = batch_sizes[t], offsets[t]
        rows = slice(a, a + k)
        trans = edge[rows] + node[rows].unsqueeze(1) if every is None else every[rows]
        best, arg = (alpha[:k].unsqueeze(-1) + trans).max(dim=1)  # [k, L]
        alpha[:k] = best
        bp[a : a + k] = arg
    cur = alpha.argmax(dim=1)  # [B] the last label of each sequence
    labels = torch.empty(N, dtype=torch.long, device=node.device)
    for t in range(T - 1, -1, -1):
        k, a = batch_sizes[t], offsets[t]
        k_next = batch_sizes[t + 1] if t + 1 < T else 0
        if k_next:  # inside these sequences: follow the pointers back from t + 1
            b = offsets[t + 1]
            cur[:k_next] = bp[b : b + k_next].gather(1, cur[:k_next, None]).squeeze(1)
        labels[a : a + k] = cur[:k]  # sequences k_next..k end at t: cur holds their last label
    return labels
