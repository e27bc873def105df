"""What the command-line entry points share: where their configs are, and failing with one line
instead of a traceback (a bad setting or input: status 2; Ctrl-C: status 130)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

INTERRUPTED = 130  # the status of a program stopped by SIGINT (128 + 2), as shells report it


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


def full_error() -> bool:
    """Whether the user asked for tracebacks (``HYDRA_FULL_ERROR=1``)."""
    return os.environ.get("HYDRA_FULL_ERROR") == "1"


def fail_cleanly(program: str, err: BaseException) -> None:
    """One line on stderr, ``PROGRAM: error: ...`` (the messages name the file and line), and
    exit status 2; the exception itself, with its traceback, when ``HYDRA_FULL_ERROR=1``."""
    if full_error():
        raise err
    print(f"{program}: error: {err}", file=sys.stderr)
    raise SystemExit(2)


def usage_error(program: str, usage: str, message: str) -> None:
    """The usage line and ``PROGRAM: error: MESSAGE`` on stderr, as argparse writes them, and
    exit status 2."""
    print(f"usage: {program} {usage}", file=sys.stderr)
    print(f"{program}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def require_settings(program: str, usage: str, missing: Sequence[str]) -> None:
    """``usage_error`` naming the ``missing`` settings (keys a config leaves ``???``), if any."""
    if missing:
        names = ", ".join(f"{k}=" for k in missing)
        usage_error(program, usage, f"missing setting{'s' if len(missing) > 1 else ''} {names}")


@contextmanager
def interrupts_cleanly(program: str) -> Iterator[None]:
    """Ctrl-C inside: ``PROGRAM: interrupted`` on stderr and exit status 130 instead of the
    KeyboardInterrupt traceback (kept with ``HYDRA_FULL_ERROR=1``).  Outputs are written
    through a temporary file renamed into place (``io.atomic_write_text``), so an interrupted
    run leaves none half-written."""
    try:
        yield
    except KeyboardInterrupt:
        if full_error():
            raise
        print(f"{program}: interrupted", file=sys.stderr)
        raise SystemExit(INTERRUPTED) from None


def run_entry_point(program: str, hydra_main: Callable[[], object]) -> None:
    """Run a Hydra ``main`` (it reads ``sys.argv``) as the console script ``program``: Ctrl-C
    anywhere in it, Hydra's own config composition included, ends in one line."""
    with interrupts_cleanly(program):
        hydra_main()


def key_value_settings(
    program: str, usage: str, args: Sequence[str], defaults: dict, help_text: str = ""
) -> dict:
    """The settings of a small command (no Hydra config): ``defaults`` with each ``key=value``
    of ``args`` (a key's kind is its default's: a whole number, true/false or text; a default
    of None takes text; a default ``...`` marks a required key).  ``--help`` prints
    ``PROGRAM — help_text`` and the usage line, and exits 0; an unknown key, a value of the
    wrong kind or a missing required key is ``usage_error``."""
    if any(a in ("-h", "--help") for a in args):
        print(f"{program} — {help_text.strip()}\n\nusage: {program} {usage}")
        raise SystemExit(0)
    out = dict(defaults)
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or key not in defaults:
            what = f"unknown setting {key}=" if sep else "a setting is key=value"
            usage_error(program, usage, f"{what} in {arg!r}")
        kind = defaults[key]
        if isinstance(kind, bool):
            if value not in ("true", "false"):
                usage_error(program, usage, f"{key}={value!r}: expected true or false")
            out[key] = value == "true"
        elif isinstance(kind, int):
            if not value.lstrip("-").isdigit():
                usage_error(program, usage, f"{key}={value!r}: expected a whole number")
            out[key] = int(value)
        else:
            out[key] = None if value == "null" else value
    require_settings(program, usage, [k for k, v in out.items() if v is ...])
    return out
