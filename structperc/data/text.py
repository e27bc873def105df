"""Plain text as documents, and entities back to character offsets.

Paragraphs (text between blank lines) are documents; syntok (Florian Leitner's rule-based
segmenter and tokenizer, pure Python, no model or data to download) splits them into sentences
and tokens, and gives each token its character offset in the text.  ``read_text`` keeps those
offsets beside the documents, so ``entity_spans`` turns a document's IOB2 tags into entities of
the original text: ``{"start", "end", "type", "text"}`` with ``text[start:end]`` the entity.
"""

from __future__ import annotations

from dataclasses import dataclass

import syntok.segmenter as segmenter

from structperc.data.document import Document
from structperc.data.tags import spans


@dataclass
class TextDocument:
    """A paragraph of a text: the document and the [start, end) character span of each token."""

    document: Document
    offsets: list[tuple[int, int]]


def read_text(text: str, source: str = "<text>") -> list[TextDocument]:
    """The paragraphs of ``text`` as documents (sentences marked), with token offsets."""
    out = []
    for paragraph in segmenter.analyze(text):
        tokens: list[str] = []
        offsets: list[tuple[int, int]] = []
        starts: list[int] = []
        for sentence in paragraph:
            if not sentence:
                continue
            starts.append(len(tokens))
            for token in sentence:
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
