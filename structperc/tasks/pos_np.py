"""What the joint and cascade tasks share (Shimizu & Haas 2006): the paper's three measures,
its names of the learners, the prediction file and the log line of the test scores.

``scores``: POS accuracy (five collapsed tags), NP accuracy (B/I/O per token) and NP P/R/F1
(conlleval), in percent; ``write_predictions``: token, gold POS, gold NP, predicted POS,
predicted NP per line.
"""

from __future__ import annotations

import logging
from pathlib import Path

from structperc.data.document import Document
from structperc.data.label_chunk import np_labels, pos_labels
from structperc.eval.chunks import evaluate
from structperc.io import atomic_write_text
from structperc.learn.max_margin import MaxMarginPerceptron
from structperc.learn.perceptron import Perceptron

log = logging.getLogger(__name__)


def paper_name(learner) -> str:
    """The paper's name of a learner: VP (the averaged perceptron), MMVP, CRF, else its class."""
    if isinstance(learner, MaxMarginPerceptron):
        return "MMVP"
    if isinstance(learner, Perceptron) and learner.average:
        return "VP"
    return learner.name


def scores(
    docs: list[Document], pos: list[list[str]] | None, np: list[list[str]] | None
) -> dict[str, float]:
    """POS accuracy, NP accuracy and NP P/R/F1 (percent) of predictions against ``docs``."""
    out: dict[str, float] = {}
    if pos is not None:
        gold = [pos_labels(d) for d in docs]
        pairs = (zip(gs, ps, strict=True) for gs, ps in zip(gold, pos, strict=True))
        right = sum(g == p for pair in pairs for g, p in pair)
        out["pos_accuracy"] = 100.0 * right / max(sum(map(len, gold)), 1)
    if np is not None:
        s = evaluate([np_labels(d) for d in docs], np, [d.sentence_starts for d in docs])
        out.update(np_accuracy=s.accuracy, np_f1=s.f1, np_precision=s.precision, np_recall=s.recall)
    return out


def write_predictions(path: Path, docs: list[Document], pos: list[list[str]], np) -> None:
    """Token, gold POS, gold NP, predicted POS, predicted NP per line; a blank line per sentence."""
    lines = []
    for d, ps, ns in zip(docs, pos, np, strict=True):
        for row in zip(d.tokens, pos_labels(d), np_labels(d), ps, ns, strict=True):
            lines.append(" ".join(row))
        lines.append("")
    atomic_write_text(path, "\n".join(lines) + "\n")


def log_test(out_dir: Path, test: dict) -> None:
    """The log line of the test scores (the POS accuracy is nan where none was scored)."""
    log.info(
        "test: POS %.2f, NP acc %.2f, NP F1 %.2f (%s)",
        test.get("pos_accuracy", float("nan")),
        test["np_accuracy"],
        test["np_f1"],
        out_dir / "results.json",
    )
