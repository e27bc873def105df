"""How a run's F1 was scored, for the table scripts: conlleval's, or the old whole-document F1.

Since the scoring change, every results.json reports conlleval.pl's F1 (chunks closed at every
sentence end, as the blank lines of the written prediction file close them) as ``f1``, and the
F1 of whole documents beside it as ``f1_document``.  Runs made before it reported the
whole-document F1 as ``f1``: on CoNLL-2003, whose documents are many sentences, a chunk predicted
across a sentence break counted as one wrong chunk there, so those figures are a little lower
than conlleval's (0.1-0.5 F1 on the runs re-made: ``rescored.py``).  On CoNLL-2000 every
sentence is a document and the two are the same.

A table prints a figure of such an old run with ``MARK`` after it and ``LEGEND`` under the table.
"""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import OmegaConf

MARK = "ᵈ"
LEGEND = (
    f"{MARK} whole-document F1 of a run made before the scores followed conlleval.pl (a chunk "
    "predicted across a sentence break counted as one wrong chunk), not re-run: a little below "
    "conlleval's F1 of the same predictions (`tools/scoring.py`)."
)


def document_level(results: dict, run: Path | None = None) -> bool:
    """Whether ``results`` (a results.json, or one split of it) holds old whole-document F1s:
    no ``f1_document`` beside its F1s, on a corpus with multi-sentence documents (``run``'s
    recorded ``data.name`` when given; CoNLL-2003 unless it says conll2000)."""
    splits = [results] if "f1" in results else [v for v in results.values() if isinstance(v, dict)]
    scored = [s for s in splits if "f1" in s]
    if not scored or any("f1_document" in s for s in scored):
        return False
    if run is not None and (run / ".hydra" / "config.yaml").is_file():
        name = OmegaConf.select(OmegaConf.load(run / ".hydra" / "config.yaml"), "data.name")
        return name != "conll2000"
    return True


def run_is_document_level(run: Path) -> bool:
    """``document_level`` of ``run``'s results.json (False where there is none)."""
    path = run / "results.json"
    return path.is_file() and document_level(json.loads(path.read_text()), run)


def mark(flag: bool) -> str:
    """``MARK`` where ``flag``, else the empty string: ``f"{f1:.2f}{mark(old)}"``."""
    return MARK if flag else ""


def legend(any_marked: bool) -> str:
    """The legend paragraph (with a leading blank line) where a table has marked figures."""
    return f"\n{LEGEND}\n" if any_marked else ""


def table(lines: list[str], marked: bool | None = None) -> str:
    """The lines of a table as text, and the legend under it where a figure is marked
    (``marked``; by default, where ``MARK`` is in the lines)."""
    text = "\n".join(lines) + "\n"
    return text + legend(MARK in text if marked is None else marked)


def read_results(run: Path) -> dict | None:
    """``run``'s results.json with ``document_level`` added (``document_level``: whether its F1s
    are the old whole-document ones); None where the run has none."""
    path = run / "results.json"
    if not path.is_file():
        return None
    r = json.loads(path.read_text())
    return r | {"document_level": document_level(r, run)}


def marks(*results: dict | None) -> str:
    """``MARK`` after a figure read from ``results`` (of ``read_results``; None: no run) where
    one of them is document-level."""
    return mark(any(r is not None and r["document_level"] for r in results))
