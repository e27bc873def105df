"""The chain's likelihood through torch-struct's ``LinearChain``: log Z, marginals, nll, log p(y).

A linear-chain CRF (Lafferty et al. 2001) over a sequence of length n gives a labeling y

    p(y | x) = exp(s(y)) / Z(x),   s(y) = pot[0, 0, y_0] + sum_{t=1}^{n-1} pot[t, y_{t-1}, y_t],
    log Z(x) = logsumexp_y s(y),

with structperc's potentials ``pot [B, T, L, L]`` oriented **(from, to)**: ``pot[b, t, i, j]``
scores label j at t after label i, and at t = 0 only row 0 is read (the start scores).

torch-struct (Rush 2020) writes the same chain as n - 1 edge potentials ``[B, n-1, L, L]``
oriented **(to, from)**: ``edge[b, t-1, j, i]`` scores the pair (y_{t-1} = i, y_t = j), and it sums
over every first and last label.  The adapter therefore

* transposes ``pot[:, t]`` into ``edge[:, t-1]`` for t >= 1,
* folds the start scores into the first edge: ``edge[:, 0, j, i] += pot[:, 0, 0, i]``,
* gives a length-1 sequence (which has no edge to carry its start scores) a dummy second
  position: ``edge[b, 0, j, i] = pot[b, 0, 0, i]`` for j = 0 and ``NEG`` (torch-struct's own
  log-zero, -1e5) for j > 0, with length 2.  Every path then has exactly one completion with
  its own score, so log Z and the marginals are exact.

torch-struct 0.5 (PyPI) caveats handled here: a batch whose longest sequence has length 1 fails
inside ``LinearChain`` (``math.log(0)`` in ``_bin_length``); a length-1 sequence in a longer
batch gets log Z = log L (its start scores are masked away with the non-existent edges); and
``max(lengths)`` must equal the edge count + 1.  ``NEG`` is -1e5, not -inf, because torch-struct
mixes its own -1e5 into every chart cell; the results are exact as long as path scores differ by
much less than 1e5 (a test uses potentials of magnitude 100 over 1,500 tokens).

The gradient of log Z with respect to the potentials is the marginals (torch-struct's
``LogSemiring``: "Gradients give marginals"), taken here by autograd.  Three scans compute log Z
and its gradient (``scan``), equal within rounding:

    "log"         torch-struct's own ``LinearChain(LogSemiring)``: a binary-tree scan, O(n L^3)
                  work in O(log n) parallel steps, memory O(n L^3) for the backward pass
    "scaled"      the same tree with log-space products through BLAS and a written-out
                  backward (``scaled_scan.py``)
    "sequential"  the scaled forward-backward algorithm, O(n L^2) work in n steps
                  (``sequential_scan.py``)

``tests/test_decode_marginals.py`` checks each against brute-force enumeration and torch-struct;
``tests/oracles/chain.forward_loop``, the textbook forward algorithm, is log Z's slow reference.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch_struct import LinearChain, LogSemiring

from structperc.decode.scaled_scan import NEG, ScaledLinearChain, ScaledLogSemiring
from structperc.decode.scores import check_potentials, path_scores
from structperc.decode.sequential_scan import SequentialLinearChain, Workspace

SCANS = ("log", "scaled", "sequential")  # how log Z is scanned (module docstring)


def to_log_potentials(potentials: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """torch-struct edges [B, N-1, L, L] (to, from) and lengths [B] for ``LinearChain``.

    Args:
        potentials: [B, T, L, L] (from, to); row 0 of t = 0 holds the start scores.
        lengths: [B] long, 1 <= lengths[b] <= T.

    Returns:
        edges: [B, N-1, L, L] with N = max(2, max(lengths)); the start scores are folded into
            edge 0, length-1 sequences get the dummy edge (module docstring), entries past a
            sequence's last edge are 0.
        lengths: [B] long, max(lengths, 2).
    """
    check_potentials(potentials, lengths)
    B, T, L, _ = potentials.shape
    N = max(int(lengths.max()), 2)
    trans = potentials[:, 1:N].transpose(-1, -2)  # [B, min(T, N)-1, L(to), L(from)]
    if trans.shape[1] < N - 1:  # T == 1: no transitions at all
        trans = torch.cat([trans, trans.new_zeros(B, N - 1 - trans.shape[1], L, L)], dim=1)
    start = potentials[:, 0, 0, :].unsqueeze(1)  # [B, 1, L(from)]
    first = first_edge(trans[:, 0], start, lengths)  # [B, L(to), L(from)]
    edges = torch.cat([first.unsqueeze(1), trans[:, 1:]], dim=1)  # [B, N-1, L, L]
    ts_lengths = lengths.clamp(min=2).to(potentials.device)
    real = torch.arange(1, N, device=potentials.device) < ts_lengths[:, None]
    edges = edges.masked_fill(~real.view(B, N - 1, 1, 1), 0.0)  # no padding garbage
    return edges, ts_lengths


def first_edge(edge0: Tensor, start: Tensor, lengths: Tensor) -> Tensor:
    """Edge 0 [B, L(to), L(from)] with the start scores ``start`` [B, 1, L(from)] folded in;
    a length-1 sequence (``lengths`` [B]) gets the dummy edge instead (module docstring)."""
    L = edge0.shape[-1]
    to_idx = torch.arange(L, device=edge0.device).view(1, L, 1)
    dummy = torch.where(to_idx == 0, start, torch.full_like(start, NEG))  # [B, L, L]
    single = (lengths == 1).to(edge0.device).view(-1, 1, 1)
    return torch.where(single, dummy, edge0 + start)


def from_log_potentials(edges: Tensor) -> Tensor:
    """structperc potentials [B, N, L, L] (from, to) of torch-struct edges [B, N-1, L, L].

    The start scores are 0 (torch-struct folds them into the first edge), so every path keeps
    its score: ``to_log_potentials(from_log_potentials(e), lengths) == e`` for lengths >= 2.
    """
    B, _, L, _ = edges.shape
    return torch.cat([edges.new_zeros(B, 1, L, L), edges.transpose(-1, -2)], dim=1)


def labels_to_parts(labels: Tensor, lengths: Tensor, num_labels: int) -> Tensor:
    """Indicator parts [B, N-1, L, L] (to, from) of label sequences, matching ``to_log_potentials``.

    ``(parts * edges).sum((1, 2, 3))`` is the path score.  For lengths >= 2 this equals
    torch-struct's ``LinearChain.to_parts(labels, L, lengths)``; a length-1 sequence marks its
    dummy edge (to 0, from y_0).

    Args:
        labels: [B, T] long label ids, -1 (or anything) past each length.
        lengths: [B] long.
        num_labels: L.
    """
    B, T = labels.shape
    L = num_labels
    N = max(int(lengths.max()), 2)
    y = labels[:, :N].clamp(min=0)
    if y.shape[1] < N:
        y = torch.cat([y, y.new_zeros(B, N - y.shape[1])], dim=1)  # [B, N]
    prev, cur = y[:, :-1], y[:, 1:].clone()  # [B, N-1]
    cur[lengths == 1, 0] = 0  # the dummy position takes label 0
    real = torch.arange(1, N, device=labels.device) < lengths.clamp(min=2)[:, None]  # [B, N-1]
    flat = (cur * L + prev).unsqueeze(-1)  # [B, N-1, 1] index (to, from)
    parts = labels.new_zeros(B, N - 1, L * L)
    parts.scatter_(2, flat, real.long().unsqueeze(-1))
    return parts.view(B, N - 1, L, L)


def check_scan(scan: str) -> str:
    """``scan`` if it names one of ``SCANS``, else ValueError."""
    if scan not in SCANS:
        raise ValueError(f"unknown scan {scan!r}; choose one of {list(SCANS)}")
    return scan


def chain_for(scan: str, workspace: Workspace | None = None) -> LinearChain:
    """The torch-struct linear chain that computes log Z by ``scan`` (module docstring);
    ``workspace``: the sequential scan's buffers kept from one call to the next."""
    if check_scan(scan) == "sequential":
        return SequentialLinearChain(LogSemiring, workspace=workspace)
    if scan == "scaled":
        return ScaledLinearChain(ScaledLogSemiring)
    return LinearChain(LogSemiring)


def log_partition(potentials: Tensor, lengths: Tensor, scan: str = "log") -> Tensor:
    """log Z [B] of the chains (differentiable: its gradient is ``marginals``), by ``scan``."""
    edges, ts_lengths = to_log_potentials(potentials, lengths)
    with torch.set_grad_enabled(torch.is_grad_enabled() and potentials.requires_grad):
        return log_partition_of_edges(edges, ts_lengths, scan)


def log_partition_of_edges(edges: Tensor, ts_lengths: Tensor, scan: str = "log") -> Tensor:
    """log Z [B] of torch-struct edges [B, N-1, L, L] (to, from) with lengths [B] >= 2
    (``to_log_potentials``'s layout), by ``scan``.  torch-struct marks ``edges`` as requiring
    grad: pass a tensor made for the call (autograd's or a fresh one)."""
    return chain_for(scan).sum(edges, lengths=ts_lengths)


def marginals(potentials: Tensor, lengths: Tensor, scan: str = "log") -> Tensor:
    """Edge marginals [B, T, L, L] = d log Z / d potentials, (from, to).

    ``m[b, t, i, j] = p(y_{t-1} = i, y_t = j)`` for 1 <= t < lengths[b]; ``m[b, 0, 0, j] =
    p(y_0 = j)`` (row 0 holds the start, other rows of t = 0 are 0); 0 past each length.
    """
    with torch.enable_grad():
        pot = potentials.detach().requires_grad_(True)
        logz = log_partition(pot, lengths, scan)
        (m,) = torch.autograd.grad(logz.sum(), pot)
    return m


def node_marginals(potentials: Tensor, lengths: Tensor, scan: str = "log") -> Tensor:
    """Per-token marginals [B, T, L]: p(y_t = j | x); rows past each length are 0."""
    return marginals(potentials, lengths, scan).sum(dim=2)


def path_log_probs(potentials: Tensor, lengths: Tensor, paths: Tensor, scan: str = "log") -> Tensor:
    """log p(y | x) = s(y) - log Z [B, n] of any paths [B, n, T] (-1 padded; missing -> -inf).

    This is Collins' (2002) base-model score L(y) for reranking an n-best list.
    """
    with torch.set_grad_enabled(torch.is_grad_enabled() and potentials.requires_grad):
        logz = log_partition(potentials, lengths, scan)  # [B]
        return path_scores(potentials, lengths, paths) - logz.unsqueeze(1)


def nll(potentials: Tensor, lengths: Tensor, gold: Tensor, scan: str = "log") -> Tensor:
    """Negative log-likelihood -log p(y* | x) = log Z - s(y*) [B] of gold labels [B, T]."""
    return log_partition(potentials, lengths, scan) - path_scores(
        potentials, lengths, gold.unsqueeze(1)
    ).squeeze(1)
