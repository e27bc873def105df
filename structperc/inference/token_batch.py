"""The tokens a tagger labels at once, and the windows it decodes them in.

A ``TokenBatch`` is the tokens of a run of documents, concatenated: their values, the token
bounds of each document and each sentence, and the input columns where the input has them
(CoNLL files).  A document longer than a window is decoded in windows (``windows``): runs of
whole sentences of at most ``size`` tokens (a longer sentence cut into pieces of ``size``), each
decoded on its own while its feature templates read the whole document, so a token's local
features are what they are in the whole document.  What a window does not see of its document
is the label of the token before it (the chain starts afresh), and, for a model with non-local
features, the mentions of the other windows: its n'-best list and their non-local features are
the window's.  A document no longer than ``size`` is one window, decoded exactly as a whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from structperc.data.document import Document

WINDOW_TOKENS = 2048  # the longest CoNLL-2003 document has 1,335 tokens: all are one window


@dataclass
class TokenBatch:
    """tokens [N]; documents [D, 2] and sentences [S, 2] token bounds (sentences within
    documents, in order); columns: input column -> its values [N] (CoNLL input), else none."""

    tokens: list[str]
    documents: np.ndarray
    sentences: np.ndarray
    columns: dict[str, list[str]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.tokens)

    @classmethod
    def of(cls, docs: Sequence[Document], columns: Sequence[str] = ()) -> TokenBatch:
        """The batch of ``docs``, with their ``columns`` where every document has them."""
        tokens: list[str] = []
        documents, sentences = [], []
        for doc in docs:
            first = len(tokens)
            tokens.extend(doc.tokens)
            documents.append((first, len(tokens)))
            sentences.extend((first + s, first + e) for s, e in doc.sentence_spans())
        kept = {c: [v for d in docs for v in d.columns[c]] for c in columns}
        return cls(tokens, _bounds(documents), _bounds(sentences), kept)

    def sentence_ids(self) -> np.ndarray:
        """[N] int64: the sentence of every token."""
        ids = np.zeros(len(self.tokens), dtype=np.int64)
        ids[self.sentences[1:, 0]] = 1
        return np.cumsum(ids)

    def sentence_flags(self) -> np.ndarray:
        """[N] bool: the tokens that start a sentence."""
        flags = np.zeros(len(self.tokens), dtype=bool)
        flags[self.sentences[:, 0]] = True
        return flags


def _bounds(pairs: list[tuple[int, int]]) -> np.ndarray:
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def windows(batch: TokenBatch, size: int = WINDOW_TOKENS) -> np.ndarray:
    """[K, 4] int64 (t0, t1, d0, d1): the windows of the batch's documents (module docstring),
    each with its document's bounds."""
    if size < 1:
        raise ValueError(f"a window holds at least one token, got window={size}")
    out = []
    sentences = batch.sentences.tolist()
    k = 0
    for d0, d1 in batch.documents.tolist():
        if d1 - d0 <= size:
            out.append((d0, d1, d0, d1))
            while k < len(sentences) and sentences[k][0] < d1:
                k += 1
            continue
        t0 = d0
        while k < len(sentences) and sentences[k][0] < d1:
            s0, s1 = sentences[k]
            if s1 - t0 > size and s0 > t0:  # close the window before this sentence
                out.append((t0, s0, d0, d1))
                t0 = s0
            while s1 - t0 > size:  # a sentence longer than a window
                out.append((t0, t0 + size, d0, d1))
                t0 += size
            k += 1
        if d1 > t0:
            out.append((t0, d1, d0, d1))
    return np.array(out, dtype=np.int64).reshape(-1, 4)
