"""What a tagger reads and writes: input formats to documents and token batches, predictions
to output lines.

Input (``InputSpec``): CoNLL columns in a layout (``conll2003``, ``conll2000``), a column map
(``columns=[token,_,_,ner]``), the model's own corpus format (``data=columns``; its columns,
encoding, separator, documents and scheme), or plain text (``text``: paragraphs are documents,
``data/text.py``).  Text is read as a stream of paragraphs (``text_batches``), so its memory does
not grow with the input; column files are read whole (``read_documents``).

Output (``document_lines``, ``entity_line``, ``labels_line``): the input columns with the
predicted tag last (``conll``), or one JSON line per document (``jsonl``): its entities with
character offsets for text, token offsets for column input, or a plain tagging model's tokens and
tags.  The entity JSON of text is built piece by piece (``JsonlEntities``), so a paragraph of a
million characters streams too.
"""

from __future__ import annotations

import codecs
import io
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from structperc.data.column_corpus import ColumnFormat
from structperc.data.conll import document_text, has_docstart, read_conll
from structperc.data.document import Document
from structperc.data.sentences import sentence_starts
from structperc.data.tags import spans
from structperc.data.text import TextPiece, text_pieces
from structperc.data.tokenization import LONE_CR, ChunkTokenizer
from structperc.inference.token_batch import TokenBatch
from structperc.io import STDIO

INPUT_FORMATS, OUTPUT_FORMATS = ("conll", "text"), ("conll", "jsonl")
BATCH_TOKENS = 1 << 15  # tokens of text tagged at once


@dataclass(frozen=True)
class InputSpec:
    """How an input is read: ``format`` (``conll`` or ``text``); for columns, a ``layout`` or a
    column map (``columns``; default: the model's own corpus format, else ``conll2003``), and
    ``documents``, ``scheme`` overriding the layout's."""

    format: str = "conll"
    layout: str | None = None
    columns: list[str] | None = None
    documents: str | None = None
    scheme: str | None = None

    def __post_init__(self):
        if self.format not in INPUT_FORMATS:
            raise ValueError(f"input_format must be one of {INPUT_FORMATS}, got {self.format!r}")

    def column_format(self, corpus_format: ColumnFormat | None) -> ColumnFormat | None:
        """The model's own ``corpus_format`` with this spec's documents and scheme, where the
        input is in it (columns given, no layout or column map), else None."""
        if self.format == "text" or self.layout is not None or self.columns is not None:
            return None
        if corpus_format is None:
            return None
        options = {"documents": self.documents, "scheme": self.scheme}
        return replace(corpus_format, **{k: v for k, v in options.items() if v is not None})

    def read_documents(self, path: str | Path, corpus_format: ColumnFormat | None):
        """The documents of a column file (the label column may be absent)."""
        fmt = self.column_format(corpus_format)
        if fmt is not None:
            return fmt.read(path, optional_label=True)
        layout = self.layout or "conll2003"
        return read_conll(path, layout, self.documents, columns=self.columns, scheme=self.scheme)


def text_lines(path: str | Path) -> tuple[Iterator[str], str]:
    """The lines of a UTF-8 text file (``"-"``: standard input) as ``read_text`` reads it: a
    leading byte-order mark dropped, line ends kept; and the name to report it by.  A byte that
    is not UTF-8 is a ValueError naming the file and line."""
    name = "<stdin>" if str(path) == STDIO else str(path)
    raw = sys.stdin.buffer if str(path) == STDIO else open(path, "rb")  # noqa: SIM115

    def lines() -> Iterator[str]:
        stream = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
        number = 1
        try:
            while True:
                try:
                    line = stream.readline(1 << 16)
                except UnicodeDecodeError as err:
                    raise ValueError(
                        f"{name}:{number}: byte {err.object[err.start]:#04x} is not UTF-8: "
                        "expected UTF-8 text"
                    ) from None
                if not line:
                    return
                number += line.endswith(("\n", "\r"))
                yield line
        finally:
            if raw is not sys.stdin.buffer:
                stream.close()
            else:
                stream.detach()

    return lines(), name


@dataclass
class TextBatch:
    """Pieces of text tokenized as one ``TokenBatch``: each piece its document, its tokens'
    character offsets [N, 2] (into the whole text), and the first line of its first token."""

    batch: TokenBatch
    pieces: list[TextPiece]
    offsets: np.ndarray
    lines: list[int]


def text_batches(
    lines: Iterator[str], tokens: int = BATCH_TOKENS, tokenizer: ChunkTokenizer | None = None
) -> Iterator[TextBatch]:
    """The paragraphs of a text (``data.text.text_pieces``) tokenized by syntok's rules
    (``data/tokenization.py``, ``data/sentences.py``), in batches of about ``tokens`` tokens
    (whole pieces).  Pieces without tokens are left out, except a paragraph's last piece,
    which closes its document (``JsonlEntities``)."""
    tokenizer = tokenizer or ChunkTokenizer()
    values: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    documents, sentences, pieces, first_lines = [], [], [], []
    for piece in text_pieces(lines):
        text = LONE_CR.sub("\n", piece.text)  # one character for one: the offsets stay
        found = tokenizer.tokenize(text, piece.offset)
        if not len(found) and not piece.closes:
            continue
        first = len(values)
        values.extend(found.values)
        starts.extend(found.starts)
        ends.extend(s + len(v) for s, v in zip(found.starts, found.values, strict=True))
        documents.append((first, len(values)))
        for s in sentence_starts(found.values, found.starts, found.spaced):
            sentences.append(first + s)
        pieces.append(piece)
        head = found.starts[0] - piece.offset if len(found) else 0
        first_lines.append(piece.line + text.count("\n", 0, head))
        if len(values) >= tokens:
            yield _text_batch(values, starts, ends, documents, sentences, pieces, first_lines)
            values, starts, ends = [], [], []
            documents, sentences, pieces, first_lines = [], [], [], []
    if pieces:
        yield _text_batch(values, starts, ends, documents, sentences, pieces, first_lines)


def _text_batch(values, starts, ends, documents, sentences, pieces, first_lines) -> TextBatch:
    bounds = np.array([*sentences, len(values)], dtype=np.int64)
    batch = TokenBatch(
        values,
        np.array(documents, dtype=np.int64).reshape(-1, 2),
        np.stack([bounds[:-1], bounds[1:]], axis=1),
    )
    offsets = np.stack([np.array(starts, np.int64), np.array(ends, np.int64)], axis=1)
    return TextBatch(batch, pieces, offsets.reshape(-1, 2), first_lines)


class JsonlEntities:
    """The ``jsonl`` lines of text input, written as its pieces come: ``{"source": ..., "entities":
    [...]}`` a paragraph with tokens, each entity ``{"start", "end", "type", "text"}`` with
    ``text[start:end]`` the entity (character offsets of the whole text).  The same bytes as
    ``json.dumps`` of the whole line."""

    def __init__(self, source: str):
        self.source = source
        self.open = False  # a line begun and not ended
        self.any = False  # an entity written on the open line

    def piece(self, piece: TextPiece, line: int, has_tokens: bool, entities) -> str:
        """The output of one piece: ``entities`` (start, end, type) of its text."""
        out = []
        if has_tokens and not self.open:
            out.append('{"source": ' + json.dumps(f"{self.source}:{line}") + ', "entities": [')
            self.open, self.any = True, False
        for start, end, kind in entities:
            text = piece.text[start - piece.offset : end - piece.offset]
            record = {"start": start, "end": end, "type": kind, "text": text}
            out.append((", " if self.any else "") + json.dumps(record))
            self.any = True
        if piece.closes and self.open:
            out.append("]}\n")
            self.open = False
        return "".join(out)


def entity_line(doc: Document, tags: list[str]) -> str:
    """The ``jsonl`` line of a document of column input: its entities with token offsets."""
    entities = [
        {"start": s, "end": e, "type": t, "text": " ".join(doc.tokens[s:e])}
        for s, e, t in spans(tags)
    ]
    return json.dumps({"source": doc.source, "entities": entities}) + "\n"


def labels_line(source: str, tokens: list[str], tags: list[str]) -> str:
    """The ``jsonl`` line of a plain tagging model (no entities): the tokens and their tags."""
    return json.dumps({"source": source, "tokens": tokens, "tags": tags}) + "\n"


def document_lines(doc: Document, tags: list[str], fmt: ColumnFormat | None, docstart: bool) -> str:
    """The ``conll`` lines of a document: its columns and the predicted tag, in the model's
    corpus format ``fmt`` where the input was read in it, else as ``write_conll`` writes."""
    if fmt is not None:
        return fmt.document_text(doc, tags)
    return document_text(doc, tags, docstart)


def docstart_of(docs: list[Document]) -> bool:
    """Whether ``-DOCSTART-`` lines come before the documents (``write_conll``'s default)."""
    return bool(docs) and all(has_docstart(d) for d in docs)


def output_encoding(encoding: str | None, fmt: ColumnFormat | None) -> str:
    """The output's encoding: the one asked for, else the corpus format's (its columns in), else
    UTF-8."""
    if encoding is not None:
        return codecs.lookup(encoding).name
    return fmt.encoding if fmt is not None else "utf-8"
