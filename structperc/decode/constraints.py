"""Tag-scheme constraints as potentials: disallowed transitions score -inf.

IOB2 (Tjong Kim Sang & Veenstra 1999; as in allennlp's ``allowed_transitions``): ``I-X`` may only
follow ``B-X`` or ``I-X``, and a sequence may not start with ``I-X``.  Applied to the scores
before decoding (``decoder.constraints=iob2``), so Viterbi and n-best both honour it and no
decoder needs to know about tags: ``constrain`` on padded potentials [B, T, L, L], and
``constrain_tokens`` on the token scores that ``viterbi_packed`` reads.
"""

from __future__ import annotations

import torch
from torch import Tensor

SCHEMES = ("none", "iob2")


def allowed_transitions(labels: list[str], scheme: str = "iob2") -> tuple[Tensor, Tensor]:
    """(start [L] bool, transitions [L, L] bool, [from, to]) of the allowed moves."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown constraint scheme {scheme!r}; expected one of {SCHEMES}")
    L = len(labels)
    start = torch.ones(L, dtype=torch.bool)
    trans = torch.ones(L, L, dtype=torch.bool)
    if scheme == "none":
        return start, trans
    for j, to in enumerate(labels):
        if to.startswith("I-"):
            start[j] = False
            typ = to[2:]
            for i, frm in enumerate(labels):
                trans[i, j] = frm in (f"B-{typ}", f"I-{typ}")
    return start, trans


def constrain(potentials: Tensor, start: Tensor, trans: Tensor) -> Tensor:
    """A copy of potentials [B, T, L, L] with disallowed moves set to -inf."""
    neg = torch.tensor(float("-inf"), dtype=potentials.dtype, device=potentials.device)
    out = potentials.clone()
    out[:, 1:] = torch.where(trans.to(potentials.device), out[:, 1:], neg)
    out[:, 0] = torch.where(start.to(potentials.device), out[:, 0], neg)
    return out


def constrain_tokens(
    node: Tensor, edge: Tensor, first: Tensor, start: Tensor, trans: Tensor
) -> tuple[Tensor, Tensor]:
    """Copies of token scores node [N, L], edge [N, L, L] with disallowed moves at -inf.

    ``first`` [N] bool marks the tokens that start a sequence: their node scores are masked by
    ``start``; every edge score by ``trans``.
    """
    neg = torch.tensor(float("-inf"), dtype=node.dtype, device=node.device)
    edge = torch.where(trans.to(edge.device), edge, neg)
    start_mask = first.view(-1, 1) & ~start.to(node.device).view(1, -1)  # [N, L]
    return node.masked_fill(start_mask, float("-inf")), edge
