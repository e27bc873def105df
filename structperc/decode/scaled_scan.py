"""torch-struct's linear-chain tree scan with log-space products through BLAS (the "scaled" scan).

**The scaled log-space product.**  torch-struct's ``LogSemiring.matmul`` forms every triple
a[i, k] + b[k, j] of a product of L x L matrices and takes ``logsumexp`` over k: L^3
exponentials per product.  With the row maxima a*_i = max_k a[i, k] and column maxima
b*_j = max_k b[k, j],

    logsumexp_k (a[i,k] + b[k,j]) = log(sum_k e^{a[i,k] - a*_i} e^{b[k,j] - b*_j}) + a*_i + b*_j,

an ordinary matrix product P = E_a E_b of two matrices with entries in [0, 1]: 2 L^2 exponentials
and a BLAS ``matmul`` (the scaling trick of HMM forward-backward, Rabiner 1989, which Kazama &
Torisawa 2007 used in CRF++ for document-long sequences).  The identity is exact; in floating
point a term is lost only if it falls below the smallest normal number relative to the maxima
(e^-708 in float64), i.e. only terms that are negligible in the sum anyway, unless the scores
spread by hundreds of nats within one L x L block.  A result that underflows entirely is clamped
to log(tiny) (gradient 0) instead of -inf, so gradients stay finite.  Use float64 potentials
(``CRF(dtype="float64")``).  An entry below ``underflow.RESCUE`` whose largest term lies above
NEG / 2 (a real term, not one of the log-semiring's zeros: padding, forbidden transitions) marks
its chain as lost, and ``ScaledLinearChain`` scans the chains so marked again exactly in log
space (``underflow.py``).

The backward is written out (``scaled_product_backward``) instead of autograd's chain through
``exp``, ``matmul``, ``clamp``, ``log`` and ``add``: with c = log P + a* + b* and upstream g,

    dL/da = E_a * ((g / P) E_b^T),     dL/db = E_b * (E_a^T (g / P)),

because E_a[i,k] E_b[k,j] / P[i,j] = e^{a[i,k] + b[k,j] - c[i,j]}: the maxima cancel, so their
gradient is zero.  ``ScaledLogSemiring`` is the semiring with that product; ``pair_product``
applies it to the neighbouring pairs of a whole chart at once, writing both halves of the
gradient into one tensor.

**The scan.**  torch-struct's ``LinearChain.logpartition`` (Rush 2020) computes log Z of a chain
of N - 1 edge potentials by a binary-tree scan: pad the edges to bin_N = 2^ceil(log2(N - 1))
positions with identity matrices past each length, then log2(bin_N) times replace the chart by
the products of its neighbouring pairs,

    chart'[.., k] = chart[.., 2k + 1] (x) chart[.., 2k],     (x) = log-space matrix product,

and log Z = logsumexp over the one matrix left: O(n L^3) work in O(log n) parallel steps.
``ScaledLinearChain`` runs the same scan and changes only what costs without computing anything:

* **the chart's first level.**  torch-struct builds it as ``logaddexp(identity, edges)`` over the
  whole [B, bin_N, L, L] chart, each cell being the semiring zero on one side: an ``exp`` and a
  ``log`` per cell forward and backward for a result that is one side or the other.  Here it is
  ``where(padding, identity, edges)``, and when every chain fills the chart (bin_N = N - 1 and all
  lengths N: every packed row of the CRF's buckets) the edges themselves.  The two agree to
  rounding: logaddexp(-1e5, x) = x for any score far above -1e5, and a padded cell's off-diagonal
  is -1e5 here against -1e5 + log 2 in torch-struct (both zero in the semiring: e^-1e5 = 0).
* **the pair products** are ``pair_product``: one autograd node per level, with its backward
  written out and both halves of the gradient written into one tensor.  Autograd through
  ``chart[:, :, 1::2]`` and ``chart[:, :, 0::2]`` fills a zero tensor of the parent's size for
  each slice and adds them.

On one bucket of 12 packed rows of 4,097 tokens (L = 9, float64, one thread) the forward went
0.170 -> 0.059 s and the backward 0.206 -> 0.055 s.  The result, its gradient (the marginals:
torch-struct's "gradients give marginals") and ``LinearChain``'s interface are unchanged; tests
compare both with torch-struct's ``LinearChain(LogSemiring)`` and with brute force.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable
from torch_struct import LinearChain, LogSemiring

from structperc.decode.underflow import RESCUE, log_scan_rows, with_exact_rows

NEG = -1e5  # torch-struct's log-semiring zero (``LogSemiring.zero_``; -1e5, not -inf)


def scaled_product(a: Tensor, b: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor, Tensor]]:
    """c [..., m, n] = logsumexp_k a[..., m, k] + b[..., k, n], and (E_a, E_b, P) for the
    backward (module docstring)."""
    a_max = a.amax(dim=-1, keepdim=True)  # [..., m, 1]
    b_max = b.amax(dim=-2, keepdim=True)  # [..., 1, n]
    ea = torch.sub(a, a_max).exp_()  # [..., m, k] in [0, 1]
    eb = torch.sub(b, b_max).exp_()  # [..., k, n] in [0, 1]
    prod = torch.matmul(ea, eb)  # [..., m, n] in [0, k]
    tiny = torch.finfo(prod.dtype).tiny
    return prod.clamp_min(tiny).log_().add_(a_max).add_(b_max), (ea, eb, prod)


def scaled_product_backward(
    g: Tensor, saved: tuple[Tensor, Tensor, Tensor], out_a: Tensor, out_b: Tensor
) -> None:
    """Write dL/da into ``out_a`` and dL/db into ``out_b`` (module docstring); where P
    underflowed the forward clamped it, and the gradient is 0 (as ``clamp_min``'s)."""
    ea, eb, prod = saved
    tiny = torch.finfo(prod.dtype).tiny
    q = torch.where(prod >= tiny, g / prod.clamp_min(tiny), 0.0)  # [..., m, n]
    torch.mul(torch.matmul(q, eb.transpose(-1, -2)), ea, out=out_a)
    torch.mul(torch.matmul(ea.transpose(-1, -2), q), eb, out=out_b)


class _ScaledProduct(torch.autograd.Function):
    """c = a (x) b in the log semiring, by ``scaled_product``."""

    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor) -> Tensor:
        c, saved = scaled_product(a, b)
        ctx.save_for_backward(*saved)
        return c

    @staticmethod
    @once_differentiable  # (torch-struct's marginals ask for create_graph; no second order)
    def backward(ctx, g: Tensor) -> tuple[Tensor, Tensor]:
        ea, eb, _ = ctx.saved_tensors
        ga, gb = torch.empty_like(ea), torch.empty_like(eb)
        scaled_product_backward(g, ctx.saved_tensors, ga, gb)
        return ga, gb


def lost_chains(a: Tensor, b: Tensor, prod: Tensor) -> Tensor | None:
    """The chains (dimension 1 of a [S, B, n, L, L], b and ``prod`` = E_a E_b) with an entry of
    the product below ``RESCUE`` whose largest term, relative to the maxima the product shifted
    by, is a real score (above NEG / 2): its sum may have lost terms to underflow.  [B] bool,
    or None when no entry is that small (the usual case: nothing more is computed)."""
    small = prod < RESCUE
    if not bool(small.any()):
        return None
    s, r, k, i, j = small.nonzero(as_tuple=True)  # [M] each
    rows_a = a[s, r, k, i, :]  # [M, L]: a[i, :]
    cols_b = b[s, r, k, :, j]  # [M, L]: b[:, j]
    largest = (rows_a + cols_b).amax(dim=-1) - rows_a.amax(dim=-1) - cols_b.amax(dim=-1)  # [M]
    lost = torch.zeros(a.shape[1], dtype=torch.bool, device=a.device)
    lost[r[largest > NEG / 2]] = True
    return lost


class _PairProduct(torch.autograd.Function):
    """chart [S, B, n, L, L] -> [S, B, n/2, L, L]: out[.., k] = chart[.., 2k+1] (x) chart[.., 2k],
    one step of torch-struct's linear-chain scan; n even.  ``lost`` [B] bool: set where a chain
    lost a product to underflow (``lost_chains``)."""

    @staticmethod
    def forward(ctx, chart: Tensor, lost: Tensor | None) -> Tensor:
        a, b = chart[:, :, 1::2], chart[:, :, 0::2]
        c, saved = scaled_product(a, b)
        if lost is not None:
            more = lost_chains(a, b, saved[2])
            if more is not None:
                lost |= more
        ctx.save_for_backward(*saved)
        ctx.chart_shape = chart.shape
        return c

    @staticmethod
    @once_differentiable
    def backward(ctx, g: Tensor) -> Tensor:
        # one gradient of the chart's shape; autograd through the two slices would fill a zero
        # tensor of that shape for each and add them
        grad = g.new_empty(ctx.chart_shape)
        scaled_product_backward(g, ctx.saved_tensors, grad[:, :, 1::2], grad[:, :, 0::2])
        return grad, None


def pair_product(chart: Tensor, lost: Tensor | None = None) -> Tensor:
    """[S, B, n, L, L] -> [S, B, n/2, L, L]: each odd position times the even one before it;
    ``lost`` [B] bool (if given) marks the chains that lost a product to underflow
    (``lost_chains``)."""
    return _PairProduct.apply(chart, lost)


class ScaledLogSemiring(LogSemiring):
    """The log semiring (logsumexp, +) with ``matmul`` by rescaled BLAS products.

    Cost of one [..., L, L] x [..., L, L] product: 2 L^2 exp, L^2 log, one batched matmul
    (``LogSemiring``: L^3 exp and a logsumexp over an [..., L, L, L] tensor).
    ``ScaledLinearChain`` is the linear chain to use it with.
    """

    @classmethod
    def matmul(cls, a: Tensor, b: Tensor) -> Tensor:
        """c[..., i, j] = logsumexp_k a[..., i, k] + b[..., k, j]."""
        return _ScaledProduct.apply(a, b)


class ScaledLinearChain(LinearChain):
    """torch-struct's ``LinearChain`` whose ``logpartition`` skips the chart's logaddexp
    initialisation and scans with ``pair_product`` (module docstring); the scaled log semiring's
    products whatever ``semiring`` of size 1 it is given (its ``sum`` is used for the last step).
    Chains that lost a product to underflow are scanned again exactly (``underflow.py``)."""

    def logpartition(self, log_potentials, lengths=None, force_grad=False):
        semiring = self.semiring
        edges, batch, N, C, lengths = self._check_potentials(log_potentials, lengths)
        # edges [1, B, N-1, C, C] (to, from)
        log_N, bin_N = self._bin_length(N - 1)
        if bin_N == N - 1 and bool((lengths == N).all()):
            chart = edges  # every chain fills the chart: no padding
        else:
            eye = edges.new_full((C, C), NEG).fill_diagonal_(0.0)  # the semiring's one
            chart = torch.nn.functional.pad(edges, (0, 0, 0, 0, 0, bin_N - (N - 1)))
            pad = torch.arange(bin_N, device=edges.device) >= (lengths - 1).view(batch, 1)
            chart = torch.where(pad.view(1, batch, bin_N, 1, 1), eye, chart)  # [1, B, bin_N, C, C]
        lost = torch.zeros(batch, dtype=torch.bool, device=edges.device)
        for _ in range(log_N):
            chart = pair_product(chart, lost)
        v = semiring.sum(semiring.sum(chart[:, :, 0].contiguous()))  # [1, B]
        v = with_exact_rows(v[0], lost, lambda rows: log_scan_rows(edges[0], lengths, rows))
        return v.unsqueeze(0), [edges]
