"""Reading the next chunk of a training set from disk while the current one is worked on.

An epoch over features read from disk (``store.MatrixFiles``) copies each chunk of shuffled
documents by ``pread`` before its compiled kernel runs.  On CoNLL-2003 x 30 the copies took
2.6 s of a 14.5 s epoch (9 us a document: two reads and their Python glue), all of it on the
epoch's one thread.  ``read_ahead`` runs chunk k + 1's read on a second thread while the caller
works on chunk k; a kernel that releases the GIL (``nogil=True``) then overlaps them, and the
order of the work, hence every result, is unchanged.  At most two chunks are held at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Chunk = TypeVar("Chunk")
Read = TypeVar("Read")


def read_ahead(
    chunks: Sequence[Chunk], read: Callable[[Chunk], Read]
) -> Iterator[tuple[Chunk, Read]]:
    """(chunk, read(chunk)) for each chunk in order, read(next chunk) running on a background
    thread meanwhile.  An error of ``read`` is raised here, at its chunk."""
    if not chunks:
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="read-ahead") as pool:
        pending = pool.submit(read, chunks[0])
        for k, chunk in enumerate(chunks):
            done = pending.result()
            if k + 1 < len(chunks):
                pending = pool.submit(read, chunks[k + 1])
            yield chunk, done
