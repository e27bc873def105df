"""CRFsuite's training menu on CoNLL-2003 (local features), from the runs' own files (``run.sh``):
the passive-aggressive updates and AROW against the averaged perceptron, and the CRF with L1
(OWL-QN, c1 = 0.1) against the CRF without.  Each row's figures are read from its run's
``results.json``, its command from the run's ``.hydra/overrides.yaml``.

    python experiments/train_menu/table.py --readme experiments/train_menu/README.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import sections  # noqa: E402

HERE = Path(__file__).resolve().parent
RUNS = HERE / "runs"
ONLINE = [
    ("Averaged perceptron", "averaged"),
    ("PA-I (C = 1, error-sensitive, averaged)", "pa"),
    ("AROW (variance 1, gamma 1)", "arow"),
    ("AROW, averaged", "arow_avg"),
]
CRFS = [
    ("CRF, c1 = 0 (L-BFGS)", "crf"),
    ("CRF, c1 = 0.1 (OWL-QN)", "crf_l1"),
    ("CRF, observed support, c1 = 0", "crf_observed"),
    ("CRF, observed support, c1 = 0.1", "crf_l1_observed"),
]
SHARED = (  # the overrides every run of run.sh adds; left out of the commands shown
    "trainer.processes=1",
    "trainer.progress=false",
    "trainer.eval_every=0",
    "trainer.checkpoint=false",
    "write_predictions=false",
    "save_model=false",
)


def command(run: Path) -> str:
    """``python -m structperc.run`` and the run's own overrides (hydra.run.dir left out)."""
    overrides = yaml.safe_load((run / ".hydra" / "overrides.yaml").read_text())
    shown = [o for o in overrides if o not in SHARED and not o.startswith("hydra.")]
    return "python -m structperc.run " + " ".join(shown)


def load(name: str) -> tuple[Path, dict] | None:
    run = RUNS / name
    path = run / "results.json"
    return (run, json.loads(path.read_text())) if path.is_file() else None


def scores(r: dict) -> str:
    return f"{r['dev']['f1']:.2f} | {r['test']['f1']:.2f}"


def online() -> str:
    lines = [
        "| learner | dev F1 | test F1 | epochs | training s | command |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for label, name in ONLINE:
        found = load(name)
        if found is None:
            lines.append(f"| {label} | – | – | – | – | (not run) |")
            continue
        run, r = found
        lines.append(
            f"| {label} | {scores(r)} | {r['epochs']} | {r['train_seconds']:.0f} "
            f"| `{command(run)}` |"
        )
    return "\n".join(lines) + "\n"


def crf() -> str:
    lines = [
        "| model | dev F1 | test F1 | iterations (stopped by) | objective | non-zero weights "
        "| of parameters | fraction | training s | command |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for label, name in CRFS:
        found = load(name)
        if found is None:
            lines.append(f"| {label} |" + " – |" * 8 + " (not run) |")
            continue
        run, r = found
        objective = r["history"][-1]["objective"]
        lines.append(
            f"| {label} | {scores(r)} | {r['epochs']} ({r['stopped_by']}) | {objective:.1f} "
            f"| {r['nonzero_weights']:,} | {r['parameters']:,} | {r['nonzero_fraction']:.4f} "
            f"| {r['train_seconds']:.0f} | `{command(run)}` |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sections.main(__doc__, {"online": online, "crf": crf})
