"""Collins (2002) on CoNLL-2003: the base model's 1-best against boosting and the voted
perceptron over its n-best lists, from the runs' own files.

Runs (``+experiment=conll03_collins_boost|vp``, and ``ranker=averaged``) live under ``runs/``.
Every figure is read from a run's ``results.json``: P/R/F1 of the reranker and of the base
model's 1-best (the CRF trained on all the training data), the relative reduction of the F1
error, (F − F_base) / (100 − F_base), and the oracle F1 of the lists.

    python experiments/collins2002/table.py --readme experiments/collins2002/README.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import scoring  # noqa: E402
import sections  # noqa: E402
from scoring import document_level, mark  # noqa: E402

HERE = Path(__file__).resolve().parent
RUNS = HERE / "runs"
PAPER = {"boost": ("Boosting", 87.6, 15.6), "vp": ("Voted perceptron", 87.9, 17.7)}


def reduction(f: float, base: float) -> float:
    return 100.0 * (f - base) / (100.0 - base)


def table(split: str) -> str:
    runs = sorted(p.parent for p in RUNS.glob("*/results.json"))
    if not runs:
        return "(no runs yet)\n"
    lines = [
        "| run | ranker | P | R | F1 | base F1 | error reduction | oracle F1 at n = "
        "1 / 10 / 20 / 100 | gold listed | rounds or epochs kept | ranking s |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    any_old = False
    for run in runs:
        r = json.loads((run / "results.json").read_text())
        s, m = r[split], mark(document_level(r, run))
        any_old |= bool(m)
        oracle = " / ".join(f"{s['oracle_f1'][n]:.2f}{m}" for n in ("1", "10", "20", "100"))
        lines.append(
            f"| `{run.name}` | {r['ranker']} | {s['precision']:.2f} | {s['recall']:.2f} "
            f"| {s['f1']:.2f}{m} | {s['base_f1']:.2f}{m} "
            f"| {reduction(s['f1'], s['base_f1']):.1f}%{m} "
            f"| {oracle} | {s['gold_in_list']:.1f}% | {r['chosen_epoch']} "
            f"| {r['seconds']['ranking']:.0f} |"
        )
    paper = ", ".join(f"{name} {f:.1f} F ({red:.1f}%)" for name, f, red in PAPER.values())
    lines += [
        "",
        f"Collins's own figures (his web data, boundaries only): Max-Ent 85.3 F; {paper}.",
    ]
    return scoring.table(lines, any_old)


if __name__ == "__main__":
    sections.main(__doc__, {"test": lambda: table("test"), "dev": lambda: table("dev")})
