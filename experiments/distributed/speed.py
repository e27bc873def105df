"""Wall-clock speed-up of distributed training on this machine: the same short trainings on 1
and 2 ranks under torchrun, alternating, in one script (medians over rounds).

    python experiments/distributed/speed.py --out experiments/distributed/speed.json

Per family it runs ``--rounds`` rounds of [1 rank, 2 ranks] and reads each run's per-epoch
seconds (mixing included; the CRF's per-iteration seconds) from its results.json, leaving out
the first epoch (more updates than the rest).  Speed-up = median 1-rank epoch / median 2-rank
epoch, per round; the median over rounds is reported.  No evaluation during training.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = {
    "margin": ["+experiment=conll03_local", "learner=margin", "trainer.max_epochs=6"],
    "proposed": [
        "+experiment=conll03_nonlocal",
        "features.gazetteers=[]",  # the committed runs predate the external gazetteers
        "learner.bpm_runs=0",
        "trainer.max_epochs=4",
    ],
    "crf": ["+experiment=conll03_crf", "learner.sigma2=100", "trainer.max_epochs=8"],
}
COMMON = [
    "distributed=torch",
    "trainer.progress=false",
    "trainer.eval_every=0",
    "trainer.checkpoint=false",
    "trainer.processes=1",  # one core per rank, so one rank is the serial baseline
    "write_predictions=false",
    "save_model=false",
]


def one_run(family: str, ranks: int, work: Path) -> dict:
    out = work / f"{family}_r{ranks}_{time.monotonic_ns()}"
    torchrun = Path(sys.executable).with_name("torchrun")
    cmd = [
        str(torchrun),
        "--standalone",
        f"--nproc-per-node={ranks}",
        "-m",
        "structperc.run",
        *FAMILIES[family],
        *COMMON,
        f"hydra.run.dir={out}",
    ]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    r = json.loads((out / "results.json").read_text())
    epochs = [h["seconds"] for h in r["history"]][1:]
    mix = [h.get("mix_seconds", 0.0) for h in r["history"]][1:]
    return {
        "epoch_seconds": statistics.median(epochs),
        "mix_seconds": statistics.median(mix),
        "train_seconds": r["train_seconds"],
        "wall_seconds": wall,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    args = ap.parse_args()
    result = {"cpu_count": os.cpu_count(), "rounds": args.rounds, "families": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for family in args.families:
            rows = []
            for k in range(args.rounds):
                one, two = one_run(family, 1, Path(tmp)), one_run(family, 2, Path(tmp))
                rows.append(
                    {"r1": one, "r2": two, "speedup": one["epoch_seconds"] / two["epoch_seconds"]}
                )
                print(
                    f"{family} round {k + 1}: 1 rank {one['epoch_seconds']:.2f} s/epoch, "
                    f"2 ranks {two['epoch_seconds']:.2f} s/epoch "
                    f"(mixing {two['mix_seconds']:.2f} s), speed-up {rows[-1]['speedup']:.2f}",
                    flush=True,
                )
            result["families"][family] = {
                "rounds": rows,
                "median_speedup": statistics.median(r["speedup"] for r in rows),
                "median_epoch_seconds_r1": statistics.median(
                    r["r1"]["epoch_seconds"] for r in rows
                ),
                "median_epoch_seconds_r2": statistics.median(
                    r["r2"]["epoch_seconds"] for r in rows
                ),
                "median_mix_seconds_r2": statistics.median(r["r2"]["mix_seconds"] for r in rows),
            }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
