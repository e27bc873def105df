"""Kazama & Torisawa (2007) Table 7: training time of re-ranking and of the proposed algorithm as
a ratio to the margin perceptron, every training timed here, one after the other, on this machine.

    python experiments/kazama2007/rerank_time.py --out experiments/kazama2007/rerank_time.json

Each row is the wall-clock time of whole commands (``python -m structperc.run ...``), features
read from the feature cache by all of them:

* margin perceptron: ``+experiment=conll03_local learner=margin`` (the first model's settings);
* re-ranking K: the fold jobs of the jackknife as one Hydra multirun, two jobs at a time
  (``task.fold=0,...,4,all``, into a fresh lists folder), plus the ranker run reading them;
* proposed: ``+experiment=conll03_nonlocal features.gazetteers=[] trainer.processes=1`` (BPM
  included, on one core like the other rows; the paper's features, as the margin perceptron's).

The two re-rankers share the lists (the same first models), so both rows count the fold jobs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
QUIET = ["trainer.progress=false", "save_model=False", "write_predictions=False"]


def timed(args: list[str], log: Path) -> float:
    """Seconds of ``python -m structperc.run ARGS`` (its output into ``log``)."""
    t0 = time.perf_counter()
    with open(log, "w") as out:
        subprocess.run(
            [sys.executable, "-m", "structperc.run", *args],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=True,
            env=os.environ,
        )
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="JSON of the timings")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rerank1", nargs="*", default=[], help="overrides of re-ranking 1 (its C)")
    ap.add_argument("--rerank2", nargs="*", default=[], help="overrides of re-ranking 2 (its C)")
    ap.add_argument("--lists", nargs="*", default=[], help="overrides of both (task.n, ...)")
    ap.add_argument("--no-proposed", action="store_true", help="skip the proposed algorithm")
    args = ap.parse_args()
    seed = [f"seed={args.seed}"]
    work = Path(tempfile.mkdtemp(prefix="rerank_time_"))
    lists = [f"task.lists_dir={work / 'lists'}", *args.lists]
    rows = {}
    t = timed(
        ["+experiment=conll03_local", "learner=margin", *seed, *QUIET, f"hydra.run.dir={work}/m"],
        work / "margin.log",
    )
    rows["margin"] = {"what": "`conll03_local learner=margin`", "seconds": t}
    folds = timed(
        [
            "-m",
            "+experiment=conll03_rerank1",
            "task.fold=0,1,2,3,4,all",
            *seed,
            *lists,
            *QUIET,
            "hydra.launcher.n_jobs=2",
            f"hydra.sweep.dir={work}/folds",
        ],
        work / "folds.log",
    )
    for k, extra in (("1", args.rerank1), ("2", args.rerank2)):
        t = timed(
            [
                f"+experiment=conll03_rerank{k}",
                *seed,
                *lists,
                *extra,
                *QUIET,
                f"hydra.run.dir={work}/r{k}",
            ],
            work / f"rerank{k}.log",
        )
        rows[f"rerank{k}"] = {
            "what": f"fold jobs ({folds:.0f} s, 2 at a time) + the ranker ({t:.0f} s)",
            "seconds": folds + t,
            "folds": folds,
            "ranker": t,
        }
    if not args.no_proposed:
        t = timed(
            ["+experiment=conll03_nonlocal", "features.gazetteers=[]", "trainer.processes=1"]
            + [*seed, *QUIET]
            + [f"hydra.run.dir={work}/p"],
            work / "proposed.log",
        )
        rows["proposed"] = {"what": "`conll03_nonlocal` (BPM included)", "seconds": t}
    args.out.write_text(json.dumps(rows, indent=2) + "\n")
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
