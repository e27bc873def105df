"""Turn run folders (each with results.json) into a markdown table; pick the best by dev F1.

    python tools/summarize.py experiments/kazama2007/runs/*            # print the table
    python tools/summarize.py multirun/conll03_local/2026-.../          # a sweep folder
    python tools/summarize.py RUNS... --paper experiments/kazama2007/paper.json \
        --readme experiments/kazama2007/README.md                             # update a README

A README is updated between the markers ``<!-- results:begin -->`` and ``<!-- results:end -->``
(``--section NAME``: ``<!-- NAME:begin -->`` ... ``<!-- NAME:end -->``, so one README can hold
several tables: ``sections.replace_section``); nothing in the table is typed by hand.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from omegaconf import OmegaConf
from scoring import document_level, mark, table
from sections import replace_section


def find_runs(paths: list[str]) -> list[Path]:
    runs: list[Path] = []
    for p in map(Path, paths):
        if (p / "results.json").is_file():
            runs.append(p)
        elif p.is_dir():
            runs.extend(sorted(q.parent for q in p.rglob("results.json")))
    return runs


def overrides(run: Path) -> str:
    f = run / ".hydra" / "overrides.yaml"
    if not f.is_file():
        return ""
    items = [line[2:].strip() for line in f.read_text().splitlines() if line.startswith("- ")]
    keep = [i for i in items if not i.startswith(("hydra.", "data.dir", "trainer.progress"))]
    return " ".join(keep)


def learner_settings(run: Path) -> str:
    """The learner's class and its C or sigma2, from the run's resolved ``.hydra/config.yaml``.

    Overrides alone can mislead: a run made before a default changed shows no override.
    """
    f = run / ".hydra" / "config.yaml"
    if not f.is_file():
        return ""
    learner = OmegaConf.load(f).get("learner") or {}
    name = str(learner.get("_target_", "")).rsplit(".", 1)[-1]
    keys = [k for k in ("C", "sigma2", "average") if k in learner]
    return " ".join([name] + [f"{k}={learner[k]}" for k in keys])


def row(run: Path, paper: dict) -> dict:
    r = json.loads((run / "results.json").read_text())
    name = run.name
    ref = paper.get(name, {})
    return {
        "run": name,
        "overrides": overrides(run),
        "learner": learner_settings(run),
        "dev": r.get("dev", {}).get("f1"),
        "test": r.get("test", {}).get("f1"),
        "document_level": document_level(r, run),
        "epochs": r.get("epochs"),
        "stopped_by": r.get("stopped_by"),
        "seconds": r.get("train_seconds"),
        "paper_dev": ref.get("dev"),
        "paper_test": ref.get("test"),
        "paper_label": ref.get("label", ""),
    }


def fmt(x, digits=2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def render(rows: list[dict], best_line: bool = True) -> str:
    has_paper = any(r["paper_dev"] is not None or r["paper_test"] is not None for r in rows)
    head = ["run", "learner", "overrides", "dev F1", "test F1", "epochs", "stopped by", "train s"]
    if has_paper:
        head += ["paper", "paper dev", "paper test"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [
            r["run"],
            r["learner"],
            f"`{r['overrides']}`" if r["overrides"] else "",
            fmt(r["dev"]) + mark(r["document_level"] and r["dev"] is not None),
            fmt(r["test"]) + mark(r["document_level"] and r["test"] is not None),
            str(r["epochs"]),
            str(r["stopped_by"]),
            fmt(r["seconds"], 0),
        ]
        if has_paper:
            cells += [r["paper_label"], fmt(r["paper_dev"]), fmt(r["paper_test"])]
        lines.append("| " + " | ".join(cells) + " |")
    scored = [r for r in rows if r["dev"] is not None]
    if best_line and len(scored) > 1:
        best = max(scored, key=lambda r: r["dev"])
        lines.append("")
        old = mark(best["document_level"])
        lines.append(
            f"Best by dev F1: **{best['run']}** "
            f"(dev {fmt(best['dev'])}{old}, test {fmt(best['test'])}{old})."
        )
    return table(lines, any(r["document_level"] for r in rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("paths", nargs="+", help="run folders or folders containing them")
    ap.add_argument("--paper", help="JSON: run name -> {label, dev, test} of the paper")
    ap.add_argument("--readme", help="README to update between the result markers")
    ap.add_argument("--section", default="results", help="marker name in the README")
    ap.add_argument("--no-best", action="store_true", help="no 'best by dev F1' line")
    args = ap.parse_args()
    paper = json.loads(Path(args.paper).read_text()) if args.paper else {}
    runs = find_runs(args.paths)
    if not runs:
        raise SystemExit(f"no results.json under {' '.join(args.paths)}")
    table = render([row(r, paper) for r in runs], best_line=not args.no_best)
    if args.readme:
        replace_section(Path(args.readme), args.section, table)
    print(table, end="")


if __name__ == "__main__":
    main()
