"""Write the tables of experiments/partial/README.md from the runs' own outputs.

    python experiments/partial/tables.py

Reads ``runs/<name>_s<seed>/results.json`` (the commands: ``runs.sh``), ``constrained_test.json``
(``constrained_test.py``) and the corpora's ``stats.json`` copy (``corpora_stats.json``), and
replaces each ``<!-- NAME:begin -->`` ... ``<!-- NAME:end -->`` block of the README.  Every
figure is a mean over the seeds that have run, with the sample standard deviation and the count.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS = HERE / "runs"
SEEDS = (0, 1, 2, 3, 4)  # 3 and 4: the averaged perceptron's full and 50 %-hidden rows alone


def results(name: str) -> list[dict]:
    out = []
    for s in SEEDS:
        path = RUNS / f"{name}_s{s}" / "results.json"
        if path.is_file():
            out.append(json.loads(path.read_text()))
    return out


def stat(values: list[float]) -> str:
    if not values:
        return "–"
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:.2f} ± {sd:.2f} ({len(values)})"


def mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def diff(a: float | None, b: float | None) -> str:
    return "–" if a is None or b is None else f"{a - b:+.2f}"


def test_f1(rs: list[dict], kind: str | None = None) -> list[float]:
    if kind is None:
        return [r["test"]["f1"] for r in rs]
    return [r["test"]["per_type"].get(kind, 0.0) for r in rs]


def hidden_table() -> str:
    rows = ["| learner | training labels | test F1 | dev F1 | Δ test F1 vs full | run names |",
            "|---|---|---:|---:|---:|---|"]  # fmt: skip
    completed = "50 % hidden, completed by the CRF (`trainer.complete_with`)"
    for learner, tag in (("averaged perceptron", "ap"), ("CRF (one transition matrix)", "crf")):
        full = results(f"{tag}_full")
        labels = [("all", f"{tag}_full"), ("50 % hidden (`?`)", f"{tag}_hidden50")]
        if tag == "ap":  # two stages: the CRF's row's model fills the `?` first
            labels.append((completed, "ap_completed50"))
        for label, name in labels:
            rs = results(name)
            rows.append(
                f"| {learner} | {label} | {stat(test_f1(rs))} | "
                f"{stat([r['dev']['f1'] for r in rs])} | "
                f"{diff(mean(test_f1(rs)), mean(test_f1(full)))} | `{name}_s*` |"
            )
    return "\n".join(rows)


SPANS_ROWS = (
    ("half full + half marked entities, the rest `?` (partial)", "ap_spans_partial"),
    ("the same, `?` read as O", "ap_spans_as_o"),
    ("the fully labelled half alone", "ap_spans_half"),
    ("all sentences fully labelled", "ap_full"),
    ("half full + half every entity marked, O `?` (the literal wording)", "ap_spans_all_partial"),
    ("CRF: half full + half marked entities, the rest `?` (partial)", "crf_spans_partial"),
    ("CRF: the fully labelled half alone", "crf_spans_half"),
    ("CRF: all sentences fully labelled", "crf_full"),
)


def spans_table() -> str:
    rows = ["| training set | test F1 | precision | recall | Δ F1 vs partial | run names |",
            "|---|---:|---:|---:|---:|---|"]  # fmt: skip
    partial = {k: mean(test_f1(results(f"{k}_spans_partial"))) for k in ("ap", "crf")}
    for label, name in SPANS_ROWS:
        rs = results(name)
        base = partial[name.split("_")[0]]
        versus = "" if name.endswith("spans_partial") else diff(base, mean(test_f1(rs)))
        rows.append(
            f"| {label} | {stat(test_f1(rs))} | {stat([r['test']['precision'] for r in rs])} | "
            f"{stat([r['test']['recall'] for r in rs])} | {versus} | `{name}_s*` |"
        )
    return "\n".join(rows)


def missing_table() -> str:
    rows = ["| training set | ORG test F1 | all types test F1 | Δ ORG F1 vs partial | run names |",
            "|---|---:|---:|---:|---|"]  # fmt: skip
    partial = mean(test_f1(results("ap_missing_partial"), "ORG"))
    for label, name in (
        (
            "half the documents without ORG: `O\\|B-ORG\\|I-ORG` there (partial)",
            "ap_missing_partial",
        ),
        ("the same documents, their ORG labelled O", "ap_missing_as_o"),
        ("the documents with every type alone", "ap_missing_half"),
        ("every document fully labelled", "ap_full"),
    ):
        rs = results(name)
        org = test_f1(rs, "ORG")
        rows.append(
            f"| {label} | {stat(org)} | {stat(test_f1(rs))} | "
            f"{diff(partial, mean(org)) if name != 'ap_missing_partial' else ''} | `{name}_s*` |"
        )
    return "\n".join(rows)


def cost_row(label: str, name: str, kind: str = "MISC") -> str:
    rs = results(name)
    scores = [r["test"].get("per_type_scores", {}).get(kind, {}) for r in rs]
    return (
        f"| {label} | {stat([m['recall'] for m in scores if m])} | "
        f"{stat([m['precision'] for m in scores if m])} | {stat([m['f1'] for m in scores if m])} | "
        f"{stat(test_f1(rs))} | `{name}_s*` |"
    )


def costs_table() -> str:
    head = ["| {} | MISC recall | MISC precision | MISC F1 | all types F1 | run names |",
            "|---|---:|---:|---:|---:|---|"]  # fmt: skip
    rows = [head[0].format("MMVP, MISC cost"), head[1]]
    rows.append(cost_row("none (no loss-augmented decoding)", "mmvp_plain"))
    rows += [cost_row(str(c), f"mmvp_misc_cost{c}") for c in (1, 2, 4, 8)]
    crf = [head[0].format("CRF, MISC cost"), head[1]]
    crf.append(cost_row("none (the plain likelihood)", "crf_full"))
    crf += [cost_row(f"{c} (softmax-margin)", f"crf_misc_cost{c}") for c in (1, 4)]
    return "\n".join(rows) + "\n\n" + "\n".join(crf)


def constrained_table() -> str:
    path = HERE / "constrained_test.json"
    if not path.is_file():
        return "(constrained_test.json not written yet)"
    data = json.loads(path.read_text())
    models = sorted({row["run"].rsplit("_s", 1)[0] for row in data})
    rows = ["| model | test F1 free | test F1, 5 % fixed | F1 gain | other tokens' accuracy free | "
            "… with 5 % fixed | other tokens changed (corrected / broken) | runs × seeds |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    bands = ["| model | distance to the nearest fixed token | tokens | accuracy free | "
             "accuracy with 5 % fixed | gain |", "|---|---|---:|---:|---:|---:|"]  # fmt: skip
    for model in models:
        part = [row for row in data if row["run"].rsplit("_s", 1)[0] == model]
        free, fixed = [r["f1_free"] for r in part], [r["f1_fixed"] for r in part]
        a0 = [r["other_accuracy_free"] for r in part]
        a1 = [r["other_accuracy_fixed"] for r in part]
        changed = statistics.fmean(r["other_changed"] for r in part)
        corrected = statistics.fmean(r["other_corrected"] for r in part)
        broken = statistics.fmean(r["other_broken"] for r in part)
        rows.append(
            f"| {model} | {stat(free)} | {stat(fixed)} | {diff(mean(fixed), mean(free))} | "
            f"{stat(a0)} | {stat(a1)} | {changed:.0f} ({corrected:.0f} / {broken:.0f}) | "
            f"{len(part)} |"
        )
        for band in part[0]["by_distance"]:
            n = statistics.fmean(r["by_distance"][band]["tokens"] for r in part)
            f = statistics.fmean(r["by_distance"][band]["accuracy_free"] for r in part)
            x = statistics.fmean(r["by_distance"][band]["accuracy_fixed"] for r in part)
            bands.append(f"| {model} | {band} | {n:.0f} | {f:.2f} | {x:.2f} | {x - f:+.2f} |")
    return "\n".join(rows) + "\n\nBy distance (means over the seeds):\n\n" + "\n".join(bands)


def corpora_table() -> str:
    path = HERE / "corpora_stats.json"
    if not path.is_file():
        return "(corpora_stats.json not written yet)"
    stats = json.loads(path.read_text())
    rows = ["| seed | tokens | hidden (hidden50) | `?` (spans) | entities marked in the open half "
            "(spans; of all) | documents without ORG | ORG entities lost |",
            "|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for seed, s in stats.items():
        rows.append(
            f"| {seed} | {s['hidden50']['tokens']} | {s['hidden50']['hidden']} | "
            f"{s['spans']['unknown']} | {s['spans']['entities_in_open_half_marked']} "
            f"({s['spans']['entities']}) | {s['missing']['documents_lacking']} | "
            f"{s['missing']['entities_lost']} |"
        )
    return "\n".join(rows)


TABLES = {
    "corpora": corpora_table,
    "hidden": hidden_table,
    "spans": spans_table,
    "missing": missing_table,
    "constrained": constrained_table,
    "costs": costs_table,
}


def main() -> None:
    readme = HERE / "README.md"
    text = readme.read_text()
    for name, make in TABLES.items():
        pattern = re.compile(rf"(<!-- {name}:begin -->\n).*?(<!-- {name}:end -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"README.md has no <!-- {name}:begin/end --> block")
        table = make()
        text = pattern.sub(lambda m, t=table: m.group(1) + t + "\n" + m.group(2), text)
    readme.write_text(text)
    print(f"wrote {readme}")


if __name__ == "__main__":
    main()
