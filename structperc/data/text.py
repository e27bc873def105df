"""Plain text as documents, and entities back to character offsets.

Paragraphs (text between blank lines) are documents; syntok (Florian Leitner's rule-based
segmenter and tokenizer, pure Python, no model or data to download) splits them into sentences
and tokens, and gives each token its character offset in the text.  ``read_text`` keeps those
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

import re
from dataclasses import dataclass

import syntok.segmenter as segmenter

from structperc.data.document import Document
from structperc.data.tags import spans

_LONE_CR = re.compile(r"\r(?!\n)")  # an old Mac line end, which syntok does not read as one


@dataclass
class TextDocument:
    """A paragraph of a text: the document and the [start, end) character span of each token."""

    document: Document
    offsets: list[tuple[int, int]]


def read_text(text: str, source: str = "<text>") -> list[TextDocument]:
    """The paragraphs of ``text`` as documents (sentences marked), with token offsets; no
    paragraphs for a text without words (empty, blank lines, a zero-width space)."""
    text = _LONE_CR.sub("\n", text)  # one character for one: the offsets stay the text's
    out = []
    for paragraph in segmenter.analyze(text):
        tokens: list[str] = []
        offsets: list[tuple[int, int]] = []
        starts: list[int] = []
        for sentence in paragraph:
            if not any(token.value for token in sentence):
                continue
            starts.append(len(tokens))
            for token in sentence:
                if not token.value:  # syntok's empty token after a last word without a stop
                    continue
                tokens.append(token.value)
                offsets.append((token.offset, token.offset + len(token.value)))
        if tokens:
            line = text.count("\n", 0, offsets[0][0]) + 1
            doc = Document(tokens=tokens, sentence_starts=starts, source=f"{source}:{line}")
            out.append(TextDocument(doc, offsets))
    return out


def entity_spans(text: str, doc: TextDocument, tags: list[str]) -> list[dict]:
    """The entities of a paragraph's IOB2 tags, as character spans of ``text``."""
    out = []
    for first, end, kind in spans(tags):
        start, stop = doc.offsets[first][0], doc.offsets[end - 1][1]
        out.append({"start": start, "end": stop, "type": kind, "text": text[start:stop]})
    return out
