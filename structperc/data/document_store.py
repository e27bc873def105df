"""Documents on disk, read back one at a time: a corpus larger than memory as a sequence.

``DocumentStore.write(path, docs)`` writes documents as JSON lines (tokens, columns, tags,
sentence starts, source, line numbers, the ``-DOCSTART-`` mark: everything a ``Document`` read
from a column file carries) and an index of their byte offsets.  ``StoredDocuments`` is the
store as a ``Sequence[Document]``: ``len``, ``docs[i]`` (one read at the document's offset)
and iteration (one pass over the file, in blocks), each ``Document`` made when it is asked for
and dropped by the caller, so code written for a list of documents (label sets, the gazetteer
jackknife, the rescoring structure's document lookups) runs over a corpus of any size in the
memory of the documents it holds at a time.  Its memory is the index: 16 bytes a document.

JSON, not pickle: reading a store never runs code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from structperc.data.conll import has_docstart, mark_docstart, sentence_lines
from structperc.data.document import Document

_LINES = "_lines"  # (conll.py's attribute of the line numbers of a document's sentences)


def to_record(doc: Document) -> dict:
    record: dict = {"t": doc.tokens, "s": doc.sentence_starts, "src": doc.source}
    if doc.columns:
        record["c"] = doc.columns
    if doc.tags is not None:
        record["y"] = doc.tags
    lines = sentence_lines(doc)
    if lines is not None:
        record["l"] = lines
    if has_docstart(doc):
        record["ds"] = True
    return record


def from_record(record: dict) -> Document:
    doc = Document(
        tokens=record["t"],
        columns=record.get("c", {}),
        tags=record.get("y"),
        sentence_starts=record["s"],
        source=record["src"],
    )
    if "l" in record:
        setattr(doc, _LINES, record["l"])
    return mark_docstart(doc, record.get("ds", False))


class DocumentStore:
    """Writes documents to ``path`` (JSON lines), ``path + ".index"`` (int64 byte offsets
    [D + 1]) and ``path + ".lengths"`` (int64 tokens [D]); ``add`` any number of times, then
    ``close``.  The document file appears under its name last (the others are written first),
    so a store that exists is complete."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._part = self.path.with_name(self.path.name + ".part")
        self._file = open(self._part, "wb")  # noqa: SIM115 - closed by close()
        self._offsets = [0]
        self._lengths: list[int] = []

    def add(self, docs: Iterable[Document]) -> None:
        write = self._file.write
        for doc in docs:
            line = json.dumps(to_record(doc), ensure_ascii=False, separators=(",", ":"))
            data = line.encode("utf-8") + b"\n"
            write(data)
            self._offsets.append(self._offsets[-1] + len(data))
            self._lengths.append(len(doc))

    def close(self) -> StoredDocuments:
        self._file.close()
        np.asarray(self._offsets, dtype=np.int64).tofile(_sidecar(self.path, "index"))
        np.asarray(self._lengths, dtype=np.int64).tofile(_sidecar(self.path, "lengths"))
        os.replace(self._part, self.path)
        return StoredDocuments(self.path)

    @classmethod
    def write(cls, path: str | Path, docs: Iterable[Document]) -> StoredDocuments:
        store = cls(path)
        store.add(docs)
        return store.close()


def _sidecar(path: Path, kind: str) -> Path:
    return path.with_name(f"{path.name}.{kind}")


class StoredDocuments(Sequence[Document]):
    """The documents of a ``DocumentStore`` file as a read-only sequence (module docstring)."""

    BLOCK = 1 << 22  # bytes read at a time while iterating

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.offsets = np.fromfile(_sidecar(self.path, "index"), dtype=np.int64)  # [D + 1]
        self.lengths = np.fromfile(_sidecar(self.path, "lengths"), dtype=np.int64)  # [D]
        size = self.path.stat().st_size
        if len(self.offsets) != len(self.lengths) + 1 or self.offsets[-1] != size:
            raise ValueError(f"{self.path}: its index does not match it: write the store again")

    @property
    def num_tokens(self) -> int:
        return int(self.lengths.sum())

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"document {i} of {len(self)}")
        start, end = int(self.offsets[i]), int(self.offsets[i + 1])
        with open(self.path, "rb") as f:
            f.seek(start)
            return from_record(json.loads(f.read(end - start)))

    def __iter__(self) -> Iterator[Document]:
        with open(self.path, "rb") as f:
            rest = b""
            while block := f.read(self.BLOCK):
                lines = (rest + block).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    yield from_record(json.loads(line))
        if rest:
            yield from_record(json.loads(rest))

    def __repr__(self) -> str:
        return f"StoredDocuments({str(self.path)!r}, {len(self)} documents)"
