"""Read and write CoNLL column files (CoNLL-2003 NER, CoNLL-2000 chunking) as Documents.

One token per line, a blank line after each sentence and, in CoNLL-2003, a ``-DOCSTART-`` line
before each document.  Columns are separated by ASCII spaces and tabs only: a no-break space or
another Unicode space inside a token is part of it.  Lines end in LF, CRLF or a lone CR (old Mac
files), as Python's universal newlines read them; no column may hold another control character
(a NUL after a tag is a format error, not a new entity type).  The reader converts tag columns
to IOB2, keeps document and sentence boundaries, and turns every malformed line into a
``ConllFormatError`` that names the file, the line and what was expected.  The writer puts the
columns back and appends a prediction column, the input conlleval expects.

Other layouts are read with a column map (``columns``): one name per column, ``token`` once,
any other name (``pos``, ``chunk``, ``ner``, ``lemma``, ``cluster`` ...) for a column kept in
``Document.columns``, and ``_`` for a column to skip (character offsets, a ``-`` placeholder ...),
e.g. ``[token]``, ``[token, ner]`` or ``[token, _, _, ner]``.  The label column (``label``; the
layout's by default: ``ner`` for CoNLL-2003, ``chunk`` for CoNLL-2000) becomes the tags.  Its
tags may be in any scheme of ``data/schemes.py`` (``scheme``: IOB1, IOB2, IOE1, IOE2, IOBES,
BILOU, IO with bare types allowed), all read as IOB2, or ``plain`` labels (POS tags) kept as
they are; ``raw`` keeps them unconverted for a caller that tells the scheme itself.

Further options of a user's corpus (``data=columns``): ``encoding`` (UTF-8 by default, a leading
byte-order mark dropped; any codec Python names, ``latin-1`` ...), ``separator`` (``whitespace``:
ASCII spaces and tabs; ``tab``: tabs only, so a token may hold spaces), ``documents`` (``docstart``,
``sentence``, or a line of the file's own that separates documents, such as ``<doc>``) and
``comments`` (skip lines that start with ``#``, as CoNLL-U's do).
"""

from __future__ import annotations

import codecs
import gc
import itertools
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from structperc.io import read_input_bytes, write_output_pieces

from .document import Document
from .partial import ANY_OF, UNKNOWN, cells_to_iob2, is_partial, raw_cells, shown
from .schemes import CHUNK_SCHEMES, PLAIN, SchemeError, scheme_name
from .tags import TagError, split_tag

LAYOUTS: dict[str, tuple[str, ...]] = {
    "conll2003": ("token", "pos", "chunk", "ner"),
    "conll2000": ("token", "pos", "chunk"),
}
"""The columns of each shared task's files, by name."""
LABEL_COLUMN: dict[str, str] = {"conll2003": "ner", "conll2000": "chunk"}
"""The label column of each layout."""
SCHEMES: dict[str, dict[str, str]] = {
    "conll2003": {"chunk": "iob1", "ner": "iob1"},
    "conll2000": {"chunk": "iob2"},
}
"""The tag scheme of every IOB column in each layout's files; all are converted to IOB2."""
DEFAULT_DOCUMENTS: dict[str, str] = {"conll2003": "docstart", "conll2000": "sentence"}
"""How a layout's documents are cut when the caller does not say: CoNLL-2000 has no
``-DOCSTART-`` lines."""
DOCUMENT_MODES = ("docstart", "sentence")  # or a custom boundary line
COLUMN_NAMES = ("token", "pos", "chunk", "ner", "_")  # the usual names; "_": a column to skip
TAG_SCHEMES = ("iob1", "iob2", "io")  # converted while reading (the others after: _convert)
RAW = "raw"  # the label column unconverted
SEPARATORS = ("whitespace", "tab")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")  # a column name
DOCSTART = "-DOCSTART-"
BLANK = " \t"  # the characters that separate columns
# A maximal run of non-blank lines (a blank line holds spaces and tabs at most): one sentence,
# or -DOCSTART- lines (usually alone).
_BLOCK = re.compile(r"[^\n]*[^ \t\n][^\n]*(?:\n[^\n]*[^ \t\n][^\n]*)*")
# A column: what lies between ASCII spaces and tabs.
_FIELD = re.compile(r"[^ \t]+")
# What str.split() splits on besides the ASCII space, tab and line end: a text without any of
# these is split into columns by str.split, the same columns as _FIELD's and faster.
_OTHER_SPACE = re.compile(
    "[\x0b\x0c\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)
# Control characters (Unicode category Cc) but the tab and the line end (CRs are line ends).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

# Set on Documents read in "docstart" mode, so write_conll can restore the -DOCSTART- lines.
# An instance attribute, not a dataclass field: Document's fields stay as they are.
_DOCSTART_FLAG = "_conll_docstart"
# The file line of each sentence's first token, for messages about a document's tags.
_LINES = "_conll_sentence_lines"


class ConllFormatError(ValueError):
    """A CoNLL file that cannot be read; the message starts with ``path:line:``."""


def mark_docstart(doc: Document, value: bool = True) -> Document:
    """Record that ``doc`` came from a file with ``-DOCSTART-`` lines; returns ``doc``."""
    setattr(doc, _DOCSTART_FLAG, value)
    return doc


def has_docstart(doc: Document) -> bool:
    """Whether ``doc`` was read in "docstart" mode (see ``mark_docstart``)."""
    return bool(getattr(doc, _DOCSTART_FLAG, False))


def sentence_lines(doc: Document) -> list[int] | None:
    """The file line of each sentence's first token of a document ``read_conll`` made."""
    return getattr(doc, _LINES, None)


def token_line(doc: Document, index: int) -> str:
    """ "path:line" of token ``index`` of ``doc`` (its source's path and the line read)."""
    lines = sentence_lines(doc)
    path = doc.source.rsplit(":", 1)[0]
    if not lines:
        return doc.source or "?"
    s = max(k for k, start in enumerate(doc.sentence_starts) if start <= index)
    return f"{path}:{lines[s] + index - doc.sentence_starts[s]}"


def with_columns(doc: Document, **columns: list[str]) -> Document:
    """A copy of ``doc`` with ``columns`` set (e.g. ``pos=[...]``), read in the same mode."""
    copy = replace(doc, columns={**doc.columns, **columns})
    return mark_docstart(copy, has_docstart(doc))


def _check_layout(layout: str) -> tuple[str, ...]:
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}: expected one of {sorted(LAYOUTS)}")
    return LAYOUTS[layout]


class _IobColumn:
    """Validates one IOB column and converts it to IOB2, a sentence at a time.

    The IOB2 form of a tag depends only on the previous tag, so conversions are cached per
    (previous, current) pair; each distinct tag is validated once.
    """

    def __init__(self, index: int, name: str, scheme: str = "iob1") -> None:
        self.index = index
        self.name = name
        self.scheme = scheme
        self.kind: dict[str, str] = {"O": ""}  # validated tag -> type ("" for O)
        self.pairs: dict[tuple[str, str], str] = {}  # (previous, tag) -> IOB2 tag

    def convert(self, tags: Sequence[str], path: str, first_line: int) -> list[str]:
        if self.scheme == "io":  # bare types are inside tags: PER -> I-PER
            tags = [t if t == "O" or t[:2] in ("I-", "B-") else "I-" + t for t in tags]
        prev = ("O", *tags[:-1])
        pairs = self.pairs
        try:
            return list(map(pairs.__getitem__, zip(prev, tags, strict=True)))
        except KeyError:
            pass
        kind = self.kind
        for j, tag in enumerate(tags):
            if tag not in kind:
                try:
                    kind[tag] = split_tag(tag)[1]
                except TagError as err:
                    raise ConllFormatError(
                        f"{path}:{first_line + j}: column {self.index + 1} ({self.name}): {err}"
                    ) from None
        for p, tag in zip(prev, tags, strict=True):
            if (p, tag) not in pairs:
                k = kind[tag]
                pairs[p, tag] = "B-" + k if tag[0] == "I" and k != kind[p] else tag
        return list(map(pairs.__getitem__, zip(prev, tags, strict=True)))


def read_utf8(path: str | os.PathLike) -> tuple[str, str]:
    """The UTF-8 text of ``path`` (a leading BOM dropped; ``"-"``: standard input) and the name
    to report it by; ConllFormatError naming the line of a byte that is not UTF-8."""
    return read_encoded(path, "utf-8")


def check_encoding(encoding: str) -> str:
    """Python's name of the codec ``encoding``; ValueError for one it does not know."""
    try:
        return codecs.lookup(encoding).name
    except (LookupError, TypeError):
        raise ValueError(
            f"unknown encoding {encoding!r}: expected a codec Python knows (utf-8, latin-1, "
            "cp1252, utf-16 ...)"
        ) from None


def read_encoded(path: str | os.PathLike, encoding: str = "utf-8") -> tuple[str, str]:
    """The text of ``path`` in ``encoding`` (``"-"``: standard input) and the name to report it
    by.  A UTF-8 byte-order mark is dropped from UTF-8 text and refused in another 8-bit one
    (it would read as three letters); UTF-16 and UTF-32 read their own.  ConllFormatError
    naming the line of a byte the codec cannot read."""
    codec = check_encoding(encoding)
    data, name = read_input_bytes(path)
    if data.startswith(codecs.BOM_UTF8):
        if codec in ("utf-8", "utf-8-sig"):
            data = data[len(codecs.BOM_UTF8) :]
        elif not codec.startswith(("utf-16", "utf-32")):
            raise ConllFormatError(
                f"{name}:1: the file starts with a UTF-8 byte-order mark, but the encoding is "
                f"{encoding}: expected {encoding} text (or encoding utf-8)"
            )
    try:
        return data.decode(codec), name
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        what = "UTF-8" if codec == "utf-8" else encoding
        byte = f"0x{data[err.start]:02x}"
        raise ConllFormatError(
            f"{name}:{line}: expected {what} text, found byte {byte} ({err.reason})"
        ) from None


def universal_newlines(text: str) -> str:
    """``text`` with its CRLF and lone CR line ends as LF (Python's universal newlines)."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_columns(text: str):
    """The column splitter of ``text`` (one line in, its columns out): columns are separated by
    ASCII spaces and tabs only; ``str.split`` when the text holds no other whitespace."""
    return _FIELD.findall if _OTHER_SPACE.search(text) else str.split


def check_controls(text: str, path: str) -> None:
    """ConllFormatError naming the line and column of the first control character in ``text``
    (LF line ends) other than the tab."""
    found = _CONTROL.search(text)
    if found is None:
        return
    pos = found.start()
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    end = len(text) if end < 0 else end
    before = text[start:pos]
    column = len(_FIELD.findall(before)) + (not before or before[-1] in BLANK)
    field = next(m for m in _FIELD.finditer(text, start, end) if m.start() <= pos < m.end())
    line = text.count("\n", 0, pos) + 1
    raise ConllFormatError(
        f"{path}:{line}: column {column}: control character "
        f"U+{ord(text[pos]):04X} in {field.group()!r}: expected printable text (columns are "
        "separated by spaces or tabs)"
    )


def check_column_map(columns: Sequence[str]) -> tuple[str, ...]:
    """``columns`` as a tuple when it is a column map (one ``token``, other names once each,
    ``_`` any number of times); else ValueError saying what is expected."""
    columns = tuple(columns)
    named = [c for c in columns if c != "_"]
    if (
        columns.count("token") != 1
        or len(set(named)) < len(named)
        or not all(isinstance(c, str) and _NAME.fullmatch(c) for c in named)
    ):
        raise ValueError(
            f"input columns {list(columns)}: expected one 'token' and other names at most once "
            f"each (such as {', '.join(COLUMN_NAMES[1:-1])}, lemma; letters, digits, _ . -), "
            "'_' for a column to skip"
        )
    return columns


def read_conll(
    path: str | os.PathLike,
    layout: str = "conll2003",
    documents: str | None = None,
    max_docs: int | None = None,
    columns: Sequence[str] | None = None,
    scheme: str | None = None,
    *,
    label: str | None = None,
    encoding: str = "utf-8",
    separator: str = "whitespace",
    comments: bool = False,
    tag_columns: dict[str, str] | None = None,
    optional_label: bool = False,
    unknown: str | None = UNKNOWN,
    any_of: str | None = None,
) -> list[Document]:
    """Read a CoNLL file into Documents with IOB2 tags.

    layout:    a key of LAYOUTS; it names the columns.  A file with one column fewer (no label
               column) is read as unlabeled input: ``tags`` is None.
    columns:   a column map instead (module docstring): exactly these columns, or all but the
               label column (unlabeled input).
    label:     the column that holds the tags (default: the layout's, ``LABEL_COLUMN``); a
               column map without it is unlabeled input.
    scheme:    the label column's tag scheme: one of ``data/schemes.py``'s (``iob1``, ``iob2``,
               ``ioe1``, ``ioe2``, ``iobes``, ``bilou``, ``io``), all read as IOB2; ``plain``
               (labels kept as they are) or ``raw`` (not converted).  None: the layout's.
    tag_columns: other columns read as chunk tags and converted to IOB2, name -> scheme
               (default: the layout's, CoNLL-2003's ``chunk`` in IOB1; none with a column map).
    documents: "docstart": a document is everything between ``-DOCSTART-`` lines, its sentences
               concatenated, ``sentence_starts`` marking them; "sentence": each sentence is a
               document and ``-DOCSTART-`` lines are skipped; any other text: the line (or first
               column) of the file that separates documents, e.g. ``<doc>``.  None: the
               layout's default (DEFAULT_DOCUMENTS: "docstart" for conll2003, "sentence" for
               conll2000).
    max_docs:  stop after this many documents (the rest of the file is not read).
    encoding, separator, comments: the module docstring's.
    optional_label: a column map's file may lack its label column (unlabeled input to tag).
    unknown:   the label that leaves a token open (``?``; None: no such label), any_of: the
               separator of a label cell that lists a token's possible labels (``B-PER|O``;
               None: none): partial annotation, kept as ``data.partial`` cells.

    ``columns`` holds every column but the token and the label; IOB columns are converted to
    IOB2 per sentence.  Lines end in LF, CRLF or CR.  Raises ConllFormatError, naming the file
    and line, for a malformed file (a control character in a column, a tag the scheme does not
    read, a boundary line that never occurs ...), ValueError for bad arguments.
    """
    if max_docs is not None and max_docs < 0:
        raise ValueError(f"max_docs must be >= 0 or None, got {max_docs}")
    parse = _parse(path, layout, documents, columns, scheme, label=label, encoding=encoding,
                   separator=separator, comments=comments, tag_columns=tag_columns,
                   optional_label=optional_label, unknown=unknown, any_of=any_of)  # fmt: skip
    if max_docs == 0:
        return []
    # The parse makes ~1e5 small containers and no cycles: collecting meanwhile only costs time.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return list(itertools.islice(parse(), max_docs))
    finally:
        if gc_was_enabled:
            gc.enable()


def iter_conll(
    path: str | os.PathLike,
    layout: str = "conll2003",
    documents: str | None = None,
    columns: Sequence[str] | None = None,
    scheme: str | None = None,
    **options: Any,
) -> Iterator[Document]:
    """``read_conll``'s documents one at a time, as they are parsed: the file's text is read
    at once, its documents are not kept (a corpus larger than memory).  The same options, the
    keyword ones (``label``, ``encoding`` ... ``any_of``) in ``options``; the options are
    checked at once, an error in the file is raised when the parse reaches it."""
    return _parse(path, layout, documents, columns, scheme, **options)()


def _parse(path, layout, documents, columns, scheme, *, label=None, encoding="utf-8",
           separator="whitespace", comments=False, tag_columns=None, optional_label=False,
           unknown=UNKNOWN, any_of=None) -> Callable[[], Iterator[Document]]:  # fmt: skip
    """The options checked (ValueError naming a bad one), and the parse of the file as a
    function that starts it; the keyword options and their defaults are ``read_conll``'s."""
    _check_layout(layout)
    if columns is not None:
        columns = check_column_map(columns)
    if scheme is not None and scheme != RAW:
        try:
            scheme = scheme_name(scheme)
        except ValueError:
            raise ValueError(
                f"tag scheme must be one of {(*CHUNK_SCHEMES, PLAIN, RAW)}, got {scheme!r}"
            ) from None
    if separator not in SEPARATORS:
        raise ValueError(f"separator must be one of {SEPARATORS}, got {separator!r}")
    check_partial_marks(unknown, any_of)
    mode = DEFAULT_DOCUMENTS[layout] if documents is None else documents
    if not isinstance(mode, str) or not mode.strip(BLANK) or "\n" in mode or "\r" in mode:
        raise ValueError(
            f"documents must be one of {DOCUMENT_MODES} or a boundary line, got {documents!r}"
        )

    def parse() -> Iterator[Document]:
        text, name = read_encoded(path, encoding)
        text = universal_newlines(text)
        parser = _Parser(name, layout, mode, columns, scheme, label, tag_columns)
        parser.tabs, parser.optional_label = separator == "tab", optional_label
        parser.unknown, parser.any_of = unknown, any_of or None
        if comments:
            text = _blank_comments(text, parser.boundary)
        yield from parser.documents(text)

    return parse


_COMMENT = re.compile(r"^[ \t]*#[^\n]*", re.MULTILINE)


def check_partial_marks(unknown: str | None, any_of: str | None) -> None:
    """ValueError unless the unknown mark and the any-of separator are None or non-empty texts
    without blanks (they are read inside one column)."""
    for key, mark in (("data.unknown", unknown), ("data.any_of", any_of)):
        if mark is not None and (not isinstance(mark, str) or not mark or _FIELD.fullmatch(mark)
                                 is None or _CONTROL.search(mark)):  # fmt: skip
            raise ValueError(f"{key} must be a label-column text without blanks, or null; "
                             f"got {mark!r}")  # fmt: skip
    if unknown is not None and any_of is not None and any_of in unknown:
        raise ValueError(f"data.unknown={unknown!r} holds the any-of separator {any_of!r}")


def _blank_comments(text: str, boundary: str) -> str:
    """``text`` with its comment lines (``#`` first) emptied, but a boundary line that is one;
    the line numbers stay."""
    return _COMMENT.sub(lambda m: m.group() if m.group().strip(BLANK) == boundary else "", text)


def _tab_fields(line: str) -> list[str]:
    """The tab-separated columns of a line (ASCII spaces around each dropped)."""
    return [f.strip(" ") for f in line.strip(BLANK).split("\t")]


class _Parser:
    """The state of one read_conll call: the column layout seen, the document being built."""

    def __init__(
        self,
        path: str,
        layout: str,
        mode: str,
        columns: tuple[str, ...] | None = None,
        scheme: str | None = None,
        label: str | None = None,
        tag_columns: dict[str, str] | None = None,
    ) -> None:
        self.path = path
        self.names = LAYOUTS[layout] if columns is None else columns
        self.fixed = columns is not None  # a column map: exactly these columns
        self.label = LABEL_COLUMN[layout] if label is None else label
        if tag_columns is None:
            self.schemes = dict(SCHEMES[layout])
        else:
            self.schemes = {c: scheme_name(s) for c, s in tag_columns.items()}
        if scheme is not None:
            self.schemes[self.label] = scheme
        # converted while reading (the fast path) or after (_convert); raw and plain: never
        self.after = {c: s for c, s in self.schemes.items() if s not in TAG_SCHEMES}
        self.schemes = {c: s for c, s in self.schemes.items() if s in TAG_SCHEMES}
        self.docstart = mode != "sentence"
        self.boundary = DOCSTART if mode in DOCUMENT_MODES else mode.strip(BLANK)
        self.custom = mode not in DOCUMENT_MODES
        self.boundaries = 0  # boundary lines seen
        self.tabs = False  # separator=tab
        self.optional_label = False  # a column map's file may lack the label column
        self.unknown: str | None = UNKNOWN  # a label that leaves a token open
        self.any_of: str | None = None  # separates the labels of a cell that lists several
        self.width = 0  # columns per token line, fixed by the first one
        self.first_line = 0
        self.label_index = -1  # field index of the label column, -1 for unlabeled input
        self.other: list[tuple[int, str]] = []  # (field index, name) kept in Document.columns
        self.iob: list[_IobColumn] = []
        self.out: list[Document] = []
        self.split = str.split  # the column splitter, parse()'s split_columns(text)
        self._new_doc()

    def _new_doc(self) -> None:
        self.tokens: list[str] = []
        self.cols: list[list[str]] = [[] for _ in self.other]
        self.labels: list[str] = []
        self.starts: list[int] = []
        self.lines: list[int] = []
        self.source = ""

    def _set_width(self, fields: list[str], lineno: int) -> None:
        names, label = self.names, self.label
        optional = self.optional_label and label in names
        if (
            self.fixed
            and len(fields) != len(names)
            and not (optional and len(fields) == len(names) - 1)
        ):
            raise ConllFormatError(
                f"{self.path}:{lineno}: expected {len(names)} columns ({' '.join(names)})"
                + (f" or {len(names) - 1} without {label}" if optional else "")
                + f", got {len(fields)}: {' '.join(fields)!r}"
            )
        if len(fields) == len(names):
            used = names
            self.label_index = names.index(label) if label in names else -1
        elif len(fields) == len(names) - 1 and label in names:
            used = tuple(n for n in names if n != label)
        else:
            unlabeled = " ".join(n for n in names if n != label)
            raise ConllFormatError(
                f"{self.path}:{lineno}: expected {len(names)} columns ({' '.join(names)}) or "
                f"{len(names) - 1} for unlabeled input ({unlabeled}), got {len(fields)}"
            )
        self.width, self.first_line = len(fields), lineno
        self.token_index = used.index("token")
        self.other = [(i, n) for i, n in enumerate(used) if n not in ("token", label, "_")]
        self.cols = [[] for _ in self.other]
        schemes = self.schemes
        self.iob = [_IobColumn(i, n, schemes[n]) for i, n in enumerate(used) if n in schemes]

    def _add_sentence(self, lines: list[str], first_line: int) -> None:
        """Add one sentence, given as its raw lines; ``first_line`` is the first one's number."""
        rows = list(map(self.split, lines))
        if not self.width:
            self._set_width(rows[0], first_line)
        width = self.width
        if set(map(len, rows)) != {width}:
            j = next(j for j, row in enumerate(rows) if len(row) != width)
            raise ConllFormatError(
                f"{self.path}:{first_line + j}: expected {width} columns like line "
                f"{self.first_line}, got {len(rows[j])}: {lines[j].strip(BLANK)!r}"
            )
        if self.tabs:
            for j, row in enumerate(rows):
                if "" in row:
                    raise ConllFormatError(
                        f"{self.path}:{first_line + j}: column {row.index('') + 1} is empty: "
                        f"expected {width} tab-separated columns, got {lines[j]!r}"
                    )
        columns: list[Sequence[str]] = list(zip(*rows, strict=True))
        partial = self.label_index >= 0 and self._open(columns[self.label_index])
        if partial:
            columns[self.label_index] = raw_cells(
                columns[self.label_index], self.unknown, self.any_of
            )
        for c in self.iob:
            if partial and c.index == self.label_index:
                columns[c.index] = _partial_iob2(columns[c.index], c, self.path, first_line)
            else:
                columns[c.index] = c.convert(columns[c.index], self.path, first_line)
        if not self.tokens:
            self.source = f"{self.path}:{first_line}"
        self.starts.append(len(self.tokens))
        self.lines.append(first_line)
        self.tokens.extend(columns[self.token_index])
        for (i, _), col in zip(self.other, self.cols, strict=True):
            col.extend(columns[i])
        if self.label_index >= 0:
            self.labels.extend(columns[self.label_index])

    def _open(self, labels: Sequence[str]) -> bool:
        """Whether a sentence's labels leave a token open (the unknown mark, an any-of cell)."""
        unknown, any_of = self.unknown, self.any_of
        if unknown is not None and unknown in labels:
            return True
        return bool(any_of) and any(any_of in x and x != any_of for x in labels)

    def _end_doc(self) -> None:
        if self.tokens:
            doc = Document(
                tokens=self.tokens,
                columns={name: col for (_, name), col in zip(self.other, self.cols, strict=True)},
                tags=self.labels if self.label_index >= 0 else None,
                sentence_starts=self.starts,
                source=self.source,
            )
            setattr(doc, _LINES, self.lines)
            self.out.append(mark_docstart(doc, self.docstart and not self.custom))
        self._new_doc()

    def _end_sentence_doc(self) -> None:
        if not self.docstart:
            self._end_doc()

    def _is_boundary(self, line: str) -> bool:
        if self.custom:
            return line.strip(BLANK) == self.boundary or self.split(line)[0] == self.boundary
        return self.split(line)[0] == DOCSTART

    def _add_block(self, lines: list[str], first_line: int) -> None:
        """A block of non-blank lines that contains a boundary line somewhere."""
        start = 0
        for j, line in enumerate(lines):
            if self._is_boundary(line):
                self.boundaries += 1
                if j > start:
                    self._add_sentence(lines[start:j], first_line + start)
                    self._end_sentence_doc()
                if self.docstart:
                    self._end_doc()
                start = j + 1
        if start < len(lines):
            self._add_sentence(lines[start:], first_line + start)
            self._end_sentence_doc()

    def documents(self, text: str) -> Iterator[Document]:
        """The documents of ``text`` (LF line ends: ``universal_newlines``), each as soon as it
        is complete."""
        check_controls(text, self.path)
        self.split = _tab_fields if self.tabs else split_columns(text)
        out = self.out
        pos, lineno = 0, 1
        boundary = self.boundary
        found = 0
        for m in _BLOCK.finditer(text):
            lineno += text.count("\n", pos, m.start())
            pos = m.start()
            block = m.group()
            lines = block.split("\n")
            if boundary in block:
                self._add_block(lines, lineno)
            else:
                self._add_sentence(lines, lineno)
                self._end_sentence_doc()
            if out:
                found += len(out)
                yield from map(self._convert, out)
                out.clear()
        self._end_doc()
        found += len(out)
        yield from map(self._convert, out)
        out.clear()
        if not found:
            last = max(1, text.count("\n") + (not text.endswith("\n")))
            raise ConllFormatError(
                f"{self.path}:{last}: expected at least one token line "
                f"({' '.join(self.names)}), found none: the file is empty"
            )
        if self.custom and not self.boundaries:
            raise ConllFormatError(
                f"{self.path}:1: documents={boundary!r}: no such line in the file: expected "
                f"documents to be {' or '.join(DOCUMENT_MODES)} or a line that separates them"
            )

    def _convert(self, doc: Document) -> Document:
        """Convert the columns in other schemes than IOB1/IOB2/IO to IOB2 (``convert_tags``)."""
        for name, scheme in self.after.items():
            if scheme in (RAW, PLAIN):
                continue
            if name == self.label and doc.tags is not None:
                doc.tags = convert_tags(doc, doc.tags, scheme, name)
            elif name in doc.columns:
                doc.columns[name] = convert_tags(doc, doc.columns[name], scheme, name)
        return doc


def _partial_iob2(cells: Sequence[str], column: _IobColumn, path: str, first_line: int):
    """A sentence's label cells with open tokens in IOB2 (``partial.cells_to_iob2``);
    ConllFormatError naming the line of a label the scheme does not read."""
    try:
        return cells_to_iob2(cells, column.scheme)
    except SchemeError as err:
        raise ConllFormatError(
            f"{path}:{first_line + err.index}: column {column.index + 1} ({column.name}): {err}"
        ) from None


def convert_tags(doc: Document, tags: list[str], scheme: str, column: str = "label") -> list[str]:
    """One column of ``doc`` (its ``tags`` or another) read in ``scheme`` and written in IOB2,
    sentence by sentence (open tokens as ``partial`` cells); ConllFormatError naming the file and
    line of a tag it cannot read."""
    out: list[str] = []
    for s, e in doc.sentence_spans():
        try:
            out.extend(cells_to_iob2(tags[s:e], scheme))
        except SchemeError as err:
            raise ConllFormatError(f"{token_line(doc, s + err.index)}: {column}: {err}") from None
    return out


def _doc_rows(
    doc: Document,
    prediction: Sequence[str] | None,
    layout: Sequence[str] | None = None,
    label: str | None = None,
) -> list[tuple[str, ...]]:
    """The output columns of each token: token, other columns, gold tag, prediction; with a
    ``layout``, its columns in its order (``label`` the tags, ``_`` and absent ones as ``_``)."""
    if layout is None:
        named = [("tokens", doc.tokens), *doc.columns.items()]
        if doc.tags is not None:
            named.append(("tags", _written_cells(doc.tags)))
    else:
        skip = ["_"] * len(doc.tokens)
        named = []
        for name in layout:
            if name == "token":
                named.append(("tokens", doc.tokens))
            elif name == label:
                if doc.tags is not None:
                    named.append(("tags", _written_cells(doc.tags)))
            else:
                named.append((name, doc.columns.get(name, skip)))
    if prediction is not None:
        named.append(("prediction", prediction))
    for name, col in named:
        if len(col) != len(doc.tokens):
            raise ValueError(
                f"document {doc.source or '?'}: {name} has {len(col)} entries, "
                f"expected {len(doc.tokens)} (one per token)"
            )
    return list(zip(*(col for _, col in named), strict=True))


def _written_cells(tags: Sequence[str]) -> Sequence[str]:
    """Tags as written: an open token's cell as the unknown mark or its labels joined."""
    if not any(map(is_partial, tags)):
        return tags
    return [shown(t, UNKNOWN, ANY_OF) for t in tags]


def write_conll(
    path: str | os.PathLike,
    documents: Sequence[Document],
    predictions: Sequence[Sequence[str]] | None = None,
    docstart: bool | None = None,
    *,
    layout: Sequence[str] | None = None,
    label: str | None = None,
    separator: str = " ",
    boundary: str = DOCSTART,
    encoding: str = "utf-8",
) -> None:
    """Write documents in their columns, plus the predicted tags as a last column, in
    ``encoding`` (a character it cannot write: ValueError naming the file and line).

    Each token line is: token, the other input columns, the gold tag when the document has
    tags, the prediction when ``predictions`` is given (one tag list per document); with a
    ``layout`` (a column map, ``label`` its tag column) the columns in its order instead, ``_``
    for a skipped or absent one.  Columns are joined by ``separator``; sentences are separated
    by blank lines.  With ``docstart`` (default: whether every document was read in "docstart"
    mode), a ``-DOCSTART-`` line padded to the same column count (``-DOCSTART- -X- -X- O O``
    for CoNLL-2003 with gold and predicted tags; another ``boundary`` line as it is) and a blank
    line come before each document, as conlleval needs one column count throughout.
    The file is written to a temporary file in the same folder and then renamed into place.
    """
    if predictions is not None and len(predictions) != len(documents):
        raise ValueError(
            f"got {len(predictions)} predictions for {len(documents)} documents: expected one "
            "tag list per document"
        )
    if docstart is None:
        docstart = bool(documents) and all(has_docstart(d) for d in documents)

    def pieces() -> Iterator[str]:  # one document's lines at a time
        for k, doc in enumerate(documents):
            prediction = None if predictions is None else predictions[k]
            yield document_text(doc, prediction, docstart, layout, label, separator, boundary)

    write_output_pieces(path, pieces(), encoding)


def document_text(
    doc: Document,
    prediction: Sequence[str] | None,
    docstart: bool,
    layout: Sequence[str] | None = None,
    label: str | None = None,
    separator: str = " ",
    boundary: str = DOCSTART,
) -> str:
    """One document's lines as ``write_conll`` writes them (its settings)."""
    rows = _doc_rows(doc, prediction, layout, label)
    chunks = []
    if docstart and boundary != DOCSTART:
        chunks.append(boundary + "\n\n")
    elif docstart:
        n_tags = (doc.tags is not None) + (prediction is not None)
        width = len(rows[0]) if rows else 1 + len(doc.columns) + n_tags
        head = [DOCSTART] + ["-X-"] * (width - 1 - n_tags) + ["O"] * n_tags
        chunks.append(separator.join(head) + "\n\n")
    bounds = [*doc.sentence_starts, len(rows)]
    if bounds[0] != 0:
        bounds.insert(0, 0)
    for a, b in zip(bounds, bounds[1:], strict=False):
        if b > a:
            chunks.append("".join(separator.join(row) + "\n" for row in rows[a:b]) + "\n")
    return "".join(chunks)
