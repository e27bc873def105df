"""The unit of data: a document, i.e. a token sequence with its columns and its tags.

Kazama & Torisawa (2007) concatenate the sentences of a CoNLL-2003 document into one sequence;
the boundaries are kept in ``sentence_starts`` so a writer can restore them.  For CoNLL-2000
(no ``-DOCSTART-`` lines) every sentence is its own document.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
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


def runs_of(docs: Iterable[Document], tokens: int) -> Iterator[tuple[int, list[Document]]]:
    """(number of the first document, the documents) of consecutive runs of whole documents
    of at most ``tokens`` tokens (a longer document is a run of its own)."""
    run: list[Document] = []
    size = start = 0
    for i, doc in enumerate(docs):
        if run and size + len(doc) > tokens:
            yield start, run
            run, size, start = [], 0, i
        run.append(doc)
        size += len(doc)
    if run:
        yield start, run


class MappedDocuments(Sequence[Document]):
    """``fn`` of each document of ``docs``, made when it is asked for: a sequence as long as
    ``docs`` that holds none of its results (over a corpus stored on disk, one at a time)."""

    def __init__(self, docs: Sequence[Document], fn: Callable[[Document], Document]):
        self.docs, self.fn = docs, fn

    def __len__(self) -> int:
        return len(self.docs)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.fn(d) for d in self.docs[i]]
        return self.fn(self.docs[i])

    def __iter__(self) -> Iterator[Document]:
        return map(self.fn, self.docs)
