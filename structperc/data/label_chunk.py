"""The label-chunk structure of Shimizu & Haas (2006, section 2) and its CoNLL-2000 form.

A label-chunk labeling y of a sentence x_0..x_{n-1} segments it into chunks [q, r] (inclusive),
gives each chunk a chunk tag C and each token a POS tag P.  Its parts (Table 2 of the paper):

    POS node          <C, P, r>              token r has POS P inside a chunk tagged C
    POS transition    <C, P0, P, r-1, r>     tokens r-1 and r are in the same chunk C
    chunk node        <C, q, r>              a chunk tagged C spans q..r
    chunk transition  <C0, C, q-1, q>        a chunk C0 ends at q-1 and a chunk C starts at q

and s(x, y) = sum over its parts p of s(p).  We store y token by token (the "token view"):

    pos[r]    POS tag id of token r                 (POS_TAGS)
    chunk[r]  tag id of the chunk holding token r   (CHUNK_TAGS; 0 is "O", not a noun phrase)
    start[r]  whether a chunk starts at token r     (start[0] is always true)

which determines every part.  As in the paper's Table 2, tokens outside noun phrases form
"O" chunks; a gold structure read from IOB tags has maximal O chunks (two O chunks never touch),
so structures with that property and (POS, IOB) tag sequences correspond one to one.

CoNLL-2000 columns are reduced as in section 5.1: the 45 Penn Treebank tags collapse to five
(Table 3; a tag belongs to a class by its Penn prefix: NN* nouns, VB* verbs, JJ* adjectives, RB*
adverbs; everything else, MD, WRB, PRP and CD included, is OTHER), and the chunk column keeps only
noun phrases, B-NP / I-NP / O.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from structperc.data.conll import with_columns
from structperc.data.document import Document

POS_TAGS: tuple[str, ...] = ("NOUN", "VERB", "JADJ", "RBP", "OTHER")
CHUNK_TAGS: tuple[str, ...] = ("O", "NP")
_PREFIX_CLASS = (("NN", "NOUN"), ("VB", "VERB"), ("JJ", "JADJ"), ("RB", "RBP"))


def collapse_pos(tag: str) -> str:
    """Penn Treebank tag -> one of POS_TAGS (Table 3); a collapsed tag maps to itself."""
    if tag in POS_TAGS:
        return tag
    for prefix, cls in _PREFIX_CLASS:
        if tag.startswith(prefix):
            return cls
    return "OTHER"


def np_tags(chunk_tags: list[str]) -> list[str]:
    """IOB2 chunk tags -> noun-phrase tags B-NP / I-NP / O (every other chunk type becomes O)."""
    return [t if t in ("B-NP", "I-NP") else "O" for t in chunk_tags]


def pos_labels(doc: Document) -> list[str]:
    """The collapsed gold POS tags of a sentence (a POS tagger's labels)."""
    return [collapse_pos(p) for p in doc.columns["pos"]]


def np_labels(doc: Document) -> list[str]:
    """The B-NP / I-NP / O tags of a sentence (an NP chunker's labels)."""
    return np_tags(doc.tags or ["O"] * len(doc))


def with_pos(docs: list[Document], pos: list[list[str]]) -> list[Document]:
    """Copies of ``docs`` whose POS column is ``pos`` (a tagger's output, for a cascade)."""
    return [with_columns(d, pos=list(p)) for d, p in zip(docs, pos, strict=True)]


@dataclass(frozen=True)
class LabelChunk:
    """Label-chunk structures in the token view (see the module docstring).

    The three tensors share one shape: [n] for one sentence, [N] for sentences concatenated, or
    [B, T] padded (pos and chunk -1, start False past each length).
    """

    pos: Tensor  # long
    chunk: Tensor  # long
    start: Tensor  # bool

    def __len__(self) -> int:
        return self.pos.shape[-1]

    def slice(self, lo: int, hi: int) -> LabelChunk:
        """Tokens lo..hi-1 of a flat structure (one sentence of a concatenated corpus)."""
        return LabelChunk(self.pos[lo:hi], self.chunk[lo:hi], self.start[lo:hi])

    def to(self, device: torch.device | str) -> LabelChunk:
        return LabelChunk(self.pos.to(device), self.chunk.to(device), self.start.to(device))

    def equal(self, other: LabelChunk) -> bool:
        """Same structure (for O tokens only the tag counts, not where O chunks start)."""
        return bool(
            torch.equal(self.pos, other.pos)
            and torch.equal(self.chunk, other.chunk)
            and torch.equal(self.start & (self.chunk > 0), other.start & (other.chunk > 0))
        )

    @staticmethod
    def cat(parts: list[LabelChunk]) -> LabelChunk:
        return LabelChunk(
            torch.cat([p.pos for p in parts]),
            torch.cat([p.chunk for p in parts]),
            torch.cat([p.start for p in parts]),
        )


def from_tags(pos: list[str], np: list[str]) -> LabelChunk:
    """One sentence's structure from POS tags (any Penn or collapsed tag) and IOB NP tags.

    An NP chunk starts at ``B-NP``, or at ``I-NP`` after a token outside noun phrases (the
    conlleval rule); an O chunk is a maximal run of O tokens.
    """
    if len(pos) != len(np):
        raise ValueError(f"{len(pos)} POS tags but {len(np)} chunk tags")
    p_ids = [POS_TAGS.index(collapse_pos(t)) for t in pos]
    c_ids, starts = [], []
    prev = "O"
    for tag in np:
        inside = tag in ("B-NP", "I-NP")
        c_ids.append(1 if inside else 0)
        if inside:
            starts.append(tag == "B-NP" or prev == "O")
        else:
            starts.append(prev != "O" or not starts)
        prev = "NP" if inside else "O"
    return LabelChunk(
        torch.tensor(p_ids, dtype=torch.long),
        torch.tensor(c_ids, dtype=torch.long),
        torch.tensor(starts, dtype=torch.bool),
    )


def from_document(doc: Document) -> LabelChunk:
    """The gold structure of a CoNLL-2000 sentence: its POS column and its chunk tags."""
    if doc.tags is None:
        raise ValueError(f"document {doc.source or '?'} has no chunk tags")
    return from_tags(doc.columns["pos"], np_tags(doc.tags))


def to_tags(y: LabelChunk) -> tuple[list[str], list[str]]:
    """One sentence's (collapsed POS tags, B-NP/I-NP/O tags)."""
    pos = [POS_TAGS[i] for i in y.pos.tolist()]
    np = []
    for c, s in zip(y.chunk.tolist(), y.start.tolist(), strict=True):
        np.append("O" if c == 0 else ("B-" if s else "I-") + CHUNK_TAGS[c])
    return pos, np


def chunks(y: LabelChunk) -> list[tuple[int, int, int]]:
    """The chunks (q, r, C) of one sentence, r inclusive, in order."""
    starts = [i for i, s in enumerate(y.start.tolist()) if s]
    ends = [s - 1 for s in starts[1:]] + [len(y) - 1]
    tags = y.chunk.tolist()
    return [(q, r, tags[q]) for q, r in zip(starts, ends, strict=True)]


def token_codes(y: LabelChunk) -> tuple[Tensor, Tensor]:
    """(POS tag ids, NP tag ids) per token, the NP id being 0 = O, 1 = B, 2 = I (for C = 1)."""
    inside = y.chunk > 0
    np = torch.where(inside, 2 * y.chunk - y.start.long(), torch.zeros_like(y.chunk))
    return y.pos, np


def hamming(gold: LabelChunk, pred: LabelChunk) -> tuple[int, int]:
    """(POS tags wrong, NP tags wrong) of pred against gold; the loss l(y') of Alg. 4.3 is the sum.

    Decomposable over parts: a token's POS and chunk tag are read from its POS node, and whether
    its NP tag is B or I from whether a chunk node starts there.
    """
    gp, gn = token_codes(gold)
    pp, pn = token_codes(pred)
    return int((gp != pp).sum()), int((gn != pn).sum())
