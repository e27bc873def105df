"""The scikit-learn face's averaged perceptron against python-crfsuite's: peak memory and fit
time at 1x, 4x, 16x and 30x CoNLL-2003's training size.

Data: sklearn-crfsuite's tutorial features (``word2features`` of experiments/bench/
sklearn_bench.py) of CoNLL-2003's 14,041 training sentences (203,621 tokens, IOB1 labels as in
the file), the list repeated k times for the size k x (the same item dicts listed again: the
user's X costs what 1x costs, while both trainers read and train on k x the tokens; the
attribute dictionary is 1x's at every size).

One fresh process per measurement (``measure``): it imports the library, loads it fully with a
fit on two tokens (structperc's compiled kernels: numba and LLVM; reported apart as
``library_mb``), builds X and y, collects garbage, resets the peak RSS
(``/proc/self/clear_refs``) and takes the RSS as the baseline; then fits

    structperc   CRF(algorithm="ap", max_iterations=10, epsilon=0).fit(X, y)
    crfsuite     pycrfsuite.Trainer: append every (xseq, yseq), select("ap"),
                 max_iterations=10, epsilon=0, train(a model file)

and reports the peak RSS beyond the baseline (``VmHWM`` - baseline: the fit's own memory,
beyond the user's X and the loaded library) and the fit's seconds (wall).  Medians over the
repeats.

    python experiments/scale/face_memory.py [--sizes 1 4 16 30] [--repeats 3]

writes experiments/scale/face_memory/{results.json,README.md}.  The functions (``measure``,
``run``, ``render``) are importable by the scale benchmark.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = HERE / "face_memory"
sys.path.insert(0, str(ROOT / "experiments" / "bench"))

ITERATIONS = 10
SYSTEMS = ("structperc", "crfsuite")


# -- one measurement, in its own process ----------------------------------------------------------
def status_mb(key: str) -> float:
    """A ``/proc/self/status`` field (VmRSS, VmHWM, ...) in MB (2^20 bytes)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(key)


def reset_peak() -> None:
    """Set VmHWM to the current RSS (Linux >= 4.0)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def tutorial_corpus(data_dir: Path, repeat: int) -> tuple[list, list]:
    """The tutorial's (X, y) of CoNLL-2003's training sentences, listed ``repeat`` times."""
    from sklearn_bench import iob_sents, sent2features, sent2labels

    sents = iob_sents(data_dir / "conll2003" / "train.txt", None)
    X, y = [sent2features(s) for s in sents], [sent2labels(s) for s in sents]
    return X * repeat, y * repeat


def fit_structperc(X, y, iterations: int) -> dict:
    from structperc.sklearn import CRF

    crf = CRF(algorithm="ap", max_iterations=iterations, epsilon=0.0)
    crf.fit(X, y)
    return {
        "iterations": len(crf.training_log_.iterations),
        "train_s": crf.training_log_.seconds,  # the epochs alone (the rest: reading X)
        "attributes": len(crf.attributes_),
    }


def fit_crfsuite(X, y, iterations: int) -> dict:
    import pycrfsuite

    trainer = pycrfsuite.Trainer(verbose=False)
    for xseq, yseq in zip(X, y, strict=True):
        trainer.append(xseq, yseq)
    trainer.select("ap")
    trainer.set_params({"max_iterations": iterations, "epsilon": 0.0})
    with tempfile.TemporaryDirectory() as folder:
        trainer.train(str(Path(folder) / "model.crfsuite"))
    return {"iterations": len(trainer.logparser.iterations)}


FITS = {"structperc": fit_structperc, "crfsuite": fit_crfsuite}


def worker(job: dict) -> dict:
    """One measurement (module docstring): what this process measured."""
    start_mb = status_mb("VmRSS")
    if job["system"] == "structperc":
        import torch

        torch.set_num_threads(1)
        import structperc.sklearn  # noqa: F401
    else:
        import pycrfsuite  # noqa: F401
    fit = FITS[job["system"]]
    if job.get("warm", True):
        fit([[{"w": "a"}, {"w": "b"}]], [["A", "B"]], 1)  # the library loaded whole
    library_mb = status_mb("VmRSS") - start_mb
    X, y = tutorial_corpus(Path(job["data_dir"]), job["repeat"])
    gc.collect()
    reset_peak()
    base_mb = status_mb("VmRSS")
    t0 = time.perf_counter()
    facts = fit(X, y, job["iterations"])
    fit_s = time.perf_counter() - t0
    peak_mb = status_mb("VmHWM") - base_mb
    tokens = sum(len(s) for s in y)
    return {**facts, "fit_s": fit_s, "peak_mb": peak_mb, "library_mb": library_mb,
            "x_mb": base_mb - start_mb - library_mb, "tokens": tokens}  # fmt: skip


def measure(
    system: str, repeat: int, data_dir: Path, iterations: int = ITERATIONS, warm: bool = True
) -> dict:
    """``worker`` in a fresh process (its peak memory its own); ``warm``: the library loaded
    whole before the baseline (else the fit's peak includes loading what it loads first)."""
    job = {
        "system": system,
        "repeat": repeat,
        "data_dir": str(data_dir),
        "iterations": iterations,
        "warm": warm,
    }
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(job)],
        capture_output=True,
        text=True,
        env=env,
    )
    if out.returncode:
        raise RuntimeError(f"{system} at {repeat}x: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def repeats_at(repeat: int, repeats: int) -> int:
    """Measurements at size ``repeat`` x: ``repeats`` up to 4x, one beyond (a 30x fit of
    python-crfsuite takes minutes)."""
    return repeats if repeat <= 4 else 1


def run(sizes: list[int], repeats: int, data_dir: Path, log=print) -> dict:
    """Every system at every size (systems alternating within a size); medians."""
    rows = []
    for repeat in sizes:
        runs = {system: [] for system in SYSTEMS}
        for _ in range(repeats_at(repeat, repeats)):
            for system in SYSTEMS:
                runs[system].append(measure(system, repeat, data_dir))
                log(f"{repeat}x {system}: {runs[system][-1]}")
        row = {"repeat": repeat, "runs": runs}
        for system, found in runs.items():
            row[system] = {k: statistics.median(r[k] for r in found) for k in found[0]}
        row["memory_ratio"] = row["structperc"]["peak_mb"] / row["crfsuite"]["peak_mb"]
        row["speedup"] = row["crfsuite"]["fit_s"] / row["structperc"]["fit_s"]
        rows.append(row)
    first = {system: measure(system, sizes[0], data_dir, warm=False) for system in SYSTEMS}
    log(f"{sizes[0]}x, a first fit: {first}")
    return {"rows": rows, "first_fit": {"repeat": sizes[0], **first}}


# -- the table -----------------------------------------------------------------------------------
def machine() -> dict:
    from importlib.metadata import version

    import numba
    import torch

    cpu = ""
    if Path("/proc/cpuinfo").exists():
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numba": numba.__version__,
        "python-crfsuite": version("python-crfsuite"),
    }


def render(results: dict) -> str:
    rows = results["rows"]
    lines = [
        "# The face's averaged perceptron against python-crfsuite: memory and time by size",
        "",
        "Written by `face_memory.py` from `results.json`:",
        "",
        "```",
        results["command"].strip(),
        "```",
        "",
        "sklearn-crfsuite's tutorial features of CoNLL-2003's training sentences, the list "
        "repeated k times for k x (the same item dicts again: both trainers read and train on "
        "k x the tokens, the attribute dictionary stays 1x's; X itself costs 1x's memory). "
        f"`ap`, {ITERATIONS} epochs, epsilon 0, one thread, one fresh process per measurement. "
        "**Peak** is the fit's peak RSS beyond the RSS with the library loaded and X and y "
        "built (`VmHWM` after resetting it, minus that baseline); **library** is the RSS "
        "that importing the library and a first fit on two tokens added (torch, scikit-learn, "
        "numba and the compiled kernels for structperc), paid once per process. "
        f"Medians of {results['repeats']} measurements up to 4x, one beyond. "
        f"Machine: {results['machine']['cpu']}, {results['machine']['cores']} cores, "
        f"load average {results['load_before']:.2f} before and {results['load_after']:.2f} "
        "after (1 min; the machine is shared).",
        "",
        "| size | tokens | structperc peak MB | crfsuite peak MB | ratio | structperc fit s "
        "(epochs s) | crfsuite fit s | speed-up |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        s, c = row["structperc"], row["crfsuite"]
        lines.append(
            f"| {row['repeat']}x | {s['tokens']:,} | {s['peak_mb']:.0f} | {c['peak_mb']:.0f} | "
            f"{row['memory_ratio']:.2f} | {s['fit_s']:.1f} ({s['train_s']:.1f}) | "
            f"{c['fit_s']:.1f} | {row['speedup']:.2f}x |"
        )
    s0, c0 = rows[0]["structperc"], rows[0]["crfsuite"]
    first = results["first_fit"]
    memory_ok = all(r["memory_ratio"] <= 1 for r in rows)
    speed_ok = all(r["speedup"] >= 1.5 for r in rows)
    lines += [
        "",
        f"Library loaded: structperc {s0['library_mb']:.0f} MB, python-crfsuite "
        f"{c0['library_mb']:.0f} MB.  Attributes: {s0['attributes']:,}; epochs run: "
        f"structperc {s0['iterations']}, crfsuite {c0['iterations']}.",
        "",
        f"A process's first fit also loads what the library loads on first use (structperc: "
        f"numba and its compiled kernels): measured so, without the fit on two tokens, the "
        f"peak at {first['repeat']}x is structperc {first['structperc']['peak_mb']:.0f} MB "
        f"({first['structperc']['fit_s']:.1f} s), python-crfsuite "
        f"{first['crfsuite']['peak_mb']:.0f} MB ({first['crfsuite']['fit_s']:.1f} s).",
        "",
        "Peak memory at or below python-crfsuite's at every size: "
        f"**{'yes' if memory_ok else 'no'}**; fit at least 1.5x faster at every size: "
        f"**{'yes' if speed_ok else 'no'}**.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16, 30])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    from structperc.data.loading import require_data_dir

    data_dir = require_data_dir(None, "conll2003")
    load_before = os.getloadavg()[0]
    results = run(args.sizes, args.repeats, data_dir)
    results.update(
        command="python experiments/scale/face_memory.py " + " ".join(sys.argv[1:]),
        repeats=args.repeats,
        machine=machine(),
        load_before=load_before,
        load_after=os.getloadavg()[0],
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "README.md").write_text(render(results))
    print(render(results))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        print(json.dumps(worker(json.loads(sys.argv[2]))))
    else:
        main()
