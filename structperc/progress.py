"""Progress bars that stay out of log files: shown only on a terminal, redrawn at most twice a
second, and gone when done.

A run whose stderr goes to a file (``make run > log``, a Hydra multirun, a cluster job) gets no
bars at all: tqdm writes a new line per redraw there, thousands per run.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from tqdm.auto import tqdm


def bar(iterable: Iterable, *, enabled: bool = True, **kwargs) -> tqdm:
    """``tqdm(iterable, **kwargs)`` when ``enabled`` and stderr is a terminal, else a silent one."""
    shown = enabled and sys.stderr.isatty()
    return tqdm(iterable, disable=not shown, mininterval=0.5, leave=False, **kwargs)
