"""The GPU rows of the bench (issue 16, item 6): the same code on a CUDA device against the same
machine's CPU (one torch thread) and CRFsuite there, all in this one script.

Rows, on CoNLL-2003 (local features of Kazama's Table 1, the shared model: an averaged
perceptron trained ``--epochs`` epochs on the CPU here):

1. Viterbi decoding of the test set (``ChainStructure.predict``), tokens/s at batch 1, 16, 256
   and the whole set, CPU and CUDA; CRFsuite's ``Tagger.tag`` per document on the CPU;
2. the n-best of the test set (``nbest_batched`` over batches of 16 similar-length documents,
   potentials included), n = 100 and 6,400, seconds;
3. the CRF: seconds per L-BFGS iteration (``crf_bench.worker_structperc``) with
   ``features.edges=false`` and with edge features, CPU and CUDA, and CRFsuite's L-BFGS;
4. one averaged-perceptron epoch (``trainer.fit``, one document per step), CPU and CUDA.

Medians of ``--repeats`` passes (CUDA timed after a warm-up pass, with synchronisation).  Writes
``gpu.json`` and ``GPU.md`` into ``--out``.  Without CUDA it refuses to run (``--render-only``
re-renders).  On the device machine (no package index there) the dependencies travel as files:

    STRUCTPERC_DATA=... python experiments/bench/gpu_bench.py --out experiments/bench/gpu

(``experiments/bench/gpu/device_run.sh`` is the script that ran it there, with the end-to-end
runs on CPU and CUDA; ``device_tests.log`` is ``tests/test_gpu.py`` on that machine.)
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

import torch
from common import (
    find_data_dir,
    log,
    make_features,
    save_shared_model,
    setup_threads,
    train_shared_weights,
)
from render import page

HERE = Path(__file__).resolve().parent
ACCEL = "cuda"  # the device measured against the CPU (--dry-run: the CPU again, small data)


def sync(device: str) -> None:
    if device == "cuda" and torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(fn, device: str, repeats: int) -> list[float]:
    """Wall seconds of ``repeats`` calls of ``fn`` (after one warm-up call on CUDA)."""
    if device == ACCEL:
        fn()
    out = []
    for _ in range(repeats):
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        out.append(time.perf_counter() - t0)
    return out


def viterbi_rows(weights, test, tokens: int, repeats: int) -> list[dict]:
    import copy

    from structperc.structures.chain import ChainData, ChainStructure

    rows = []
    for device in ("cpu", ACCEL):
        structure = ChainStructure(copy.deepcopy(weights).to(device))
        for bs in (1, 64, 256, test.num_docs):  # (a CPU decodes batches under 32 one by one)
            data = ChainData(test)
            secs = timed(
                partial(structure.predict, data, batch_size=bs, device=device), device, repeats
            )
            rows.append(
                {
                    "row": "viterbi",
                    "device": device,
                    "batch": bs,
                    "seconds": secs,
                    "tokens_per_s": tokens / statistics.median(secs),
                }
            )
            log(f"viterbi {device} batch {bs}: {rows[-1]['tokens_per_s']:,.0f} tokens/s")
    return rows


def nbest_rows(weights, test, repeats: int) -> list[dict]:
    import copy

    from structperc.decode.nbest import nbest_batched
    from structperc.model.batch import make_batch

    lengths = (test.doc_offsets[1:] - test.doc_offsets[:-1]).tolist()
    order = sorted(range(test.num_docs), key=lambda d: lengths[d])
    groups = [order[s : s + 16] for s in range(0, len(order), 16)]
    rows = []
    for device in (ACCEL, "cpu"):  # the CPU's 6,400-best last: the slowest row
        w = copy.deepcopy(weights).to(device)
        for n in (100, 6400):

            @torch.no_grad()
            def one_pass(w=w, n=n, device=device):
                for docs in groups:
                    batch = make_batch(test, docs).to(device)
                    nbest_batched(w.potentials(batch), batch.lengths.to(device), n)

            secs = timed(one_pass, device, 1 if (device == "cpu" and n == 6400) else repeats)
            cuda = device == "cuda" and torch.cuda.is_available()
            peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else None
            rows.append(
                {"row": "nbest", "device": device, "n": n, "seconds": secs, "peak_mib": peak}
            )
            log(f"{n}-best {device}: {statistics.median(secs):.2f} s")
    return rows


def crf_rows(cfg: dict) -> list[dict]:
    import crf_bench

    rows = []
    for device in ("cpu", ACCEL):
        for edges in (False, True):
            out = crf_bench.worker_structperc({**cfg, "device": device}, edges=edges)
            rows.append(
                {
                    "row": "crf",
                    "device": device,
                    "edges": edges,
                    "seconds": out["iteration_s_all"],
                    "objective": out["objective_all"],
                }
            )
    peer = crf_bench.worker_crfsuite(cfg)
    rows.append(
        {
            "row": "crf",
            "device": "crfsuite",
            "edges": False,
            "seconds": peer["iteration_s_all"],
            "objective": peer["objective_all"],
        }
    )
    return rows


def perceptron_rows(features, mats, y, labels, epochs: int) -> list[dict]:
    from structperc.learn.fitting import FitSettings
    from structperc.learn.perceptron import Perceptron
    from structperc.model.updates import Updater
    from structperc.model.weights import ChainWeights
    from structperc.structures.chain import ChainData, ChainStructure
    from structperc.trainer import fit

    rows = []
    for device in ("cpu", ACCEL):
        w = ChainWeights(features.num_features, labels).to(device)
        result = fit(
            Perceptron(average=True),
            ChainStructure(w),
            Updater(w, average=True),
            ChainData(mats["train"], y),
            FitSettings(max_epochs=epochs, progress=False, device=device, seed=0),
        )
        secs = [h.seconds for h in result.history]
        rows.append(
            {
                "row": "perceptron",
                "device": device,
                "seconds": secs,
                "errors": [h.errors for h in result.history],
            }
        )
        log(f"perceptron epochs {device}: {', '.join(f'{s:.2f}' for s in secs)} s")
    return rows


def crfsuite_tagging(cfg: dict, corpus: dict, tokens: int, repeats: int) -> dict:
    """CRFsuite's tagging speed on the test set (a model of one averaged-perceptron epoch)."""
    import pycrfsuite
    from common import attribute_lists

    feats = make_features(cfg).fit(corpus["train"])
    trainer = pycrfsuite.Trainer(algorithm="ap", verbose=False)
    train = corpus["train"]
    for doc, x in zip(train, attribute_lists(feats, train, training=True), strict=True):
        trainer.append(x, doc.tags)
    trainer.set_params({"max_iterations": 1})
    xs = [pycrfsuite.ItemSequence(x) for x in attribute_lists(feats, corpus["test"])]
    with tempfile.TemporaryDirectory() as tmp:
        trainer.train(f"{tmp}/m.crfsuite")
        tagger = pycrfsuite.Tagger()
        tagger.open(f"{tmp}/m.crfsuite")
        secs = timed(lambda: [tagger.tag(x) for x in xs], "cpu", repeats)
    return {
        "row": "viterbi",
        "device": "crfsuite",
        "batch": 1,
        "seconds": secs,
        "tokens_per_s": tokens / statistics.median(secs),
    }


def measure(args, save=None) -> dict:
    setup_threads(1)
    limits = {"train": 40, "dev": 10, "test": 10} if args.dry_run else {}
    cfg = {
        "data_dir": str(find_data_dir()),
        "threads": 1,
        "max_docs": limits,
        "iterations": args.crf_iterations,
        "repeats": 1,
        "sigma2": 100.0,
        "semiring": "scaled",
        "dtype": "float64",
    }
    corpus, features, mats, labels, y, weights = train_shared_weights(cfg, args.epochs)
    tokens = mats["test"].num_tokens
    data = {
        "rows": [],
        "gpu": torch.cuda.get_device_name(0) if ACCEL == "cuda" else "none (dry run)",
        "machine": f"{platform.platform()}, torch {torch.__version__}, "
        f"Python {platform.python_version()}",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "test_tokens": tokens,
        "shared_model_epochs": args.epochs,
    }

    def add(rows: list[dict]) -> None:  # gpu.json after every section: a cut run keeps them
        data["rows"] += rows
        if save is not None:
            save(data)

    add(viterbi_rows(weights, mats["test"], tokens, args.repeats))
    add([crfsuite_tagging(cfg, corpus, tokens, args.repeats)])
    add(perceptron_rows(features, mats, y, labels, 2))
    with tempfile.TemporaryDirectory() as tmp:
        save_shared_model(Path(tmp), weights, features, mats, {})
        add(crf_rows({**cfg, "model_dir": tmp}))
    add(nbest_rows(weights, mats["test"], args.repeats))
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "gpu")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=3, help="epochs of the shared model")
    ap.add_argument("--crf-iterations", type=int, default=3)
    ap.add_argument("--render-only", action="store_true")
    ap.add_argument(
        "--dry-run", action="store_true", help="the CPU twice, 40 documents: no figures"
    )
    args = ap.parse_args()
    if args.dry_run:
        global ACCEL
        ACCEL = "cpu"
        print(json.dumps(measure(args), indent=1)[:3000])
        return
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.render_only:
        if not torch.cuda.is_available():
            sys.exit("gpu_bench.py: torch sees no CUDA device here")

        def save(data: dict) -> None:
            (args.out / "gpu.json").write_text(json.dumps(data, indent=2) + "\n")

        measure(args, save)
    data = json.loads((args.out / "gpu.json").read_text())
    text = page("gpu.md.j2", data=data)
    (args.out / "GPU.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
