"""Section 11 of ``make bench``: ``structperc-tag`` end to end, before and after the compiled
tagging path, on the inputs a user meets.

Every case runs ``structperc-tag`` in a fresh process (``tag_memory.run_case``: peak resident
memory by ``ru_maxrss``, wall time from start to exit, the tokens its log line reports, the
sha256 of its output), ``repeats`` times, with the main job's model (``model``, carrying its
column tagger), once with the code of ``BASE_COMMIT`` (the commit the compiled path started
from, exported by ``git archive`` into a temporary folder) and once with this checkout's.  The
cases (built into a temporary folder):

    reuters_132k     the first 0.7 MB of Reuters-21578 (``$STRUCTPERC_DATA/unlabeled``), text in,
                     entities out (``input_format=text output_format=jsonl``)
    reuters_1230k    the first 6.5 MB, the same
    names_100k       one line of 100,000 characters of repeated names (``random.seed(0)``, words
                     drawn by ``random.choice`` from ``NAMES`` joined by spaces), the same
    names_200k       200,000 characters
    names_1m         1,000,000 characters
    conll_test       CoNLL-2003 test.txt, CoNLL columns in and out, scored

End to end is tokens / wall seconds of the whole process (start-up, model loading, reading,
tagging, writing).  A process that passes ``limit_mb`` is stopped and recorded as such (the
code before needs ~25 GB for ``names_1m``).  The medians of the repeats go in the table; a
case's outputs before and after are compared by sha256 and, for text, by the F1 of the entities
after against those before (``agreement``: documents longer than a window, 2,048 tokens, are
decoded in windows after, whole before).  ``exact`` (``names_100k`` again after, with
``window=1048576``: one window) shows the compiled path itself gives the entities of before.
Run through ``bench.py`` (``--only tagging``); ``--quick`` runs the first 20,000 characters of
each text once.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import statistics
import subprocess
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

from common import REPO, log
from tag_memory import run_case

BASE_COMMIT = "12e3ceb8b0f6d7310a49a1e623ec9adb0567c195"  # main when the compiled path began
NAMES = "the in Smith . Paris of bank said and Microsoft , London Reuters a John".split()
TEXT_CASES = {  # name -> (kind, characters)
    "reuters_132k": ("reuters", 700_000),
    "reuters_1230k": ("reuters", 6_500_000),
    "names_100k": ("names", 100_000),
    "names_200k": ("names", 200_000),
    "names_1m": ("names", 1_000_000),
}
CASES = [*TEXT_CASES, "conll_test"]
EXACT_CASE, WHOLE = "names_100k", "window=1048576"  # the after run without windows
LABELS = ("before", "after")
DEFAULTS = {"repeats": 3, "limit_mb": 6000, "model": str(REPO / "runs" / "main"), "chars": None}
QUICK = {"repeats": 1, "limit_mb": 6000, "model": str(REPO / "runs" / "main"), "chars": 20_000}


def reuters_text(data_dir: Path, chars: int) -> str:
    """The first ``chars`` characters of the Reuters-21578 text (the file as shipped)."""
    with gzip.open(data_dir / "unlabeled" / "reuters21578.txt.gz", "rt", encoding="utf-8") as f:
        return f.read(chars)


def names_text(chars: int) -> str:
    """One line of at most ``chars`` characters of words drawn from ``NAMES``."""
    random.seed(0)
    words, size = [], 0
    while True:
        word = random.choice(NAMES)
        if size + len(word) + bool(words) > chars:
            return " ".join(words) + "\n"
        size += len(word) + bool(words)
        words.append(word)


def case_args(case: str, folder: Path, cfg: dict, label: str) -> list[str]:
    """The ``structperc-tag`` settings of a case (its output named by ``label``), its input
    written into ``folder`` once."""
    model = f"model={cfg['model']}"
    if case == "conll_test":
        test = Path(cfg["data_dir"]) / "conll2003" / "test.txt"
        return [model, f"input={test}", f"output={folder / f'conll_test.{label}.out'}"]
    kind, chars = TEXT_CASES[case]
    chars = min(chars, cfg["chars"] or chars)
    path = folder / f"{case}.txt"
    if not path.is_file():
        data = Path(cfg["data_dir"])
        text = reuters_text(data, chars) if kind == "reuters" else names_text(chars)
        path.write_text(text, encoding="utf-8")
    out = folder / f"{case}.{label}.jsonl"
    return [model, f"input={path}", f"output={out}", "input_format=text", "output_format=jsonl"]


def entities(path: Path) -> set[tuple]:
    """The (document, start, end, type) of every entity of a ``jsonl`` output."""
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    return {(d["source"], e["start"], e["end"], e["type"]) for d in lines for e in d["entities"]}


def agreement(before: Path, after: Path) -> float | None:
    """The F1 (%) of the entities of ``after`` against those of ``before``."""
    if not (before.is_file() and after.is_file()):
        return None
    a, b = entities(after), entities(before)
    return 200.0 * len(a & b) / (len(a) + len(b)) if a or b else 100.0


def export_commit(commit: str, folder: Path) -> Path:
    """The package and configs of ``commit`` in ``folder`` (``git archive``: no worktree)."""
    archive = subprocess.run(
        ["git", "archive", commit, "structperc", "conf"], cwd=REPO, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def median_row(rows: list[dict]) -> dict:
    """The repeats of a case as one row: medians of the finished runs, or how it stopped."""
    done = [r for r in rows if r["status"] == 0]
    if not done:
        last = rows[-1]
        return {
            "runs": rows,
            "status": last["status"],
            "stopped_over_mb": last["stopped_over_mb"],
            "seconds": statistics.median(r["seconds"] for r in rows),
            "error": last["error"],
        }
    seconds = statistics.median(r["seconds"] for r in done)
    tokens = done[0]["tokens"]
    return {
        "runs": rows,
        "status": 0,
        "tokens": tokens,
        "seconds": seconds,
        "tokens_per_second": tokens / seconds if tokens else None,
        "peak_mb": statistics.median(r["peak_mb"] for r in done),
        "output_sha256": done[0]["output_sha256"],
    }


def run(cfg: dict) -> dict:
    results: dict = {"config": cfg, "base_commit": BASE_COMMIT, "cases": {}}
    with tempfile.TemporaryDirectory(prefix="structperc-bench-tagging-") as tmp:
        tmp = Path(tmp)
        before = export_commit(BASE_COMMIT, tmp / "before")
        inputs = tmp / "inputs"
        inputs.mkdir()
        runs = [(case, label, []) for case in CASES for label in LABELS]
        runs.append((EXACT_CASE, "exact", [WHOLE]))
        for case, label, extra in runs:
            args = case_args(case, inputs, cfg, label) + extra
            rows = []
            for r in range(cfg["repeats"] if label != "exact" else 1):
                load = os.getloadavg()[0]
                code = before if label == "before" else REPO
                row = run_case(args, code, cfg["limit_mb"]) | {"load_start": load}
                rows.append(row)
                log(f"tagging {case} {label} {r + 1}: {row['seconds']} s, {row['peak_mb']} MB")
            results["cases"].setdefault(case, {})[label] = median_row(rows)
        for case in TEXT_CASES:
            rows = results["cases"][case]
            for label in ("after", "exact"):
                if label in rows:
                    out = {k: inputs / f"{case}.{k}.jsonl" for k in ("before", label)}
                    rows[label]["agreement"] = agreement(out["before"], out[label])
    return results
