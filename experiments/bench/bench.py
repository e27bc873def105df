"""Speed of structperc against CRFsuite (python-crfsuite) on CoNLL-2003, same machine, same script.

    make bench                                     # = .venv/bin/python experiments/bench/bench.py
    .venv/bin/python experiments/bench/bench.py --quick          # a small slice, smoke check
    .venv/bin/python experiments/bench/bench.py --repeats 5      # more rounds
    .venv/bin/python experiments/bench/bench.py --render-only    # README.md from results.json

Both systems see the same surface features: the attribute strings fed to CRFsuite are built from
``LocalFeatures._columns`` and ``LocalFeatures.templates`` (e.g. ``w[-1]=Germany``,
``pos[-1]|pos[0]=NN|VB``, ``bias``), dropping those seen fewer than ``min_count`` times in
training as structperc does, so both have the same number of surface features.  CRFsuite scores
them only as node features (attribute x label) plus label transitions; structperc also has an edge
weight per (feature, previous label, label).

Every measurement runs in a fresh subprocess per system ("worker"), and each round runs both
workers one after the other (alternating which goes first); the table reports the median over the
rounds (decoding: the median of ``--decode-repeats`` passes within a round, then over rounds),
and structperc relative to CRFsuite as the median of the per-round ratios.  Every time is taken
both in wall clock and in CPU time (``process_time``: no waiting for a core, but still slower
when other processes share the CPU's caches and cores).
``--budget`` (300 s) starts no further round (after the first) that would end past it, at the
rounds' mean pace.
Peak memory is the worker's own ``ru_maxrss`` (the whole process: Python, torch, data, features,
model), also shown minus the worker's ``ru_maxrss`` right after imports and data loading.

Writes ``results.json`` (raw numbers of every round, medians, machine info) and ``README.md``
(rendered from the JSON by ``render``) next to this file, or under ``quick/`` with ``--quick``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SYSTEMS = ("structperc", "crfsuite")
QUICK_DOCS = {"train": 60, "dev": 15, "test": 20}


# ---------------------------------------------------------------------------------------------
# helpers shared by the workers
# ---------------------------------------------------------------------------------------------
def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def max_rss_mb() -> float:
    """This process's peak resident set size so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def median(xs: list[float]) -> float:
    return float(statistics.median(xs))


class Stopwatch:
    """Wall-clock and CPU time (``process_time``: all threads of this process) since creation.

    CPU time leaves out waiting for a core when other processes compete, though not their effect
    on shared caches and SMT siblings; with one torch thread (and single-threaded CRFsuite) the
    two agree on an idle machine.
    """

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def lap(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def setup_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set in this process
        pass


def load_corpus(cfg: dict) -> dict:
    from structperc.data.conll import read_conll

    folder = Path(cfg["data_dir"]) / "conll2003"
    corpus = {}
    for split in ("train", "dev", "test"):
        docs = read_conll(folder / f"{split}.txt")
        limit = cfg["max_docs"].get(split) if cfg["max_docs"] else None
        corpus[split] = docs[:limit] if limit else docs
    return corpus


def corpus_info(corpus: dict) -> dict:
    return {
        s: {"documents": len(docs), "tokens": sum(len(d) for d in docs)}
        for s, docs in corpus.items()
    }


def make_features(cfg: dict):
    from structperc.features.pipeline import LocalFeatures

    return LocalFeatures(gazetteer_path=str(Path(cfg["data_dir"]) / "conll2003" / "eng.list"))


def test_f1(gold_docs, pred_tags) -> float:
    from structperc.eval import evaluate

    return evaluate([d.tags for d in gold_docs], pred_tags).f1


# ---------------------------------------------------------------------------------------------
# structperc worker
# ---------------------------------------------------------------------------------------------
def tensor_mb(*tensors) -> float:
    return sum(t.numel() * t.element_size() for t in tensors) / 2**20


def worker_structperc(cfg: dict) -> dict:
    from structperc.experiment import encode_labels, label_set
    from structperc.features.extract import FeatureMatrix
    from structperc.learn.perceptron import Perceptron
    from structperc.model.updates import Updater
    from structperc.model.weights import ChainWeights
    from structperc.train import fit, predict

    setup_threads(cfg["threads"])
    corpus = load_corpus(cfg)
    rss_loaded = max_rss_mb()
    out: dict = {"system": "structperc", "rss_after_load_mb": rss_loaded}

    # -- features: fit on train, transform train (jackknifed gazetteer), dev, test -------------
    sw = Stopwatch()
    feats = make_features(cfg)
    feats.fit(corpus["train"])
    t_fit = sw.lap()[0]
    mats, t_split = {}, {}
    for split, docs in corpus.items():
        t = time.perf_counter()
        mats[split] = feats.transform(docs, training=(split == "train"))
        t_split[split] = time.perf_counter() - t
    out["features_s"], out["features_cpu_s"] = sw.lap()
    out["features_breakdown_s"] = {
        "init+fit": t_fit,
        **{f"transform_{s}": v for s, v in t_split.items()},
    }
    out["surface_features"] = feats.num_features
    out["train_nnz"] = int(mats["train"].ids.numel())
    out["rss_after_features_mb"] = max_rss_mb()
    log(f"structperc: features {out['features_s']:.1f}s ({feats.num_features} features)")

    # -- training: averaged perceptron, k epochs, shuffled --------------------------------------
    labels = label_set(corpus["train"])
    out["num_labels"] = len(labels)
    y_train = encode_labels(corpus["train"], labels)
    sw = Stopwatch()
    weights = ChainWeights(feats.num_features, labels)
    updater = Updater(weights, average=True)
    t_alloc = sw.lap()[0]
    learner = Perceptron(average=True)
    cpu_marks = [time.process_time()]  # CPU time at the start and after every epoch
    result = fit(
        learner,
        updater,
        mats["train"],
        y_train,
        max_epochs=cfg["epochs"],
        tol=0.0,  # never "converged": exactly k epochs
        shuffle=True,
        seed=0,
        progress=False,
        on_epoch=lambda _log: cpu_marks.append(time.process_time()),
    )
    t = time.perf_counter()
    updater.finalize()
    t_final = time.perf_counter() - t
    out["train_total_s"], out["train_total_cpu_s"] = sw.lap()
    epochs = [h.seconds for h in result.history]
    out["epoch_s_all"] = epochs
    out["epoch_s"] = median(epochs)
    out["epoch_cpu_s_all"] = [b - a for a, b in zip(cpu_marks, cpu_marks[1:], strict=False)]
    out["epoch_cpu_s"] = median(out["epoch_cpu_s_all"])
    out["train_breakdown_s"] = {"alloc": t_alloc, "fit": result.seconds, "finalize": t_final}
    out["train_word_error"] = [h.word_error for h in result.history]
    out["parameters"] = sum(t.numel() for t in weights.tables().values())
    out["rss_after_training_mb"] = max_rss_mb()
    out["tensor_mb"] = {
        "weights": tensor_mb(*weights.tables().values()),
        "averaging_sums": tensor_mb(*updater.sums.values()),
        "features": tensor_mb(*(t for m in mats.values() for t in m.tensors().values())),
    }
    log(f"structperc: epochs {', '.join(f'{s:.2f}' for s in epochs)} s")

    # -- decoding the test set ------------------------------------------------------------------
    test = mats["test"]
    n_tokens = test.num_tokens
    k = min(4, test.num_docs)
    hi = int(test.offsets[int(test.doc_offsets[k])])
    warm = FeatureMatrix(
        test.ids[:hi], test.offsets[: int(test.doc_offsets[k]) + 1], test.doc_offsets[: k + 1]
    )
    preds = {}
    for bs in (1, 16):
        predict(weights, warm, batch_size=bs)  # warm-up, not timed
        times, cpu = [], []
        for _ in range(cfg["decode_repeats"]):
            sw = Stopwatch()
            preds[bs] = predict(weights, test, batch_size=bs)
            times.append(sw.lap()[0])
            cpu.append(sw.lap()[1])
        out[f"decode_b{bs}_s_all"] = times
        out[f"decode_b{bs}_cpu_s_all"] = cpu
        out[f"decode_b{bs}_tps"] = n_tokens / median(times)
        out[f"decode_b{bs}_cpu_tps"] = n_tokens / median(cpu)
        log(f"structperc: decode batch {bs}: {out[f'decode_b{bs}_tps']:.0f} tokens/s")
    out["decode_batches_agree"] = preds[1] == preds[16]
    out["test_f1"] = test_f1(corpus["test"], [[labels[i] for i in p] for p in preds[16]])
    out["test_tokens"] = n_tokens
    out["peak_rss_mb"] = max_rss_mb()
    return out


# ---------------------------------------------------------------------------------------------
# CRFsuite worker
# ---------------------------------------------------------------------------------------------
def template_names(templates) -> list[str]:
    from structperc.features.templates import template_name

    return [template_name(t) for t in templates]


def doc_values(cols: dict, s: int, e: int, template) -> list:
    """The value (or None) of one template at every token of the document cols[*][s:e]."""
    n = e - s
    if len(template) == 1:
        (name, off) = template[0]
        col = cols[name]
        if off == 0:
            return col[s:e]
        if abs(off) >= n:
            return [None] * n
        if off < 0:
            return [None] * -off + col[s : e + off]
        return col[s + off : e] + [None] * off
    (a1, o1), (a2, o2) = template
    v1 = doc_values(cols, s, e, ((a1, o1),))
    v2 = doc_values(cols, s, e, ((a2, o2),))
    return [
        x + "|" + y if x is not None and y is not None else None
        for x, y in zip(v1, v2, strict=True)
    ]


def bounds_of(docs) -> list[tuple[int, int]]:
    out, s = [], 0
    for d in docs:
        out.append((s, s + len(d)))
        s += len(d)
    return out


def attribute_strings(templates, keep) -> list[dict[str, str]]:
    """Per template, kept value -> its CRFsuite attribute string ("w[-1]=Germany"), made once."""
    names = template_names(templates)
    return [
        {v: f"{n}={v}" for v in kj} if t else {}
        for t, n, kj in zip(templates, names, keep, strict=True)
    ]


def attribute_lists(cols, bounds, templates, strings):
    """Per document, per token, the attribute strings ("bias", "w[-1]=Germany", ...).

    Only values in ``strings`` (those kept in training) are emitted, as shared string objects.
    """
    specs = [(t, strings[j]) for j, t in enumerate(templates) if t]
    for s, e in bounds:
        fcols = [["bias"] * (e - s)]
        for t, sj in specs:
            fcols.append(list(map(sj.get, doc_values(cols, s, e, t))))
        yield [[a for a in row if a is not None] for row in zip(*fcols, strict=True)]


def worker_crfsuite(cfg: dict) -> dict:
    import pycrfsuite

    setup_threads(cfg["threads"])
    corpus = load_corpus(cfg)
    rss_loaded = max_rss_mb()
    out: dict = {"system": "crfsuite", "rss_after_load_mb": rss_loaded}
    tmp = Path(tempfile.mkdtemp(prefix="structperc-bench-"))
    model_path = tmp / "model.crfsuite"

    # -- features: the same attribute columns, as strings; filter by training count; append ---
    sw = Stopwatch()
    t0 = sw.wall
    feats = make_features(cfg)
    templates = feats.templates
    train = corpus["train"]
    cols = feats._columns(train, training=True)
    t_cols = time.perf_counter()
    bounds = bounds_of(train)
    keep = []
    for t in templates:
        if not t:
            keep.append(None)
            continue
        counts: Counter = Counter()
        for s, e in bounds:
            counts.update(doc_values(cols, s, e, t))
        keep.append({v for v, c in counts.items() if c >= feats.min_count and v is not None})
    strings = attribute_strings(templates, keep)
    t_count = time.perf_counter()
    trainer = WallClockTrainer(algorithm="ap", verbose=False)
    n_attr_tokens = 0
    for doc, xseq in zip(train, attribute_lists(cols, bounds, templates, strings), strict=True):
        n_attr_tokens += sum(map(len, xseq))
        trainer.append(xseq, doc.tags)
    del cols
    t_train = time.perf_counter()
    xseqs = {}
    for split in ("dev", "test"):
        docs = corpus[split]
        c = feats._columns(docs, training=False)
        xseqs[split] = [
            pycrfsuite.ItemSequence(x)
            for x in attribute_lists(c, bounds_of(docs), templates, strings)
        ]
    t_end = time.perf_counter()
    out["features_s"], out["features_cpu_s"] = sw.lap()
    out["features_breakdown_s"] = {
        "init+train_columns": t_cols - t0,
        "count+filter": t_count - t_cols,
        "strings+append_train": t_train - t_count,
        "dev+test_itemsequences": t_end - t_train,
    }
    out["surface_features"] = sum(len(k) for k in keep if k is not None) + 1  # + bias
    out["train_nnz"] = n_attr_tokens
    out["rss_after_features_mb"] = max_rss_mb()
    log(f"crfsuite: features {out['features_s']:.1f}s ({out['surface_features']} attributes)")

    # -- training: averaged perceptron, k iterations ---------------------------------------------
    trainer.set_params({"max_iterations": cfg["epochs"], "epsilon": 0.0, "feature.minfreq": 0})
    sw = Stopwatch()
    trainer.train(str(model_path))
    out["train_total_s"], out["train_total_cpu_s"] = sw.lap()
    lp = trainer.logparser
    timeline = crfsuite_timeline(trainer.stamped, sw.wall, clock=0)
    epochs = timeline.pop("epochs")
    out["epoch_s_all"] = epochs
    out["epoch_s"] = median(epochs)
    out["epoch_cpu_s_all"] = crfsuite_timeline(trainer.stamped, sw.cpu, clock=1)["epochs"]
    out["epoch_cpu_s"] = median(out["epoch_cpu_s_all"])
    out["epoch_crfsuite_clock_s_all"] = [it.get("time") for it in lp.iterations]
    out["active_features"] = timeline.pop("active_features")
    out["train_breakdown_s"] = timeline
    out["train_loss"] = [it.get("loss") for it in lp.iterations]
    out["parameters"] = lp.featgen_num_features
    out["model_file_mb"] = model_path.stat().st_size / 2**20
    out["rss_after_training_mb"] = max_rss_mb()
    del trainer
    log(f"crfsuite: epochs {', '.join(f'{s:.2f}' for s in epochs)} s")

    # -- decoding the test set, one document at a time -------------------------------------------
    tagger = pycrfsuite.Tagger()
    tagger.open(str(model_path))
    test = xseqs["test"]
    n_tokens = sum(len(d) for d in corpus["test"])
    for x in test[:4]:  # warm-up, not timed
        tagger.tag(x)
    times, cpu = [], []
    for _ in range(cfg["decode_repeats"]):
        sw = Stopwatch()
        pred = [tagger.tag(x) for x in test]
        times.append(sw.lap()[0])
        cpu.append(sw.lap()[1])
    out["decode_b1_s_all"] = times
    out["decode_b1_cpu_s_all"] = cpu
    out["decode_b1_tps"] = n_tokens / median(times)
    out["decode_b1_cpu_tps"] = n_tokens / median(cpu)
    log(f"crfsuite: decode: {out['decode_b1_tps']:.0f} tokens/s")
    out["test_f1"] = test_f1(corpus["test"], pred)
    out["test_tokens"] = n_tokens
    out["peak_rss_mb"] = max_rss_mb()
    tagger.close()
    model_path.unlink()
    tmp.rmdir()
    return out


def _wall_clock_trainer():
    import pycrfsuite

    class WallClock(pycrfsuite.Trainer):
        """A Trainer that notes the wall-clock and CPU time of every line CRFsuite logs."""

        def message(self, message):
            self.stamped.append((time.perf_counter(), time.process_time(), message))
            super().message(message)

    return WallClock


def WallClockTrainer(**kwargs):  # noqa: N802 (a class factory: pycrfsuite is imported lazily)
    trainer = _wall_clock_trainer()(**kwargs)
    trainer.stamped = []
    return trainer


def crfsuite_timeline(stamped: list[tuple[float, float, str]], t0: float, clock: int) -> dict:
    """Phases of ``Trainer.train`` from its timestamped log lines (clock 0: wall, 1: CPU).

    Iteration i runs from the end of iteration i-1's log (for i = 1: the "epsilon" line, the last
    before the loop) to its "Seconds required for this iteration" line: shuffle, every instance,
    averaging and the weight norm it logs.
    """
    lines = [(stamp[clock], stamp[2]) for stamp in stamped]
    first = lambda prefix: next(t for t, m in lines if m.startswith(prefix))  # noqa: E731
    loop_start = first("epsilon:")
    ends = [t for t, m in lines if m.startswith("Seconds required for this iteration")]
    active = next((m for _, m in lines if m.startswith("Number of active features")), "")
    return {
        "epochs": [b - a for a, b in zip([loop_start, *ends[:-1]], ends, strict=True)],
        "featgen": first("Seconds required:") - t0,
        "setup_after_featgen": loop_start - first("Seconds required:"),
        "iterations": ends[-1] - loop_start,
        "store": lines[-1][0] - ends[-1],
        "active_features": int(active.split(":")[1].split()[0]) if active else None,
    }


WORKERS = {"structperc": worker_structperc, "crfsuite": worker_crfsuite}


# ---------------------------------------------------------------------------------------------
# the driver: rounds of workers, medians, ratios, files
# ---------------------------------------------------------------------------------------------
# (key, label, kind); kind says how the ratio structperc/CRFsuite is taken and read.  Time and
# rate rows also exist in CPU time: the key with "_s" -> "_cpu_s", "_tps" -> "_cpu_tps".
ROWS = [
    ("features_s", "Feature extraction (s)", "time"),
    ("epoch_s", "Training, seconds per epoch (averaged perceptron)", "time"),
    ("train_total_s", "Training, total for k epochs incl. setup (s)", "time"),
    ("decode_b1_tps", "Viterbi decoding, test set, batch 1 (tokens/s)", "rate"),
    ("decode_b16_tps", "Viterbi decoding, test set, batch 16 (tokens/s)", "rate"),
    ("peak_rss_mb", "Peak memory, whole process (MiB)", "memory"),
    ("rss_delta_mb", "Peak memory above post-load baseline (MiB)", "memory"),
    ("test_f1", "Test F1 after k epochs", "quality"),
    ("surface_features", "Surface features (attributes)", "count"),
    ("parameters", "Model parameters (weights)", "count"),
]


def machine_info(threads: int) -> dict:
    import numpy
    import torch

    try:
        from importlib.metadata import version

        crf_version = version("python-crfsuite")
    except Exception:  # noqa: BLE001
        crf_version = "?"
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "python_crfsuite": crf_version,
        "torch_threads": threads,
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "loadavg_start": list(os.getloadavg()),
        "git": git_state(),
    }


def run_worker(system: str, cfg: dict, threads: int) -> dict:
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    env["PYTHONHASHSEED"] = "0"
    with tempfile.TemporaryDirectory(prefix="structperc-bench-") as tmp:
        result = Path(tmp) / "result.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", system]
        cmd += ["--worker-config", json.dumps(cfg), "--worker-out", str(result)]
        # stderr: pass our own log lines through, drop progress bars; all of it on failure
        proc = subprocess.Popen(cmd, env=env, cwd=REPO, stderr=subprocess.PIPE, text=True)
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if "[bench " in line:
                print(line[line.index("[bench ") :], end="", file=sys.stderr, flush=True)
        if proc.wait() != 0:
            sys.stderr.write("".join(lines[-50:]))
            sys.exit(f"the {system} worker failed (exit status {proc.returncode})")
        out = json.loads(result.read_text())
    out["rss_delta_mb"] = out["peak_rss_mb"] - out["rss_after_load_mb"]
    return out


def ratio(kind: str, sp: float | None, crf: float | None) -> float | None:
    """structperc relative to CRFsuite: for times crf / sp (> 1: structperc faster), else
    sp / crf (rates: > 1 structperc faster; memory, counts: > 1 structperc larger)."""
    if sp is None or crf is None:
        return None
    num, den = (crf, sp) if kind == "time" else (sp, crf)
    return num / den if den else None


def cpu_key(key: str) -> str:
    """The CPU-time twin of a time or rate key: epoch_s -> epoch_cpu_s."""
    return key.replace("_tps", "_cpu_tps") if key.endswith("_tps") else key[:-2] + "_cpu_s"


def summary_rows() -> list[tuple[str, str]]:
    """(key, kind) of every summarized number: the table rows and their CPU-time twins."""
    rows = [(key, kind) for key, _, kind in ROWS]
    return rows + [(cpu_key(key), kind) for key, kind in rows if kind in ("time", "rate")]


def summarize(rounds: list[dict]) -> dict:
    """Per row: each system's median/min/max over rounds, and the ratio.

    ``ratio`` is the median over rounds of the per-round ratio (both systems of a round ran
    minutes apart, so a slow spell of the machine cancels out more than across rounds);
    ``ratio_of_medians`` is the ratio of the two medians.
    """
    summary = {}
    for key, kind in summary_rows():
        entry: dict = {}
        per_round = {}
        for system in SYSTEMS:
            src = key.replace("_b16_", "_b1_") if system == "crfsuite" else key
            vals = [r[system].get(src) for r in rounds]  # CRFsuite tags one at a time
            per_round[system] = vals
            vals = [v for v in vals if v is not None]
            if vals:
                entry[system] = {"median": median(vals), "min": min(vals), "max": max(vals)}
        if len(entry) == 2:
            rs = [ratio(kind, a, b) for a, b in zip(*per_round.values(), strict=True)]
            rs = [r for r in rs if r is not None]
            entry["ratio"] = median(rs) if rs else None
            entry["ratio_per_round"] = rs
            entry["ratio_of_medians"] = ratio(
                kind, entry["structperc"]["median"], entry["crfsuite"]["median"]
            )
        summary[key] = entry
    return summary


def git_state() -> dict:
    """The commit and the number of changed files of the working tree (read-only git calls)."""

    def git(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], cwd=REPO, capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    status = git("status", "--porcelain", "--", "structperc")
    return {
        "commit": git("rev-parse", "HEAD") or None,
        "structperc_files_changed": len(status.splitlines()),
    }


def find_data_dir() -> Path:
    env = os.environ.get("STRUCTPERC_DATA")
    path = Path(env) if env else REPO.parent / "shared" / "data"
    if not (path / "conll2003" / "train.txt").is_file():
        sys.exit(f"CoNLL-2003 not found under {path}/conll2003 (set STRUCTPERC_DATA)")
    return path.resolve()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a small slice of the data (smoke check)")
    ap.add_argument("--repeats", type=int, default=None, help="rounds of both workers (3; quick 1)")
    ap.add_argument("--epochs", type=int, default=None, help="training epochs k (5; quick 2)")
    ap.add_argument("--decode-repeats", type=int, default=3, help="decoding passes per round")
    ap.add_argument("--threads", type=int, default=1, help="torch threads in the workers")
    ap.add_argument(
        "--budget",
        type=float,
        default=300,
        help="seconds: start no further round (after the first) that would end past this; 0: none",
    )
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: beside me)")
    ap.add_argument("--render-only", action="store_true", help="README.md from results.json")
    ap.add_argument("--worker", choices=SYSTEMS, help=argparse.SUPPRESS)
    ap.add_argument("--worker-config", help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        out = WORKERS[args.worker](json.loads(args.worker_config))
        args.worker_out.write_text(json.dumps(out))
        return

    out_dir = args.out or (HERE / "quick" if args.quick else HERE)
    if args.render_only:
        results = json.loads((out_dir / "results.json").read_text())
        (out_dir / "README.md").write_text(render(results))
        log(f"wrote {out_dir / 'README.md'}")
        return

    repeats = args.repeats or (1 if args.quick else 3)
    epochs = args.epochs or (2 if args.quick else 5)
    cfg = {
        "data_dir": str(find_data_dir()),
        "max_docs": QUICK_DOCS if args.quick else None,
        "epochs": epochs,
        "decode_repeats": args.decode_repeats,
        "threads": args.threads,
    }
    info = machine_info(args.threads)
    t_start = time.perf_counter()
    rounds = []
    for r in range(repeats):
        elapsed = time.perf_counter() - t_start
        if args.budget and r >= 1 and elapsed * (r + 1) / r > args.budget:
            log(f"stopping after {r} rounds: another would end past --budget {args.budget:.0f}s")
            break
        order = SYSTEMS if r % 2 == 0 else SYSTEMS[::-1]
        rounds.append({})
        for system in order:
            log(f"round {r + 1}/{repeats}: {system}")
            rounds[-1][system] = run_worker(system, cfg, args.threads)
    info["loadavg_end"] = list(os.getloadavg())
    from structperc.data.conll import read_conll  # data sizes, for the README

    corpus = {
        s: read_conll(Path(cfg["data_dir"]) / "conll2003" / f"{s}.txt")[
            : (QUICK_DOCS[s] if args.quick else None)
        ]
        for s in ("train", "dev", "test")
    }
    data_dir = Path(cfg["data_dir"])
    shown = os.path.relpath(data_dir, REPO) if data_dir.is_relative_to(REPO.parent) else data_dir
    command = " ".join([".venv/bin/python", "experiments/bench/bench.py", *argv])
    results = {
        "schema": 1,
        "command": command,
        "data_dir": str(shown),
        "config": {
            **cfg,
            "data_dir": str(shown),
            "quick": args.quick,
            "repeats": repeats,
            "rounds_done": len(rounds),
            "budget_s": args.budget,
        },
        "machine": info,
        "data": corpus_info(corpus),
        "wall_seconds": time.perf_counter() - t_start,
        "summary": summarize(rounds),
        "rounds": rounds,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    text = render(results)
    (out_dir / "README.md").write_text(text)
    print(text)
    log(f"wrote {out_dir / 'results.json'} and README.md in {results['wall_seconds']:.0f}s")


# ---------------------------------------------------------------------------------------------
# README
# ---------------------------------------------------------------------------------------------
NOTES = {
    "features_s": (
        "structperc: `LocalFeatures(...)` (reads the gazetteer), `.fit(train)`, "
        "`.transform(train, training=True)`, `.transform(dev)`, `.transform(test)` -> CSR ids. "
        "CRFsuite: the same `LocalFeatures._columns` (train with the jackknifed gazetteer), "
        "counting each template's values to drop those seen < `min_count` times, formatting "
        "the strings, `Trainer.append` for train and `ItemSequence`s for dev and test. "
        "CRFsuite's own feature generation inside `train()` is not here (see the total)."
    ),
    "epoch_s": (
        "Median over the k epochs of one round, wall clock. structperc: `EpochLog.seconds` "
        "of `structperc.train.fit` (per document: `make_batch`, potentials, Viterbi, "
        "`path_delta`, `index_add_` into weights and averaging sums). CRFsuite: wall time "
        "between its iteration log events (shuffle, Viterbi + update per instance, the "
        "averaged-weight norm it logs). CPU time: the same intervals in `process_time` "
        "(for CRFsuite equal to its own `clock()` figures, also in results.json)."
    ),
    "train_total_s": (
        "structperc: allocating the zeroed tables + `fit` + `finalize` (averaging). "
        "CRFsuite: `Trainer.train()` wall time: feature generation, k iterations, "
        "writing the model file."
    ),
    "decode_b1_tps": (
        "Test tokens / median seconds of one pass over the test set, scoring included. "
        "structperc: `predict(weights, test_matrix, batch_size=1)` from the CSR ids. "
        "CRFsuite: `Tagger.tag(itemsequence)` per document (attribute lookup, scoring, "
        "Viterbi), from prebuilt `ItemSequence`s. One warm-up pass on 4 documents first. "
        "Note the asymmetry: CRFsuite maps attribute strings to ids inside `tag`, structperc "
        "did that in `transform` (the feature row)."
    ),
    "decode_b16_tps": (
        "structperc: `predict(..., batch_size=16)` (documents sorted by length, padded). "
        "CRFsuite has no batching: the same per-document number as the row above."
    ),
    "peak_rss_mb": (
        "`ru_maxrss` of the worker process at its end (a fresh process per system and round): "
        "Python, torch, the parsed documents, features and model. The CRFsuite worker also "
        "imports torch and structperc (for `_columns`), so the baselines match."
    ),
    "rss_delta_mb": (
        "Peak minus `ru_maxrss` right after imports and reading the data: what features, "
        "training and decoding added. For CRFsuite this includes the Python attribute "
        "strings pycrfsuite needs."
    ),
    "test_f1": (
        "conlleval-style F1 (`structperc.eval.evaluate`) on test, averaged weights, after k "
        "epochs, a sanity check that both learn the same thing from the same attributes "
        "(they differ: CRFsuite has no edge features and its own shuffle order)."
    ),
    "surface_features": (
        "structperc: `LocalFeatures.num_features` (template x value seen >= 2 times in "
        "training, bias included). CRFsuite: distinct attribute strings appended."
    ),
    "parameters": (
        "structperc: dense node [F, L] + edge [F, L*L] tables (every feature x label and "
        "x label pair, most never non-zero). CRFsuite: its generated features (attribute "
        "x label pairs seen in training, plus label transitions), from its log."
    ),
}


def _ratio_text(kind: str, e: dict, spread: bool) -> str:
    r = e.get("ratio")
    if r is None:
        return "n/a"
    rs = e.get("ratio_per_round") or []
    if kind == "quality":
        diff = e["structperc"]["median"] - e["crfsuite"]["median"]
        return f"{r:.3f} ({diff:+.2f} F1)"
    text = f"{r:.2f}×"
    if spread and len(rs) > 1 and min(rs) != max(rs):
        text += f" ({min(rs):.2f}–{max(rs):.2f})"
    if kind in ("time", "rate"):
        text += " faster" if r >= 1 else f", i.e. {1 / r:.2f}× slower"
    elif kind == "memory":
        text += " (more)" if r >= 1 else " (less)"
    return text


def _fmt(v: float | None, key: str) -> str:
    if v is None:
        return "n/a"
    if key == "test_f1":
        return f"{v:.2f}"
    if key in ("surface_features", "parameters"):
        return f"{v:,.0f}"
    if key.endswith("_tps"):
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"


def _cell(entry: dict | None, key: str, spread: bool) -> str:
    if not entry:
        return "n/a"
    text = _fmt(entry["median"], key)
    if spread and entry["min"] != entry["max"]:
        text += f" ({_fmt(entry['min'], key)}–{_fmt(entry['max'], key)})"
    return text


def _cpu_label(label: str) -> str:
    for wall, cpu in (("(s)", "(CPU s)"), ("tokens/s", "tokens/CPU s"), ("seconds", "CPU seconds")):
        label = label.replace(wall, cpu)
    return label


def render(results: dict) -> str:
    """The README (markdown) of one results.json."""
    cfg, m, data = results["config"], results["machine"], results["data"]
    k, repeats = cfg["epochs"], cfg.get("rounds_done", cfg["repeats"])
    spread = repeats > 1
    cut = (
        f" ({cfg['repeats']} requested; the {cfg['budget_s']:.0f} s budget stopped the rest)"
        if repeats < cfg["repeats"]
        else ""
    )
    L = results["rounds"][0]["structperc"].get("num_labels", 9)
    make = " (what `make bench` runs)" if results["command"].endswith("bench.py") else ""
    lines = [
        "# structperc vs CRFsuite: speed on CoNLL-2003",
        "",
        "Generated by `experiments/bench/bench.py` from `results.json`; do not edit by hand "
        "(re-render with `--render-only`).",
        "",
        f"{'**Quick smoke run on a small slice: not representative.** ' if cfg['quick'] else ''}"
        f"Averaged perceptron, k = {k} epochs, {repeats} round(s){cut} of one fresh process "
        f"per system; cells are medians over rounds"
        f"{' (min–max in parentheses)' if spread else ''}. "
        f"torch threads: {m['torch_threads']} (CRFsuite is single-threaded).",
        "",
        *(
            [
                f"**The machine was busy with other work (load average "
                f"{max(m['loadavg_start'][0], m['loadavg_end'][0]):.1f} on {m['cpu_count']} "
                "CPUs): absolute times are inflated (CPU time too: the two vCPUs share a "
                "core's resources) and noisy; read the ratios, taken within a round.**",
                "",
            ]
            if max(m["loadavg_start"][0], m["loadavg_end"][0]) > 1.5 * (m["cpu_count"] or 1)
            else []
        ),
        '"structperc vs CRFsuite" is structperc relative to CRFsuite: for times and rates, '
        "how many times faster structperc is; for memory and counts, structperc / CRFsuite; "
        "the median over rounds of each round's ratio (range in parentheses). The values and "
        "the first ratio are wall clock; the last column is the same ratio in CPU time "
        "(`time.process_time` of the worker; values in the second table), which excludes "
        "waiting for a core but still slows down when other processes share the CPU.",
        "",
        "| measure | structperc | CRFsuite | structperc vs CRFsuite | in CPU time |",
        "|---|---:|---:|---:|---:|",
    ]
    summ = results["summary"]
    for key, label, kind in ROWS:
        e = summ.get(key, {})
        cpu = _ratio_text(kind, summ.get(cpu_key(key), {}), spread)
        lines.append(
            f"| {label} | {_cell(e.get('structperc'), key, spread)} | "
            f"{_cell(e.get('crfsuite'), key, spread)} | {_ratio_text(kind, e, spread)} | "
            f"{cpu if kind in ('time', 'rate') else ''} |"
        )
    lines += [
        "",
        "CPU time (seconds, or tokens per CPU second) of the same runs:",
        "",
        "| measure | structperc | CRFsuite | structperc vs CRFsuite |",
        "|---|---:|---:|---:|",
    ]
    for key, label, kind in ROWS:
        if kind not in ("time", "rate"):
            continue
        ck = cpu_key(key)
        e = summ.get(ck, {})
        lines.append(
            f"| {_cpu_label(label)} | "
            f"{_cell(e.get('structperc'), key, spread)} | {_cell(e.get('crfsuite'), key, spread)}"
            f" | {_ratio_text(kind, e, spread)} |"
        )
    lines += [
        "",
        "Model structure differs: CRFsuite has node features (attribute x label) and label "
        "transitions only; structperc has node features and edge features (feature x previous "
        f"label x label, Kazama & Torisawa 2007 Table 1), i.e. L + L² = {L + L * L} weights "
        f"per feature for L = {L} labels, so it does more work per token.",
        "",
        "## Command",
        "",
        f"Run from the repository root{make}:",
        "",
        "```",
        f"STRUCTPERC_DATA={results['data_dir']} {results['command']}",
        "```",
        "",
        f"Data: train {data['train']['documents']} documents / {data['train']['tokens']:,} "
        f"tokens, dev {data['dev']['documents']} / {data['dev']['tokens']:,}, test "
        f"{data['test']['documents']} / {data['test']['tokens']:,} (documents = `-DOCSTART-` "
        "documents, sentences concatenated).",
        "",
        f"Machine: {m['cpu_count']} CPUs ({m['cpu_model']}), {m['platform']}, Python "
        f"{m['python']}, torch {m['torch']}, numpy {m['numpy']}, python-crfsuite "
        f"{m['python_crfsuite']}; {m['date']}; load average "
        f"{m['loadavg_start'][0]:.2f} at the start, {m['loadavg_end'][0]:.2f} at the end; "
        f"whole benchmark {results['wall_seconds']:.0f} s. structperc at commit "
        f"{(m.get('git') or {}).get('commit') or '?'}"
        f" with {(m.get('git') or {}).get('structperc_files_changed', '?')} uncommitted "
        "changed file(s) under `structperc/`.",
        "",
        "## What each row includes",
        "",
    ]
    for key, label, _ in ROWS:
        lines.append(f"- **{label}**: {NOTES[key]}")
    lines += ["", "## Breakdowns (medians over rounds; seconds unless noted)", ""]
    for system in SYSTEMS:
        for part in ("features_breakdown_s", "train_breakdown_s"):
            parts = [r[system][part] for r in results["rounds"]]
            cells = ", ".join(f"{n} {median([p[n] for p in parts]):.2f}" for n in parts[0])
            lines.append(f"- {system} {part.split('_')[0]}: {cells}")
    for system in SYSTEMS:
        marks = [
            (n, median([r[system][f"{k}_mb"] for r in results["rounds"]]))
            for n, k in (
                ("after loading", "rss_after_load"),
                ("after features", "rss_after_features"),
                ("after training", "rss_after_training"),
                ("at the end", "peak_rss"),
            )
        ]
        lines.append(
            f"- {system} peak RSS (MiB, high-water mark so far): "
            + ", ".join(f"{n} {v:,.0f}" for n, v in marks)
        )
    sp_epochs = [r["structperc"]["epoch_s_all"] for r in results["rounds"]]
    crf_epochs = [r["crfsuite"]["epoch_s_all"] for r in results["rounds"]]
    lines += [
        "- per-epoch seconds, round 1: structperc "
        + ", ".join(f"{s:.2f}" for s in sp_epochs[0])
        + "; CRFsuite "
        + ", ".join(f"{s:.2f}" for s in crf_epochs[0]),
        "",
        "Raw numbers of every round (per-epoch and per-pass times, tensor sizes, training "
        "error per epoch) are in `results.json`.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
