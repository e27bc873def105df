"""Training as the data grows: time and memory at 1x, 4x, 16x and 30x CoNLL-2003's training size.

The corpora are the silver ones of ``make_silver.py`` (the unlabeled text tagged by ``make
run``'s model; no gold test data).  At each size, every measurement in a process of its own
(its peak resident memory by ``/usr/bin/time``), one after the other:

* ``ap``: the averaged perceptron through Hydra, as a user runs it:
  ``+experiment=conll03_local data=columns 'data.columns=[token,ner]' trainer.max_epochs=3``
  (``data.stream=auto``: from disk above 500k training tokens), a fresh feature cache;
* ``crf``: the CRF through Hydra, CRFsuite's model with the observed support
  (``+experiment=conll03_crf ... features.edges=false learner.support=observed``),
  ``--crf-iterations`` L-BFGS iterations;

The scikit-learn face against python-crfsuite has its own table (``face_memory.py``: CoNLL-2003
repeated 1x to 30x, the same items for both).

From each run's ``results.json``: feature extraction seconds, seconds per epoch (iteration),
the model's tables (``table_bytes``), whether it streamed; from ``/usr/bin/time``: peak memory
and wall time.  Writes ``results.json``, ``README.md`` (the table) and ``scale.png`` (time and
memory against tokens) beside this file.

    .venv/bin/python experiments/scale/scale_bench.py --silver .cache/silver
    .venv/bin/python experiments/scale/scale_bench.py --paired 3     # 30x against 1x, in turn
    .venv/bin/python experiments/scale/scale_bench.py --render-only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SIZES = ("1x", "4x", "16x", "30x")


def timed(command: list[str], log: Path) -> dict:
    """Run ``command`` under ``/usr/bin/time -v``; its wall seconds and peak memory (MB)."""
    t0 = time.perf_counter()
    with open(log, "w") as out:
        done = subprocess.run(
            ["/usr/bin/time", "-v", *command], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT
        )
    wall = time.perf_counter() - t0
    text = log.read_text()
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}); see {log}")
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
    return {"wall_s": round(wall, 1), "peak_mb": round(peak / 1024, 1)}


def hydra_run(
    kind: str,
    corpus: Path,
    out: Path,
    iterations: int,
    cache: Path | None = None,
    extra: tuple[str, ...] = (),
) -> dict:
    """One training through ``python -m structperc.run`` (module docstring) into ``out``, with
    a fresh feature cache unless ``cache`` names one to keep; ``extra``: more overrides."""
    keep = cache is not None
    cache = cache if keep else Path(tempfile.mkdtemp(prefix="scale-cache-"))
    common = [
        *extra,
        "data=columns",
        f"data.train={corpus}",
        "data.columns=[token,ner]",
        "trainer.processes=1",
        "trainer.progress=false",
        f"cache_dir={cache}",
        f"hydra.run.dir={out}",
    ]
    if kind == "ap":
        args = ["+experiment=conll03_local", "trainer.max_epochs=3", *common]
    else:
        args = [
            "+experiment=conll03_crf",
            "features.edges=false",
            "learner.support=observed",
            f"trainer.max_epochs={iterations}",
            *common,
        ]
    load = round(os.getloadavg()[0], 1)  # (1 minute) at the start: the machine may be shared
    try:
        measured = timed([sys.executable, "-m", "structperc.run", *args], out.with_suffix(".log"))
    finally:
        if not keep:
            shutil.rmtree(cache, ignore_errors=True)
    results = json.loads((out / "results.json").read_text())
    epochs = [h["seconds"] for h in results["history"]]
    tokens = results.get("train_tokens") or tokens_of(out.with_suffix(".log"))
    return {
        **measured,
        "command": "python -m structperc.run " + " ".join(args[:-2]),
        "train_tokens": tokens,
        "features": results["num_features"],
        "feature_s": round(results["feature_seconds"], 1),
        "epoch_s": [round(s, 2) for s in epochs],
        "us_per_token_epoch": round(1e6 * sorted(epochs)[len(epochs) // 2] / tokens, 3),
        "table_mb": round(results.get("table_bytes", 0) / 2**20, 1),
        "streamed": results.get("streamed", False),
        "dev_f1": round(results["dev"]["f1"], 2),
        "load": load,
    }


def tokens_of(log: Path) -> int:
    """The training tokens a run's log names (``N training documents (T tokens``)."""
    m = re.search(r"training documents \((\d+) tokens", log.read_text())
    return int(m.group(1)) if m else 0


def measure(silver: Path, sizes: list[str], kinds: list[str], iterations: int) -> dict:
    runs = Path(tempfile.mkdtemp(prefix="scale-runs-"))
    previous = HERE / "results.json"
    out: dict = json.loads(previous.read_text()) if previous.exists() else {"sizes": {}}
    out["machine"] = machine()
    for size in sizes:
        corpus = silver / f"silver{size}.txt"
        row: dict = out["sizes"].setdefault(size, {})
        for kind in kinds:
            if kind not in ("ap", "crf"):
                raise ValueError(f"--kinds: ap or crf, got {kind!r}")
            row[kind] = hydra_run(kind, corpus, runs / f"{kind}{size}", iterations)
            print(f"{size} {kind}: {row.get(kind)}", flush=True)
            (HERE / "results.json").write_text(json.dumps(out, indent=1) + "\n")
    return out


# the paired figure: each 30x epoch against the 1x one measured beside it, and 30x in memory
PAIRED = {"1x": (), "30x": (), "30x in memory": ("data.stream=false",)}


def paired(silver: Path, rounds: int) -> dict:
    """The averaged perceptron at 1x, 30x (from disk, as ``data.stream=auto`` chooses) and
    30x in memory (``data.stream=false``), one after the other, ``rounds`` times: this
    machine's speed drifts by tens of percent over minutes, so a ratio of figures taken at
    different times says little.  Each round's ratios, and their medians.  Features are
    extracted once per column (a kept cache): only epochs are compared."""
    runs = Path(tempfile.mkdtemp(prefix="scale-paired-"))
    caches = {name: runs / f"cache-{k}" for k, name in enumerate(PAIRED)}
    table = []
    for r in range(rounds):
        row = {}
        for name, extra in PAIRED.items():
            corpus = silver / f"silver{name.split()[0]}.txt"
            out = runs / f"{name.replace(' ', '_')}-{r}"
            res = hydra_run("ap", corpus, out, 0, cache=caches[name], extra=extra)
            keep = ("us_per_token_epoch", "epoch_s", "peak_mb", "streamed", "load", "command")
            row[name] = {k: res[k] for k in keep}
            print(f"round {r + 1}/{rounds} {name}: {row[name]}", flush=True)
        us = {name: row[name]["us_per_token_epoch"] for name in PAIRED}
        row["ratios"] = {
            "30x / 1x": round(us["30x"] / us["1x"], 3),
            "30x in memory / 1x": round(us["30x in memory"] / us["1x"], 3),
            "30x / 30x in memory": round(us["30x"] / us["30x in memory"], 3),
        }
        table.append(row)
    shutil.rmtree(runs, ignore_errors=True)
    ratios = [row["ratios"] for row in table]
    medians = {k: sorted(r[k] for r in ratios)[len(ratios) // 2] for k in ratios[0]}
    return {"rounds": table, "medians": medians, "machine": machine()}


def render_paired(result: dict) -> list[str]:
    lines = [
        "",
        "## 30x against 1x, measured in alternation (`--paired N`)",
        "",
        "The averaged perceptron's us / token / epoch (median of its 3 epochs) at 1x (in "
        "memory), 30x (from disk) and 30x with `data.stream=false`, one run after the other, "
        "each round; features extracted once per column. Machine: "
        f"{result['machine']}.",
        "",
        "| round | 1x | 30x | 30x in memory | 30x / 1x | 30x in memory / 1x |"
        " 30x / 30x in memory | 30x peak MB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k, row in enumerate(result["rounds"]):
        us = [row[name]["us_per_token_epoch"] for name in PAIRED]
        ratios = list(row["ratios"].values())
        lines.append(
            f"| {k + 1} | {' | '.join(str(u) for u in us)} | "
            f"{' | '.join(f'{x:.2f}' for x in ratios)} | {row['30x']['peak_mb']:,} |"
        )
    med = list(result["medians"].values())
    lines.append(f"| median | | | | {' | '.join(f'**{x:.2f}**' for x in med)} | |")
    return lines


def machine() -> dict:
    return {
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "load": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
    }


def render(results: dict) -> str:
    lines = [
        "# Training as the data grows",
        "",
        "Written by `experiments/scale/scale_bench.py` from `results.json`; silver corpora "
        "from `make_silver.py` (the data folder's unlabeled text tagged by `make run`'s model; "
        "no gold test data). Each figure a process of its own, peak memory by `/usr/bin/time`.",
        "",
        f"Machine: {results['machine']}.",
        "",
        "| size | learner | training tokens | streamed | features | tables MB | extraction s |"
        " s / epoch | us / token / epoch | peak MB | peak beyond the tables MB | wall s | dev F1 |"
        " load at start |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size, row in results["sizes"].items():
        for kind, r in row.items():
            if "epoch_s" not in r:
                continue
            lines.append(
                f"| {size} | {kind} | {r['train_tokens']:,} | {'yes' if r['streamed'] else 'no'}"
                f" | {r['features']:,} | {r['table_mb']} | {r['feature_s']} | "
                f"{', '.join(str(s) for s in r['epoch_s'])} | {r['us_per_token_epoch']} | "
                f"{r['peak_mb']:,} | {r['peak_mb'] - r['table_mb']:,.0f} | {r['wall_s']} | "
                f"{r['dev_f1']} | {r.get('load', '–')} |"
            )
    commands = {k: r["command"] for row in results["sizes"].values() for k, r in row.items()}
    lines += ["", "Commands (`data.train=` the size's silver corpus):", ""]
    lines += [f"- {k}: `{c}`" for k, c in commands.items() if c]
    lines += [
        "",
        "Sizes measured in separate invocations keep each other's rows (`--sizes`); the "
        "machine line is the last invocation's.  The scikit-learn face against python-crfsuite: "
        "`face_memory/README.md`.",
    ]
    if "paired" in results:
        lines += render_paired(results["paired"])
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    kinds = sorted({k for row in results["sizes"].values() for k in row})
    for kind in kinds:
        points = [
            (r["train_tokens"], r) for row in results["sizes"].values() if (r := row.get(kind))
        ]
        points = [(t, r) for t, r in points if "epoch_s" in r]
        if not points:
            continue
        tokens = [t / 1e6 for t, _ in points]
        left.plot(tokens, [r["us_per_token_epoch"] for _, r in points], "o-", label=kind)
        right.plot(tokens, [r["peak_mb"] for _, r in points], "o-", label=f"{kind} peak")
        right.plot(tokens, [r["table_mb"] for _, r in points], "x--", label=f"{kind} tables")
    left.set(xlabel="training tokens (M)", ylabel="us per token per epoch", ylim=(0, None))
    right.set(xlabel="training tokens (M)", ylabel="MB")
    left.legend()
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--silver", type=Path, default=ROOT / ".cache" / "silver")
    parser.add_argument("--sizes", default=",".join(SIZES))
    parser.add_argument("--kinds", default="ap,crf", help="ap, crf or both")
    parser.add_argument("--crf-iterations", type=int, default=10)
    parser.add_argument("--render-only", action="store_true")
    parser.add_argument(
        "--paired",
        type=int,
        default=0,
        metavar="N",
        help="only the averaged perceptron at 1x, 30x and 30x in memory, in turn, N rounds "
        "(the 30x / 1x figure on a machine whose speed drifts); kept beside the size table",
    )
    args = parser.parse_args()
    if args.render_only:
        results = json.loads((HERE / "results.json").read_text())
    elif args.paired:
        results = json.loads((HERE / "results.json").read_text())
        results["paired"] = paired(args.silver, args.paired)
        (HERE / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    else:
        results = measure(
            args.silver, args.sizes.split(","), args.kinds.split(","), args.crf_iterations
        )
    (HERE / "README.md").write_text(render(results))
    plot(results, HERE / "scale.png")
    print(render(results))


if __name__ == "__main__":
    main()
