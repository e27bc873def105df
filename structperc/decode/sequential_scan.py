"""torch-struct's linear chain scanned position by position (the "sequential" scan).

torch-struct's ``LinearChain`` (and ``scaled_scan.ScaledLinearChain``) compute log Z by a
binary-tree scan: O(log n) parallel steps, but n L x L matrix-matrix products, n L^3
multiply-adds.  The forward algorithm needs n matrix-vector products, n L^2, in n sequential
steps.  On a CPU with the whole training set in one batch of B rows (documents end to end,
``crf/buckets.py``; a row as long as the longest document), the n sequential steps are each one
batched product over the B rows, and the arithmetic drops by a factor of L while the steps'
overhead stays small.

Scaled forward-backward (Rabiner 1989), with torch-struct's edges E [B, N-1, L, L] (to, from):
every edge matrix is shifted by its own maximum m_n = max_{j,i} E[n, j, i], so that
P_n = exp(E_n - m_n) has entries in [0, 1], and the forward vector is renormalised every step:

    a_0 = 1 / L,                 a~_{n+1} = P_n a_n,   c_{n+1} = sum_j a~_{n+1}[j],
    a_{n+1} = a~_{n+1} / c_{n+1},
    log Z = log L + sum_{n < len - 1} (m_n + log c_{n+1}).

Backward, with the same scale factors: b_{len-1} = 1 and b_n = P_n^T b_{n+1} / c_{n+1}; then
a_n . b_n = 1 at every position and the edge marginals (the gradient of log Z, torch-struct's
"gradients give marginals") are

    mu_n[j, i] = d log Z / d E[n, j, i] = a_n[i] P_n[j, i] b_{n+1}[j] / c_{n+1}.

The shift m_n cancels in mu (its gradient is zero).  In floating point a product is lost only if
the scores of one L x L edge matrix spread by more than ~708 nats (float64; 87 in float32), the
same bound as ``scaled_scan.ScaledLogSemiring``'s; a chain whose scale factor falls below
``underflow.RESCUE`` is reported (its factors set to 1 so that nothing becomes NaN), and
``SequentialLinearChain`` scans it again exactly in log space.  Positions past a chain's
length are skipped: their scale factors do not enter log Z, their backward vectors are reset to
1 and their marginals are 0.

Memory: P, the forward vectors and the scale factors are kept for the backward pass.  Tests
compare log Z and the marginals with torch-struct's ``LinearChain(LogSemiring)`` and with
brute-force enumeration.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable
from torch_struct import LinearChain, LogSemiring

from structperc.decode.underflow import RESCUE, log_scan_rows, with_exact_rows


class Workspace:
    """Buffers kept from one call to the next, by name (made again when the shape, strides or
    type change).  The CRF evaluates its objective on the same layout at every L-BFGS step, and
    fresh tensors of hundreds of MB cost first-touch page faults every time (in an L-BFGS run on
    CoNLL-2003 the conversions and sums around the scan took ~0.8 s of a ~2 s evaluation that
    way).  A tensor taken from a workspace is valid until the next call that takes the same
    name: one forward and backward pass at a time."""

    def __init__(self) -> None:
        self.buffers: dict[str, Tensor] = {}

    def empty(self, name: str, shape: tuple[int, ...], like: Tensor, dtype=None) -> Tensor:
        """A contiguous buffer of ``shape`` on ``like``'s device, in ``dtype`` (or ``like``'s)."""
        dtype = dtype or like.dtype
        t = self.buffers.get(name)
        if t is None or t.shape != shape or t.dtype != dtype or t.device != like.device:
            t = self.buffers[name] = torch.empty(shape, dtype=dtype, device=like.device)
        return t

    def like(self, name: str, t: Tensor) -> Tensor:
        """A buffer of ``t``'s shape, strides (memory layout), type and device."""
        b = self.buffers.get(name)
        same = b is not None and b.shape == t.shape and b.stride() == t.stride()
        if not (same and b.dtype == t.dtype and b.device == t.device):
            b = self.buffers[name] = torch.empty_like(t)
        return b


def forward_scan(
    edges: Tensor, lengths: Tensor, workspace: Workspace | None = None
) -> tuple[Tensor, Tensor, tuple[Tensor, Tensor, Tensor, Tensor]]:
    """log Z [B] of edges [B, K, L, L] (to, from), K = N - 1, lengths [B] in 2..N; the chains
    whose scale factors underflowed [B] bool (module docstring); and what the
    backward pass needs: P [K, B, L, L] (time-major; each matrix stored as the edges store theirs,
    (to, from) or transposed), the forward vectors a [N, B, L, 1], the scale factors
    c [N, B, 1, 1] and the real-edge mask [K, B] (module docstring); ``workspace``: where P, a
    and c live (fresh tensors without one)."""
    B, K, L, _ = edges.shape
    ws = workspace or Workspace()
    real = torch.arange(K, device=edges.device).unsqueeze(1) < (lengths - 1).view(1, B)  # [K, B]
    time_major = edges.transpose(0, 1)  # [K, B, L, L], a view
    shift = time_major.amax(dim=(-1, -2))  # [K, B]
    P = ws.like("P", time_major)  # in the edges' memory layout: (to, from) or its transpose
    torch.sub(time_major, shift.view(K, B, 1, 1), out=P)
    P.exp_()
    a = ws.empty("a", (K + 1, B, L, 1), edges)
    c = ws.empty("c", (K + 1, B, 1, 1), edges).fill_(1.0)
    a[0] = 1.0 / L
    for n in range(K):
        nxt = a[n + 1]
        torch.bmm(P[n], a[n], out=nxt)
        cn = c[n + 1]
        torch.sum(nxt, dim=1, keepdim=True, out=cn)
        nxt.div_(cn)
    under = ~(c[1:].view(K, B) >= RESCUE) & real  # [K, B]
    underflow = under.any(dim=0)  # [B]
    if bool(underflow.any()):  # those chains are scanned again: keep theirs finite
        lost = underflow.view(1, B, 1, 1)
        c.masked_fill_(lost, 1.0)
        a.masked_fill_(lost, 1.0 / L)
    log_c = c[1:].view(K, B).log() + shift  # [K, B]
    logz = log_c.masked_fill_(~real, 0.0).sum(dim=0) + math.log(L)  # [B]
    return logz, underflow, (P, a, c, real)


def backward_scan(
    g: Tensor, saved: tuple[Tensor, Tensor, Tensor, Tensor], workspace: Workspace | None = None
) -> Tensor:
    """g [B] times the edge marginals, [B, K, L, L] (to, from) (a view of a time-major tensor
    stored as the edges are; in ``workspace`` if given)."""
    P, a, c, real = saved
    K, B, L, _ = P.shape
    ws = workspace or Workspace()
    b = ws.like("b", a).fill_(1.0)  # [N, B, L, 1]; b_{N-1} = 1
    tmp = torch.empty_like(a[0])
    ones = torch.ones_like(a[0])
    for n in range(K - 1, -1, -1):
        torch.bmm(P[n].transpose(1, 2), b[n + 1], out=tmp)
        tmp.div_(c[n + 1])
        torch.where(real[n].view(B, 1, 1), tmp, ones, out=b[n])
    # mu_n[j, i] = a_n[i] P_n[j, i] b_{n+1}[j] / c_{n+1}, times g, 0 past each length
    weight = b[1:] / c[1:]  # [K, B, L, 1] over j
    weight.mul_((real.to(P.dtype) * g.view(1, B)).view(K, B, 1, 1))
    mu = ws.like("mu", P)  # (not over P: a graph kept with retain_graph may run this again)
    torch.mul(P, a[:-1].transpose(-1, -2), out=mu)  # a_n[i] along the rows
    mu.mul_(weight)
    return mu.transpose(0, 1)


class _ForwardBackward(torch.autograd.Function):
    """log Z [1, B] of torch-struct's converted edges [1, B, K, L, L] (to, from) by
    ``forward_scan``, and the chains that underflowed [B] bool; gradient: the marginals.
    (The semiring's dimension is indexed inside: autograd's backward of a ``select`` would fill
    a zero tensor of the edges' size.)"""

    @staticmethod
    def forward(ctx, edges: Tensor, lengths: Tensor, workspace: Workspace | None):
        logz, underflow, saved = forward_scan(edges.detach()[0], lengths, workspace)
        ctx.save_for_backward(*saved)
        ctx.workspace = workspace
        ctx.mark_non_differentiable(underflow)
        return logz.unsqueeze(0), underflow

    @staticmethod
    @once_differentiable  # (torch-struct's marginals ask for create_graph; no second order)
    def backward(ctx, g: Tensor, _) -> tuple[Tensor, None, None]:
        mu = backward_scan(g[0], ctx.saved_tensors, ctx.workspace)
        return mu.unsqueeze(0), None, None


class SequentialLinearChain(LinearChain):
    """torch-struct's ``LinearChain`` whose ``logpartition`` is the scaled forward algorithm
    (module docstring): log Z and, through its backward pass, the marginals of the log semiring,
    whatever semiring of size 1 it is given.  ``workspace``: buffers reused from one call to
    the next (``Workspace``; the CRF's objective), else fresh tensors every call.  Chains
    whose scale factors underflowed are scanned again exactly (``underflow.py``)."""

    def __init__(self, semiring=LogSemiring, workspace: Workspace | None = None):
        super().__init__(semiring)
        self.workspace = workspace

    def logpartition(self, log_potentials, lengths=None, force_grad=False):
        edges, batch, N, C, lengths = self._check_potentials(log_potentials, lengths)
        # edges [1, B, N-1, C, C] (to, from)
        lengths = lengths.to(edges.device)
        logz, underflow = _ForwardBackward.apply(edges, lengths, self.workspace)  # [1, B], [B]
        logz = with_exact_rows(logz[0], underflow, lambda r: log_scan_rows(edges[0], lengths, r))
        return logz.unsqueeze(0), [edges]
