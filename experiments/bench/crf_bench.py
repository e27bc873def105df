"""Seconds per L-BFGS iteration: structperc's CRF (torch-struct) against CRFsuite, same data.

    .venv/bin/python experiments/bench/crf_bench.py                   # k = 10 iterations each
    .venv/bin/python experiments/bench/crf_bench.py --iterations 20 --repeats 2
    .venv/bin/python experiments/bench/crf_bench.py --crfsuite-full   # + CRFsuite to convergence
    .venv/bin/python experiments/bench/crf_bench.py --quick           # a small slice (smoke)

Both systems see the same surface features (the attribute strings of ``bench.py``, built from
``LocalFeatures``; ``bench.py`` is imported, not changed) and the same objective,
-log-likelihood + ||w||^2 / (2 sigma^2) (CRFsuite: ``c2 = 1 / (2 sigma^2)``, ``c1 = 0``), both by
L-BFGS.  The models differ: CRFsuite's crf1d has node features (attribute x label) and label
transitions only; structperc's CRF also has an edge weight per (feature, previous label, label)
(Kazama & Torisawa 2007, Table 1), i.e. L + L^2 = 90 weights per feature instead of L = 9, so it
does about 10x the lookup work per token, and its forward-backward is torch-struct's O(N L^3)
parallel scan instead of CRFsuite's O(N L^2) sequential recursion.

Each system runs k iterations in a fresh subprocess (``--threads`` torch threads; CRFsuite is
single-threaded); rounds alternate which goes first; the JSON has every iteration's wall time and
line-search evaluations, and the medians.  Full-training figures of structperc come from the
experiment runs (``experiments/kazama2007/runs/crf_sigma2_*/results.json``); ``--crfsuite-full``
trains CRFsuite to its own convergence (epsilon 1e-5) for its final F1 and total time.

Writes ``crf/results.json`` and ``crf/README.md`` next to this file (``crf_quick/`` with --quick).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import bench  # noqa: E402  (the shared helpers: corpus, features, CRFsuite attribute strings)

SYSTEMS = ("structperc", "crfsuite")
RUNS = REPO / "experiments" / "kazama2007" / "runs"


def median(xs: list[float]) -> float | None:
    return float(statistics.median(xs)) if xs else None


def labels_and_features(cfg: dict):
    """The corpus, fitted ``LocalFeatures`` and the CSR matrices of every split."""
    corpus = bench.load_corpus(cfg)
    feats = bench.make_features(cfg)
    feats.fit(corpus["train"])
    mats = {s: feats.transform(docs, training=(s == "train")) for s, docs in corpus.items()}
    return corpus, feats, mats


def worker_structperc(cfg: dict) -> dict:
    from structperc.crf.learner import CRF
    from structperc.experiment import encode_labels, label_set
    from structperc.model.updates import Updater
    from structperc.model.weights import ChainWeights
    from structperc.train import predict

    bench.setup_threads(cfg["threads"])
    t0 = time.perf_counter()
    corpus, feats, mats = labels_and_features(cfg)
    out: dict = {"system": "structperc", "features_s": time.perf_counter() - t0}
    labels = label_set(corpus["train"])
    y = encode_labels(corpus["train"], labels)
    weights = ChainWeights(feats.num_features, labels)
    learner = CRF(sigma2=cfg["sigma2"], tol=0.0, **cfg.get("crf", {}))
    t0 = time.perf_counter()
    result = learner.fit_batch(Updater(weights), mats["train"], y, max_epochs=cfg["iterations"])
    out["train_total_s"] = time.perf_counter() - t0
    its = result.history
    out["iteration_s_all"] = [h.seconds for h in its]
    out["iteration_cpu_s_all"] = [h.extra["cpu_seconds"] for h in its]
    out["evaluations_all"] = [h.updates for h in its]
    out["objective_all"] = [h.extra["objective"] for h in its]
    out["setup_s"] = out["train_total_s"] - sum(out["iteration_s_all"])
    out["parameters"] = weights.node.weight.numel() + weights.edge.weight.numel()
    out["surface_features"] = feats.num_features
    pred = predict(weights, mats["test"])
    out["test_f1_after_k"] = bench.test_f1(corpus["test"], [[labels[i] for i in p] for p in pred])
    out["peak_rss_mb"] = bench.max_rss_mb()
    return out


def worker_crfsuite(cfg: dict) -> dict:
    import pycrfsuite

    bench.setup_threads(cfg["threads"])
    t0 = time.perf_counter()
    corpus = bench.load_corpus(cfg)
    feats = bench.make_features(cfg)
    templates, train = feats.templates, corpus["train"]
    cols = feats._columns(train, training=True)
    bounds = bench.bounds_of(train)
    keep = []
    from collections import Counter

    for t in templates:
        if not t:
            keep.append(None)
            continue
        counts: Counter = Counter()
        for s, e in bounds:
            counts.update(bench.doc_values(cols, s, e, t))
        keep.append({v for v, c in counts.items() if c >= feats.min_count and v is not None})
    strings = bench.attribute_strings(templates, keep)
    trainer = stamped_trainer(algorithm="lbfgs", verbose=False)
    for doc, xseq in zip(
        train, bench.attribute_lists(cols, bounds, templates, strings), strict=True
    ):
        trainer.append(xseq, doc.tags)
    out: dict = {"system": "crfsuite", "features_s": time.perf_counter() - t0}
    params = {"c1": 0.0, "c2": 1.0 / (2.0 * cfg["sigma2"]), "feature.minfreq": 0}
    if cfg.get("full"):
        params.update({"max_iterations": 10_000, "epsilon": 1e-5})
    else:
        params.update({"max_iterations": cfg["iterations"], "epsilon": 0.0, "delta": 0.0})
    trainer.set_params(params)
    with tempfile.TemporaryDirectory(prefix="structperc-crfbench-") as tmp:
        model = Path(tmp) / "model.crfsuite"
        t0 = time.perf_counter()
        trainer.train(str(model))
        out["train_total_s"] = time.perf_counter() - t0
        out["iteration_s_all"] = iteration_times(trainer.stamped, 0)
        out["iteration_cpu_s_all"] = iteration_times(trainer.stamped, 1)
        lp = trainer.logparser
        out["evaluations_all"] = [it.get("linesearch_trials") for it in lp.iterations]
        out["objective_all"] = [it.get("loss") for it in lp.iterations]
        out["setup_s"] = out["train_total_s"] - sum(out["iteration_s_all"])
        out["parameters"] = lp.featgen_num_features
        out["surface_features"] = sum(len(k) for k in keep if k is not None) + 1
        tagger = pycrfsuite.Tagger()
        tagger.open(str(model))
        for split in ("dev", "test"):
            docs = corpus[split]
            c = feats._columns(docs, training=False)
            xs = bench.attribute_lists(c, bench.bounds_of(docs), templates, strings)
            pred = [tagger.tag(pycrfsuite.ItemSequence(x)) for x in xs]
            out[f"{split}_f1"] = bench.test_f1(docs, pred)
        tagger.close()
    out["test_f1_after_k"] = out["test_f1"]
    out["peak_rss_mb"] = bench.max_rss_mb()
    return out


def stamped_trainer(**kwargs):
    """A ``pycrfsuite.Trainer`` that notes (wall, CPU) time of every line CRFsuite logs."""
    import pycrfsuite

    class Stamped(pycrfsuite.Trainer):
        def message(self, message):
            self.stamped.append((time.perf_counter(), time.process_time(), message))
            super().message(message)

    trainer = Stamped(**kwargs)
    trainer.stamped = []
    return trainer


def iteration_times(stamped: list[tuple[float, float, str]], clock: int) -> list[float]:
    """Seconds of each iteration (clock 0: wall, 1: CPU), from the end of the previous one's log
    (the first: from the last line before the loop, "epsilon: ...") to its "Seconds required for
    this iteration" line."""
    lines = [(stamp[clock], stamp[2]) for stamp in stamped]
    start = next(t for t, m in lines if m.startswith("epsilon:"))
    ends = [t for t, m in lines if m.startswith("Seconds required for this iteration")]
    return [b - a for a, b in zip([start, *ends[:-1]], ends, strict=True)]


WORKERS = {"structperc": worker_structperc, "crfsuite": worker_crfsuite}


def run_worker(system: str, cfg: dict) -> dict:
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(cfg["threads"])
    with tempfile.TemporaryDirectory(prefix="structperc-crfbench-") as tmp:
        result = Path(tmp) / "result.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", system]
        cmd += ["--worker-config", json.dumps(cfg), "--worker-out", str(result)]
        proc = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr[-5000:])
            sys.exit(f"the {system} worker failed (exit status {proc.returncode})")
        return json.loads(result.read_text())


def experiment_runs() -> list[dict]:
    """structperc's full CRF trainings: the σ² runs of the Kazama reproduction."""
    rows = []
    for f in sorted(RUNS.glob("crf_sigma2_*/results.json")):
        r = json.loads(f.read_text())
        secs = [h["seconds"] for h in r.get("history", [])]
        rows.append(
            {
                "run": f.parent.name,
                "sigma2": r.get("hparams", {}).get("learner.sigma2"),
                "optimizer": r.get("hparams", {}).get("learner.optimizer"),
                "iterations": r.get("epochs"),
                "stopped_by": r.get("stopped_by"),
                "train_seconds": r.get("train_seconds"),
                "median_iteration_s": median(secs),
                "evaluations": sum(h.get("updates", 0) for h in r.get("history", [])),
                "dev_f1": r.get("dev", {}).get("f1"),
                "test_f1": r.get("test", {}).get("f1"),
            }
        )
    return rows


def render(results: dict) -> str:
    s = results["summary"]
    cfg = results["config"]

    def cell(system, key, fmt="{:.2f}"):
        v = s.get(system, {}).get(key)
        return "–" if v is None else fmt.format(v)

    lines = [
        "# structperc CRF vs CRFsuite: L-BFGS on CoNLL-2003",
        "",
        "Generated by `experiments/bench/crf_bench.py` from `results.json`; do not edit by hand.",
        "",
        f"k = {cfg['iterations']} L-BFGS iterations per system and round, "
        f"{cfg['rounds_done']} round(s), sigma^2 = {cfg['sigma2']}, structperc DP "
        f"{cfg['crf']['semiring']} semiring in {cfg['crf']['dtype']}, torch threads "
        f"{cfg['threads']} (CRFsuite is single-threaded). Medians over all iterations of all "
        "rounds (the first iteration excluded: both systems spend extra evaluations there).",
        "",
        "| measure | structperc CRF | CRFsuite L-BFGS | structperc / CRFsuite |",
        "|---|---:|---:|---:|",
    ]
    sp, cs = s.get("structperc", {}), s.get("crfsuite", {})
    for key, label in (
        ("iteration_s", "seconds per L-BFGS iteration (wall)"),
        ("iteration_cpu_s", "CPU seconds per L-BFGS iteration"),
        ("evaluation_s", "seconds per objective+gradient evaluation"),
        ("evaluations_per_iteration", "evaluations per iteration (mean)"),
    ):
        a, b = sp.get(key), cs.get(key)
        r = f"{a / b:.1f}x" if a and b else "–"
        lines.append(f"| {label} | {cell('structperc', key)} | {cell('crfsuite', key)} | {r} |")
    lines.append(
        f"| model parameters | {cell('structperc', 'parameters', '{:,.0f}')} | "
        f"{cell('crfsuite', 'parameters', '{:,.0f}')} | |"
    )
    lines.append(
        f"| surface features | {cell('structperc', 'surface_features', '{:,.0f}')} | "
        f"{cell('crfsuite', 'surface_features', '{:,.0f}')} | |"
    )
    full = results.get("crfsuite_full")
    lines += ["", "## Full training", ""]
    lines.append("| system | iterations | stopped by | train s | s/iteration | dev F1 | test F1 |")
    lines.append("|---|---:|---|---:|---:|---:|---:|")
    for r in results["structperc_runs"]:
        lines.append(
            f"| structperc CRF {r['run']} ({r['optimizer']}) | {r['iterations']} | "
            f"{r['stopped_by']} | {r['train_seconds']:.0f} | {r['median_iteration_s']:.2f} | "
            f"{r['dev_f1']:.2f} | {r['test_f1']:.2f} |"
        )
    if full:
        its = full["iteration_s_all"]
        lines.append(
            f"| CRFsuite L-BFGS (node features) | {len(its)} | epsilon 1e-5 | "
            f"{full['train_total_s']:.0f} | {median(its):.2f} | {full['dev_f1']:.2f} | "
            f"{full['test_f1']:.2f} |"
        )
    m = results["machine"]
    lines += [
        "",
        "## Command",
        "",
        f"```\n{results['command']}\n```",
        "",
        f"Machine: {m['cpu_count']} CPUs ({m['cpu_model']}), torch {m['torch']}, python-crfsuite "
        f"{m['python_crfsuite']}; {m['date']}; load average {m['loadavg_start'][0]:.2f} at the "
        f"start, {m['loadavg_end'][0]:.2f} at the end (other jobs shared the machine).",
        "",
        "The models differ (module docstring): structperc's CRF has edge features, "
        "90 weights per surface feature against CRFsuite's 9, and torch-struct's O(N L^3) "
        "scan; per iteration it does far more work. Per-iteration times include the "
        "line search's extra evaluations.",
    ]
    return "\n".join(lines) + "\n"


def summarize(rounds: list[dict]) -> dict:
    out = {}
    for system in SYSTEMS:
        its, cpus, evals = [], [], []
        for r in rounds:
            w = r[system]
            its += w["iteration_s_all"][1:]
            cpus += w["iteration_cpu_s_all"][1:]
            evals += [e or 1 for e in w["evaluations_all"][1:]]
        last = rounds[-1][system]
        out[system] = {
            "iteration_s": median(its),
            "iteration_cpu_s": median(cpus),
            "evaluations_per_iteration": sum(evals) / len(evals) if evals else None,
            "evaluation_s": sum(its) / sum(evals) if evals else None,
            "parameters": last["parameters"],
            "surface_features": last["surface_features"],
            "test_f1_after_k": last["test_f1_after_k"],
        }
    return out


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=10, help="L-BFGS iterations k per system")
    ap.add_argument("--repeats", type=int, default=1, help="rounds of both workers")
    ap.add_argument("--sigma2", type=float, default=100.0, help="Gaussian prior variance")
    ap.add_argument("--threads", type=int, default=1, help="torch threads in the workers")
    ap.add_argument("--semiring", default="scaled", help="structperc DP semiring: scaled | log")
    ap.add_argument("--dtype", default="float64", help="structperc DP dtype: float64 | float32")
    ap.add_argument("--crfsuite-full", action="store_true", help="train CRFsuite to convergence")
    ap.add_argument("--quick", action="store_true", help="a small slice of the data (smoke)")
    ap.add_argument("--out", type=Path, default=None, help="output folder")
    ap.add_argument("--render-only", action="store_true", help="README.md from results.json")
    ap.add_argument("--worker", choices=SYSTEMS, help=argparse.SUPPRESS)
    ap.add_argument("--worker-config", help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        out = WORKERS[args.worker](json.loads(args.worker_config))
        args.worker_out.write_text(json.dumps(out))
        return
    out_dir = args.out or (HERE / ("crf_quick" if args.quick else "crf"))
    if args.render_only:
        results = json.loads((out_dir / "results.json").read_text())
        (out_dir / "README.md").write_text(render(results))
        return
    cfg = {
        "data_dir": str(bench.find_data_dir()),
        "max_docs": bench.QUICK_DOCS if args.quick else None,
        "iterations": args.iterations,
        "sigma2": args.sigma2,
        "threads": args.threads,
        "crf": {"semiring": args.semiring, "dtype": args.dtype},
    }
    info = bench.machine_info(args.threads)
    t_start = time.perf_counter()
    rounds = []
    for r in range(args.repeats):
        rounds.append({})
        for system in SYSTEMS if r % 2 == 0 else SYSTEMS[::-1]:
            bench.log(f"round {r + 1}/{args.repeats}: {system}")
            rounds[-1][system] = run_worker(system, cfg)
            its = rounds[-1][system]["iteration_s_all"]
            bench.log(f"{system}: {', '.join(f'{s:.2f}' for s in its)} s per iteration")
    full = None
    if args.crfsuite_full:
        bench.log("CRFsuite L-BFGS to convergence")
        full = run_worker("crfsuite", {**cfg, "full": True})
    info["loadavg_end"] = list(os.getloadavg())
    results = {
        "schema": 1,
        "command": " ".join([".venv/bin/python", "experiments/bench/crf_bench.py", *argv]),
        "config": {**cfg, "repeats": args.repeats, "rounds_done": len(rounds)},
        "machine": info,
        "wall_seconds": time.perf_counter() - t_start,
        "summary": summarize(rounds),
        "structperc_runs": [] if args.quick else experiment_runs(),
        "crfsuite_full": full,
        "rounds": rounds,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    text = render(results)
    (out_dir / "README.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
