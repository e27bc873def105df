"""A run's prediction files (``dev.pred.txt``, ``test.pred.txt``) read back into documents.

The tagging task writes each split's documents as it scored them (``tasks/labeler.py``,
``data.conll.write_conll``): one token a line, ``token [columns ...] gold predicted``, sentences
separated by blank lines, and a ``-DOCSTART-`` line before each document where the corpus has
documents (without any, each sentence is a document).  ``read_predictions`` gives each
document's tokens, columns (named by the model's corpus record), gold and predicted tags and
sentence starts; a line with another field count is a ValueError naming the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from structperc.data.document import Document

DOCSTART = "-DOCSTART-"


@dataclass
class Predicted:
    """A document and its predicted tags (``doc.tags``: the gold ones)."""

    doc: Document
    pred: list[str]


def read_predictions(path: str | Path, columns: list[str] | None = None) -> list[Predicted]:
    """The documents of a prediction file; ``columns``: the names of the fields between the
    token and the two tags (default ``pos``, ``chunk``, ... as many as there are)."""
    path = Path(path)
    out: list[Predicted] = []
    rows: list[list[str]] = []
    starts: list[int] = [0]
    width = -1
    first_line = 0
    per_sentence = documents_per_sentence(path)  # no -DOCSTART-: a sentence is a document

    def close() -> None:
        nonlocal rows, starts
        if rows:
            names = columns or ["pos", "chunk", *(f"col{i}" for i in range(3, width - 1))]
            middle = {n: [r[1 + i] for r in rows] for i, n in enumerate(names[: width - 3])}
            doc = Document(
                tokens=[r[0] for r in rows],
                columns=middle,
                tags=[r[-2] for r in rows],
                sentence_starts=[s for s in starts if s < len(rows)] or [0],
                source=f"{path}:{first_line}",
            )
            out.append(Predicted(doc, [r[-1] for r in rows]))
        rows, starts = [], [0]

    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                if per_sentence:
                    close()
                elif rows and starts[-1] != len(rows):
                    starts.append(len(rows))
                continue
            if width < 0:
                width = len(fields)
            if len(fields) != width or width < 3:
                raise ValueError(
                    f"{path}:{n}: {len(fields)} fields, expected {max(width, 3)} (token, columns, "
                    "gold and predicted tag) as on the first line"
                )
            if fields[0] == DOCSTART:
                close()
                continue
            if not rows:
                first_line = n
            rows.append(fields)
    close()
    if not out:
        raise ValueError(f"{path}: no tokens: expected a prediction file of a run")
    return out


def documents_per_sentence(path: str | Path) -> bool:
    """Whether the file has no ``-DOCSTART-`` lines (each sentence is then its own document)."""
    with open(path, encoding="utf-8") as f:
        return not any(line.startswith(DOCSTART) for line in f)
