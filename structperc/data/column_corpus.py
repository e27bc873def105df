"""A user's corpus in CoNLL-style columns (``data=columns``): files per split, a name per column,
the target column, separator, encoding, document boundaries, comments and tag scheme.

CoNLL-2003 and CoNLL-2000 are presets of it (``conf/data/conll03.yaml``, ``conll2000.yaml``), read
into the same Documents as ``loading.load_corpus`` reads them.  ``ColumnFormat`` is how one file
is read and written (``conll.read_conll``'s options); a model records it (``to_json``), so
prediction reads and writes its input the way the training files were.  ``ColumnCorpus`` adds
the files of each split (paths or globs, relative ones taken from the working folder or else the
data folder) and, without a dev file, a held-out slice of the training documents
(``dev_holdout``: a fraction or a count, drawn with ``dev_seed``).

The label column is ``label``, else the last named column after the token.  With
``scheme="auto"`` the scheme is told from the labels of every split (``schemes.detect_scheme``):
a chunk scheme (IOB1, IOB2, IOE1, IOE2, IOBES, BILOU) is converted to IOB2, and labels without
chunk prefixes make a plain tagging task (``plain``: POS or morphological tags, scored by token
accuracy).
"""

from __future__ import annotations

import glob
import os
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from structperc.io import write_output_pieces

from .conll import (
    DOCSTART,
    DOCUMENT_MODES,
    RAW,
    SEPARATORS,
    ConllFormatError,
    check_column_map,
    check_encoding,
    check_partial_marks,
    convert_tags,
    document_text,
    read_conll,
    token_line,
)
from .document import Document
from .partial import ANY_OF, UNKNOWN, has_partial, is_partial, shown
from .schemes import PLAIN, SchemeError, detect_scheme, from_iob2, scheme_name
from .tags import valid_iob2

AUTO = "auto"
SPLITS = ("train", "dev", "test")


@dataclass(frozen=True)
class ColumnFormat:
    """How the files of a corpus are laid out (``conll.read_conll``'s options).

    columns: one name per column (``token`` once, ``_`` skips one); label: the target column
    (None: the last named column after ``token``); scheme: the label column's tag scheme
    (``auto``, a scheme of ``data/schemes.py``, or ``plain``); tag_columns: other columns read as
    chunk tags, name -> scheme (CoNLL-2003's chunk column: IOB1); encoding, separator
    (``whitespace`` | ``tab``), documents (``docstart`` | ``sentence`` | a boundary line),
    comments (skip ``#`` lines); unknown: the label that leaves a token open (``?``; None: no
    such label), any_of: the separator of a label cell that lists a token's possible labels
    (``B-PER|O``; None: none), the partial annotation of ``data/partial.py``.
    """

    columns: tuple[str, ...]
    label: str | None = None
    scheme: str = AUTO
    encoding: str = "utf-8"
    separator: str = "whitespace"
    documents: str = "sentence"
    comments: bool = False
    tag_columns: dict[str, str] = field(default_factory=dict)
    unknown: str | None = UNKNOWN
    any_of: str | None = None

    def __post_init__(self) -> None:
        columns = check_column_map(self.columns)
        object.__setattr__(self, "columns", columns)
        label = self.label if self.label is not None else _last_named(columns)
        if label not in columns or label in ("token", "_"):
            raise ValueError(
                f"data.label={label!r}: expected one of the named columns of {list(columns)} "
                "other than token"
            )
        object.__setattr__(self, "label", label)
        if self.scheme != AUTO:
            object.__setattr__(self, "scheme", scheme_name(self.scheme))
        object.__setattr__(self, "encoding", check_encoding(self.encoding))
        if self.separator not in SEPARATORS:
            raise ValueError(f"data.separator must be one of {SEPARATORS}, got {self.separator!r}")
        unknown = [c for c in self.tag_columns if c not in columns or c == label]
        if unknown:
            raise ValueError(
                f"data.tag_columns names {unknown[0]!r}: expected columns of {list(columns)} "
                "other than the label"
            )
        tags = {c: scheme_name(s) for c, s in self.tag_columns.items()}
        object.__setattr__(self, "tag_columns", tags)
        check_partial_marks(self.unknown, self.any_of)

    @property
    def boundary(self) -> str | None:
        """The line written before each document (None: documents are sentences)."""
        if self.documents == "sentence":
            return None
        return DOCSTART if self.documents in DOCUMENT_MODES else self.documents

    def read_options(self) -> dict:
        """The options of ``conll.read_conll`` (and ``iter_conll``) that read a file of this
        layout: labels in IOB2, ``raw`` while the scheme is ``auto``."""
        return {
            "documents": self.documents,
            "columns": self.columns,
            "scheme": RAW if self.scheme == AUTO else self.scheme,
            "label": self.label,
            "encoding": self.encoding,
            "separator": self.separator,
            "comments": self.comments,
            "tag_columns": self.tag_columns,
            "unknown": self.unknown,
            "any_of": self.any_of,
        }

    def read(
        self, path: str | os.PathLike, max_docs: int | None = None, optional_label: bool = False
    ) -> list[Document]:
        """The documents of one file, labels in IOB2 (``raw`` while the scheme is ``auto``);
        ``optional_label``: the file may lack the label column (input to tag)."""
        return read_conll(
            path, max_docs=max_docs, optional_label=optional_label, **self.read_options()
        )

    def write(
        self,
        path: str | os.PathLike,
        docs: Sequence[Document],
        predictions: Sequence[Sequence[str]] | None = None,
    ) -> None:
        """``docs`` in this layout (skipped columns as ``_``), their tags and ``predictions``
        (IOB2) written back in the corpus's scheme and encoding, the prediction as a last
        column."""
        pieces = (
            self.document_text(d, None if predictions is None else predictions[k])
            for k, d in enumerate(docs)
        )
        if predictions is not None and len(predictions) != len(docs):
            raise ValueError(f"got {len(predictions)} predictions for {len(docs)} documents")
        write_output_pieces(path, pieces, self.encoding)

    def document_text(self, doc: Document, prediction: Sequence[str] | None = None) -> str:
        """One document's lines in this layout (``write``'s), its tags and ``prediction``
        (IOB2) in the corpus's scheme."""
        scheme = self.scheme if self.scheme != AUTO else "iob2"
        back = replace(doc)
        if has_partial(doc.tags):  # open tokens: IOB2 cells as the marks write them
            back.tags = [shown(t, self.unknown or UNKNOWN, self.any_of or ANY_OF) for t in doc.tags]
        elif back.tags is not None:
            back.tags = in_scheme(doc, doc.tags, scheme)
        back.columns = {
            k: in_scheme(doc, v, self.tag_columns[k]) if k in self.tag_columns else v
            for k, v in doc.columns.items()
        }
        pred = None if prediction is None else in_scheme(doc, prediction, scheme)
        return document_text(
            back,
            pred,
            docstart=self.boundary is not None,
            layout=self.columns,
            label=self.label,
            separator="\t" if self.separator == "tab" else " ",
            boundary=self.boundary or DOCSTART,
        )

    def to_json(self) -> dict:
        """The format as JSON values (``from_json`` reads them back)."""
        out = asdict(self)
        out["columns"] = list(self.columns)
        return out

    @classmethod
    def from_json(cls, data: dict) -> ColumnFormat:
        """The format ``to_json`` wrote; ValueError for a malformed one."""
        try:
            return cls(**{**data, "columns": tuple(data["columns"])})
        except (KeyError, TypeError) as err:
            raise ValueError(f"a column format of the wrong shape ({err}): {data!r}") from None


def _last_named(columns: Sequence[str]) -> str | None:
    named = [c for c in columns if c not in ("token", "_")]
    return named[-1] if named else None


def in_scheme(doc: Document, tags: Sequence[str], scheme: str) -> list[str]:
    """IOB2 ``tags`` of ``doc`` in ``scheme``, sentence by sentence: valid sequences of the
    scheme whatever the input's (an ``I-X`` that begins a chunk is read as conlleval reads it,
    and written as the scheme begins a chunk)."""
    if scheme == PLAIN:
        return list(tags)
    if scheme == "iob2":
        return valid_iob2(tags, doc.sentence_spans())
    out: list[str] = []
    for s, e in doc.sentence_spans():
        out.extend(from_iob2(tags[s:e], scheme))
    return out


@dataclass(frozen=True)
class ColumnCorpus:
    """A corpus's files and format (``data=columns``).

    name: names the corpus in messages and results; train, dev, test: a file or a glob each
    (dev, test may be None); dev_holdout: without dev, this fraction (< 1) or count (>= 1) of the
    training documents, drawn with ``dev_seed``, is the dev split (0: none); max_docs: the first
    N documents of each split; train_docs: the first N training documents (after the dev slice).
    """

    format: ColumnFormat
    train: str
    dev: str | None = None
    test: str | None = None
    name: str = "columns"
    dev_holdout: float = 0.1
    dev_seed: int = 0
    max_docs: int | None = None
    train_docs: int | None = None

    def files(self, data_dir: str | os.PathLike | None) -> dict[str, list[Path]]:
        """The files of each split given (``resolve_files``)."""
        given = {s: getattr(self, s) for s in SPLITS if getattr(self, s)}
        return {s: resolve_files(p, data_dir, f"data.{s}") for s, p in given.items()}

    def load(
        self, data_dir: str | os.PathLike | None
    ) -> tuple[dict[str, list[Document]], ColumnFormat]:
        """(the splits' documents with IOB2 or plain labels, the format with its scheme told)."""
        files = self.files(data_dir)
        if "train" not in files:
            raise ValueError("data.train: expected a training file (or glob)")
        fmt = self.format
        corpus = {s: _read_split(fmt, paths, self.max_docs) for s, paths in files.items()}
        if fmt.scheme == AUTO:
            fmt = replace(fmt, scheme=corpus_scheme(corpus, fmt.label))
            for docs in corpus.values():
                for doc in docs:
                    if doc.tags is not None:
                        doc.tags = convert_tags(doc, doc.tags, fmt.scheme, fmt.label)
        if "dev" not in corpus and self.dev_holdout:
            corpus["train"], corpus["dev"] = hold_out(
                corpus["train"], self.dev_holdout, self.dev_seed
            )
        if self.train_docs is not None:
            corpus["train"] = corpus["train"][: self.train_docs]
        return {s: corpus[s] for s in SPLITS if s in corpus}, fmt


def resolve_files(pattern: str, data_dir: str | os.PathLike | None, key: str) -> list[Path]:
    """The files of a path or glob, sorted: taken from the working folder, else from the data
    folder ``data_dir`` (resolved: ``loading.resolve_data_dir``); FileNotFoundError naming
    ``key`` and the folders tried when none matches."""
    pattern = os.path.expanduser(str(pattern))
    roots = [Path(".")]
    root = Path(data_dir).expanduser() if data_dir is not None else None
    if root is not None and not os.path.isabs(pattern):
        roots.append(root)
    for base in roots:
        where = pattern if os.path.isabs(pattern) or base == Path(".") else str(base / pattern)
        if glob.has_magic(where):
            found = sorted(Path(p) for p in glob.glob(where) if Path(p).is_file())
        else:
            found = [Path(where)] if Path(where).is_file() else []
        if found:
            return found
    tried = ", ".join(["the working folder", *(str(r) for r in roots[1:])])
    raise FileNotFoundError(f"{key}={pattern}: no such file (looked in {tried})")


def _read_split(fmt: ColumnFormat, paths: list[Path], max_docs: int | None) -> list[Document]:
    docs: list[Document] = []
    for path in paths:
        left = None if max_docs is None else max_docs - len(docs)
        if left == 0:
            break
        docs += fmt.read(path, max_docs=left)
    return docs


def corpus_scheme(corpus: dict[str, list[Document]], label: str) -> str:
    """The tag scheme of the corpus's raw labels (``schemes.detect_scheme``); ConllFormatError
    when it cannot be told."""

    def sentences():
        for docs in corpus.values():
            for doc in docs:
                if doc.tags is None:
                    continue
                for s, e in doc.sentence_spans():
                    for a, b in known_runs(doc.tags, s, e):  # (open tokens tell nothing)
                        yield doc.tags[a:b], lambda j, doc=doc, a=a: token_line(doc, a + j)

    try:
        return detect_scheme(sentences())
    except SchemeError as err:
        raise ConllFormatError(f"{label}: {err}") from None


def known_runs(tags: Sequence[str], start: int, end: int) -> list[tuple[int, int]]:
    """The [a, b) runs of tokens start..end-1 whose labels are known (no partial cell)."""
    runs, a = [], start
    for t in range(start, end):
        if is_partial(tags[t]):
            if t > a:
                runs.append((a, t))
            a = t + 1
    if end > a:
        runs.append((a, end))
    return runs


def hold_out(docs: list[Document], size: float, seed: int) -> tuple[list[Document], list[Document]]:
    """(the rest, a held-out slice) of ``docs``: ``size`` of them (a fraction < 1, at least one
    document, or a count), drawn with ``seed``; both keep the documents' order."""
    if size < 0 or (size >= 1 and int(size) != size):
        raise ValueError(f"data.dev_holdout must be a fraction in [0, 1) or a count, got {size}")
    n = max(1, round(size * len(docs))) if size < 1 else int(size)
    if not 0 < n < len(docs):
        raise ValueError(
            f"data.dev_holdout={size} keeps {n} of {len(docs)} training documents for dev: "
            "expected at least one for each"
        )
    held = set(random.Random(seed).sample(range(len(docs)), n))
    return (
        [d for i, d in enumerate(docs) if i not in held],
        [d for i, d in enumerate(docs) if i in held],
    )
