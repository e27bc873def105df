"""Token forms of the Penn Treebank, which the column tagger was trained on.

The column tagger's chains learn from CoNLL-2000 (Wall Street Journal text), whose tokens follow
the Penn Treebank's conventions (Marcus et al. 1993, "Building a large annotated corpus of
English: the Penn Treebank"): brackets are written ``-LRB-`` ``-RRB-`` (``-LSB-`` ``-RSB-``,
``-LCB-`` ``-RCB-``) and double quotes as ```` `` ```` (opening) and ``''`` (closing).  CoNLL-2003,
syntok's plain-text tokens and most users' files write ``(`` ``)`` and ``"`` instead, which the
tagger has never seen: as unknown words they were tagged NNP, CD or ``:`` and broke the chunks
around them (on CoNLL-2003 dev, all 1,999 brackets and quotes were among the 6,336 tokens where
the tagger's POS differed from the given column).

``treebank_tokens`` rewrites those tokens before the tagger reads them; every other token is
left as it is, so Penn Treebank text is unchanged.  A straight double quote opens or closes by
its place in its sentence: the quotes of a sentence alternate, opening first, except that an
unpaired quote that ends the sentence closes (a quotation begun in an earlier sentence).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from structperc.data.conll import has_docstart, mark_docstart
from structperc.data.document import Document

BRACKETS = {"(": "-LRB-", ")": "-RRB-", "[": "-LSB-", "]": "-RSB-", "{": "-LCB-", "}": "-RCB-"}
OPENING, CLOSING = "``", "''"
# “ „ « open, ” » close
TYPOGRAPHIC = {
    "\u201c": OPENING,
    "\u201e": OPENING,
    "\u00ab": OPENING,
    "\u201d": CLOSING,
    "\u00bb": CLOSING,
}
STRAIGHT = '"'


def treebank_tokens(tokens: Sequence[str], sentence_starts: Sequence[int] = (0,)) -> list[str]:
    """``tokens`` [T] in Penn Treebank form: brackets and double quotes rewritten, the rest as
    they are; ``sentence_starts`` (ascending, from 0) bound where straight quotes pair."""
    out = [BRACKETS.get(t) or TYPOGRAPHIC.get(t) or t for t in tokens]
    bounds = [*sentence_starts, len(tokens)]
    for start, end in zip(bounds, bounds[1:], strict=False):
        quotes = [i for i in range(start, end) if tokens[i] == STRAIGHT]
        for k, i in enumerate(quotes):
            out[i] = OPENING if k % 2 == 0 else CLOSING
        if len(quotes) % 2 == 1 and quotes[-1] == end - 1:  # closes an earlier sentence's quote
            out[quotes[-1]] = CLOSING
    return out


def as_treebank(doc: Document) -> Document:
    """A copy of ``doc`` whose tokens are in Penn Treebank form (``treebank_tokens``)."""
    copy = dataclasses.replace(doc, tokens=treebank_tokens(doc.tokens, doc.sentence_starts))
    return mark_docstart(copy, has_docstart(doc))
