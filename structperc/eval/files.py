"""Scoring a written prediction file as ``conlleval.pl`` reads it.

conlleval.pl (CoNLL-2000, version 2004-01-26) reads lines of space-separated fields whose last two
are the gold and the predicted tag.  An empty line, or a line whose first field is ``-X-``, ends a
sentence; every other line is a token, a ``-DOCSTART- -X- -X- O O`` line included (it counts as
a token tagged ``O`` twice, which only moves the token accuracy).  Every line must have the
field count of the first one.  :func:`evaluate_file` reads such a file into sentences and scores
them with :func:`structperc.eval.chunks.evaluate`, so ``python -m structperc.eval FILE`` prints
what ``conlleval.pl < FILE`` prints.
"""

from __future__ import annotations

import os

from structperc.eval.chunks import ChunkScores, evaluate

__all__ = ["evaluate_file", "read_tag_columns"]

BOUNDARY = "-X-"  # conlleval's $boundary


def read_tag_columns(path: str | os.PathLike) -> tuple[list[list[str]], list[list[str]]]:
    """The gold and predicted tags of ``path``, one list per sentence, as conlleval.pl reads them.

    Raises ValueError naming the file and line when a line has a field count other than the first
    token line's, or fewer than two fields.
    """
    gold: list[list[str]] = []
    pred: list[list[str]] = []
    g_sent: list[str] = []
    p_sent: list[str] = []
    width = -1
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            fields = line.rstrip("\r\n").split(" ")
            while fields and fields[-1] == "":  # Perl's split drops trailing empty fields
                fields.pop()
            if fields:
                if width < 0:
                    width = len(fields)
                elif len(fields) != width:
                    raise ValueError(
                        f"{path}:{n}: {len(fields)} fields, expected {width} as on the first "
                        "line (conlleval: the same field count on every line)"
                    )
                if len(fields) < 2 and fields[0] != BOUNDARY:
                    raise ValueError(f"{path}:{n}: expected a gold and a predicted tag")
            if not fields or fields[0] == BOUNDARY:
                if g_sent:
                    gold.append(g_sent)
                    pred.append(p_sent)
                g_sent, p_sent = [], []
                continue
            g_sent.append(fields[-2])
            p_sent.append(fields[-1])
    if g_sent:
        gold.append(g_sent)
        pred.append(p_sent)
    return gold, pred


def evaluate_file(path: str | os.PathLike) -> ChunkScores:
    """conlleval.pl's scores of the written file ``path`` (see the module docstring)."""
    gold, pred = read_tag_columns(path)
    return evaluate(gold, pred)
