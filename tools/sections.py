"""The command line the table scripts share: README sections between markers, and the data folder.

A table script renders each of its tables from the runs' own files and puts it into a README
between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``; nothing between the markers is typed
by hand.  ``main`` is a whole script's command line (``--readme README``); a script with more
arguments builds on ``parser`` and ends with ``publish``.  ``data_dir`` finds the CoNLL folder
of a script that reads the corpora (``--data-dir``, else ``$STRUCTPERC_DATA``).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterable
from pathlib import Path

MARKERS = "<!-- {section}:begin -->", "<!-- {section}:end -->"


def replace_section(readme: Path, section: str, text: str) -> None:
    """Replace the text between ``<!-- section:begin -->`` and ``<!-- section:end -->``."""
    begin, end = (m.format(section=section) for m in MARKERS)
    old = readme.read_text()
    if begin not in old or end not in old:
        raise SystemExit(f"{readme}: no {begin} ... {end} markers to replace")
    body = text if text.endswith("\n") else text + "\n"
    new = re.sub(
        re.escape(begin) + ".*?" + re.escape(end),
        lambda _: f"{begin}\n{body}{end}",
        old,
        flags=re.S,
    )
    readme.write_text(new)


def parser(doc: str, sections: Iterable[str] = (), data: bool = False) -> argparse.ArgumentParser:
    """A parser with ``--readme`` where a script has ``sections`` (the README in which they are
    replaced) and, with ``data``, ``--data-dir``; ``doc`` (the script's docstring) is its help."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawTextHelpFormatter)
    if data:
        ap.add_argument(
            "--data-dir",
            default=None,
            help="data folder (default: $STRUCTPERC_DATA, else ../shared/data)",
        )
    names = ", ".join(sections)
    if names:
        ap.add_argument("--readme", type=Path, help=f"README to update (sections {names})")
    return ap


def data_dir(ap: argparse.ArgumentParser, args: argparse.Namespace, corpus: str) -> Path:
    """The data folder holding ``corpus`` (``structperc.data.loading.require_data_dir``);
    a usage error of ``ap`` when there is none."""
    from structperc.data.loading import require_data_dir

    try:
        return require_data_dir(args.data_dir, corpus=corpus)
    except FileNotFoundError as err:
        ap.error(str(err))


def publish(readme: Path | None, sections: dict[str, str]) -> None:
    """Print every section under a ``## NAME`` heading; with ``readme``, put each one between
    its markers there."""
    for name, text in sections.items():
        print(f"## {name}\n\n{text}")
        if readme:
            replace_section(readme, name, text)


def main(doc: str, sections: dict[str, Callable[[], str]]) -> None:
    """The command line of a script whose tables need no argument: ``--readme README``."""
    args = parser(doc, sections).parse_args()
    publish(args.readme, {name: render() for name, render in sections.items()})
