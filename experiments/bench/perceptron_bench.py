"""Section 1 of ``make bench``: the averaged perceptron of structperc against CRFsuite's
(python-crfsuite) on CoNLL-2003 — feature extraction, epoch time, Viterbi decoding, memory.

Both systems see the same surface features: the attribute strings fed to CRFsuite are the
features of the fitted ``LocalFeatures`` (its own templates, ``common.attribute_lists``) under
their vocabulary names (e.g. ``w[-1]=Germany``, ``pos[-1]|pos[0]=NN|VB``, ``bias``), so those
seen fewer than ``min_count`` times in training are dropped as structperc drops them and both have
the same number of surface features.  CRFsuite scores
them only as node features (attribute x label) plus label transitions; structperc also has an edge
weight per (feature, previous label, label).

Every measurement runs in a fresh subprocess per system ("worker"), and each round runs both
workers one after the other (alternating which goes first); the table reports the median over the
rounds (decoding: the median of ``decode_repeats`` passes within a round, then over rounds),
and structperc relative to CRFsuite as the median of the per-round ratios.  Every time is taken
both in wall clock and in CPU time (``process_time``: no waiting for a core, but still slower
when other processes share the CPU's caches and cores).  ``budget_s`` starts no further round
(after the first) that would end past it, at the rounds' mean pace.  Peak memory is the worker's
own ``ru_maxrss`` (the whole process: Python, torch, data, features, model), also shown minus the
worker's ``ru_maxrss`` right after imports and data loading.

The structperc worker of the first round also saves its model and feature matrices
(``common.save_shared_model``) for the later sections; ``worker_model`` does only that, for a
bench run without this section.  Run through ``bench.py`` (``--only perceptron``).

The workers, ``run`` and the README section are task-aware through the config key ``task``:
"ner" (the default: this section) or "pos", section 7 (``pos_bench.py``): the tagchunk POS tagger
(Penn Treebank tags on CoNLL-2000, ``common.load_pos_corpus`` and
``common.tagchunk_pos_settings``) with ``edges=False`` weights, CRFsuite's model structure,
scored by token accuracy instead of F1; it saves no shared model.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from common import (
    Stopwatch,
    attribute_lists,
    corpus_info,
    iteration_times,
    load_corpus,
    log,
    make_features,
    max_rss_mb,
    median,
    ratio,
    run_worker,
    save_shared_model,
    setup_threads,
    stamped_trainer,
    task_of,
    tensor_mb,
    test_quality,
    train_shared_weights,
    worker_main,
)
from render import fmt, ratio_words

SCRIPT = Path(__file__).resolve()
SYSTEMS = ("structperc", "crfsuite")
DEFAULTS = {"epochs": 5, "repeats": 3, "decode_repeats": 3, "budget_s": 300.0}
QUICK = {"epochs": 2, "repeats": 1, "decode_repeats": 3, "budget_s": 300.0}


def shared_info(cfg: dict) -> dict:
    """What the shared model is, for the sections that load it."""
    return {
        "trained_by": "experiments/bench/perceptron_bench.py",
        "learner": "averaged perceptron",
        "epochs": cfg["epochs"],
        "shuffle_seed": 0,
        "max_docs": cfg.get("max_docs"),
    }


# ---------------------------------------------------------------------------------------------
# structperc worker
# ---------------------------------------------------------------------------------------------
def worker_structperc(cfg: dict) -> dict:
    from structperc.data.tags import encode_labels, label_set
    from structperc.decode.viterbi import blocked_scan_pays
    from structperc.features.extract import FeatureMatrix
    from structperc.learn.fitting import FitSettings
    from structperc.learn.perceptron import Perceptron
    from structperc.model.updates import Updater
    from structperc.model.weights import ChainWeights
    from structperc.native.chain_predict import decode
    from structperc.structures.chain import ChainData, ChainStructure
    from structperc.trainer import fit

    setup_threads(cfg["threads"])
    corpus = load_corpus(cfg)
    rss_loaded = max_rss_mb()
    out: dict = {"system": "structperc", "rss_after_load_mb": rss_loaded}
    out["data"] = corpus_info(corpus)

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
    # NER: edge features (Kazama's Table 1); POS: node features + a transition matrix
    weights = ChainWeights(feats.num_features, labels, edges=feats.edges)
    updater = Updater(weights, average=True)
    t_alloc = sw.lap()[0]
    out["edges"] = weights.edges
    structure = ChainStructure(weights)
    learner = Perceptron(average=True)
    cpu_marks = [time.process_time()]  # CPU time at the start and after every epoch
    result = fit(
        learner,
        structure,
        updater,
        ChainData(mats["train"], y_train),
        # tol=0: never "converged", exactly k epochs
        FitSettings(max_epochs=cfg["epochs"], tol=0.0, shuffle=True, seed=0, progress=False),
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
    # which Viterbi kernel online training ran on a document of the median length (CPU)
    lengths = sorted(len(d) for d in corpus["train"])
    out["train_median_length"] = lengths[len(lengths) // 2]
    out["blocked_scan_pays_at_median_length"] = blocked_scan_pays(
        out["train_median_length"], len(labels), "cpu"
    )
    out["parameters"] = sum(t.numel() for t in weights.tables().values())
    # the weights training wrote (the averaged model's non-zero entries: a saved model's size)
    out["nonzero_parameters"] = sum(int(t.count_nonzero()) for t in weights.tables().values())
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
    test_data, warm_data = ChainData(test), ChainData(warm)
    preds = {}
    for bs in (1, 64, 256):
        decode(structure, warm_data, batch_size=bs)  # warm-up, not timed
        times, cpu = [], []
        for _ in range(cfg["decode_repeats"]):
            sw = Stopwatch()
            preds[bs] = decode(structure, test_data, batch_size=bs)
            times.append(sw.lap()[0])
            cpu.append(sw.lap()[1])
        out[f"decode_b{bs}_s_all"] = times
        out[f"decode_b{bs}_cpu_s_all"] = cpu
        out[f"decode_b{bs}_tps"] = n_tokens / median(times)
        out[f"decode_b{bs}_cpu_tps"] = n_tokens / median(cpu)
        log(f"structperc: decode batch {bs}: {out[f'decode_b{bs}_tps']:.0f} tokens/s")
    out["decode_batches_agree"] = preds[1] == preds[64] == preds[256]
    out |= test_quality(cfg, corpus["test"], [[labels[i] for i in p] for p in preds[256]])
    out["test_tokens"] = n_tokens
    out["peak_rss_mb"] = max_rss_mb()
    # for the later sections (NER only); after every measurement
    if cfg.get("save_model") and task_of(cfg) == "ner":
        save_shared_model(Path(cfg["save_model"]), weights, feats, mats, shared_info(cfg))
    return out


def worker_model(cfg: dict) -> dict:
    """Only the shared model: features, k averaged-perceptron epochs, save (nothing timed)."""
    setup_threads(cfg["threads"])
    _, feats, mats, _, _, weights = train_shared_weights(cfg, cfg["epochs"])
    save_shared_model(Path(cfg["save_model"]), weights, feats, mats, shared_info(cfg))
    log(f"shared model: {cfg['epochs']} averaged-perceptron epochs, saved")
    return {"saved": cfg["save_model"]}


# ---------------------------------------------------------------------------------------------
# CRFsuite worker
# ---------------------------------------------------------------------------------------------
def worker_crfsuite(cfg: dict) -> dict:
    import pycrfsuite

    setup_threads(cfg["threads"])
    corpus = load_corpus(cfg)
    rss_loaded = max_rss_mb()
    out: dict = {"system": "crfsuite", "rss_after_load_mb": rss_loaded}
    tmp = Path(tempfile.mkdtemp(prefix="structperc-bench-"))
    model_path = tmp / "model.crfsuite"

    # -- features: the library's templates (columns, counts, the min_count filter), as strings --
    sw = Stopwatch()
    t0 = sw.wall
    feats = make_features(cfg)
    train = corpus["train"]
    feats.fit(train)
    t_fit = time.perf_counter()
    trainer = stamped_trainer(algorithm="ap", verbose=False)
    n_attr_tokens = 0
    for doc, xseq in zip(train, attribute_lists(feats, train, training=True), strict=True):
        n_attr_tokens += sum(map(len, xseq))
        trainer.append(xseq, doc.tags)
    t_train = time.perf_counter()
    xseqs = {}
    for split in ("dev", "test"):
        xseqs[split] = [pycrfsuite.ItemSequence(x) for x in attribute_lists(feats, corpus[split])]
    t_end = time.perf_counter()
    out["features_s"], out["features_cpu_s"] = sw.lap()
    out["features_breakdown_s"] = {
        "columns+count+filter": t_fit - t0,
        "strings+append_train": t_train - t_fit,
        "dev+test_itemsequences": t_end - t_train,
    }
    out["surface_features"] = feats.num_features
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
    info = tagger.info()  # the model file's weights: those not zero (CRFsuite drops the rest)
    out["nonzero_parameters"] = len(info.state_features) + len(info.transitions)
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
    out |= test_quality(cfg, corpus["test"], pred)
    out["test_tokens"] = n_tokens
    out["peak_rss_mb"] = max_rss_mb()
    tagger.close()
    model_path.unlink()
    tmp.rmdir()
    return out


def crfsuite_timeline(stamped: list[tuple[float, float, str]], t0: float, clock: int) -> dict:
    """Phases of ``Trainer.train`` from its timestamped log lines (clock 0: wall, 1: CPU).

    An iteration (``common.iteration_times``) is the shuffle, every instance, averaging and the
    weight norm it logs.
    """
    lines = [(stamp[clock], stamp[2]) for stamp in stamped]
    first = lambda prefix: next(t for t, m in lines if m.startswith(prefix))  # noqa: E731
    loop_start = first("epsilon:")
    ends = [t for t, m in lines if m.startswith("Seconds required for this iteration")]
    active = next((m for _, m in lines if m.startswith("Number of active features")), "")
    return {
        "epochs": iteration_times(stamped, clock),
        "featgen": first("Seconds required:") - t0,
        "setup_after_featgen": loop_start - first("Seconds required:"),
        "iterations": ends[-1] - loop_start,
        "store": lines[-1][0] - ends[-1],
        "active_features": int(active.split(":")[1].split()[0]) if active else None,
    }


WORKERS = {"structperc": worker_structperc, "crfsuite": worker_crfsuite, "model": worker_model}


# ---------------------------------------------------------------------------------------------
# the section: rounds of workers, medians, ratios
# ---------------------------------------------------------------------------------------------
# (key, label, kind); kind says how the ratio structperc/CRFsuite is taken and read.  Time and
# rate rows also exist in CPU time: the key with "_s" -> "_cpu_s", "_tps" -> "_cpu_tps".
ROWS = [
    ("features_s", "Feature extraction (s)", "time"),
    ("epoch_s", "Training, seconds per epoch (averaged perceptron)", "time"),
    ("train_total_s", "Training, total for k epochs incl. setup (s)", "time"),
    ("decode_b1_tps", "Viterbi decoding, test set, batch 1 (tokens/s)", "rate"),
    ("decode_b64_tps", "Viterbi decoding, test set, batch 64 (tokens/s)", "rate"),
    ("decode_b256_tps", "Viterbi decoding, test set, batch 256 = default (tokens/s)", "rate"),
    ("peak_rss_mb", "Peak memory, whole process (MiB)", "memory"),
    ("rss_delta_mb", "Peak memory above post-load baseline (MiB)", "memory"),
    ("test_f1", "Test F1 after k epochs", "quality"),
    ("surface_features", "Surface features (attributes)", "count"),
    ("parameters", "Model parameters (weights)", "count"),
    ("nonzero_parameters", "Model parameters not zero after training (the saved model)", "count"),
]
# the POS tagger (task "pos") is scored by token accuracy, not chunk F1
QUALITY = {
    "ner": ("test_f1", "Test F1 after k epochs", "quality"),
    "pos": ("test_accuracy", "Test accuracy (%) after k epochs", "quality"),
}


def rows_of(task: str = "ner") -> list[tuple[str, str, str]]:
    """``ROWS`` of a task: its quality row in place of the NER one."""
    return [QUALITY[task] if row[0] == "test_f1" else row for row in ROWS]


def section_task(section: dict) -> str:
    """The task a section's results are of (``config["task"]``; "ner" before there was one)."""
    return section["config"].get("task", "ner")


def cpu_key(key: str) -> str:
    """The CPU-time twin of a time or rate key: epoch_s -> epoch_cpu_s."""
    return key.replace("_tps", "_cpu_tps") if key.endswith("_tps") else key[:-2] + "_cpu_s"


def summary_rows(task: str = "ner") -> list[tuple[str, str]]:
    """(key, kind) of every summarized number: the table rows and their CPU-time twins."""
    rows = [(key, kind) for key, _, kind in rows_of(task)]
    return rows + [(cpu_key(key), kind) for key, kind in rows if kind in ("time", "rate")]


def summarize(rounds: list[dict], task: str = "ner") -> dict:
    """Per row: each system's median/min/max over rounds, and the ratio.

    ``ratio`` is the median over rounds of the per-round ratio (both systems of a round ran
    minutes apart, so a slow spell of the machine cancels out more than across rounds);
    ``ratio_of_medians`` is the ratio of the two medians.
    """
    summary = {}
    for key, kind in summary_rows(task):
        entry: dict = {}
        per_round = {}
        for system in SYSTEMS:
            batched = key.replace("_b64_", "_b1_").replace("_b256_", "_b1_")
            src = batched if system == "crfsuite" else key
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


def run(cfg: dict) -> dict:
    """Rounds of both workers (``cfg``: the bench's common settings + ``DEFAULTS``); the first
    round's structperc worker saves the shared model to ``cfg["model_dir"]`` if given and the
    task is NER (``cfg["task"]``, default "ner"; "pos" saves nothing)."""
    task = task_of(cfg)
    name = "perceptron" if task == "ner" else task
    t_start = time.perf_counter()
    rounds = []
    for r in range(cfg["repeats"]):
        elapsed = time.perf_counter() - t_start
        if cfg["budget_s"] and r >= 1 and elapsed * (r + 1) / r > cfg["budget_s"]:
            log(f"{name}: stopping after {r} rounds: another would end past the budget")
            break
        order = SYSTEMS if r % 2 == 0 else SYSTEMS[::-1]
        rounds.append({})
        for system in order:
            log(f"{name} round {r + 1}/{cfg['repeats']}: {system}")
            wcfg = {k: v for k, v in cfg.items() if k not in ("model_dir", "save_model")}
            if system == "structperc" and r == 0 and cfg.get("model_dir") and task == "ner":
                wcfg["save_model"] = cfg["model_dir"]
            out = run_worker(SCRIPT, system, wcfg)
            out["rss_delta_mb"] = out["peak_rss_mb"] - out["rss_after_load_mb"]
            rounds[-1][system] = out
    return {
        "config": {**cfg, "rounds_done": len(rounds)},
        "wall_seconds": time.perf_counter() - t_start,
        "summary": summarize(rounds, task),
        "rounds": rounds,
    }


def train_shared_model(cfg: dict) -> None:
    """The shared model alone (when this section is not run)."""
    run_worker(SCRIPT, "model", {**cfg, "save_model": cfg["model_dir"]})


# ---------------------------------------------------------------------------------------------
# the rows of the README section (the section itself: templates/perceptron.md.j2)
# ---------------------------------------------------------------------------------------------
def _ratio_text(kind: str, e: dict, spread: bool, key: str = "test_f1") -> str:
    r = e.get("ratio")
    if r is None:
        return "n/a"
    rs = e.get("ratio_per_round") or []
    if kind == "quality":
        diff = e["structperc"]["median"] - e["crfsuite"]["median"]
        unit = "accuracy points" if key == "test_accuracy" else "F1"
        return f"{r:.3f} ({diff:+.2f} {unit})"
    text = ratio_words(r, kind)
    if spread and len(rs) > 1 and min(rs) != max(rs):
        head, sep, tail = text.partition("×")
        text = f"{head}{sep} ({min(rs):.2f}–{max(rs):.2f}){tail}"
    return text


def _fmt(v: float | None, key: str) -> str:
    if v is None:
        return "n/a"
    if key in ("test_f1", "test_accuracy"):
        return f"{v:.2f}"
    if key in ("surface_features", "parameters", "nonzero_parameters"):
        return f"{v:,.0f}"
    if key.endswith("_tps"):
        return f"{v:,.0f}"
    return fmt(v)


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


def table_rows(section: dict) -> list[dict]:
    """The rows of this section's tables (``templates/perceptron.md.j2``): per row of its task,
    the key, measure, both cells and both ratios, and for times and rates the CPU-time row
    (``cpu``: its measure and cells)."""
    summ, spread = section["summary"], section["config"]["rounds_done"] > 1
    out = []
    for key, label, kind in rows_of(section_task(section)):
        e, c = summ.get(key, {}), summ.get(cpu_key(key), {})
        row = {
            "key": key,
            "measure": label,
            "structperc": _cell(e.get("structperc"), key, spread),
            "crfsuite": _cell(e.get("crfsuite"), key, spread),
            "ratio": _ratio_text(kind, e, spread, key),
            "ratio_cpu": "",
            "cpu": None,
        }
        if kind in ("time", "rate"):
            row["ratio_cpu"] = _ratio_text(kind, c, spread)
            row["cpu"] = {
                "measure": _cpu_label(label),
                "structperc": _cell(c.get("structperc"), key, spread),
                "crfsuite": _cell(c.get("crfsuite"), key, spread),
            }
        out.append(row)
    return out


if __name__ == "__main__":
    worker_main(WORKERS)
