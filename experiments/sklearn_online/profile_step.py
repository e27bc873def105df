"""Where the scikit-learn face's online training spends its time, per training step.

Two measurements, CPU microseconds (``time.process_time``, one torch thread):

1. ``fit``: ``CRF(algorithm="ap", max_iterations=EPOCHS)`` on sklearn-crfsuite's tutorial
   pipeline (``experiments/bench/sklearn_bench.py``: the first 3,000 CoNLL-2003 training
   sentences), with the chain structure's and the updater's methods timed as they are called:
   total seconds and microseconds per call of each part.
2. ``decode``: the one-document decode of a training step (``ChainStructure.argmax`` on a
   one-document batch: the token scores' lookup and the Viterbi of ``viterbi_tokens``) for a
   sentence-long sequence (T = 14, the tutorial's mean) and a document-long one (T = 230, a
   CoNLL-2003 document, the Hydra pipeline's instance), 9 labels, 20 attributes a token:
   microseconds per call and per token.

    STRUCTPERC_DATA=/work/shared/data python experiments/sklearn_online/profile_step.py

writes ``profile.json`` and ``README.md`` (rendered from it) beside this file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "bench"))

EPOCHS = 3
TIMED = {
    "ChainStructure": ["instance", "argmax", "errors", "delta"],
    "ChainWeights": ["token_scores"],
    "Updater": ["apply"],
}


def timed_fit(sentences: int) -> dict:
    """Seconds and calls of each timed method during ``fit``, and fit's own CPU seconds."""
    from sklearn_bench import iob_sents, sent2features, sent2labels

    import structperc.decode.viterbi as viterbi
    from structperc.model.updates import Updater
    from structperc.model.weights import ChainWeights
    from structperc.sklearn import CRF
    from structperc.structures.chain import ChainStructure

    classes = {"ChainStructure": ChainStructure, "ChainWeights": ChainWeights, "Updater": Updater}
    spent: dict[str, list] = {}

    def wrap(owner, name: str, key: str):
        inner = getattr(owner, name)

        def timed(*args, **kwargs):
            t0 = time.process_time()
            out = inner(*args, **kwargs)
            entry = spent.setdefault(key, [0.0, 0])
            entry[0] += time.process_time() - t0
            entry[1] += 1
            return out

        setattr(owner, name, timed)
        return inner

    originals = []
    for cls_name, names in TIMED.items():
        for name in names:
            originals.append((classes[cls_name], name, wrap(classes[cls_name], name, name)))
    originals.append(
        (viterbi, "_token_recursion", wrap(viterbi, "_token_recursion", "viterbi (one sentence)"))
    )
    data = Path(os.environ.get("STRUCTPERC_DATA", "data")) / "conll2003" / "train.txt"
    train = iob_sents(data, sentences)
    X, y = [sent2features(s) for s in train], [sent2labels(s) for s in train]
    try:
        t0 = time.process_time()
        crf = CRF(algorithm="ap", max_iterations=EPOCHS).fit(X, y)
        fit_cpu = time.process_time() - t0
    finally:
        for owner, name, inner in originals:
            setattr(owner, name, inner)
    epochs = crf.training_log_.iterations
    return {
        "sentences": sentences,
        "tokens": sum(len(s) for s in X),
        "epochs": len(epochs),
        "steps": len(epochs) * len(X),
        "fit_cpu_s": fit_cpu,
        "epoch_wall_s": [e["time"] for e in epochs],
        "parts": {k: {"seconds": v[0], "calls": v[1]} for k, v in spent.items()},
    }


def timed_decode(lengths: list[int], repeats: int = 300) -> list[dict]:
    """CPU microseconds of one-document ``argmax`` and of its token-score lookup."""
    import torch

    from structperc.model.batch import FeatureMatrix, make_batch
    from structperc.model.weights import ChainWeights
    from structperc.structures.chain import ChainStructure

    L, A, per_token = 9, 30_000, 20
    gen = torch.Generator().manual_seed(0)
    weights = ChainWeights(A, [str(j) for j in range(L)], edges=False)
    with torch.no_grad():
        weights.node.weight.copy_(torch.randint(-3, 4, (A, L), generator=gen))
        weights.edge.weight.copy_(torch.randint(-3, 4, (1, L * L), generator=gen))
    structure = ChainStructure(weights)
    out = []
    for T in lengths:
        ids = torch.randint(0, A, (T * per_token,), generator=gen, dtype=torch.int32)
        offsets = torch.arange(0, T * per_token + 1, per_token)
        batch = make_batch(FeatureMatrix(ids, offsets, torch.tensor([0, T])), [0])
        row = {"T": T}
        with torch.no_grad():
            for key, call in (
                ("argmax_us", lambda b=batch: structure.argmax(b)),
                ("token_scores_us", lambda b=batch: weights.token_scores(b)),
            ):
                call()
                t0 = time.process_time()
                for _ in range(repeats):
                    call()
                row[key] = (time.process_time() - t0) / repeats * 1e6
        row["argmax_us_per_token"] = row["argmax_us"] / T
        out.append(row)
    return out


def render(results: dict) -> str:
    fit = results["fit"]
    lines = [
        "# Where the scikit-learn face's online training spends its time",
        "",
        "Written by `profile_step.py` from `profile.json`:",
        "",
        "```",
        results["command"],
        "```",
        "",
        f'`CRF(algorithm="ap", max_iterations={fit["epochs"]})` on the tutorial pipeline\'s first '
        f"{fit['sentences']:,} CoNLL-2003 training sentences ({fit['tokens']:,} tokens, "
        f"{fit['steps']:,} training steps): fit took {fit['fit_cpu_s']:.2f} CPU s.  CPU time of "
        "each part as it was called (nested: `argmax` holds `token_scores` and the Viterbi):",
        "",
        "| part | calls | CPU s | CPU us per call |",
        "|---|---:|---:|---:|",
    ]
    for name, p in sorted(fit["parts"].items(), key=lambda kv: -kv[1]["seconds"]):
        per = 1e6 * p["seconds"] / max(p["calls"], 1)
        lines.append(f"| {name} | {p['calls']:,} | {p['seconds']:.2f} | {per:.0f} |")
    lines += [
        "",
        "One-document decode of a training step (`ChainStructure.argmax`), 9 labels, 20 "
        "attributes a token, CPU microseconds:",
        "",
        "| tokens | argmax us | of which token scores us | argmax us per token |",
        "|---:|---:|---:|---:|",
    ]
    for row in results["decode"]:
        lines.append(
            f"| {row['T']} | {row['argmax_us']:.0f} | {row['token_scores_us']:.0f} | "
            f"{row['argmax_us_per_token']:.1f} |"
        )
    parts = fit["parts"]
    decode = {row["T"]: row for row in results["decode"]}
    sentence, document = decode[min(decode)], decode[max(decode)]
    argmax = parts["argmax"]["seconds"]
    lines += [
        "",
        "Reading: the one-sentence decode (`argmax`) is "
        f"{100 * argmax / fit['fit_cpu_s']:.0f}% of fit's CPU time, and per token a sentence's "
        f"decode costs {sentence['argmax_us_per_token'] / document['argmax_us_per_token']:.1f} "
        f"times a document's ({sentence['argmax_us_per_token']:.1f} against "
        f"{document['argmax_us_per_token']:.1f} us).  A step's time is the fixed cost of its "
        "NumPy/torch calls, not their arithmetic: three a position in a sentence's recursion, a "
        "few dozen an update, against O(sqrt T) calls for a document's blocked scan "
        "(`decode/viterbi.py`).  The Hydra pipeline's instances are documents, the face's are "
        "sentences.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=3000)
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--render-only", action="store_true")
    args = parser.parse_args()
    path = args.out / "profile.json"
    if args.render_only:
        (args.out / "README.md").write_text(render(json.loads(path.read_text())))
        return
    import torch

    torch.set_num_threads(1)
    command = "STRUCTPERC_DATA=/work/shared/data python experiments/sklearn_online/profile_step.py"
    if args.sentences != 3000:
        command += f" --sentences {args.sentences}"
    results = {
        "command": command,
        "fit": timed_fit(args.sentences),
        "decode": timed_decode([14, 230]),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "README.md").write_text(render(results))


if __name__ == "__main__":
    main()
