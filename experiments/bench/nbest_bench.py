"""Section 3 of ``make bench``: n-best decoding seconds and peak memory on CoNLL-2003.

Rows (``ROWS``): the 20-best of every training document, one document at a time (the training
regime of the proposed algorithm: one ``nbest`` call per document, latency matters), and the
n'-best of every test document for n' = 100, 1,600 and 6,400 (the prediction regime: documents in
batches of similar length through ``nbest_batched``, as ``DocumentRescoring.predict`` decodes;
memory matters).  Potentials come from the shared model (``common.load_shared_model``: the averaged
perceptron the bench trained), as in real use.  Only the public API of
``structperc.decode.nbest`` is called.

Each row runs in its own process, so its peak resident memory (``ru_maxrss``) is its own; within
it, up to ``repeats`` passes over the documents (no further pass that would end past
``row_budget_s``), and the median.  CRFsuite has no n-best decoding: no peer, no ratio.

A second table (``ALGORITHM_ROWS``) times the three exact algorithms of ``decode/nbest.py``
(``kbest_dp``, ``kbest_beam``, ``kbest_sidetracks``) on the same potentials in one process,
passes alternating between them, and names the one ``nbest`` picks: the measurement behind its
dispatch (``nbest.algorithm``).
Run through ``bench.py`` (``--only nbest``).
"""

from __future__ import annotations

import time
from pathlib import Path

from common import (
    load_shared_model,
    log,
    max_rss_mb,
    median,
    run_worker,
    setup_threads,
    timed_passes,
    worker_main,
)

SCRIPT = Path(__file__).resolve()
ROWS = [("train", 20), ("test", 100), ("test", 1600), ("test", 6400)]
# the exact algorithms side by side on the same documents, in one process: (split, n, batch)
ALGORITHM_ROWS = [("train", 20, 1), ("train", 100, 1), ("test", 20, 16), ("test", 100, 16)]
ALGORITHMS = ("kbest_dp", "kbest_beam", "kbest_sidetracks")
DEFAULTS = {"repeats": 3, "row_budget_s": 100.0, "batch_size": 16}
QUICK = {"repeats": 2, "row_budget_s": 20.0, "batch_size": 16}


def worker_row(cfg: dict) -> dict:
    import torch

    from structperc.decode.nbest import nbest, nbest_batched
    from structperc.model.batch import make_batch

    setup_threads(cfg["threads"])
    split, n = cfg["split"], cfg["n"]
    weights, _, _, mats = load_shared_model(Path(cfg["model_dir"]))
    mat = mats[split]
    rss0 = max_rss_mb()
    lengths = (mat.doc_offsets[1:] - mat.doc_offsets[:-1]).tolist()
    if split == "train":  # one document at a time, in corpus order
        groups = [[d] for d in range(mat.num_docs)]
    else:  # batches of similar-length documents
        order = sorted(range(mat.num_docs), key=lambda d: lengths[d])
        bs = cfg["batch_size"]
        groups = [order[s : s + bs] for s in range(0, len(order), bs)]
    decode_s: list[float] = []

    @torch.no_grad()
    def one_pass() -> None:
        t = 0.0
        for docs in groups:
            batch = make_batch(mat, docs)
            pot = weights.potentials(batch)
            t0 = time.perf_counter()
            if split == "train":
                nbest(pot, batch.lengths, n)
            else:
                nbest_batched(pot, batch.lengths, n)
            t += time.perf_counter() - t0
        decode_s.append(t)

    passes = timed_passes(one_pass, cfg["repeats"], cfg["row_budget_s"])
    out = {
        "split": split,
        "n": n,
        "documents": mat.num_docs,
        "tokens": mat.num_tokens,
        "max_doc_tokens": max(lengths),
        "calls": len(groups),
        "seconds_all": passes["s_all"],
        "cpu_seconds_all": passes["cpu_s_all"],
        "seconds": passes["s"],
        "cpu_seconds": passes["cpu_s"],
        "nbest_seconds_all": decode_s,
        "nbest_seconds": median(decode_s),
        "rss_before_decoding_mb": rss0,
        "peak_rss_mb": max_rss_mb(),
    }
    log(f"nbest {split} n={n}: {out['seconds']:.1f} s, peak {out['peak_rss_mb']:,.0f} MiB")
    return out


def worker_algorithms(cfg: dict) -> dict:
    import torch

    import structperc.decode.nbest as nbest_mod
    from structperc.model.batch import make_batch

    setup_threads(cfg["threads"])
    split, n, bs = cfg["split"], cfg["n"], cfg["batch"]
    weights, _, _, mats = load_shared_model(Path(cfg["model_dir"]))
    mat = mats[split]
    lengths = (mat.doc_offsets[1:] - mat.doc_offsets[:-1]).tolist()
    order = sorted(range(mat.num_docs), key=lambda d: lengths[d]) if bs > 1 else range(mat.num_docs)
    order = list(order)
    with torch.no_grad():
        pots = []
        for s in range(0, len(order), bs):
            batch = make_batch(mat, order[s : s + bs])
            pots.append((weights.potentials(batch), batch.lengths))
        seconds: dict[str, list[float]] = {a: [] for a in ALGORITHMS}
        for _ in range(cfg["repeats"]):
            for name in ALGORITHMS:
                fn = getattr(nbest_mod, name)
                t0 = time.perf_counter()
                for pot, lens in pots:
                    fn(pot, lens, n)
                seconds[name].append(time.perf_counter() - t0)
        picked = nbest_mod.algorithm(pots[0][0], n)
    out = {"split": split, "n": n, "batch": bs, "documents": mat.num_docs, "picked": picked}
    out["seconds"] = {a: median(v) for a, v in seconds.items()}
    out["seconds_all"] = seconds
    log(f"nbest algorithms {split} n={n} batch {bs}: {out['seconds']}")
    return out


WORKERS = {"row": worker_row, "algorithms": worker_algorithms}


def run(cfg: dict) -> dict:
    t_start = time.perf_counter()
    rows = []
    for split, n in ROWS:
        log(f"nbest: {split} n={n}")
        rows.append(run_worker(SCRIPT, "row", {**cfg, "split": split, "n": n}))
    algorithms = []
    for split, n, bs in ALGORITHM_ROWS:
        log(f"nbest algorithms: {split} n={n} batch {bs}")
        row_cfg = {**cfg, "split": split, "n": n, "batch": bs}
        algorithms.append(run_worker(SCRIPT, "algorithms", row_cfg))
    wall = time.perf_counter() - t_start
    return {"config": cfg, "wall_seconds": wall, "rows": rows, "algorithms": algorithms}


if __name__ == "__main__":
    worker_main(WORKERS)
