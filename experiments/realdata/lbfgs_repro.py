"""The face's L-BFGS against sklearn-crfsuite's on the shared reproduction of the underflow that
stopped L-BFGS (``../shared/repro/lbfgs_zero_division.json.gz``: 800 short social-media posts
turned into sklearn-crfsuite tutorial features, hashed).

Both are fitted with the same settings (``c1``, ``c2``, ``max_iterations``) in this process, and
both models are scored by the same function: CRFsuite's training objective

    f(w) = sum_s -log p(y_s | x_s; w) + c1 ||w||_1 + c2 ||w||^2,

the log-likelihood by a plain log-space forward algorithm written here (NumPy, not the kernels
under test), over each model's own state weights (attribute, label) and transitions.  Writes
``results.json`` and ``README.md`` beside this file.

    .venv/bin/python experiments/realdata/lbfgs_repro.py
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPRO = HERE.parents[1] / ".." / "shared" / "repro" / "lbfgs_zero_division.json.gz"


def item_pairs(item: dict) -> list[tuple[str, float]]:
    """python-crfsuite's (attribute, value) pairs of a flat dict item (the repro's items)."""
    out = []
    for key, value in item.items():
        if isinstance(value, str):
            out.append((f"{key}:{value}", 1.0))
        else:
            out.append((key, float(value)))
    return out


def logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    top = x.max(axis=axis, keepdims=True)
    return (np.log(np.exp(x - top).sum(axis=axis, keepdims=True)) + top).squeeze(axis)


def objective(state: dict, transitions: dict, X, y, c1: float, c2: float) -> dict:
    """CRFsuite's objective (module docstring) of the weights ``state`` {(attribute, label): w}
    and ``transitions`` {(from, to): w} on (X, y)."""
    labels = sorted({label for yseq in y for label in yseq})
    index = {label: i for i, label in enumerate(labels)}
    L = len(labels)
    by_attr: dict[str, np.ndarray] = {}
    for (attr, label), w in state.items():
        by_attr.setdefault(attr, np.zeros(L))[index[label]] = w
    A = np.zeros((L, L))
    for (a, b), w in transitions.items():
        A[index[a], index[b]] = w
    nll = 0.0
    for xseq, yseq in zip(X, y, strict=True):
        S = np.zeros((len(xseq), L))
        for t, item in enumerate(xseq):
            for attr, value in item_pairs(item):
                if attr in by_attr:
                    S[t] += value * by_attr[attr]
        la = S[0]
        for t in range(1, len(xseq)):
            la = logsumexp(la[:, None] + A, axis=0) + S[t]
        gold = [index[label] for label in yseq]
        score = S[np.arange(len(gold)), gold].sum() + sum(
            A[gold[t - 1], gold[t]] for t in range(1, len(gold))
        )
        nll += float(logsumexp(la, axis=0)) - float(score)
    weights = np.array(list(state.values()) + list(transitions.values()))
    l1, l2 = c1 * np.abs(weights).sum(), c2 * (weights**2).sum()
    return {"nll": nll, "l1": float(l1), "l2": float(l2), "objective": nll + float(l1 + l2)}


def fit_both(X, y, c1: float, c2: float, iterations: int) -> dict:
    import sklearn_crfsuite

    from structperc.sklearn import CRF

    rows = {}
    for name, make in (
        ("structperc", lambda: CRF(algorithm="lbfgs", c1=c1, c2=c2, max_iterations=iterations)),
        (
            "sklearn-crfsuite",
            lambda: sklearn_crfsuite.CRF(
                algorithm="lbfgs", c1=c1, c2=c2, max_iterations=iterations
            ),
        ),
    ):
        crf = make()
        start = time.perf_counter()
        crf.fit(X, y)
        seconds = time.perf_counter() - start
        scored = objective(crf.state_features_, crf.transition_features_, X, y, c1, c2)
        rows[name] = {"fit_s": round(seconds, 2), **scored}
    ratio = rows["structperc"]["objective"] / rows["sklearn-crfsuite"]["objective"]
    return {"c1": c1, "c2": c2, "max_iterations": iterations, "rows": rows, "ratio": ratio}


def render(results: dict) -> str:
    lines = [
        "# The face's L-BFGS on the underflow reproduction",
        "",
        "Written by `experiments/realdata/lbfgs_repro.py` from `results.json`: both CRFs fitted "
        "in one process on `../shared/repro/lbfgs_zero_division.json.gz` (800 sequences), both "
        "models scored by the same objective (CRFsuite's: nll + c1 |w|_1 + c2 |w|^2, the nll by "
        "a NumPy log-space forward written in the script).",
        "",
        f"Machine: {results['machine']}.",
        "",
        "| c1 | c2 | iterations | library | fit s | nll | c1 |w|_1 | c2 |w|^2 | objective |"
        " ratio to sklearn-crfsuite |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in results["runs"]:
        for name, row in run["rows"].items():
            ratio = row["objective"] / run["rows"]["sklearn-crfsuite"]["objective"]
            lines.append(
                f"| {run['c1']} | {run['c2']} | {run['max_iterations']} | {name} | "
                f"{row['fit_s']:.2f} | {row['nll']:.2f} | {row['l1']:.2f} | {row['l2']:.2f} | "
                f"{row['objective']:.2f} | {ratio:.4f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repro", type=Path, default=REPRO)
    parser.add_argument("--iterations", type=int, default=100)
    args = parser.parse_args()
    data = json.load(gzip.open(args.repro, "rt"))
    X, y = data["X"], data["y"]
    runs = [fit_both(X, y, c1, c2, args.iterations) for c1, c2 in ((0.1, 0.1), (0.0, 0.1))]
    results = {"machine": f"{platform.machine()}, {platform.python_version()}", "runs": runs}
    (HERE / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (HERE / "README.md").write_text(render(results))
    print(render(results))


if __name__ == "__main__":
    main()
