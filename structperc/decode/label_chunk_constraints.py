"""Constrained decoding of the label-chunk structure: allowed tags and forbidden chunks as -inf
part scores (``label_chunk.py``'s potentials; Shimizu & Haas 2006, Figure 1 unchanged).

A labeling gives every token a POS tag P and a chunk tag in token form (``B-C`` at a chunk's
first token, ``I-C`` inside, or ``O`` for a token of an O chunk, C = 0).  Side information:

    pos_allowed [B, T, P]     the POS tags each token may carry
    tag_allowed [B, T, 2C-1]  its chunk tags in token form, in ``token_tags``' order
                              (O, B-C1, I-C1, B-C2, I-C2, ...)
    forbidden                 per sentence, chunks (q, r exclusive, C) that must not occur

Each is a restriction of parts: a POS tag not allowed at r makes every POS node <C, P, r> -inf;
a chunk [q, r] of tag C is possible exactly when token q may be ``B-C`` and tokens q+1..r may be
``I-C`` (for O chunks: every token may be ``O``), so its chunk node <C, q, r> is -inf otherwise;
a forbidden chunk's node is -inf.  A structure of finite score then respects every constraint
and keeps its score, so the DP's argmax is the best structure that respects them, exactly.  A
fixed chunk (q, r, C) is the token tags ``B-C``, ``I-C``... and a token r that is not ``I-C``.
"""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import Tensor

from structperc.decode.label_chunk import LabelChunkPotentials


def token_tags(num_chunk: int) -> list[tuple[str, int]]:
    """The token form of the chunk tags: ("O", 0), then ("B", C), ("I", C) for C >= 1."""
    out = [("O", 0)]
    for c in range(1, num_chunk):
        out += [("B", c), ("I", c)]
    return out


def chunk_allowed(tag_allowed: Tensor, num_chunk: int) -> Tensor:
    """[B, T(q), T(r), C] bool: whether a chunk over tokens q..r (inclusive) of tag C agrees
    with the tokens' allowed chunk tags ``tag_allowed`` [B, T, 2C-1]."""
    B, T, _ = tag_allowed.shape
    out = torch.zeros((B, T, T, num_chunk), dtype=torch.bool, device=tag_allowed.device)
    q = torch.arange(T, device=tag_allowed.device)
    upper = q.view(T, 1) <= q.view(1, T)  # [q, r]: q <= r
    for c in range(num_chunk):
        first = tag_allowed[:, :, 0] if c == 0 else tag_allowed[:, :, 2 * c - 1]  # [B, T]
        inside = tag_allowed[:, :, 0] if c == 0 else tag_allowed[:, :, 2 * c]
        # bad[b, t] counts tokens that may not be inside: prefix sums over q+1..r
        bad = torch.cumsum((~inside).long(), dim=1)  # [B, T]
        inner_bad = bad.unsqueeze(1) - bad.unsqueeze(2)  # [B, q, r]: bad in q+1..r
        out[..., c] = first.unsqueeze(2) & (inner_bad == 0) & upper
    return out


def constrained_potentials(
    pot: LabelChunkPotentials,
    pos_allowed: Tensor | None = None,
    tag_allowed: Tensor | None = None,
    forbidden: list[list[tuple[int, int, int]]] | None = None,
) -> LabelChunkPotentials:
    """The potentials with -inf on every part the constraints rule out (module docstring)."""
    neg = float("-inf")
    B, T, C, P = pot.shape
    pos_node, chunk_node = pot.pos_node, pot.chunk_node
    if pos_allowed is not None:  # [B, T, P] -> every chunk tag
        pos_node = pos_node.masked_fill(~pos_allowed.to(pos_node.device).unsqueeze(2), neg)
    if tag_allowed is not None:
        ok = chunk_allowed(tag_allowed.to(chunk_node.device), C)
        chunk_node = chunk_node.masked_fill(~ok, neg)
    if forbidden:
        chunk_node = chunk_node.clone()
        for b, spans in enumerate(forbidden):
            for q, r, c in spans:
                if not 0 <= q < r <= T:
                    raise ValueError(f"sentence {b}: forbidden chunk ({q}, {r}) outside 0..{T}")
                chunk_node[b, q, r - 1, c] = neg
    return replace(pot, pos_node=pos_node, chunk_node=chunk_node)
