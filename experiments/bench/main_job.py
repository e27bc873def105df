"""The main job's wall time with one process and with ``trainer.processes=2``.

Runs ``python -m structperc.run +experiment=conll03_nonlocal`` (= ``make run``) alternately with
``trainer.processes=1`` and ``2`` for ``--rounds`` rounds, each into a fresh temporary folder,
and checks that both give the same dev/test F1 and byte-identical model files.  Writes the runs'
own figures (``job_seconds``, ``bpm_seconds``, ``train_seconds``, the median training epoch) to
``--out`` (JSON) and renders ``MAIN_JOB.md`` beside it.  Needs the machine to itself: the second
process only helps when a second core is free.

    STRUCTPERC_DATA=../shared/data .venv/bin/python experiments/bench/main_job.py --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parents[1] / "tools"))
from render import page  # noqa: E402
from scoring import legend, mark  # noqa: E402

COMMAND = ["+experiment=conll03_nonlocal", "trainer.progress=false", "write_predictions=False"]
TARGET_SECONDS = 180.0  # issue 16: twice as fast as the 360 s main job


def one_run(processes: int, folder: Path) -> dict:
    """One main job; its results.json figures and the model file's bytes."""
    args = [*COMMAND, f"trainer.processes={processes}", f"hydra.run.dir={folder}"]
    subprocess.run(
        [sys.executable, "-m", "structperc.run", *args],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    r = json.loads((folder / "results.json").read_text())
    return {
        "processes": processes,
        "job_seconds": r["job_seconds"],
        "bpm_seconds": r["bpm_seconds"],
        "train_seconds": r["train_seconds"],
        "epoch_median": statistics.median(h["seconds"] for h in r["history"]),
        "epochs": r["epochs"],
        "dev_f1": r["dev"]["f1"],
        "test_f1": r["test"]["f1"],
        "test_f1_document": r["test"].get("f1_document"),  # None: scored before conlleval's rule
        "model": (folder / "model.safetensors").read_bytes(),
    }


def render(data: dict) -> str:
    """MAIN_JOB.md of ``data`` (main_job.json): ``templates/main_job.md.j2``."""
    return page(
        "main_job.md.j2",
        data=data,
        command=COMMAND,
        target=TARGET_SECONDS,
        mark=mark,
        legend=legend,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2, help="rounds of (1 process, 2 processes)")
    ap.add_argument("--out", type=Path, default=HERE / "main_job.json")
    ap.add_argument("--render-only", action="store_true", help="MAIN_JOB.md from --out")
    args = ap.parse_args()
    if not args.render_only:
        load0 = os.getloadavg()[0]
        runs, models = [], set()
        with tempfile.TemporaryDirectory() as tmp:
            for k in range(args.rounds):
                for p in (1, 2):
                    r = one_run(p, Path(tmp) / f"r{k}_p{p}")
                    models.add(r.pop("model"))
                    runs.append(r)
                    print(json.dumps(r), flush=True)
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        f1s = {(r["dev_f1"], r["test_f1"]) for r in runs}
        data = {
            "runs": runs,
            "identical": len(models) == 1 and len(f1s) == 1,
            "machine": f"{os.cpu_count()} CPUs, {platform.platform()}",
            "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "load": [load0, os.getloadavg()[0]],
            "commit": commit,
        }
        args.out.write_text(json.dumps(data, indent=2) + "\n")
    data = json.loads(args.out.read_text())
    (args.out.parent / "MAIN_JOB.md").write_text(render(data))
    print(render(data))


if __name__ == "__main__":
    main()
