"""Slow, obviously correct counterparts of ``label_chunk.py``, for tests: Figure 1 as written,
brute force.

``figure1`` follows the pseudo-code of Shimizu & Haas (2006, Figure 1) loop for loop — chunk start
q outer, length inner, then C, C0, P, P0 — on Python floats, with back-pointers added to recover
the structure (the paper: "maintain back pointers to the items that gave rise to each item").
``enumerate_structures`` lists every segmentation x every chunk tag per chunk x every POS tag
per token, ``parts`` lists the parts of a structure and ``part_score`` scores it part by part.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import torch

from structperc.data.label_chunk import LabelChunk, chunks
from structperc.decode.label_chunk import LabelChunkPotentials

NEG = float("-inf")


def parts(y: LabelChunk) -> list[tuple]:
    """Every part of one sentence's structure in the paper's notation (tag ids, r inclusive).

    ("pos_node", C, P, r), ("pos_edge", C, P0, P, r-1, r), ("chunk_node", C, q, r),
    ("chunk_edge", C0, C, q-1, q).
    """
    pos = y.pos.tolist()
    out: list[tuple] = []
    spans = chunks(y)
    for k, (q, r, c) in enumerate(spans):
        for t in range(q, r + 1):
            out.append(("pos_node", c, pos[t], t))
            if t > q:
                out.append(("pos_edge", c, pos[t - 1], pos[t], t - 1, t))
        out.append(("chunk_node", c, q, r))
        if k:
            out.append(("chunk_edge", spans[k - 1][2], c, q - 1, q))
    return out


def part_score(pot: LabelChunkPotentials | tuple, b: int, y: LabelChunk) -> float:
    """s(y) of sentence b: the sum of the scores of the parts of y (one sentence, [n] tensors).

    ``pot`` may also be ``as_lists(pot, b)``, to score many structures of one sentence.
    """
    a, e, s, g = as_lists(pot, b) if isinstance(pot, LabelChunkPotentials) else pot
    total = 0.0
    for part in parts(y):
        kind = part[0]
        if kind == "pos_node":
            _, c, p, r = part
            total += a[r][c][p]
        elif kind == "pos_edge":
            _, c, p0, p, _, r = part
            total += e[r][c][p0][p]
        elif kind == "chunk_node":
            _, c, q, r = part
            total += s[q][r][c]
        else:
            _, c0, c, _, q = part
            total += g[q][c0][c]
    return total


def as_lists(pot: LabelChunkPotentials, b: int) -> tuple[list, list, list, list]:
    """Sentence b's part scores as nested Python lists (a, e, s, g)."""
    return (
        pot.pos_node[b].tolist(),
        pot.pos_edge[b].tolist(),
        pot.chunk_node[b].tolist(),
        pot.chunk_edge[b].tolist(),
    )


def segmentations(n: int) -> Iterator[list[tuple[int, int]]]:
    """Every segmentation of 0..n-1 into chunks [q, r] (r inclusive): 2^(n-1) of them."""
    for cuts in itertools.product((False, True), repeat=n - 1):
        bounds = [0] + [i + 1 for i, cut in enumerate(cuts) if cut] + [n]
        yield [(bounds[k], bounds[k + 1] - 1) for k in range(len(bounds) - 1)]


def enumerate_structures(n: int, num_chunk: int, num_pos: int) -> Iterator[LabelChunk]:
    """Every label-chunk structure of n tokens (segmentation x chunk tags x POS tags)."""
    for segs in segmentations(n):
        for tags in itertools.product(range(num_chunk), repeat=len(segs)):
            chunk, start = [], []
            for (q, r), c in zip(segs, tags, strict=True):
                chunk += [c] * (r - q + 1)
                start += [True] + [False] * (r - q)
            for pos in itertools.product(range(num_pos), repeat=n):
                yield LabelChunk(
                    torch.tensor(pos, dtype=torch.long),
                    torch.tensor(chunk, dtype=torch.long),
                    torch.tensor(start, dtype=torch.bool),
                )


def brute_force(pot: LabelChunkPotentials, b: int) -> tuple[float, list[LabelChunk]]:
    """The best score of sentence b over every structure, and all structures that reach it."""
    _, _, C, P = pot.shape
    n = int(pot.lengths[b])
    best, argmax = NEG, []
    lists = as_lists(pot, b)
    for y in enumerate_structures(n, C, P):
        score = part_score(lists, b, y)
        if score > best:
            best, argmax = score, [y]
        elif score == best:
            argmax.append(y)
    return best, argmax


def figure1(pot: LabelChunkPotentials, b: int) -> tuple[float, LabelChunk]:
    """Figure 1's DP on sentence b, loop for loop, plus back-pointers: (best score, structure).

    label[q][r][C][P] and chunk[r][C] use the paper's exclusive end r (chunk [q, r-1]).
    """
    _, _, C, P = pot.shape
    n = int(pot.lengths[b])
    a, e = pot.pos_node[b].tolist(), pot.pos_edge[b].tolist()
    s, g = pot.chunk_node[b].tolist(), pot.chunk_edge[b].tolist()
    label = [[[[NEG] * P for _ in range(C)] for _ in range(n + 1)] for _ in range(n + 1)]
    label_bp = [[[[0] * P for _ in range(C)] for _ in range(n + 1)] for _ in range(n + 1)]
    chunk = [[NEG] * C for _ in range(n + 1)]
    chunk_bp: list[list[tuple | None]] = [[None] * C for _ in range(n + 1)]
    for q in range(n):
        for length in range(1, n - q + 1):
            r = q + length
            for c in range(C):
                for c0 in range(C):
                    for p in range(P):
                        for p0 in range(P):
                            score = 0.0
                            if length > 1:  # the transition from r-2 to r-1 (1st layer)
                                score += e[r - 1][c][p0][p] + label[q][r - 1][c][p0]
                            score += a[r - 1][c][p]  # the node at r-1 (1st layer)
                            if score > label[q][r][c][p]:
                                label[q][r][c][p] = score
                                label_bp[q][r][c][p] = p0
                            score += s[q][r - 1][c]  # the chunk node [q, r-1] (2nd layer)
                            if q > 0:  # the chunk transition from q-1 to q (2nd layer)
                                score += g[q][c0][c] + chunk[q][c0]
                            if score > chunk[r][c]:
                                chunk[r][c] = score
                                chunk_bp[r][c] = (q, c0, p)
    best, c = max((chunk[n][c], c) for c in range(C))
    pos, tags, start = [0] * n, [0] * n, [False] * n
    r = n
    while r > 0:
        q, c0, p = chunk_bp[r][c]  # type: ignore[misc]
        for t in range(r - 1, q - 1, -1):
            pos[t], tags[t] = p, c
            p = label_bp[q][t + 1][c][p]
        start[q] = True
        r, c = q, c0
    y = LabelChunk(
        torch.tensor(pos, dtype=torch.long),
        torch.tensor(tags, dtype=torch.long),
        torch.tensor(start, dtype=torch.bool),
    )
    return best, y
