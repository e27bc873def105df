"""What the scoring change did to re-made runs: the table of ``rescored.json`` files.

    python tools/rescored.py RUNS... [--readme README --section rescoring]

A run re-made by ``tools/rerun.py`` (or the main job by ``make run``) keeps the F1 its
old results.json reported, the whole-document F1, in ``rescored.json``.  Its new results.json
reports conlleval.pl's F1 (``f1``) and the whole-document F1 of the same predictions
(``f1_document``).  Per run: the old figure, the new whole-document figure (equal to the old one
when the run reproduced), conlleval's, and the difference conlleval minus old; then the mean and
range of that difference.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from sections import replace_section
from summarize import find_runs


def rows(runs: list[Path], root: Path | None) -> list[dict]:
    out = []
    for run in runs:
        path = run / "rescored.json"
        if not path.is_file() or not (run / "results.json").is_file():
            continue  # not re-made, or still training
        before = json.loads(path.read_text())["before"]
        after = json.loads((run / "results.json").read_text())
        run = run.resolve()
        name = str(run.relative_to(root)) if root and run.is_relative_to(root) else str(run)
        row = {"run": name}
        for split in ("dev", "test"):
            if split in before and split in after:
                row[split] = (before[split], after[split].get("f1_document"), after[split]["f1"])
        out.append(row)
    return out


def render(table: list[dict]) -> str:
    if not table:
        return "(no re-made run yet)\n"
    lines = [
        "| run | dev before | dev documents now | dev conlleval | Δ dev | test before "
        "| test documents now | test conlleval | Δ test |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    same = 0
    deltas: dict[str, list[float]] = {"dev": [], "test": []}
    for r in table:
        cells = [f"`{r['run']}`"]
        for split in ("dev", "test"):
            if split not in r:
                cells += ["–"] * 4
                continue
            old, doc, new = r[split]
            deltas[split].append(new - old)
            same += doc is not None and abs(doc - old) < 5e-3
            cells += [f"{old:.2f}", "–" if doc is None else f"{doc:.2f}", f"{new:.2f}"]
            cells.append(f"{new - old:+.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    figures = sum(len(v) for v in deltas.values())
    summary = [
        f"{split} {statistics.mean(v):+.2f} (from {min(v):+.2f} to {max(v):+.2f})"
        for split, v in deltas.items()
        if v
    ]
    lines += [
        "",
        f"{len(table)} runs re-made; conlleval minus the old whole-document F1, mean and range: "
        + ", ".join(summary)
        + f". The whole-document F1 of the re-made run equals the old figure (to 0.01) in {same} "
        f"of {figures} figures.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("paths", nargs="+", help="run folders or folders containing them")
    ap.add_argument("--root", type=Path, help="print run names relative to this folder")
    ap.add_argument("--readme", type=Path, help="README to update between the section markers")
    ap.add_argument("--section", default="rescoring", help="marker name in the README")
    args = ap.parse_args()
    table = render(rows(find_runs(args.paths), args.root.resolve() if args.root else None))
    if args.readme:
        replace_section(args.readme, args.section, table)
    print(table, end="")


if __name__ == "__main__":
    main()
