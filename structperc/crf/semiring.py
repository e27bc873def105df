"""A faster log semiring for torch-struct: log-space matrix products through BLAS.

torch-struct's ``LogSemiring.matmul`` forms every triple a[i, k] + b[k, j] of a product of
L x L matrices and takes ``logsumexp`` over k: L^3 exponentials per product.  With the row maxima
a*_i = max_k a[i, k] and column maxima b*_j = max_k b[k, j],

    logsumexp_k (a[i,k] + b[k,j]) = log(sum_k e^{a[i,k] - a*_i} e^{b[k,j] - b*_j}) + a*_i + b*_j,

an ordinary matrix product of two matrices with entries in [0, 1]: 2 L^2 exponentials and a BLAS
``matmul`` (the scaling trick of HMM forward-backward, Rabiner 1989, which Kazama & Torisawa 2007
used in CRF++ for document-long sequences).  The identity is exact; in floating point a term is
lost only if it falls below the smallest normal number relative to the maxima (e^-708 in float64),
i.e. only terms that are negligible in the sum anyway, unless the scores spread by hundreds of nats
within one L x L block.  A result that underflows entirely is clamped to log(tiny) (gradient 0)
instead of -inf, so gradients stay finite.  Use float64 potentials (``CRF(dtype="float64")``).

The maxima are detached: the result does not depend on them, so their gradient is zero.

``sum`` over a dimension of size 2 is torch-struct's chart initialisation, once per bucket over
the whole chart [B, bin_N, L, L]: ``c = a (+) b`` with a the identity matrices of the padding and
b the edge potentials, each the semiring zero where the other holds.  It uses ``logaddexp``
forward with a shorter backward (``_LogAddExp``): with w = e^{a - c} = sigmoid(a - b),

    dc/da = w,   dc/db = 1 - w,

so the gradients are g w and g - g w: one exp, where autograd's ``logaddexp`` backward takes two
exp and two divisions (g / (1 + e^{b-a}), g / (1 + e^{a-b})).  Identical where one side is the
semiring zero (w is exactly 0 or 1, the case of the chart), within rounding elsewhere.  Measured
on one 8,000-token bucket: the DP backward 0.24 -> 0.18 s.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch_struct import LogSemiring


class _LogAddExp(torch.autograd.Function):
    """c = logaddexp(a, b) with the backward (g w, g - g w), w = e^{a - c} (module docstring)."""

    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor) -> Tensor:
        c = torch.logaddexp(a, b)
        ctx.save_for_backward(a, c)
        return c

    @staticmethod
    def backward(ctx, g: Tensor) -> tuple[Tensor, Tensor]:
        a, c = ctx.saved_tensors
        # a = b = -inf gives c = -inf and 0/0: take w = 1/2, its value wherever a = b
        grad_a = torch.sub(a, c).exp_().nan_to_num_(0.5).mul_(g)
        return grad_a, g - grad_a


class ScaledLogSemiring(LogSemiring):
    """The log semiring (logsumexp, +) with ``matmul`` by rescaled BLAS products.

    Cost of one [..., L, L] x [..., L, L] product: 2 L^2 exp, L^2 log, one batched matmul
    (``LogSemiring``: L^3 exp and a logsumexp over an [..., L, L, L] tensor).
    """

    @classmethod
    def matmul(cls, a: Tensor, b: Tensor) -> Tensor:
        """c[..., i, j] = logsumexp_k a[..., i, k] + b[..., k, j]."""
        a_max = a.detach().amax(dim=-1, keepdim=True)  # [..., m, 1]
        b_max = b.detach().amax(dim=-2, keepdim=True)  # [..., 1, n]
        prod = torch.matmul((a - a_max).exp(), (b - b_max).exp())  # [..., m, n] in [0, k]
        tiny = torch.finfo(prod.dtype).tiny
        return prod.clamp_min(tiny).log() + a_max + b_max

    @staticmethod
    def sum(xs: Tensor, dim: int = -1) -> Tensor:
        """logsumexp over ``dim``."""
        if xs.shape[dim] == 2:
            a, b = xs.unbind(dim)
            return _LogAddExp.apply(a, b)
        return torch.logsumexp(xs, dim=dim)


SEMIRINGS = {"log": LogSemiring, "scaled": ScaledLogSemiring}


def get_semiring(name: str) -> type[LogSemiring]:
    """``"log"`` (torch-struct's own) or ``"scaled"`` (``ScaledLogSemiring``)."""
    try:
        return SEMIRINGS[name]
    except KeyError:
        raise ValueError(f"unknown semiring {name!r}; choose one of {sorted(SEMIRINGS)}") from None
