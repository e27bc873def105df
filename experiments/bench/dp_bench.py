"""Section 5 of ``make bench``: sentences per second of the label-chunk DP (Shimizu & Haas 2006)
on the CoNLL-2000 test set, batch 1 and batched.

Runs ``experiments/shimizu2006/dp_timing.py --test-set-only --json OUT`` in its own process (one
torch thread) and reads its JSON: part features of the paper fitted on the first 447 training
sentences, random weights (the DP's time does not depend on their values), potentials + exact DP
+ back-trace over every test sentence, sorted by length, in batches of 1 and of 32; the median of
3 passes after a warm-up pass (``--quick``: 1 pass, the first ``max_sentences`` sentences).
No other system decodes this structure: no peer.  Run through ``bench.py`` (``--only dp``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, log

SCRIPT = REPO / "experiments" / "shimizu2006" / "dp_timing.py"
DEFAULTS = {"max_sentences": None}
QUICK = {"max_sentences": 200}


def run(cfg: dict) -> dict:
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="structperc-bench-") as tmp:
        out = Path(tmp) / "dp.json"
        cmd = [sys.executable, str(SCRIPT), "--test-set-only", "--json", str(out)]
        cmd += ["--data", cfg["data_dir"]]
        if cfg.get("quick"):
            cmd.append("--quick")
        if cfg.get("max_sentences"):
            cmd += ["--max-sentences", str(cfg["max_sentences"])]
        log("dp: " + " ".join(cmd[1:]))
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr[-5000:])
            raise RuntimeError(f"dp_timing.py failed (exit {proc.returncode})")
        result = json.loads(out.read_text())
    return {
        "config": cfg,
        "wall_seconds": time.perf_counter() - t_start,
        "result": result,
    }
