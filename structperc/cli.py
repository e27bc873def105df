"""What the command-line entry points share: failing with one line instead of a traceback."""

from __future__ import annotations

import os
import sys


def fail_cleanly(program: str, err: BaseException) -> None:
    """One line on stderr, ``PROGRAM: error: ...`` (the messages name the file and line), and
    exit status 2; the exception itself, with its traceback, when ``HYDRA_FULL_ERROR=1``."""
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        raise err
    print(f"{program}: error: {err}", file=sys.stderr)
    raise SystemExit(2)
