"""Making the next items on a thread of their own while the current one is worked on.

``prefetched`` runs an iterator in a background thread, a bounded number of items ahead of its
consumer.  Two readers use it:

* an epoch over features read from disk (``store.MatrixFiles``) copies each chunk of shuffled
  documents by ``pread`` before its compiled kernel runs (``native/online.CompiledEdgeEpoch``).
  On CoNLL-2003 x 30 the copies took 2.6 s of a 14.5 s epoch (9 us a document: two reads and
  their Python glue), all of it on the epoch's one thread.  Read ahead, they overlap the kernel,
  which releases the GIL (``nogil=True``); the order of the work, hence every result, is
  unchanged;
* tagging a text file reads and tokenizes its next batch while the kernels decode this one
  (``inference/files.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from queue import Full, Queue
from threading import Event, Thread


def prefetched(items: Iterable, depth: int = 2) -> Iterator:
    """``items`` made in a thread of their own, ahead of their use: at most ``depth`` made and
    waiting, and one more being made; an error there raises here, at its item.  Closing the
    iterator stops the thread at its next item."""
    queue: Queue = Queue(depth)
    done = object()
    stop = Event()

    def make() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        queue.put((True, item), timeout=0.1)
                        break
                    except Full:
                        continue
                if stop.is_set():
                    return
            queue.put((True, done))
        except BaseException as err:  # (raised again in the consumer)
            queue.put((False, err))

    thread = Thread(target=make, daemon=True, name="read-ahead")
    thread.start()
    try:
        while True:
            ok, item = queue.get()
            if not ok:
                raise item
            if item is done:
                return
            yield item
    finally:
        stop.set()
