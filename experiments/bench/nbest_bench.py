"""n-best decoding speed and memory on CoNLL-2003 (issue 3's benchmark rows).

    python experiments/bench/nbest_bench.py --model RUN_DIR            # all rows
    python experiments/bench/nbest_bench.py --model RUN_DIR --n 100    # one row

Rows: the 2-best and 20-best of every training document one at a time (the training regime:
one call per document, latency matters), and the n'-best of every test document for n' = 100,
1,600 and 6,400 (the evaluation regime: memory matters).  Each row runs in its own process, so
its peak resident memory (``ru_maxrss``) is its own.  Writes ``nbest_results.json`` and prints a
markdown table.  Potentials come from a trained model, as in real use.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
ROWS = [("train", 2), ("train", 20), ("test", 100), ("test", 1600), ("test", 6400)]


def one_row(model: str, split: str, n: int, max_docs: int | None, data: Path) -> dict:
    from structperc.data.conll import read_conll
    from structperc.decode.nbest import nbest, nbest_batched
    from structperc.model.batch import make_batch
    from structperc.model.files import load_model

    torch.set_num_threads(1)
    weights, features, _ = load_model(model)
    docs = read_conll(data / "conll2003" / f"{split}.txt", max_docs=max_docs)
    mats = features.transform(docs)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    per_doc = []
    t0 = time.perf_counter()
    with torch.no_grad():
        for d in range(len(docs)):
            batch = make_batch(mats, [d])
            pot = weights.potentials(batch)
            t1 = time.perf_counter()
            if split == "train":
                nbest(pot, batch.lengths, n)
            else:
                nbest_batched(pot, batch.lengths, n)
            per_doc.append(time.perf_counter() - t1)
    total = time.perf_counter() - t0
    tokens = sum(len(d) for d in docs)
    return {
        "split": split,
        "n": n,
        "documents": len(docs),
        "tokens": tokens,
        "seconds_total": total,
        "seconds_decode": sum(per_doc),
        "ms_per_doc_median": 1e3 * statistics.median(per_doc),
        "max_doc_tokens": max(len(d) for d in docs),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_before_decoding_mb": rss0 / 1024,
    }


def render(rows: list[dict]) -> str:
    lines = [
        "| regime | n | documents | tokens | decode s (total) | ms/doc (median) | peak RSS MB |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        regime = "training loop, one doc at a time" if r["split"] == "train" else "test set"
        lines.append(
            f"| {regime} | {r['n']} | {r['documents']} | {r['tokens']} | "
            f"{r['seconds_decode']:.1f} | {r['ms_per_doc_median']:.1f} | {r['peak_rss_mb']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", required=True, help="a run folder with model.json")
    ap.add_argument("--n", type=int, help="only this n")
    ap.add_argument("--split", default=None)
    ap.add_argument("--max-docs", type=int, default=None, help="first N documents (quick check)")
    ap.add_argument("--out", default=str(HERE / "nbest_results.json"))
    args = ap.parse_args()
    data = Path(os.environ.get("STRUCTPERC_DATA", HERE.parent.parent.parent / "shared" / "data"))
    if args.n is not None and args.split is not None:
        print(json.dumps(one_row(args.model, args.split, args.n, args.max_docs, data)))
        return
    rows = []
    for split, n in ROWS:
        if args.n is not None and n != args.n:
            continue
        cmd = [sys.executable, __file__, "--model", args.model, "--n", str(n), "--split", split]
        if args.max_docs:
            cmd += ["--max-docs", str(args.max_docs)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        print(render(rows[-1:]).splitlines()[-1], flush=True)
    result = {
        "command": " ".join(sys.argv),
        "threads": 1,
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "rows": rows,
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(render(rows))


if __name__ == "__main__":
    main()
