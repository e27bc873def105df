"""Re-run recorded runs into their own folders, with the settings they were made with.

    python tools/rerun.py RUN_DIR [RUN_DIR ...] [--jobs 2] [--dry-run]

For each run folder: the overrides of ``.hydra/overrides.yaml`` are composed with today's
configs, every setting whose value differs from the run's recorded ``.hydra/config.yaml`` is set
back to the recorded value (settings added since then keep their defaults, settings removed
since are reported), and ``python -m structperc.run`` trains again into the same folder (under
``torchrun`` with the run's number of ranks where it was a ``distributed=torch`` run).  The
figures of the results.json it replaces, as committed (else as on disk), are kept in
``rescored.json`` beside it:
``{"before": {"dev": F1, "test": F1}, "restored": [overrides added]}``, so a table can show what
changed.  Made for the scoring change (conlleval's sentence-level F1, with the old
document-level figure as ``f1_document``): a deterministic run re-made this way has
``f1_document`` equal to the F1 it reported before.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from structperc.cli import config_dir
from structperc.io import atomic_write_json

# settings that name places, progress or processes, not the model: never restored
IGNORED = (
    "data.dir",
    "cache_dir",
    "trainer.progress",
    "trainer.processes",
    "task.lists_dir",
    "features.tagger",
)
# settings added since some runs were made, and their value for what those runs did
ADDED_OFF = {"features.gazetteers": "[]"}
# settings renamed since some runs were made: old name -> today's
RENAMED = {"learner.semiring": "learner.scan"}
# classes moved since some runs were made: the recorded _target_ -> today's
MOVED = {"structperc.rerank.boosting.RankBoost": "structperc.learn.boosting.RankBoost"}


def flatten(node, prefix: str = "") -> dict:
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out or {prefix[:-1]: {}}
    return {prefix[:-1]: node}


def restoring_overrides(run: Path) -> tuple[list[str], list[str], list[str]]:
    """(the run's overrides, the overrides that set today's config back to the recorded one,
    the recorded settings that no longer exist)."""
    overrides = [o for o in yaml.safe_load((run / ".hydra" / "overrides.yaml").read_text()) or []]
    overrides = [o for o in overrides if not o.startswith(("hydra.", "data.dir="))]
    recorded = flatten(yaml.safe_load((run / ".hydra" / "config.yaml").read_text()))
    recorded = {
        RENAMED.get(k, k): MOVED.get(v, v) if isinstance(v, str) else v for k, v in recorded.items()
    }
    with initialize_config_dir(config_dir(), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    today = flatten(OmegaConf.to_container(cfg, resolve=False))
    restore, gone = [], []
    for key, old in sorted(recorded.items()):
        if key.startswith(IGNORED) or key in IGNORED:
            continue
        if key not in today:
            gone.append(key)
        elif today[key] != old:
            restore.append(f"{key}={json.dumps(old) if not isinstance(old, str) else old}")
    for key, off in ADDED_OFF.items():
        if key not in recorded and key in today and today[key] != yaml.safe_load(off):
            restore.append(f"{key}={off}")
    if "trainer.processes" in today and "trainer.processes=1" not in overrides:  # one core a run
        restore.append("trainer.processes=1")
    return overrides, restore, gone


def committed_results(run: Path) -> dict:
    """The run's results.json as committed (the figures it reported when it was made), else the
    one on disk: a run re-made twice keeps its original figures as "before"."""
    done = subprocess.run(
        ["git", "show", f"HEAD:./{run / 'results.json'}"],
        cwd=Path.cwd(),
        capture_output=True,
        text=True,
    )
    if done.returncode == 0:
        return json.loads(done.stdout)
    return json.loads((run / "results.json").read_text())


def rerun(run: Path, planned: tuple[list[str], list[str], list[str]], dry_run: bool) -> str:
    overrides, restore, gone = planned
    note = f"{run}: {' '.join(overrides + restore)}"
    if gone:
        note += f"  (recorded settings that no longer exist: {', '.join(gone)})"
    if dry_run:
        return note
    before = committed_results(run)
    old = {s: before[s].get("f1") for s in ("dev", "test") if isinstance(before.get(s), dict)}
    (run / "run.log").unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "structperc.run"]
    if "distributed=torch" in overrides:  # as many ranks as it had, started by torchrun
        ranks = int(before.get("world_size", 1))
        torchrun = str(Path(sys.executable).parent / "torchrun")
        cmd = [torchrun, "--standalone", f"--nproc-per-node={ranks}", "-m", "structperc.run"]
    cmd += [*overrides, *restore, f"hydra.run.dir={run}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        return f"{note}\n  FAILED ({done.returncode}): {done.stderr.strip()[-2000:]}"
    atomic_write_json(run / "rescored.json", {"before": old, "restored": restore})
    after = json.loads((run / "results.json").read_text())
    figures = ", ".join(
        f"{s} {after[s]['f1']:.2f} (documents {after[s].get('f1_document', float('nan')):.2f}, "
        f"before {old.get(s, float('nan')):.2f})"
        for s in ("dev", "test")
        if s in after and "f1" in after[s]
    )
    return f"{note}\n  {figures}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (with .hydra/)")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    args = parser.parse_args(argv)
    plans = [restoring_overrides(r) for r in args.runs]  # Hydra's compose is not thread-safe
    with ThreadPoolExecutor(args.jobs) as pool:
        jobs = [
            pool.submit(rerun, r, p, args.dry_run) for r, p in zip(args.runs, plans, strict=True)
        ]
        for job in as_completed(jobs):
            print(job.result(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
