"""Why the label-chunk model (Shimizu & Haas 2006) tagged and chunked a sentence as it did.

A structure y gives each token a POS tag and segments the sentence into chunks (NP or O).  Two
kinds of runner-up, each the exact best structure under a constraint, found by the model's own
DP (``decode/label_chunk.py``) on potentials with one part forbidden (-inf):

    a token t:     z = argmax { s(x, y) : pos_t(y) ≠ pos_t(y') }   (POS node <C, P', t> forbidden
                   for y''s tag P' under every chunk tag C)
    a chunk [q, r] with tag C:
                   z = argmax { s(x, y) : y has no chunk <C, q, r> }  (chunk node forbidden)

The margin s(y') − s(z) is the structure's ``score`` difference under the unmodified weights and
the contributions are its ``delta`` (POS nodes and transitions, chunk starts, ends and
transitions: ``model/label_chunk_weights.py``), which add up to it.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from structperc.data.label_chunk import LabelChunk, chunks
from structperc.decode.label_chunk import decode
from structperc.explain.contributions import Namer, contributions
from structperc.explain.tokens import TokenExplanation
from structperc.model.label_chunk_weights import PartBatch
from structperc.structures.label_chunk import LabelChunkStructure


def token_labels(y: LabelChunk, pos_tags, chunk_tags) -> list[str]:
    """Each token's POS tag and chunk tag, e.g. ``NOUN B-NP`` (O outside the chunks)."""
    out = []
    for p, c, s in zip(y.pos.tolist(), y.chunk.tolist(), y.start.tolist(), strict=True):
        chunk = "O" if c == 0 else ("B-" if s else "I-") + chunk_tags[c]
        out.append(f"{pos_tags[p]} {chunk}")
    return out


def _constrained_best(pot, n: int) -> LabelChunk:
    best, _ = decode(pot)
    return LabelChunk(best.pos[0, :n], best.chunk[0, :n], best.start[0, :n])


def _explanation(structure, batch, tokens, y, z, position, token, predicted, runner_up, namer):
    margin = float(structure.score(batch, y)[0] - structure.score(batch, z)[0])
    delta = structure.delta(batch, y, z)
    items = contributions(delta, structure.weights.tables(), namer)
    tags = structure.weights.pos_tags, structure.weights.chunk_tags
    mine, theirs = token_labels(y, *tags), token_labels(z, *tags)
    changed = {u: b for u, (a, b) in enumerate(zip(mine, theirs, strict=True)) if a != b}
    return TokenExplanation(position, token, predicted, runner_up, margin, changed, items)


@torch.no_grad()
def explain_label_chunk(
    structure: LabelChunkStructure, batch: PartBatch, tokens: list[str], namer: Namer
) -> tuple[LabelChunk, list[TokenExplanation], list[TokenExplanation]]:
    """(the predicted structure, an explanation per token (its POS tag), one per chunk) of a
    one-sentence batch."""
    n = len(tokens)
    y = structure.argmax(batch)
    pot = structure.potentials(batch)
    pos_tags, chunk_tags = structure.weights.pos_tags, structure.weights.chunk_tags
    labels = token_labels(y, pos_tags, chunk_tags)
    by_token = []
    for t in range(n):
        node = pot.pos_node.clone()
        node[0, t, :, int(y.pos[t])] = float("-inf")
        z = _constrained_best(replace(pot, pos_node=node), n)
        other = token_labels(z, pos_tags, chunk_tags)[t]
        by_token.append(
            _explanation(structure, batch, tokens, y, z, t, tokens[t], labels[t], other, namer)
        )
    by_chunk = []
    for q, r, c in chunks(y):
        span = pot.chunk_node.clone()
        span[0, q, r, c] = float("-inf")
        z = _constrained_best(replace(pot, chunk_node=span), n)
        theirs = [(a, b, k) for a, b, k in chunks(z) if a <= r and b >= q]
        predicted = f"{chunk_tags[c]} [{q}, {r}]"
        runner_up = ", ".join(f"{chunk_tags[k]} [{a}, {b}]" for a, b, k in theirs)
        text = " ".join(tokens[q : r + 1])
        by_chunk.append(
            _explanation(structure, batch, tokens, y, z, q, text, predicted, runner_up, namer)
        )
    return y, by_token, by_chunk
