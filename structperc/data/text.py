"""Plain text as documents, and entities back to character offsets.

Paragraphs (text between blank lines) are documents; syntok's rules (Florian Leitner's
rule-based segmenter and tokenizer, no model or data to download) split them into sentences and
tokens, and give each token its character offset in the text: its tokenizer, run once per
distinct chunk of text (``data/tokenization.py``), and its segmentation rules, decided where a
boundary can fall (``data/sentences.py``).  ``read_text`` keeps those
offsets beside the documents, so ``entity_spans`` turns a document's IOB2 tags into entities of
the original text: ``{"start", "end", "type", "text"}`` with ``text[start:end]`` the entity.

Offsets are indices into the text as given, in characters (Unicode code points, Python ``str``
indices, not bytes).  Line ends count as they stand: a CRLF is two characters, a lone CR (old Mac
text) one, and it ends a line as LF does.  ``structperc-tag`` gives them on the file's text decoded
from UTF-8 with a leading byte-order mark dropped and the line ends kept, so that
``open(path, encoding="utf-8-sig", newline="").read()[start:end]`` is the entity; Python's default
``newline=None`` would turn each CRLF into one character and shift every offset after it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from structperc.data.document import Document
from structperc.data.sentences import sentence_starts
from structperc.data.tags import spans
from structperc.data.tokenization import LONE_CR, ChunkTokenizer, paragraphs


@dataclass
class TextDocument:
    """A paragraph of a text: the document and the [start, end) character span of each token."""

    document: Document
    offsets: list[tuple[int, int]]


def read_text(
    text: str, source: str = "<text>", tokenizer: ChunkTokenizer | None = None
) -> list[TextDocument]:
    """The paragraphs of ``text`` as documents (sentences marked), with token offsets; no
    paragraphs for a text without words (empty, blank lines, a zero-width space).
    ``tokenizer``: one that keeps its chunks across calls (a stream of texts)."""
    tokenizer = tokenizer or ChunkTokenizer()
    text = LONE_CR.sub("\n", text)  # one character for one: the offsets stay the text's
    out = []
    line, counted = 1, 0  # the line of offset ``counted``
    for offset, paragraph in paragraphs(text):
        tokens = tokenizer.tokenize(paragraph, offset)
        if not len(tokens):
            continue
        starts = sentence_starts(tokens.values, tokens.starts, tokens.spaced)
        line += text.count("\n", counted, tokens.starts[0])
        counted = tokens.starts[0]
        offsets = [(s, s + len(v)) for s, v in zip(tokens.starts, tokens.values, strict=True)]
        doc = Document(tokens=tokens.values, sentence_starts=starts, source=f"{source}:{line}")
        out.append(TextDocument(doc, offsets))
    return out


def entity_spans(text: str, doc: TextDocument, tags: list[str]) -> list[dict]:
    """The entities of a paragraph's IOB2 tags, as character spans of ``text``."""
    out = []
    for first, end, kind in spans(tags):
        start, stop = doc.offsets[first][0], doc.offsets[end - 1][1]
        out.append({"start": start, "end": stop, "type": kind, "text": text[start:stop]})
    return out


# the longest run of a paragraph read at once (about 20,000 tokens of newswire): a longer
# paragraph comes in pieces cut at whitespace, so reading takes a bounded memory
PIECE_CHARS = 1 << 17


@dataclass
class TextPiece:
    """A paragraph of a text being read, or a piece of a long one.

    text: the piece as written (its character offsets start at ``offset`` in the whole text);
    line: the line of the text it starts on; opens, closes: whether it starts, ends its
    paragraph.
    """

    text: str
    offset: int
    line: int
    opens: bool
    closes: bool


def text_pieces(lines: Iterable[str], piece_chars: int = PIECE_CHARS) -> Iterator[TextPiece]:
    """The paragraphs of a text given as its lines (line ends kept, a lone CR ending a line as
    ``read_text`` reads it), in pieces of at most ``piece_chars`` characters cut at whitespace
    (a run without whitespace that long is cut where it is); blank paragraphs too (the caller
    finds no tokens in them)."""
    parts: list[str] = []  # the current paragraph's lines not yet given out
    size = offset = start = 0  # chars in parts; of the text read; where parts start
    line = first_line = 1
    opens = True
    for text in lines:
        blank = not text.strip() and text[-1:] in ("\n", "\r")
        if blank and parts:  # a blank line ends the paragraph (syntok's separator)
            yield TextPiece("".join(parts), start, first_line, opens, True)
            parts, size, opens = [], 0, True
        if not blank:
            if not parts:
                start, first_line = offset, line
            parts.append(text)
            size += len(text)
            while size > piece_chars:  # a long paragraph: its piece up to the last whitespace
                joined = "".join(parts)
                cut = max(joined.rfind(" ", 0, piece_chars), joined.rfind("\n", 0, piece_chars))
                cut = cut + 1 if cut > 0 else piece_chars
                yield TextPiece(joined[:cut], start, first_line, opens, False)
                first_line += joined.count("\n", 0, cut)
                parts, size, start, opens = [joined[cut:]], len(joined) - cut, start + cut, False
        offset += len(text)
        line += text.endswith(("\n", "\r"))
    if parts:
        yield TextPiece("".join(parts), start, first_line, opens, True)
