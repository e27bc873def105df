"""Max-plus (tropical) algebra on label-transition matrices.

A first-order chain's potentials are matrices ``M_t[i, j]`` (score of label j at t after label i
at t-1).  The best score of a path ending in j at t is the max-plus product

    alpha_t = alpha_0 (x) M_1 (x) ... (x) M_t,    (a (x) M)[j] = max_i a[i] + M[i, j].

Because (x) is associative, the T sequential steps of Viterbi can be regrouped into blocks
(``viterbi.py``), which cuts the number of tensor operations from O(T) to O(sqrt(T)).
"""

from __future__ import annotations

import torch
from torch import Tensor


def mp_matmul(a: Tensor, b: Tensor) -> Tensor:
    """Max-plus matrix product over the last two dims: [..., I, K] x [..., K, J] -> [..., I, J]."""
    return (a.unsqueeze(-1) + b.unsqueeze(-3)).amax(dim=-2)


def mp_vecmat(v: Tensor, m: Tensor) -> Tensor:
    """Max-plus vector-matrix product: [..., K] x [..., K, J] -> [..., J]."""
    return (v.unsqueeze(-1) + m).amax(dim=-2)


def mp_identity(n: int, *, dtype: torch.dtype, device: torch.device | str) -> Tensor:
    """[n, n] max-plus identity: 0 on the diagonal, -inf elsewhere."""
    eye = torch.full((n, n), float("-inf"), dtype=dtype, device=device)
    eye.diagonal().zero_()
    return eye
