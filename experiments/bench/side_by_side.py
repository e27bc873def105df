"""How much two processes slow each other on this machine: the CRF kernel alone, then two copies
at once.

``n_jobs=2`` can at best halve a compute-bound training if the two cores do not share what the
work needs.  This runs ``native.crf_kernels.nll_gradient`` (the scikit-learn face's L-BFGS
objective) on synthetic data of CoNLL-2003's size (3,000 sentences of 5-24 tokens, 20 features a
token, 60,000 attributes, 9 labels) in one process, then in two processes started together, and
writes the median milliseconds per call of each (``side_by_side.json``):

    python experiments/bench/side_by_side.py --out experiments/bench/side_by_side.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

CALLS = 30


def worker() -> None:
    import numpy as np

    from structperc.native import crf_kernels

    rng = np.random.default_rng(0)
    D, L, F = 3000, 9, 60000
    lengths = rng.integers(5, 25, D)
    doc = np.zeros(D + 1, np.int64)
    doc[1:] = np.cumsum(lengths)
    N = int(doc[-1])
    off = np.zeros(N + 1, np.int64)
    off[1:] = np.cumsum(np.full(N, 20))
    ids = rng.integers(0, F, int(off[-1])).astype(np.int32)
    labels = rng.integers(0, L, N)
    node = rng.normal(size=(F, L)).astype(np.float32)
    trans = rng.normal(size=(L, L)).astype(np.float32)
    grads = np.zeros((F, L)), np.zeros((L, L))
    args = (doc, ids, off, np.ones(1, np.float32), False, labels, node, trans, *grads)
    crf_kernels.nll_gradient(*args)  # loaded
    times = []
    for _ in range(CALLS):
        t = time.perf_counter()
        crf_kernels.nll_gradient(*args)
        times.append(1000 * (time.perf_counter() - t))
    print(json.dumps({"ms_per_call": statistics.median(times)}))


def run(n: int) -> list[float]:
    procs = [
        subprocess.Popen([sys.executable, __file__, "--worker"], stdout=subprocess.PIPE, text=True)
        for _ in range(n)
    ]
    return [json.loads(p.communicate()[0])["ms_per_call"] for p in procs]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help="write the JSON here")
    args = ap.parse_args()
    if args.worker:
        worker()
        return
    alone, together = run(1), run(2)
    result = {
        "alone_ms": alone[0],
        "side_by_side_ms": together,
        "slowdown": statistics.mean(together) / alone[0],
        "best_speedup_of_two": 2 * alone[0] / max(together),
        "calls": CALLS,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
