"""A faster log semiring for torch-struct: log-space matrix products through BLAS.

torch-struct's ``LogSemiring.matmul`` forms every triple a[i, k] + b[k, j] of a product of
L x L matrices and takes ``logsumexp`` over k: L^3 exponentials per product.  With the row maxima
a*_i = max_k a[i, k] and column maxima b*_j = max_k b[k, j],

    logsumexp_k (a[i,k] + b[k,j]) = log(sum_k e^{a[i,k] - a*_i} e^{b[k,j] - b*_j}) + a*_i + b*_j,

an ordinary matrix product P = E_a E_b of two matrices with entries in [0, 1]: 2 L^2 exponentials
and a BLAS ``matmul`` (the scaling trick of HMM forward-backward, Rabiner 1989, which Kazama &
Torisawa 2007 used in CRF++ for document-long sequences).  The identity is exact; in floating
point a term is lost only if it falls below the smallest normal number relative to the maxima
(e^-708 in float64), i.e. only terms that are negligible in the sum anyway, unless the scores
spread by hundreds of nats within one L x L block.  A result that underflows entirely is clamped
to log(tiny) (gradient 0) instead of -inf, so gradients stay finite.  Use float64 potentials
(``CRF(dtype="float64")``).

The backward is written out (``scaled_product_backward``) instead of autograd's chain through
``exp``, ``matmul``, ``clamp``, ``log`` and ``add``: with c = log P + a* + b* and upstream g,

    dL/da = E_a * ((g / P) E_b^T),     dL/db = E_b * (E_a^T (g / P)),

because E_a[i,k] E_b[k,j] / P[i,j] = e^{a[i,k] + b[k,j] - c[i,j]}: the maxima cancel, so their
gradient is zero.  ``pair_product`` applies it to the neighbouring pairs of a whole torch-struct
chart at once (``chain.ScaledLinearChain``'s scan), writing both halves of the gradient into one
tensor.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable
from torch_struct import LogSemiring

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


class _PairProduct(torch.autograd.Function):
    """chart [S, B, n, L, L] -> [S, B, n/2, L, L]: out[.., k] = chart[.., 2k+1] (x) chart[.., 2k],
    one step of torch-struct's linear-chain scan; n even."""

    @staticmethod
    def forward(ctx, chart: Tensor) -> Tensor:
        c, saved = scaled_product(chart[:, :, 1::2], chart[:, :, 0::2])
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
        return grad


def pair_product(chart: Tensor) -> Tensor:
    """[S, B, n, L, L] -> [S, B, n/2, L, L]: each odd position times the even one before it."""
    return _PairProduct.apply(chart)


class ScaledLogSemiring(LogSemiring):
    """The log semiring (logsumexp, +) with ``matmul`` by rescaled BLAS products.

    Cost of one [..., L, L] x [..., L, L] product: 2 L^2 exp, L^2 log, one batched matmul
    (``LogSemiring``: L^3 exp and a logsumexp over an [..., L, L, L] tensor).
    ``chain.ScaledLinearChain`` is the linear chain to use it with.
    """

    @classmethod
    def matmul(cls, a: Tensor, b: Tensor) -> Tensor:
        """c[..., i, j] = logsumexp_k a[..., i, k] + b[..., k, j]."""
        return _ScaledProduct.apply(a, b)


class SequentialLogSemiring(LogSemiring):
    """The log semiring, scanned position by position: ``sequential.SequentialLinearChain``'s
    scaled forward-backward (L^2 work a position instead of the tree scan's L^3).  Its own
    operations are torch-struct's ``LogSemiring``'s; the name selects the chain."""


SEMIRINGS = {"log": LogSemiring, "scaled": ScaledLogSemiring, "sequential": SequentialLogSemiring}


def get_semiring(name: str) -> type[LogSemiring]:
    """``"log"`` (torch-struct's own) or ``"scaled"`` (``ScaledLogSemiring``)."""
    try:
        return SEMIRINGS[name]
    except KeyError:
        raise ValueError(f"unknown semiring {name!r}; choose one of {sorted(SEMIRINGS)}") from None
