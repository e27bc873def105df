"""Work in forked child processes, so a serial training can use a second core.

A child made by ``fork`` starts with a copy-on-write snapshot of its parent's memory: the weight
tables exactly as they are at the fork, without copying them.  ``trainer.fit`` uses this twice when
``trainer.processes`` > 1 (the results are bit-identical to one process):

- the BPM initialisation's single epochs (independent: each starts from zero weights) run in
  children that write their tables into ``SharedTables`` slots, and the parent sums them in run
  order, as the serial loop does;
- epoch k's evaluation and checkpoint run in a child while the parent trains epoch k + 1.

``Child(fn)`` forks, runs ``fn()`` in the child and ``result()`` returns what it returned (pickled
through a pipe between the two processes; nothing is read from disk).  A child uses one torch
thread, never logs through the parent's handlers' threads, and leaves with ``os._exit``.  Forking
is offered only on Linux, for CPU tables (``can_fork``); elsewhere the work runs in-process.
"""

from __future__ import annotations

import mmap
import os
import pickle
import signal
import sys
import traceback
from collections.abc import Callable

import torch


def can_fork(device: str | torch.device = "cpu") -> bool:
    """Whether work on tables on ``device`` may go to forked children here (Linux, CPU)."""
    return sys.platform.startswith("linux") and torch.device(device).type == "cpu"


class ChildError(RuntimeError):
    """A forked child failed: its exception (with traceback) or how it died."""


class Child:
    """``fn()`` running in a forked child process; ``result()`` waits for what it returns.

    Args:
        fn: the work; it may read anything of the parent's memory as it was at the fork, and
            must return a picklable value (small: it travels through a pipe).
        name: what the work is, for error messages ("epoch 3's evaluation").
    """

    def __init__(self, fn: Callable[[], object], name: str):
        self.name = name
        sys.stdout.flush()
        sys.stderr.flush()
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            os.close(read_end)
            code = 0
            try:
                torch.set_num_threads(1)
                payload = pickle.dumps(("ok", fn()))
            except BaseException as e:  # noqa: BLE001 - reported to the parent, which raises
                payload = pickle.dumps(
                    ("error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
                )
                code = 1
            try:
                with os.fdopen(write_end, "wb") as pipe:
                    pipe.write(payload)
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
        os.close(write_end)
        self.pid, self._read_end = pid, read_end
        self._done = False

    def result(self):
        """What ``fn`` returned; ChildError if it raised or the child died."""
        if self._done:
            raise ChildError(f"{self.name}: result() was already taken")
        self._done = True
        with os.fdopen(self._read_end, "rb") as pipe:
            payload = pipe.read()
        _, status = os.waitpid(self.pid, 0)
        if not payload:
            raise ChildError(f"{self.name}: the forked child {describe_status(status)}")
        kind, value = pickle.loads(payload)
        if kind == "error":
            raise ChildError(f"{self.name} failed in a forked child: {value}")
        return value

    def kill(self) -> None:
        """Stop the child if it still runs (after an error in the parent) and reap it."""
        if self._done:
            return
        self._done = True
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(self._read_end)
        os.waitpid(self.pid, 0)


def describe_status(status: int) -> str:
    """A wait status in words."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"was killed by signal {signal.Signals(sig).name}"
    return f"exited with status {os.WEXITSTATUS(status)} without a result"


class SharedTables:
    """Float tables in anonymous shared memory, written by forked children, read by the parent.

    One ``mmap`` (not a file: no ``/dev/shm`` size limit applies) holds a copy of every table of
    ``like``; ``tables`` are tensor views of it with the same names, shapes and dtypes.
    """

    def __init__(self, like: dict[str, torch.Tensor]):
        sizes = {n: t.numel() * t.element_size() for n, t in like.items()}
        self._buffer = mmap.mmap(-1, max(sum(sizes.values()), 1))
        self.tables: dict[str, torch.Tensor] = {}
        offset = 0
        for n, t in like.items():
            flat = torch.frombuffer(self._buffer, dtype=t.dtype, count=t.numel(), offset=offset)
            self.tables[n] = flat.view(t.shape)
            offset += sizes[n]

    def copy_from(self, tables: dict[str, torch.Tensor]) -> None:
        with torch.no_grad():
            for n, t in tables.items():
                self.tables[n].copy_(t)
