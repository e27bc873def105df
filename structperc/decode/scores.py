"""The score of given labelings of a first-order chain: s(y) = Φ(x, y)·w from the potentials.

With potentials ``[B, T, L, L]`` oriented (from, to) as in ``viterbi.py``,

    s(y) = pot[0, 0, y_0] + sum_{t=1}^{n-1} pot[t, y_{t-1}, y_t],

summed in that order (the start score, then the transitions), for any number of paths per
sequence in one gather.  Every learner, the CRF's likelihood and the rescoring of n-best lists
read path scores from here; ``tests/oracles/chain.path_score`` is the tests' loop over the same sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


def check_potentials(potentials: Tensor, lengths: Tensor) -> None:
    """Raise ValueError unless potentials is [B, T, L, L] and 1 <= lengths[b] <= T."""
    if potentials.dim() != 4 or potentials.shape[-1] != potentials.shape[-2]:
        raise ValueError(f"potentials must be [B, T, L, L], got {tuple(potentials.shape)}")
    B, T = potentials.shape[:2]
    if lengths.shape != (B,):
        raise ValueError(f"lengths must be [B] = [{B}], got {tuple(lengths.shape)}")
    if B and (int(lengths.min()) < 1 or int(lengths.max()) > T):
        raise ValueError(f"lengths must lie in 1..T = 1..{T}, got {lengths.tolist()}")


def path_scores(potentials: Tensor, lengths: Tensor, paths: Tensor) -> Tensor:
    """Scores s(y) [B, n] of n paths per sequence; -inf for an all -1 (missing) path.

    Args:
        potentials: [B, T, L, L] (from, to).
        lengths: [B] long.
        paths: [B, n, T'] long label ids (T' <= T), -1 past each length; a path whose first
            label is -1 stands for "no path" (as ``decode.nbest`` pads) and scores -inf.
    """
    check_potentials(potentials, lengths)
    B, T, L, _ = potentials.shape
    if paths.dim() != 3 or paths.shape[0] != B or paths.shape[2] > T:
        raise ValueError(f"paths must be [B={B}, n, T<={T}], got {tuple(paths.shape)}")
    if paths.shape[2] < int(lengths.max()):
        raise ValueError(f"paths have {paths.shape[2]} positions, fewer than the longest sequence")
    return indexed_scores(potentials, path_index(paths, lengths, L))


@dataclass
class PathIndex:
    """Where ``path_scores`` reads n paths per sequence, made once for fixed paths (the lists of
    a reranker, scored again after every update): ``indexed_scores`` then costs one gather.

    pairs:   [B, n, T'] previous label * L + label (previous 0 at t = 0; 0 past a length), int16
             when L * L fits it (int32 otherwise): a reranker keeps one per training list.
    real:    [B, 1, T'] bool, t < lengths[b].
    missing: [B, n] bool, the path is all -1 (scores -inf).
    """

    pairs: Tensor
    real: Tensor
    missing: Tensor

    def to(self, device) -> PathIndex:
        return PathIndex(self.pairs.to(device), self.real.to(device), self.missing.to(device))


def path_index(paths: Tensor, lengths: Tensor, num_labels: int) -> PathIndex:
    """The ``PathIndex`` of paths [B, n, T'] (as ``path_scores`` takes them) of sequences
    ``lengths``; ValueError for a label outside 0..L-1 inside a sequence."""
    L = num_labels
    Tp = paths.shape[2]
    real = torch.arange(Tp, device=paths.device) < lengths.to(paths.device)[:, None]  # [B, T']
    real = real.unsqueeze(1)  # [B, 1, T']
    missing = paths[:, :, 0] < 0  # [B, n]
    bad = real & ~missing.unsqueeze(-1) & ((paths < 0) | (paths >= L))
    if bool(bad.any()):
        b, k, t = (int(v) for v in bad.nonzero()[0])
        value = int(paths[b, k, t])
        raise ValueError(f"paths[{b}, {k}, {t}] = {value} is not a label in 0..{L - 1}")
    y = torch.where(real & ~missing.unsqueeze(-1), paths, torch.zeros_like(paths))  # [B, n, T']
    prev = torch.cat([torch.zeros_like(y[:, :, :1]), y[:, :, :-1]], dim=2)  # row 0 at t = 0
    small = torch.int16 if L * L <= torch.iinfo(torch.int16).max else torch.int32
    return PathIndex((prev * L + y).to(small), real, missing)


def indexed_scores(potentials: Tensor, index: PathIndex) -> Tensor:
    """``path_scores`` of the paths of ``index`` under ``potentials`` [B, T, L, L]: [B, n]."""
    B, T, L, _ = potentials.shape
    n, Tp = index.pairs.shape[1], index.pairs.shape[2]
    t_off = torch.arange(Tp, device=potentials.device) * (L * L)  # [T']
    flat = (t_off + index.pairs.long()).view(B, n * Tp)  # into pot[b].view(T * L * L)
    gathered = potentials.reshape(B, T * L * L).gather(1, flat).view(B, n, Tp)
    gathered = torch.where(index.real, gathered, torch.zeros_like(gathered))
    scores = gathered[:, :, 0] + gathered[:, :, 1:].sum(-1)  # [B, n]: start + transitions
    return scores.masked_fill(index.missing, float("-inf"))
