"""syntok's tokens of a text, computed once per distinct whitespace-separated chunk.

syntok's tokenizer (``syntok.tokenizer.Tokenizer``, the one ``syntok.segmenter.analyze`` uses:
"n't" kept as written) cuts the text at whitespace (its ``_spaces`` pattern: any Unicode space
and the zero-width space) and then splits each chunk by rules that read the chunk alone: its
leading and trailing symbols, its inner separators ("-", "'s", lower-upper transitions ...).
So a chunk's tokens and their offsets within it depend on the chunk only, and ``ChunkTokenizer``
keeps them by chunk: running text repeats its chunks (words with their punctuation), and a
token costs a dictionary lookup instead of syntok's Python per token.  The tokens are syntok's,
value for value and offset for offset (``tests/test_text_reading.py``), except that a control
character (C0 and C1, U+007F) separates tokens as whitespace does: no token holds one, so
``structperc-tag`` writes no column that a CoNLL reader refuses (syntok keeps them inside
tokens; mis-decoded text such as "Ã\x82Â" has them).

Paragraphs are syntok's too (``PARAGRAPH``: text between lines that hold only whitespace), and
a lone CR ends a line as LF does (``data/text.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import regex
from syntok.tokenizer import Tokenizer

PARAGRAPH = re.compile(r"\r?\n(?:\s*\r?\n)+")  # syntok.segmenter's paragraph separator
LONE_CR = re.compile(r"\r(?!\n)")  # an old Mac line end, which syntok does not read as one
# syntok's chunks (``Tokenizer._spaces``: runs of neither whitespace nor the zero-width space)
# cut at control characters too
CHUNKS = regex.compile(r"[^\s\u200b\x00-\x08\x0e-\x1f\x7f-\x9f]+", regex.UNICODE)
CHUNK_LIMIT = 1 << 18  # distinct chunks kept before the cache starts afresh


@dataclass
class Tokens:
    """The tokens of a text: their values, the start of each (a character offset), and whether
    whitespace precedes each (syntok's ``spacing``, which sentence segmentation reads)."""

    values: list[str]
    starts: list[int]
    spaced: list[bool]

    def __len__(self) -> int:
        return len(self.values)


class ChunkTokenizer:
    """syntok's tokenizer with its results kept per chunk (module docstring)."""

    def __init__(self):
        self._syntok = Tokenizer(replace_not_contraction=False)
        self._chunks = CHUNKS
        self._cache: dict[str, tuple | None] = {}

    def _split(self, chunk: str) -> tuple | None:
        """The values, offsets in ``chunk`` and spacing flags of its tokens (a token is spaced
        when characters it does not hold precede it: the chunk's start, or a hyphen syntok
        drops); None for the common case of one token that is the whole chunk."""
        found = [(t.value, t.offset) for t in self._syntok.tokenize(chunk) if t.value]
        if len(found) == 1 and found[0] == (chunk, 0):
            return None
        ends = [0] + [o + len(v) for v, o in found[:-1]]
        spaced = tuple(o == 0 or o > end for (_, o), end in zip(found, ends, strict=True))
        return tuple(v for v, _ in found), tuple(o for _, o in found), spaced

    def tokenize(self, text: str, offset: int = 0) -> Tokens:
        """The tokens of ``text`` (one paragraph, or any run of text), their starts counted from
        ``offset``."""
        cache = self._cache
        if len(cache) > CHUNK_LIMIT:
            cache.clear()
        values: list[str] = []
        starts: list[int] = []
        spaced: list[bool] = []
        for match in self._chunks.finditer(text):
            chunk = match.group()
            start = match.start() + offset
            try:
                split = cache[chunk]
            except KeyError:
                split = cache[chunk] = self._split(chunk)
            if split is None:
                values.append(chunk)
                starts.append(start)
                spaced.append(True)
            else:
                parts, where, gaps = split
                values.extend(parts)
                starts.extend(start + w for w in where)
                spaced.extend(gaps)
        return Tokens(values, starts, spaced)


def paragraphs(text: str) -> list[tuple[int, str]]:
    """(offset, text) of the paragraphs of ``text`` (syntok's, lone CRs read as LFs)."""
    text = LONE_CR.sub("\n", text)
    out, offset = [], 0
    for match in PARAGRAPH.finditer(text):
        out.append((offset, text[offset : match.start()]))
        offset = match.end()
    out.append((offset, text[offset:]))
    return out
