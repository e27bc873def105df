"""Constrained decoding on CoNLL-2003 test: the gold label of 5 % of the tokens fixed.

    python experiments/partial/constrained_test.py --runs experiments/partial/runs/ap_full_s0 \
        experiments/partial/runs/crf_full_s0 ... --seeds 0 1 2 \
        --out experiments/partial/constrained_test.json

For each trained model and seed, a seeded 5 % of the test tokens get their gold label fixed
(``Tagger.tag_documents(..., constraints=...)``: -inf on every other label of those tokens) and
the test set is decoded with and without the constraints.  It records conlleval's F1 both ways,
the accuracy of the tokens that were *not* fixed both ways (what the constraints propagate to),
that accuracy by distance to the nearest fixed token in the same document, and how many of the
other tokens changed label (and how many of those changes were corrections).
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

from structperc.data.conll import read_conll
from structperc.data.constraints import Constraints
from structperc.eval.chunks import evaluate
from structperc.tagger import Tagger

FRACTION = 0.05
DISTANCES = ((1, 1), (2, 2), (3, 5), (6, 10**9))  # bands of distance to the nearest fixed token


def fixed_tokens(docs, seed: int) -> list[set[int]]:
    rng = random.Random(seed)
    return [{t for t in range(len(d)) if rng.random() < FRACTION} for d in docs]


def nearest(fixed: set[int], n: int) -> list[int]:
    """Distance of each of n tokens to the nearest fixed one (a large number: none)."""
    out = [10**9] * n
    last = None
    for t in range(n):
        if t in fixed:
            last = t
        if last is not None:
            out[t] = t - last
    last = None
    for t in range(n - 1, -1, -1):
        if t in fixed:
            last = t
        if last is not None:
            out[t] = min(out[t], last - t)
    return out


def measure(tagger: Tagger, docs, seed: int) -> dict:
    fixed = fixed_tokens(docs, seed)
    free = tagger.tag_documents(docs)
    known = [
        Constraints(labels={t: d.tags[t] for t in f}) for d, f in zip(docs, fixed, strict=True)
    ]
    held = tagger.tag_documents(docs, constraints=known)
    gold = [d.tags for d in docs]
    starts = [d.sentence_starts for d in docs]
    out = {
        "seed": seed,
        "fixed_tokens": sum(len(f) for f in fixed),
        "tokens": sum(len(d) for d in docs),
        "f1_free": evaluate(gold, free, starts).f1,
        "f1_fixed": evaluate(gold, held, starts).f1,
    }
    right = {"free": 0, "fixed": 0}
    others = changed = corrected = broken = 0
    bands = {f"{a}-{b}" if b < 10**9 else f"{a}+": [0, 0, 0] for a, b in DISTANCES}
    for g, f0, f1, fx in zip(gold, free, held, fixed, strict=True):
        dist = nearest(fx, len(g))
        for t, (y, a, b) in enumerate(zip(g, f0, f1, strict=True)):
            if t in fx:
                assert b == y or (b[2:] == y[2:] and y.startswith("I-")), (t, y, b)
                continue
            others += 1
            right["free"] += a == y
            right["fixed"] += b == y
            if a != b:
                changed += 1
                corrected += b == y
                broken += a == y
            for (lo, hi), key in zip(DISTANCES, bands, strict=True):
                if lo <= dist[t] <= hi:
                    bands[key][0] += 1
                    bands[key][1] += a == y
                    bands[key][2] += b == y
    out.update(
        other_tokens=others,
        other_accuracy_free=100 * right["free"] / others,
        other_accuracy_fixed=100 * right["fixed"] / others,
        other_changed=changed,
        other_corrected=corrected,
        other_broken=broken,
        by_distance={
            k: {"tokens": n, "accuracy_free": 100 * a / n, "accuracy_fixed": 100 * b / n}
            for k, (n, a, b) in bands.items()
            if n
        },
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", nargs="+", required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", default="experiments/partial/constrained_test.json")
    args = parser.parse_args()
    data = Path(os.environ.get("STRUCTPERC_DATA", "../shared/data"))
    docs = read_conll(data / "conll2003" / "test.txt")
    results = []
    for run in args.runs:
        tagger = Tagger.load(run)
        for seed in args.seeds:
            row = {"run": Path(run).name, **measure(tagger, docs, seed)}
            print(json.dumps({k: v for k, v in row.items() if k != "by_distance"}))
            results.append(row)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
