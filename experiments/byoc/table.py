"""Bring your own corpus: CoNLL-2000 POS tagging as a plain tagging task through ``data=columns``
beside the tagchunk POS tagger, and the made-up Spanish example, from the runs' own files.

    python experiments/byoc/table.py --readme experiments/byoc/README.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import sections  # noqa: E402

HERE = Path(__file__).resolve().parent
RUNS = HERE / "runs"
TAGCHUNK = HERE.parent / "tagchunk" / "runs" / "conll00_tagchunk_compact_edges"


def results(run: Path) -> dict:
    return json.loads((run / "results.json").read_text())


def command(run: Path) -> str:
    """The run's command line, from the overrides Hydra recorded (``hydra.run.dir`` added)."""
    overrides = yaml.safe_load((run / ".hydra" / "overrides.yaml").read_text())
    quoted = [f"'{o}'" if any(c in o for c in "[]<>,") else o for o in overrides]
    where = run.relative_to(HERE.parents[1])
    return " ".join(["python -m structperc.run", *quoted, f"hydra.run.dir={where}"])


def pos() -> str:
    ours, theirs = results(RUNS / "conll2000_pos"), results(TAGCHUNK)
    lines = [
        "| tagger | dev | epochs | training s | dev accuracy | test accuracy |",
        "|---|---|---:|---:|---:|---:|",
        f"| plain tagging task through `data=columns` (`runs/conll2000_pos`) | 1,000 training "
        f"sentences held out (seed 0) | {ours['epochs']} | {ours['train_seconds']:.0f} | "
        f"{ours['dev']['accuracy']:.2f} | {ours['test']['accuracy']:.2f} |",
        f"| the tagchunk POS tagger (`../tagchunk/runs/{TAGCHUNK.name}/pos`) | the last 1,000 "
        f"training sentences | {theirs['pos_epochs']} | {theirs['train_seconds']['pos']:.0f} | "
        f"{theirs['dev']['pos_accuracy']:.2f} | {theirs['test']['pos_accuracy']:.2f} |",
        "",
        f"Command: `{command(RUNS / 'conll2000_pos')}`",
        "",
        f"The tagchunk tagger: `{command(TAGCHUNK)}` (its `pos/` chain).",
    ]
    return "\n".join(lines) + "\n"


def pos_labels() -> str:
    test = results(RUNS / "conll2000_pos")["test"]
    labels = sorted(test["per_label"].items(), key=lambda kv: -kv[1]["n_gold"])
    lines = [
        f"Test, {test['n_tokens']:,} tokens: accuracy {test['accuracy']:.2f}, macro F1 over "
        f"{len(labels)} labels {test['macro_f1']:.2f}; the twelve most frequent labels:",
        "",
        "| label | tokens | precision | recall | F1 |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, s in labels[:12]:
        lines.append(
            f"| `{label}` | {s['n_gold']:,} | {s['precision']:.2f} | {s['recall']:.2f} | "
            f"{s['f1']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def example() -> str:
    run = RUNS / "spanish_example"
    r = results(run)
    types = ", ".join(f"{t} {f:.1f}" for t, f in r["test"]["per_type"].items())
    lines = [
        f"Test F1 {r['test']['f1']:.2f} ({r['test']['n_gold']} entities; per type: {types}); "
        f"{r['epochs']} epochs, labels {', '.join(r['labels'])}.",
        "",
        f"Command: `{command(run)}`",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sections.main(__doc__, {"pos": pos, "pos_labels": pos_labels, "example": example})
