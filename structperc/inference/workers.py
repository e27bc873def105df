"""Threads that share a batch's kernel work.

The compiled kernels release the GIL (``nogil``), so a batch's distinct words, sentences or
windows cut into runs of about equal size (``runs``) are decoded side by side, one run a thread
(``run``: the calling thread takes the last one).  One thread: everything runs in the caller.
(The next batch of text is read and tokenized ahead of its use by ``features/read_ahead.py``'s
``prefetched``.)
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np


class Workers:
    """``threads`` threads (the caller's included)."""

    def __init__(self, threads: int = 1):
        if threads < 1:
            raise ValueError(f"threads={threads}: expected at least 1")
        self.threads = threads
        self._pool = ThreadPoolExecutor(threads - 1) if threads > 1 else None

    def runs(self, sizes: np.ndarray) -> list[tuple[int, int]]:
        """[a, b) runs of consecutive items of about equal summed ``sizes``, one a thread."""
        if self.threads == 1 or len(sizes) < 2:
            return [(0, len(sizes))]
        total = np.cumsum(sizes)
        ends = np.searchsorted(total, np.arange(1, self.threads) * total[-1] / self.threads)
        cuts = [0, *sorted({int(e) for e in ends if 0 < e < len(sizes)}), len(sizes)]
        return list(zip(cuts[:-1], cuts[1:], strict=True))

    def run(self, jobs: list[Callable[[], object]]) -> None:
        """Run the ``jobs``: all but the last in the pool, the last here; their errors raise."""
        if self._pool is None or len(jobs) < 2:
            for job in jobs:
                job()
            return
        futures = [self._pool.submit(job) for job in jobs[:-1]]
        jobs[-1]()
        for future in futures:
            future.result()
