"""What the command-line entry points share: where their configs are, and failing with one line
instead of a traceback."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def config_dir(package: Path | None = None) -> str:
    """The absolute path of structperc's Hydra configs (``config.yaml``, ``predict.yaml`` and
    the groups): ``structperc/conf`` inside an installed wheel (``pyproject.toml`` ships the
    top-level ``conf/`` there), else the top-level ``conf/`` beside the package (a source
    checkout, an editable install).

    Absolute, because Hydra reads a relative ``config_path`` as a Python package, not a folder,
    when the entry point is a console script (``structperc-train``, ``structperc-tag``) rather
    than ``python -m``.
    """
    package = package or Path(__file__).resolve().parent  # the structperc folder
    for candidate in (package / "conf", package.parent / "conf"):
        if (candidate / "config.yaml").is_file():
            return str(candidate)
    return str(package.parent / "conf")  # Hydra then names the folder it did not find


def fail_cleanly(program: str, err: BaseException) -> None:
    """One line on stderr, ``PROGRAM: error: ...`` (the messages name the file and line), and
    exit status 2; the exception itself, with its traceback, when ``HYDRA_FULL_ERROR=1``."""
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        raise err
    print(f"{program}: error: {err}", file=sys.stderr)
    raise SystemExit(2)
