"""Screenshots of the main job's report page, and the figures beside them, from the run itself.

    make run          # trains runs/main, writes runs/main/report.html
    .venv/bin/python experiments/report/screenshots.py runs/main

opens ``RUN/report.html`` in headless Chromium (``structperc/report/browser.py``), checks that
every section renders with no console error and that the page requests nothing but itself,
and writes into this folder:

    report_top.png ... report_timing.png   one screenshot per part of the page
    main_test.pred.txt.gz                  the run's test predictions (the test of the error
                                           classes counts them again: tests/test_eval_errors.py)
    error_classes.json                     the error classes per type of dev and test
    README.md                              the command, the scores, the error classes, the shots
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

from structperc.eval.errors import CLASSES, chunk_errors, error_counts
from structperc.io import atomic_write_json, atomic_write_text, read_json
from structperc.report.browser import Page
from structperc.report.build import CHUNK_SECTIONS
from structperc.report.predictions import read_predictions

HERE = Path(__file__).resolve().parent
SHOTS = {  # file -> (selector, the tallest it may be), in page order
    "report_top.png": (None, 2300),
    "report_error_classes.png": ("#error-classes", 1400),
    "report_curves.png": ("#curves", 1400),
    "report_features.png": ("#features", 1600),
    "report_patterns.png": ("#patterns", 1100),
    "report_errors.png": ("#error-list", 1900),
    "report_timing.png": ("#timing", 1000),
}


def error_classes(run: Path) -> dict:
    out = {}
    for split in ("dev", "test"):
        items = read_predictions(run / f"{split}.pred.txt")
        gold, pred = [p.doc.tags for p in items], [p.pred for p in items]
        out[split] = error_counts(chunk_errors(gold, pred, [p.doc.sentence_starts for p in items]))
    return out


def shoot(page_file: Path) -> list[str]:
    """The screenshots; the sections' ids as the browser found them."""
    with Page.open(page_file) as page:
        found = page.evaluate("[...document.querySelectorAll('section')].map(s => s.id)")
        page.evaluate(
            "document.querySelectorAll('#error-list details').forEach("
            "(d, i) => { if (i < 2) d.open = true; })"
        )
        for name, (selector, tallest) in SHOTS.items():
            page.screenshot(HERE / name, selector, max_height=tallest)
        if page.errors:
            sys.exit(f"console errors on {page_file}: {page.errors}")
        others = [
            u
            for u in page.requests
            if u != page_file.resolve().as_uri() and not u.startswith("data:")
        ]
        if others:
            sys.exit(f"{page_file} requested {others}")
    return found


def readme(run: Path, results: dict, classes: dict, sections: list[str]) -> str:
    test = results["test"]
    lines = [
        "# The report page of the main job",
        "",
        "Made by `make run` (which ends with `structperc-report run=runs/main`), then",
        "",
        "    .venv/bin/python experiments/report/screenshots.py runs/main",
        "",
        "which opened `runs/main/report.html` in headless Chromium (every section rendered, no",
        "console error, no request but the page itself) and wrote the screenshots, the figures",
        "below and `main_test.pred.txt.gz` (the run's test predictions) from the run folder.",
        "",
        f"Test F1 {test['f1']:.2f} (dev {results['dev']['f1']:.2f}); the page's sections: "
        f"{', '.join(sections)}.",
        "",
    ]
    for split in ("dev", "test"):
        lines += [f"Error classes on {split} (`structperc/eval/errors.py`):", ""]
        lines.append("| entity type | " + " | ".join(CLASSES) + " | errors |")
        lines.append("|---" * (len(CLASSES) + 2) + "|")
        for typ, counts in classes[split].items():
            cells = " | ".join(str(counts[k]) for k in CLASSES)
            lines.append(f"| {typ} | {cells} | {sum(counts.values())} |")
        lines.append("")
    lines += [f"![{name}]({name})" for name in SHOTS]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, nargs="?", default=Path("runs/main"))
    run = parser.parse_args().run
    page_file = run / "report.html"
    if not page_file.is_file():
        sys.exit(f"{page_file}: no report page: `make run` writes it")
    sections = shoot(page_file)
    if sections != list(CHUNK_SECTIONS):
        sys.exit(f"{page_file}: sections {sections}, expected {list(CHUNK_SECTIONS)}")
    classes = error_classes(run)
    atomic_write_json(HERE / "error_classes.json", classes)
    data = gzip.compress((run / "test.pred.txt").read_bytes(), compresslevel=9, mtime=0)
    (HERE / "main_test.pred.txt.gz").write_bytes(data)
    atomic_write_text(
        HERE / "README.md", readme(run, read_json(run / "results.json"), classes, sections)
    )
    print(f"wrote {len(SHOTS)} screenshots and the figures into {HERE}")


if __name__ == "__main__":
    main()
