"""MkDocs hooks of the documentation site (``mkdocs.yml``: ``hooks``).

A page includes a generated table of ``experiments/`` by a line of its own,

    <!-- include: experiments/kazama2007/README.md#table2 -->

which becomes the section of that README between ``<!-- table2:begin -->`` and
``<!-- table2:end -->``: the table a script of ``experiments/`` wrote there from the runs' own
files (``tools/sections.py``), so the site holds no figure typed by hand.  Links of the section
into the repository become paths in code (the site holds the docs alone); a section or file
that is missing fails the build.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r"^<!-- include: (?P<path>[^#\s]+)#(?P<section>[\w-]+) -->$", re.MULTILINE)
LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]+)\]\((?P<target>[^)\s]+)\)")


def section_of(path: str, name: str, root: Path = ROOT) -> str:
    """The text between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->`` in the file ``path``
    (relative to ``root``); ValueError naming what is missing."""
    file = root / path
    if not file.is_file():
        raise ValueError(f"include: no file {path}")
    text = file.read_text(encoding="utf-8")
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if begin not in text or end not in text:
        raise ValueError(f"include: {path} has no section {name!r} ({begin} ... {end})")
    body = text.split(begin, 1)[1].split(end, 1)[0].strip("\n")
    folder = (root / path).parent.relative_to(root)
    return LINK.sub(lambda m: _plain_link(m, folder), body)


def _plain_link(match: re.Match, folder: Path) -> str:
    """A link out of the site: the web's stays, a repository path becomes code."""
    target = match["target"]
    if re.match(r"[a-z]+://", target) or target.startswith("#"):
        return match[0]
    where = (folder / target).as_posix()
    return f"{match['text']} (`{where}`)" if match["text"].strip("`") != target else f"`{where}`"


def included(markdown: str, root: Path = ROOT) -> str:
    """``markdown`` with every include line replaced by its section, and a line saying where
    the section comes from."""

    def replace(m: re.Match) -> str:
        body = section_of(m["path"], m["section"], root)
        return f"{body}\n\n*From `{m['path']}`, section `{m['section']}`.*"

    return INCLUDE.sub(replace, markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """MkDocs: the page's includes resolved before it is rendered."""
    return included(markdown)
