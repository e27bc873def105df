"""The distributed-training tables, from the runs' own files (``run.sh``, ``speed.py``).

python experiments/distributed/table.py --readme experiments/distributed/README.md
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import sections  # noqa: E402
from scoring import marks as old  # noqa: E402
from scoring import read_results, table  # noqa: E402

HERE = Path(__file__).resolve().parent
RUNS = HERE / "runs"
PERCEPTRONS = [
    ("Margin perceptron, C = 1414", "margin"),
    ("Margin perceptron, C = 1414, averaged", "margin_avg"),
    ("Proposed (main job)", "proposed"),
]


def load(name: str) -> dict | None:
    return read_results(RUNS / name)


def settled_epoch(history: list[dict], final: float, within: float = 0.1) -> int | None:
    """The first epoch from which the dev F1 stays within ``within`` of ``final``."""
    f1 = [h.get("dev_f1") for h in history]
    if any(v is None for v in f1):
        return None
    for k in range(len(f1)):
        if all(abs(v - final) <= within for v in f1[k:]):
            return history[k]["epoch"]
    return None


def last_epochs_dev(r: dict, k: int = 10) -> float | None:
    """The mean dev F1 of the last ``k`` epochs: the non-averaged perceptrons' final weights
    move the dev F1 by a few tenths from one epoch to the next."""
    f1 = [h["dev_f1"] for h in r["history"] if "dev_f1" in h][-k:]
    return sum(f1) / len(f1) if f1 else None


def perceptrons() -> str:
    lines = [
        "| method | ranks | dev F1 | test F1 | dev Δ | test Δ | dev F1, last 10 epochs (Δ) "
        "| epochs (stopped by) | dev F1 settled (±0.1) at | training s | mixing s / epoch |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for label, name in PERCEPTRONS:
        base = load(f"{name}_r1")
        for n in (1, 2, 4):
            r = load(f"{name}_r{n}")
            if r is None:
                lines.append(f"| {label} | {n} |" + " – |" * 9)
                continue
            last = last_epochs_dev(r)
            m, d = old(r), old(r, base)
            d_last = f" ({last - last_epochs_dev(base):+.2f}{d})" if base and last else ""
            dev, test = r["dev"]["f1"], r["test"]["f1"]
            d_dev = f"{dev - base['dev']['f1']:+.2f}{d}" if base else "–"
            d_test = f"{test - base['test']['f1']:+.2f}{d}" if base else "–"
            settled = settled_epoch(r["history"], dev)
            mix = [h.get("mix_seconds", 0.0) for h in r["history"]]
            lines.append(
                f"| {label} | {n} | {dev:.2f}{m} | {test:.2f}{m} | {d_dev} | {d_test} "
                f"| {f'{last:.2f}{m}' if last else '–'}{d_last} "
                f"| {r['epochs']} ({r['stopped_by']}) | {settled if settled else '–'} "
                f"| {r['train_seconds'] + r.get('bpm_seconds', 0.0):,.0f} "
                f"| {statistics.median(mix):.2f} |"
            )
    return table(lines)


# the margin perceptron with C divided by the number of ranks (mixing averages R shards'
# updates, so the weights grow about R times slower than in serial training)
C_OVER_R = [(2, "margin_C707_r2", 707), (4, "margin_C354_r4", 354)]


def c_over_r() -> str:
    lines = [
        "| ranks | C | dev F1 | test F1 | dev Δ | test Δ | dev F1, last 10 epochs (Δ) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    base = load("margin_r1")
    rows = [(1, "margin_r1", 1414)] + [(n, f"margin_r{n}", 1414) for n in (2, 4)] + C_OVER_R
    for n, name, c in rows:
        r = load(name)
        if r is None or base is None:
            lines.append(f"| {n} | {c} |" + " – |" * 5)
            continue
        dev, test, last = r["dev"]["f1"], r["test"]["f1"], last_epochs_dev(r)
        m, d = old(r), old(r, base)
        lines.append(
            f"| {n} | {c} | {dev:.2f}{m} | {test:.2f}{m} | {dev - base['dev']['f1']:+.2f}{d} "
            f"| {test - base['test']['f1']:+.2f}{d} "
            f"| {last:.2f}{m} ({last - last_epochs_dev(base):+.2f}{d}) |"
        )
    return table(lines)


CRFS = [
    ("all 946 training documents", "crf"),
    ("all 946 training documents, `learner.tol=1e-6`", "crf_tol"),
    ("the first 200 training documents", "crf200"),
]


# an earlier serial run of the same settings (structperc.run without torchrun, earlier code)
SERIAL_REFERENCE = {
    "crf": (
        "all 946 training documents, an earlier serial run (`kazama2007/runs/crf_sigma2_100`)",
        HERE.parent / "kazama2007" / "runs" / "crf_sigma2_100" / "results.json",
    )
}


# to the paper's rule (cap 400 epochs): the serial runs are Table 2's convergence runs
CONVERGE_DIR = HERE.parent / "kazama2007" / "runs" / "converge"
CONVERGED = [
    (
        "Margin perceptron, C = 1414",
        [
            (1, CONVERGE_DIR / "margin_C1414"),
            (2, RUNS / "margin_converge_r2"),
            (4, RUNS / "margin_converge_r4"),
        ],
    ),
    (
        "Proposed, C = 1000",
        [
            (1, CONVERGE_DIR / "proposed_C1000"),
            (2, RUNS / "proposed_converge_r2"),
            (4, RUNS / "proposed_converge_r4"),
        ],
    ),
]


def converged() -> str:
    lines = [
        "| method | ranks | epochs (stopped by) | dev F1 | test F1 | dev Δ | test Δ "
        "| dev F1, last 10 epochs (Δ) | run |",
        "|---|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for label, paths in CONVERGED:
        base = None
        for n, path in paths:
            r = read_results(path)
            if r is None:
                lines.append(f"| {label} | {n} |" + " – |" * 7)
                continue
            base = base or r
            last, last0 = last_epochs_dev(r), last_epochs_dev(base)
            dev, test = r["dev"]["f1"], r["test"]["f1"]
            m, d = old(r), old(r, base)
            lines.append(
                f"| {label} | {n} | {r['epochs']} ({r['stopped_by']}) | {dev:.2f}{m} "
                f"| {test:.2f}{m} | {dev - base['dev']['f1']:+.2f}{d} "
                f"| {test - base['test']['f1']:+.2f}{d} | {last:.2f}{m} ({last - last0:+.2f}{d}) "
                f"| `{path.relative_to(HERE.parent)}` |"
            )
    return table(lines)


# McDonald et al.'s two learners to the paper's rule at 2 ranks (``run.sh plain_converge``),
# against Table 2's serial convergence runs; beside them every converged row above
PLAIN_CONVERGED = [
    ("Perceptron", "perceptron", CONVERGE_DIR / "perceptron", RUNS / "perceptron_converge_r2"),
    ("Averaged perceptron", "averaged", CONVERGE_DIR / "averaged", RUNS / "averaged_converge_r2"),
]


def paper() -> str:
    """McDonald et al. (2010)'s converged figures (``paper.json``) beside ours at convergence:
    the serial model against iterative parameter mixing, as a difference."""
    p = json.loads((HERE / "paper.json").read_text())
    lines = [
        "| learner | source | shards / ranks | serial | iterative parameter mixing | Δ "
        "| one-shot parameter mixing | epochs, serial → mixed |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for label, key, serial_dir, mixed_dir in PLAIN_CONVERGED:
        ner = p["ner"][key]
        lines.append(
            f"| {label} | paper, NER F1 (CoNLL-2003 dev) | {p['shards']} | {ner['serial']:.1f} "
            f"| {ner['iterative_parameter_mix']:.1f} "
            f"| {ner['iterative_parameter_mix'] - ner['serial']:+.1f} "
            f"| {ner['parameter_mix']:.1f} | – |"
        )
        dep = p["parsing"][key]
        lines.append(
            f"| {label} | paper, parsing UAS (Czech PDT) | {p['shards']} | {dep['serial']:.1f} "
            f"| {dep['iterative_parameter_mix']:.1f} "
            f"| {dep['iterative_parameter_mix'] - dep['serial']:+.1f} | – | – |"
        )
        serial, mixed = read_results(serial_dir), read_results(mixed_dir)
        for split in ("dev", "test"):
            if serial is None or mixed is None:
                lines.append(f"| {label} | ours, NER F1 ({split}) | 2 | – | – | – | – | – |")
                continue
            a, b = serial[split]["f1"], mixed[split]["f1"]
            lines.append(
                f"| {label} | ours, NER F1 ({split}) | 2 | {a:.2f}{old(serial)} "
                f"| {b:.2f}{old(mixed)} | {b - a:+.2f}{old(serial, mixed)} | – "
                f"| {serial['epochs']} → {mixed['epochs']} ({mixed['stopped_by']}) |"
            )
    for label, paths in CONVERGED:
        serial = read_results(paths[0][1])
        for n, path in paths[1:]:
            mixed = read_results(path)
            if serial is None or mixed is None:
                continue
            for split in ("dev", "test"):
                a, b = serial[split]["f1"], mixed[split]["f1"]
                lines.append(
                    f"| {label} | ours, NER F1 ({split}) | {n} | {a:.2f}{old(serial)} "
                    f"| {b:.2f}{old(mixed)} | {b - a:+.2f}{old(serial, mixed)} "
                    f"| – | {serial['epochs']} → {mixed['epochs']} ({mixed['stopped_by']}) |"
                )
    lines.append("")
    lines.append(f"Paper: {p['source']}. Not in the paper: {p['not_reported']}.")
    return table(lines)


def crf() -> str:
    lines = [
        "| training set | ranks | iterations (stopped by) | final objective | relative to 1 rank "
        "| dev F1 | test F1 | training s | s / iteration |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, name in CRFS:
        base = load(f"{name}_r1")
        for n in (1, 2):
            r = load(f"{name}_r{n}")
            if r is None:
                lines.append(f"| {label} | {n} |" + " – |" * 7)
                continue
            f = r["history"][-1]["objective"]
            rel = "–"
            if base:
                f1 = base["history"][-1]["objective"]
                rel = f"{abs(f - f1) / abs(f1):.1e}"
            per = statistics.median(h["seconds"] for h in r["history"])
            lines.append(
                f"| {label} | {n} | {r['epochs']} ({r['stopped_by']}) | {f:.6g} | {rel} "
                f"| {r['dev']['f1']:.2f}{old(r)} | {r['test']['f1']:.2f}{old(r)} "
                f"| {r['train_seconds']:,.0f} | {per:.2f} |"
            )
        if name in SERIAL_REFERENCE and base:  # how far two serial runs end apart
            label2, path = SERIAL_REFERENCE[name]
            r = read_results(path.parent)
            f, f1 = r["history"][-1]["objective"], base["history"][-1]["objective"]
            lines.append(
                f"| {label2} | 1 | {r['epochs']} ({r['stopped_by']}) | {f:.6g} "
                f"| {abs(f - f1) / abs(f1):.1e} | {r['dev']['f1']:.2f}{old(r)} "
                f"| {r['test']['f1']:.2f}{old(r)} | {r['train_seconds']:,.0f} | – |"
            )
    return table(lines)


# the same trainings with other shuffling seeds (run.sh margin_seeds, proposed_seeds); the
# margin perceptron's seed 0 is the perceptrons table's run, the proposed algorithm's seed 0 is
# run again (proposed_s0_*) because its first runs used the earlier n-best decoder
SEEDS = [
    (
        "Margin perceptron, C = 1414",
        {0: "margin_r{n}"} | {s: f"margin_s{s}_r{{n}}" for s in range(1, 8)},
    ),
    ("Proposed (main job)", {s: f"proposed_s{s}_r{{n}}" for s in range(4)}),
]


def mean_se(values: list[float]) -> tuple[float, float]:
    """The mean and its standard error (sample sd / sqrt(n); 0 for one value)."""
    m = statistics.fmean(values)
    return m, (statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else 0.0)


def seeds() -> str:
    lines = [
        "| method | ranks | seeds | dev F1 (mean ± se) | test F1 (mean ± se) | dev Δ | test Δ "
        "| dev F1, last 10 epochs (mean) | Δ | dev F1 per seed | test F1 per seed |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for label, names in SEEDS:
        base = None
        for n in (1, 2, 4):
            runs = {s: load(name.format(n=n)) for s, name in names.items()}
            runs = {s: r for s, r in runs.items() if r is not None}
            if not runs:
                lines.append(f"| {label} | {n} | 0 |" + " – |" * 8)
                continue
            dev = mean_se([r["dev"]["f1"] for r in runs.values()])
            test = mean_se([r["test"]["f1"] for r in runs.values()])
            last = statistics.fmean(last_epochs_dev(r) for r in runs.values())
            m = old(*runs.values())
            if n == 1:
                base = (dev[0], test[0], last, m)
            d = (
                [f"{dev[0] - base[0]:+.2f}", f"{test[0] - base[1]:+.2f}", f"{last - base[2]:+.2f}"]
                if base
                else ["–"] * 3
            )
            if base:
                d = [x + (m or base[3]) for x in d]
            per_dev = ", ".join(f"{r['dev']['f1']:.2f}{old(r)}" for r in runs.values())
            per_test = ", ".join(f"{r['test']['f1']:.2f}{old(r)}" for r in runs.values())
            lines.append(
                f"| {label} | {n} | {','.join(map(str, runs))} | {dev[0]:.2f} ± {dev[1]:.2f}{m} "
                f"| {test[0]:.2f} ± {test[1]:.2f}{m} | {d[0]} | {d[1]} | {last:.2f}{m} | {d[2]} "
                f"| {per_dev} | {per_test} |"
            )
    return table(lines)


def speed() -> str:
    f = HERE / "speed.json"
    if not f.is_file():
        return "(run speed.py)\n"
    s = json.loads(f.read_text())
    lines = [
        "| training | 1 rank, s / epoch | 2 ranks, s / epoch | of which mixing | speed-up "
        "| speed-up per round |",
        "|---|---:|---:|---:|---:|---|",
    ]
    names = {"margin": "margin perceptron", "proposed": "proposed (no BPM)", "crf": "CRF, L-BFGS"}
    # the CRF again after its default scan became the sequential one (speed.py --families crf
    # --out speed_crf_sequential.json)
    later = HERE / "speed_crf_sequential.json"
    runs = [(s, "")]
    if later.is_file():
        runs.append((json.loads(later.read_text()), ", sequential scan (`scan=auto`)"))
    for result, suffix in runs:
        for fam, row in result["families"].items():
            rounds = ", ".join(f"{r['speedup']:.2f}" for r in row["rounds"])
            lines.append(
                f"| {names.get(fam, fam)}{suffix} | {row['median_epoch_seconds_r1']:.2f} "
                f"| {row['median_epoch_seconds_r2']:.2f} | {row['median_mix_seconds_r2']:.2f} "
                f"| {row['median_speedup']:.2f}× | {rounds} |"
            )
    lines.append("")
    lines.append(f"Medians over {s['rounds']} rounds on {s['cpu_count']} cores.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sections.main(
        __doc__,
        {
            "perceptrons": perceptrons,
            "seeds": seeds,
            "c_over_r": c_over_r,
            "converged": converged,
            "paper": paper,
            "crf": crf,
            "speed": speed,
        },
    )
