"""Slow, obviously correct dynamic programs that the tests compare the fast ones against."""

from __future__ import annotations

import itertools

import torch
from torch import Tensor


def path_score(potentials: Tensor, path: list[int]) -> float:
    """Score of one label path under one sequence's potentials [T, L, L]."""
    score = float(potentials[0, 0, path[0]])
    for t in range(1, len(path)):
        score += float(potentials[t, path[t - 1], path[t]])
    return score


def viterbi_loop(potentials: Tensor, length: int) -> tuple[list[int], float]:
    """Textbook Viterbi over one sequence [T, L, L], ties to the smallest label index."""
    L = potentials.shape[-1]
    alpha = [float(potentials[0, 0, j]) for j in range(L)]
    bps = []
    for t in range(1, length):
        new, bp = [], []
        for j in range(L):
            cands = [alpha[i] + float(potentials[t, i, j]) for i in range(L)]
            best = max(range(L), key=lambda i: (cands[i], -i))
            new.append(cands[best])
            bp.append(best)
        alpha = new
        bps.append(bp)
    last = max(range(L), key=lambda j: (alpha[j], -j))
    path = [last]
    for bp in reversed(bps):
        path.append(bp[path[-1]])
    return path[::-1], alpha[last]


def forward_loop(potentials: Tensor, length: int) -> float:
    """Textbook forward algorithm over one sequence [T, L, L] in float64: log Z, the logsumexp
    of every path's score (``marginals.log_partition``'s reference)."""
    alpha = potentials[0, 0].double()  # [L]
    for t in range(1, length):
        alpha = torch.logsumexp(alpha.unsqueeze(1) + potentials[t].double(), dim=0)
    return float(torch.logsumexp(alpha, 0))


def enumerate_paths(potentials: Tensor, length: int) -> list[tuple[float, tuple[int, ...]]]:
    """Every path of one sequence with its score, best first (brute force, L**length paths)."""
    L = potentials.shape[-1]
    scored = [
        (path_score(potentials, list(p)), p) for p in itertools.product(range(L), repeat=length)
    ]
    scored.sort(key=lambda sp: -sp[0])
    return scored


def as_tensor_path(path: list[int], T: int) -> Tensor:
    return torch.tensor(path + [-1] * (T - len(path)))
