"""Before and after: section 10 of ``make bench`` (the scikit-learn face on sklearn-crfsuite's
tutorial pipeline) run on the tree before this work and after it, same settings, same machine.

Each folder below is ``experiments/bench/bench.py``'s own output (``results.json``, its command
inside) for a copy of the tree at the commit named here (``git archive``, so the bench records no
commit itself).  ``python experiments/sklearn_online/compare.py`` renders ``COMPARE.md`` from them.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS = {  # folder: the tree it measured
    "bench_before": "fb67bde (the branch point: main)",
    "bench_after": "34d47d3 (ap, pa, arow; l2sgd's old default)",
    "bench_after_l2sgd": "f9adfc1 (l2sgd with its held-out default, lr 0.1, batch_tokens 250)",
}


def rows_of(folder: str) -> dict[str, dict]:
    results = json.loads((HERE / folder / "results.json").read_text())
    return {row["algorithm"]: row for row in results["sections"]["sklearn"]["rows"]}


def main() -> None:
    lines = [
        "# The scikit-learn face's fit, before and after",
        "",
        "Written by `compare.py` from the `results.json` of each folder (medians of 3 fresh "
        "worker processes, one torch thread; CPU seconds of `fit`, python-crfsuite item "
        "conversion included; entity F1 on the first 1,000 CoNLL-2003 test sentences after "
        "training on the first 3,000 training sentences).  The machine was shared with other "
        "jobs (see each folder's README for the load): compare CPU seconds, and structperc "
        "against sklearn-crfsuite measured in the same run.",
        "",
    ]
    for folder, tree in RUNS.items():
        command = json.loads((HERE / folder / "results.json").read_text())["command"]
        lines += [f"- `{folder}`: tree {tree}; command `{command}`"]
    lines += [
        "",
        "| algorithm | run | structperc fit CPU s | sklearn-crfsuite fit CPU s | structperc / "
        "crfsuite | structperc F1 | crfsuite F1 |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for folder in RUNS:
        for algorithm, row in rows_of(folder).items():
            ours, peer = row["structperc_jobs1"], row["crfsuite"]
            lines.append(
                f"| {algorithm} | {folder} | {ours['fit_cpu_s']:.2f} | {peer['fit_cpu_s']:.2f} | "
                f"{ours['fit_cpu_s'] / peer['fit_cpu_s']:.1f}x | {ours['f1']:.2f} | "
                f"{peer['f1']:.2f} |"
            )
    lines.append("")
    (HERE / "COMPARE.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
