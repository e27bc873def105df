"""Decoding under side information, as offsets of the node scores: restrictions and costs.

Every decoder of the chain reads potentials pot[t, i, j] = node[t, j] + edge[t, i, j]; adding an
offset o[t, j] to the node scores changes the score of a labeling y by sum_t o[t, y_t] and
nothing else, so one transform serves Viterbi, the n-best, the marginals and the partition
function (torch-struct's lesson: vary the potentials, not the dynamic program).

* **Restriction** (constraints, partial annotation): o[t, j] = -inf where label j is not allowed
  at token t.  A labeling that uses a forbidden label scores -inf; the others keep their scores,
  so the best (n best) restricted labelings are the best (n best) allowed ones, exactly, and the
  log-semiring scans (which take torch-struct's log-zero NEG for -inf) sum exactly the allowed
  labelings: log Z_allowed = logsumexp over the allowed y of s(y) (Tsuboi et al. 2008).
* **Cost augmentation** (Taskar et al. 2004's loss-augmented inference; Gimpel & Smith 2010's
  softmax-margin for the likelihood): o[t, j] = c(y*_t) [j != y*_t], so the decoder maximises
  s(y) + Delta(y*, y) with Delta(y*, y) = sum_t c(y*_t) [y_t != y*_t], a Hamming loss weighted by
  the cost of the gold label missed (``learn/costs.py``).
"""

from __future__ import annotations

import torch
from torch import Tensor


def restriction(allowed: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
    """Offsets [..., L]: 0 where ``allowed`` [..., L] (bool) holds, -inf elsewhere."""
    out = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    return out.masked_fill_(~allowed, float("-inf"))


def cost_offsets(gold: Tensor, costs: Tensor, known: Tensor | None = None) -> Tensor:
    """Offsets [T, L]: o[t, j] = costs[gold[t]] for j != gold[t], 0 at the gold label and at
    tokens that are not ``known`` ([T] bool; None: all known).

    gold: [T] long label ids (a -1 is an unknown token, cost 0); costs: [L] float."""
    L = costs.shape[0]
    labels = torch.arange(L, device=gold.device)
    safe = gold.clamp(min=0)
    out = costs.to(gold.device)[safe].unsqueeze(1) * (labels.unsqueeze(0) != safe.unsqueeze(1))
    mask = gold >= 0 if known is None else known & (gold >= 0)
    return out * mask.unsqueeze(1).to(out.dtype)


def combined(first: Tensor | None, second: Tensor | None) -> Tensor | None:
    """The sum of two offsets, either of which may be None (no offset)."""
    if first is None:
        return second
    if second is None:
        return first
    return first + second


def offset_potentials(potentials: Tensor, offset: Tensor) -> Tensor:
    """potentials [B, T, L, L] (from, to) + offset [B, T, L] on every label j at every t (row 0
    of t = 0, the start scores, included): a new tensor."""
    return potentials + offset.to(potentials.dtype).unsqueeze(2)
