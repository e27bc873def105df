"""The unit of data: a document, i.e. a token sequence with its columns and its tags.

Kazama & Torisawa (2007) concatenate the sentences of a CoNLL-2003 document into one sequence;
the boundaries are kept in ``sentence_starts`` so a writer can restore them.  For CoNLL-2000
(no ``-DOCSTART-`` lines) every sentence is its own document.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Document:
    """One sequence to label.

    tokens:          the words, length T.
    columns:         the other input columns by name ("pos", "chunk"), each of length T.
    tags:            the gold labels in IOB2, length T, or None when the input has none.
    sentence_starts: index of the first token of each sentence, ascending, starting with 0.
    source:          "path:line" of the document's first token, for messages.
    """

    tokens: list[str]
    columns: dict[str, list[str]] = field(default_factory=dict)
    tags: list[str] | None = None
    sentence_starts: list[int] = field(default_factory=lambda: [0])
    source: str = ""

    def __len__(self) -> int:
        return len(self.tokens)

    def sentence_spans(self) -> list[tuple[int, int]]:
        """The [start, end) token spans of the sentences that have tokens."""
        bounds = [*self.sentence_starts, len(self.tokens)]
        return [(s, e) for s, e in zip(bounds, bounds[1:], strict=False) if e > s]


def sub_document(doc: Document, start: int, end: int) -> Document:
    """Tokens start..end-1 of ``doc`` as a document (one sentence, or a window of a long one)."""
    return Document(
        tokens=doc.tokens[start:end],
        columns={k: v[start:end] for k, v in doc.columns.items()},
        tags=None if doc.tags is None else doc.tags[start:end],
        source=doc.source,
    )
