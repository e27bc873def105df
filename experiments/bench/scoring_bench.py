"""Section 8 of ``make bench``: scoring speed, our conlleval port against seqeval (and against
conlleval.pl itself where ``STRUCTPERC_CONLLEVAL`` names it), on the same predictions.

The CoNLL-2003 training file (203,621 tokens, 14,041 sentences) with gold tags and predictions
made from them by a fixed perturbation (one entity in 7 retyped, one in 11 dropped), and the same
four times over (814,484 tokens): ``structperc.eval.evaluate`` on the documents with their
sentence starts (what a run reports, with the whole-document F1 beside it), on the written file
(``evaluate_file``: reading included), and seqeval's ``classification_report`` (per-type P/R/F1,
as our report gives) on the file's sentences.  All three give the same counts on these IOB2 tags
(``tests/test_conlleval.py`` checks it).  Median of 3 passes after a warm-up.  Run through
``bench.py`` (``--only scoring``).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

from common import log

from structperc.data.conll import read_conll, write_conll
from structperc.eval import chunk_spans, evaluate, evaluate_file, read_tag_columns

DEFAULTS = {"repeats": 3, "copies": [1, 4], "max_docs": None}
QUICK = {"repeats": 1, "copies": [1], "max_docs": 100}
TYPES = ["LOC", "MISC", "ORG", "PER"]


def perturbed(tags: list[str], k0: int) -> tuple[list[str], int]:
    """Predictions from gold tags: every 7th entity retyped, every 11th dropped."""
    pred, k = list(tags), k0
    for start, end, typ in sorted(chunk_spans(tags)):
        k += 1
        if k % 11 == 0:
            pred[start:end] = ["O"] * (end - start)
        elif k % 7 == 0:
            new = TYPES[(TYPES.index(typ) + 1) % 4]
            pred[start:end] = [t[:2] + new for t in tags[start:end]]
    return pred, k


def timed(fn, repeats: int) -> float:
    fn()  # warm-up
    seconds = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - t0)
    return statistics.median(seconds)


def measure(docs, pred, copies: int, folder: Path, repeats: int) -> dict:
    """The timings of one size: ``copies`` times the documents and their predictions."""
    from seqeval.metrics import classification_report

    many, many_pred = docs * copies, pred * copies
    path = folder / f"x{copies}.txt"
    write_conll(path, many, many_pred)
    gold_tags, starts = [d.tags for d in many], [d.sentence_starts for d in many]
    g_sent, p_sent = read_tag_columns(path)

    def seqeval_report():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return classification_report(g_sent, p_sent, output_dict=True, digits=4)

    row = {
        "copies": copies,
        "tokens": sum(len(d) for d in many),
        "sentences": sum(len(d.sentence_spans()) for d in many),
        "f1": evaluate(gold_tags, many_pred, starts).f1,
        "ours_in_memory": timed(lambda: evaluate(gold_tags, many_pred, starts), repeats),
        "ours_file": timed(lambda: evaluate_file(path), repeats),
        "seqeval": timed(seqeval_report, repeats),
        "seqeval_f1": float(100 * seqeval_report()["micro avg"]["f1-score"]),
    }
    script = os.environ.get("STRUCTPERC_CONLLEVAL")
    if script:

        def perl():
            with open(path, "rb") as f:
                subprocess.run(["perl", script], stdin=f, capture_output=True, check=True)

        row["conlleval_pl"] = timed(perl, repeats)
    return row


def run(cfg: dict) -> dict:
    train = Path(cfg["data_dir"]) / "conll2003" / "train.txt"
    docs = read_conll(train, "conll2003", max_docs=cfg["max_docs"])
    pred, k = [], 0
    for d in docs:
        p, k = perturbed(d.tags, k)
        pred.append(p)
    rows = []
    with tempfile.TemporaryDirectory(prefix="structperc-bench-") as tmp:
        for copies in cfg["copies"]:
            rows.append(measure(docs, pred, copies, Path(tmp), cfg["repeats"]))
            log(f"scoring x{copies}: {rows[-1]}")
    return {"config": cfg, "rows": rows}
