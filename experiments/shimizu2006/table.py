"""Table 7 of Shimizu & Haas (2006) beside ours, from the runs' results.json (never typed by hand).

    .venv/bin/python experiments/shimizu2006/table.py experiments/shimizu2006/runs/* \
        --readme experiments/shimizu2006/README.md

Each run folder holds a ``results.json`` of ``task=joint`` (one row) or ``task=cascade`` (three
rows: the POS tagger alone, the NP chunker given gold POS, and the cascade).  Runs on the paper's
447 training sentences are set beside ``paper.json``; runs on other amounts of training data get
their own section.  The README is updated between ``<!-- table7:begin -->`` and
``<!-- table7:end -->``, the DP timing (``dp_timing.json``) between ``<!-- dp:begin -->`` and
``<!-- dp:end -->``.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tools"))
import sections  # noqa: E402
from summarize import find_runs  # noqa: E402

SECTIONS = (
    ("pos_tagging", "POS tagging"),
    ("np_chunking_given_pos", "NP chunking (gold POS)"),
    ("cascade", "Both: cascade"),
    ("joint", "Both: joint"),
)
ORDER = {"CRF": 0, "VP": 1, "MMVP": 2}


def overrides(run: Path) -> str:
    """The run's command-line overrides, less the experiment, output and progress settings."""
    f = run / ".hydra" / "overrides.yaml"
    if not f.is_file():
        return ""
    items = [line[2:].strip() for line in f.read_text().splitlines() if line.startswith("- ")]
    skip = ("hydra.", "data.dir", "trainer.progress", "+experiment", "learner=")
    return " ".join(i for i in items if not i.startswith(skip))


def rows_of(run: Path) -> list[dict]:
    """(section, system, scores, epochs, seconds) rows of one run."""
    r = json.loads((run / "results.json").read_text())
    base = {
        "run": run.name,
        "learner": r["learner"],
        "train": r["train_sentences"],
        "overrides": overrides(run),
        "seed": r.get("hparams", {}).get("seed"),
    }
    if r["task"] == "joint":
        return [
            base
            | {
                "section": "joint",
                "system": f"{r['learner']} joint",
                "scores": r["test"],
                "epochs": r["epochs"],
                "seconds": r["train_seconds"],
            }
        ]
    tg, ch = r["tagger"], r["chunker"]
    both = r["learner"] + "+" + r["learner"]
    return [
        base
        | {
            "section": "pos_tagging",
            "system": r["learner"],
            "scores": tg["test"],
            "epochs": tg["epochs"],
            "seconds": tg["train_seconds"],
        },
        base
        | {
            "section": "np_chunking_given_pos",
            "system": f"{r['learner']} given",
            "scores": ch["test_given_gold_pos"],
            "epochs": ch["epochs"],
            "seconds": ch["train_seconds"],
        },
        base
        | {
            "section": "cascade",
            "system": both,
            "scores": r["test"],
            "epochs": f"{tg['epochs']}+{ch['epochs']}",
            "seconds": r["train_seconds"],
        },
    ]


def fmt(x) -> str:
    return "–" if x is None else f"{x:.2f}"


def paper_values(paper: dict, section: str, learner: str) -> tuple:
    ref = paper.get(section, {}).get(learner)
    if ref is None:
        return None, None, None
    if section == "pos_tagging":
        return ref, None, None
    return ref.get("pos_accuracy"), ref.get("np_accuracy"), ref.get("np_f1")


def render(rows: list[dict], paper: dict, train: int) -> str:
    head = "| | system | POS acc | NP acc | NP F1 | paper POS | paper NP acc | paper NP F1 |"
    head += " epochs | train s | run | overrides |"
    lines = [head, "|" + "---|" * 12]
    for section, title in SECTIONS:
        sec = sorted(
            (r for r in rows if r["section"] == section and r["train"] == train),
            key=lambda r: ORDER.get(r["learner"], 9),
        )
        learners = {r["learner"] for r in sec}
        for r in sec:
            s = r["scores"]
            p = paper_values(paper, section, r["learner"]) if train == 447 else (None,) * 3
            lines.append(
                f"| {title} | {r['system']} | {fmt(s.get('pos_accuracy'))} | "
                f"{fmt(s.get('np_accuracy'))} | {fmt(s.get('np_f1'))} | {fmt(p[0])} | "
                f"{fmt(p[1])} | {fmt(p[2])} | {r['epochs']} | {r['seconds']:.0f} | {r['run']} | "
                + (f"`{r['overrides']}`" if r["overrides"] else "")
                + " |"
            )
        if train == 447 and section != "joint" and "CRF" not in learners:
            p = paper_values(paper, section, "CRF")
            name = {"pos_tagging": "CRF", "cascade": "CRF+CRF"}.get(section, "CRF given")
            lines.append(
                f"| {title} | {name} | not run here (`learner=crf`) | | | "
                f"{fmt(p[0])} | {fmt(p[1])} | {fmt(p[2])} | | | | |"
            )
    return "\n".join(lines) + "\n"


def render_all(rows: list[dict], paper: dict) -> str:
    out = []
    for train in sorted({r["train"] for r in rows}):
        label = "the paper's setting" if train == 447 else "beyond the paper"
        out.append(f"**{train:,} training sentences** ({label}), test on all 2,012:\n")
        out.append(render(rows, paper, train))
    return "\n".join(out)


def render_dp(path: Path) -> str:
    if not path.is_file():
        return "(run dp_timing.py)\n"
    t = json.loads(path.read_text())
    lines = ["| n | DP, batch 1 (ms) | DP, batch 32 (ms / sentence) | Figure 1 loops (ms) |"]
    lines.append("|---:|---:|---:|---:|")
    for r in t["sweep"]["rows"]:
        lines.append(
            f"| {r['n']} | {r['batch1_ms']:.2f} | {r['batch32_ms_per_sentence']:.3f} | "
            f"{fmt(r.get('figure1_ms'))} |"
        )
    fit = t["sweep"]["batch32_fit_ms"]
    test = t["conll2000_test"]
    lines += [
        "",
        f"Least-squares fit of the batched time per sentence: {fit['a']:.3g} "
        f"{fit['b_per_n']:+.3g} n {fit['c_per_n2']:+.3g} n² ms.",
        f"A 60-token sentence decodes in **{t['sentence_of_60_tokens_ms']:.1f} ms** (batch 1).",
        f"CoNLL-2000 test set ({test['sentences']:,} sentences, {test['tokens']:,} tokens; "
        "potentials + DP + back-trace): "
        f"**{test['batch1']['sentences_per_second']:,.0f} sentences/s** at batch 1, "
        f"**{test['batch32']['sentences_per_second']:,.0f} sentences/s** at batch 32.",
        f"Load average during the measurement: {t['machine']['load_average'][0]:.1f} "
        f"(2 cores, shared).",
    ]
    return "\n".join(lines) + "\n"


def render_seeds(rows: list[dict]) -> str:
    """Mean, standard deviation and range over seeds of each system (447 sentences)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        neutral = ("seed=", "trainer.eval_every=", "write_predictions=")  # same training
        extra = [o for o in r["overrides"].split() if not o.startswith(neutral)]
        if r["train"] == 447 and not extra and r["section"] in ("cascade", "joint"):
            groups.setdefault((r["section"], r["system"]), []).append(r)
    lines = ["| system | seeds | POS acc | NP acc | NP F1 (mean ± sd) | NP F1 min–max |"]
    lines.append("|---|---:|---:|---:|---:|---:|")
    for (_, system), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        f1 = [r["scores"]["np_f1"] for r in rs]
        mean = statistics.fmean(f1)
        sd = statistics.stdev(f1) if len(f1) > 1 else 0.0
        pos = statistics.fmean(r["scores"]["pos_accuracy"] for r in rs)
        acc = statistics.fmean(r["scores"]["np_accuracy"] for r in rs)
        lines.append(
            f"| {system} | {len(rs)} | {pos:.2f} | {acc:.2f} | {mean:.2f} ± {sd:.2f} | "
            f"{min(f1):.2f}–{max(f1):.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = sections.parser(__doc__, ("table7", "dp", "seeds"))
    ap.add_argument("paths", nargs="+", help="run folders, or folders holding them")
    ap.add_argument("--paper", default=str(HERE / "paper.json"))
    ap.add_argument("--seeds", help="a folder of runs with other seeds (same settings)")
    args = ap.parse_args()
    paper = json.loads(Path(args.paper).read_text())
    rows = [row for run in find_runs(args.paths) for row in rows_of(run)]
    if not rows:
        raise SystemExit(f"no results.json under {' '.join(args.paths)}")
    tables = {"table7": render_all(rows, paper), "dp": render_dp(HERE / "dp_timing.json")}
    if args.seeds:
        seed_rows = [row for run in find_runs([args.seeds]) for row in rows_of(run)]
        tables["seeds"] = render_seeds(rows + seed_rows)
    sections.publish(args.readme, tables)


if __name__ == "__main__":
    main()
