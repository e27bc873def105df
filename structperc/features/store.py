"""Feature matrices on disk, memory-mapped: the features of a corpus larger than memory.

A split's ``FeatureMatrix`` (CSR: ids [nnz] int32, offsets [N + 1] int64, doc_offsets [D + 1]
int64) is written piece by piece as extraction proceeds (``MatrixWriter``: raw arrays appended
to ``<name>.ids``, ``<name>.offsets``, ``<name>.doc_offsets``), and opened as a
``FeatureMatrix`` whose tensors are views of read-only memory maps of those files
(``open_matrix``): every consumer of a ``FeatureMatrix`` (``make_batch``, the chain's
``predict``, the CRF's buckets) reads it unchanged, and a document's rows are read from the
page cache when it is visited.

Pages a process has touched count in its resident memory until they are unmapped from it, so
a pass over a mapped matrix would grow the process by the matrix's size.  The loops that read
one (``trainer.run_epochs``, ``ChainStructure.predict``, the CRF's objective) call
``release_pages`` now and then: the pages of every open map are dropped from
the process (``madvise(MADV_DONTNEED)``; they stay in the kernel's page cache, so reading them
again costs no disk), which bounds the process's memory by what it reads between two calls.
A loop in document order calls it every ``RELEASE_EVERY`` documents (what it reads between two
calls is contiguous); a loop in a shuffled order every ``SHUFFLED_RELEASE_EVERY``: a fault maps
a whole large folio of the page cache (Linux 6.x), so each document visited at random maps
~0.5 MB of the files (measured on the silver corpus: 64 random documents 32 MB, 4,096 the whole
137 MB file; at 30x CoNLL-2003's size, 2,048 documents held 827 MB of a 1.1 GB file).  Releasing
every 64 cost 0.18 s more per 20,000 random documents of the 4x file than releasing never
(the releases and the faults again): 9 us a document, about 0.4 us a token of 21-token ones.

A loop that visits documents at random reads them without the maps (``MatrixFiles``): three
``pread`` calls copy a document's bounds, offsets and ids from the page cache into fresh
arrays, so no page is mapped into the process and no large folio is faulted
(``model.batch.document_batch`` takes that path for a matrix read from disk, and the compiled
perceptron epoch with edge features copies each chunk of its shuffled documents so,
``native/online.CompiledEdgeEpoch``, the next chunk on a second thread while the kernel works
on one: ``read_ahead.py``).  Measured on the
4x silver corpus as it was then cut (Reuters alone, 733k tokens, 35k documents), epochs 2 and
3 of the averaged perceptron took 12.8 and 12.6 s through the maps against 9.6 and 9.8 s in
memory (another job on the other core), and by ``pread`` 8.8 and 8.7 s on a quiet machine.
Building a document so costs ~18 us (three reads ~8, its tensors ~5, the gold slice ~3),
about 0.9 us a token of 20-token sentences: the part of a streamed epoch that an epoch in
memory, which keeps each batch, does not pay.

Files, not pickles: opening a matrix never runs code.  A writer's files appear under their
names only when it is closed.
"""

from __future__ import annotations

import mmap
import os
import weakref
from pathlib import Path

import numpy as np
import torch

from structperc.features.extract import FeatureMatrix

PARTS = {"ids": np.int32, "offsets": np.int64, "doc_offsets": np.int64}
_OPEN: weakref.WeakSet = weakref.WeakSet()  # the memory maps to release


class MatrixWriter:
    """Appends CSR pieces of whole documents to the files of one matrix ``folder/name.*``."""

    def __init__(self, folder: str | Path, name: str):
        self.folder, self.name = Path(folder), name
        self.folder.mkdir(parents=True, exist_ok=True)
        self.files = {p: open(self._part(p), "wb") for p in PARTS}  # noqa: SIM115
        self.nnz, self.tokens = 0, 0
        np.zeros(1, np.int64).tofile(self.files["offsets"])
        np.zeros(1, np.int64).tofile(self.files["doc_offsets"])
        self.docs = 0

    def _part(self, part: str) -> Path:
        return self.folder / f"{self.name}.{part}.part"

    def add(self, ids: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> None:
        """A piece: ids [nnz] int32, offsets [n + 1] int64 from 0, the lengths of its documents
        [d] (summing to n)."""
        if int(np.sum(lengths)) != len(offsets) - 1:
            raise ValueError(f"{len(offsets) - 1} tokens but documents of {int(np.sum(lengths))}")
        np.asarray(ids, np.int32).tofile(self.files["ids"])
        (np.asarray(offsets[1:], np.int64) + self.nnz).tofile(self.files["offsets"])
        ends = np.cumsum(np.asarray(lengths, np.int64)) + self.tokens
        ends.tofile(self.files["doc_offsets"])
        self.nnz += len(ids)
        self.tokens += len(offsets) - 1
        self.docs += len(lengths)

    def close(self) -> FeatureMatrix:
        for part, f in self.files.items():
            f.close()
            os.replace(self._part(part), self.folder / f"{self.name}.{part}")
        return open_matrix(self.folder, self.name)


class MatrixFiles:
    """A mapped matrix's files read by ``pread`` (module docstring): one document's CSR rows as
    fresh arrays, without touching the maps.  Descriptors are opened on first use in each
    process (a forked or unpickled copy opens its own) and ``pread`` keeps no file position, so
    ranks may share one."""

    def __init__(self, folder: str | Path, name: str):
        self.paths = {p: Path(folder) / f"{name}.{p}" for p in PARTS}
        self._fds: dict[str, int] = {}
        self._pid = -1

    def __getstate__(self) -> dict:
        return {"paths": self.paths}

    def __setstate__(self, state: dict) -> None:
        self.paths, self._fds, self._pid = state["paths"], {}, -1

    def _read(self, part: str, start: int, count: int) -> np.ndarray:
        """Entries start..start+count-1 of ``part``'s array."""
        if self._pid != os.getpid():  # (this process's own descriptors)
            self._fds = {p: os.open(path, os.O_RDONLY) for p, path in self.paths.items()}
            weakref.finalize(self, _close_all, list(self._fds.values()))
            self._pid = os.getpid()
        out = np.empty(count, PARTS[part])
        size = out.itemsize
        done = os.preadv(self._fds[part], [memoryview(out).cast("B")], start * size)
        if done != count * size:
            raise OSError(
                f"{self.paths[part]}: {done} bytes at {start * size}, expected "
                f"{count * size}: the file changed under the run; extract again"
            )
        return out

    def document(self, d: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids [n] int32, offsets [T + 1] int64 from 0) of document d."""
        first, end = self._read("doc_offsets", d, 2).tolist()
        return self.tokens(first, end)

    def tokens(self, first: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids [n] int32, offsets [T + 1] int64 from 0) of tokens first..end-1."""
        offsets = self._read("offsets", first, end - first + 1)
        lo = int(offsets[0])
        ids = self._read("ids", lo, int(offsets[-1]) - lo)
        return ids, offsets - lo


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def exists(folder: str | Path, name: str) -> bool:
    return all((Path(folder) / f"{name}.{p}").is_file() for p in PARTS)


def open_matrix(folder: str | Path, name: str) -> FeatureMatrix:
    """The matrix ``folder/name.*`` over read-only memory maps (module docstring)."""
    tensors = {p: mapped(Path(folder) / f"{name}.{p}", dtype) for p, dtype in PARTS.items()}
    matrix = FeatureMatrix(
        tensors["ids"],
        tensors["offsets"],
        tensors["doc_offsets"],
        mapped=True,
        files=MatrixFiles(folder, name),
    )
    if int(matrix.doc_offsets[-1]) != matrix.num_tokens or int(matrix.offsets[-1]) != len(
        matrix.ids
    ):
        raise ValueError(f"{folder}/{name}.*: the files do not fit together: extract again")
    return matrix


def mapped(path: Path, dtype) -> torch.Tensor:
    """A tensor over a copy-on-write memory map of a raw array file (empty file: empty)."""
    if path.stat().st_size == 0:
        return torch.from_numpy(np.zeros(0, dtype))
    array = np.memmap(path, dtype=dtype, mode="c")
    _OPEN.add(array._mmap)  # (numpy keeps the mmap.mmap it made there)
    return torch.from_numpy(array)


def write_array(path: Path, array: np.ndarray) -> torch.Tensor:
    """Write ``array`` to ``path`` (atomically) and return it mapped."""
    part = path.with_name(path.name + ".part")
    array.tofile(part)
    os.replace(part, path)
    return mapped(path, array.dtype)


RELEASE_EVERY = 4096  # documents a loop in document order reads between two releases
SHUFFLED_RELEASE_EVERY = 64  # documents a loop in a shuffled order reads between two releases


def release_pages() -> None:
    """Drop the pages of every open memory map from this process (module docstring)."""
    for m in list(_OPEN):
        try:
            m.madvise(mmap.MADV_DONTNEED)
        except (ValueError, OSError):  # closed meanwhile
            _OPEN.discard(m)
