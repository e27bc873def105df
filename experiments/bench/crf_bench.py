"""Section 2 of ``make bench``: seconds per L-BFGS iteration of structperc's CRF (torch-struct)
against CRFsuite's L-BFGS on the same CoNLL-2003 data, and the final F1 of the full run.

Both systems see the same surface features (CRFsuite's attribute strings are built from
``LocalFeatures``, ``common.attribute_lists``) and the same objective,
-log-likelihood + ||w||^2 / (2 sigma^2) (CRFsuite: ``c2 = 1 / (2 sigma^2)``, ``c1 = 0``), both by
L-BFGS.  CRFsuite's crf1d has node features (attribute x label) and label transitions only;
structperc's CRF is run twice: with ``features.edges=false`` (``structperc_nodes``: the same model
as CRFsuite's, L = 9 weights per feature plus an L x L transition matrix) and with the edge
weight per (feature, previous label, label) of Kazama & Torisawa 2007, Table 1 (``structperc``:
L + L^2 = 90 weights per feature, about 10x the lookup work per token).  Its forward-backward is
torch-struct's O(N L^3) parallel scan instead of CRFsuite's O(N L^2) sequential recursion.

Each system runs k iterations from zero weights in a fresh subprocess (CRFsuite is
single-threaded); rounds alternate which goes first; the medians are over the iterations of all
rounds but the first iteration of each (both spend extra line-search evaluations there).  The
structperc worker takes the feature matrices of the shared model (``common.load_shared_model``).
Training a CRF to convergence takes hours here, so the final F1 is read from the full run's
``experiments/kazama2007/runs/crf_sigma2_<sigma2>/results.json`` when it exists, and labelled as
such; ``crfsuite_full`` (off by default) trains CRFsuite to its own convergence for its F1.
Run through ``bench.py`` (``--only crf``).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from common import (
    REPO,
    RUNS,
    Stopwatch,
    attribute_lists,
    attribute_strings,
    bounds_of,
    fmt,
    iteration_times,
    kept_values,
    load_corpus,
    load_shared_model,
    log,
    make_features,
    max_rss_mb,
    median,
    num_attributes,
    ratio,
    ratio_words,
    run_worker,
    setup_threads,
    stamped_trainer,
    test_f1,
    worker_main,
)

SCRIPT = Path(__file__).resolve()
SYSTEMS = ("structperc", "structperc_nodes", "crfsuite")
DEFAULTS = {
    "iterations": 5,
    "repeats": 1,
    "sigma2": 100.0,
    "semiring": "auto",  # learner.scan (its default: sequential with edge features, else scaled)
    "dtype": "float64",
    "support": "all",  # learner.support: all | observed (CRFsuite's (attribute, label) pairs)
    "crfsuite_full": False,
}
QUICK = {**DEFAULTS, "iterations": 3}


def worker_structperc(cfg: dict, edges: bool = True) -> dict:
    from structperc.crf.learner import CRF
    from structperc.data.tags import encode_labels
    from structperc.learn.fitting import FitSettings
    from structperc.model.updates import Updater
    from structperc.model.weights import ChainWeights
    from structperc.structures.chain import ChainData, ChainStructure
    from structperc.train import fit

    setup_threads(cfg["threads"])
    corpus = load_corpus(cfg, ("train", "test"))
    shared, feats, _, mats = load_shared_model(Path(cfg["model_dir"]))
    labels = shared.labels
    del shared  # the perceptron's tables (111 MB): only its features and matrices are used here
    y = encode_labels(corpus["train"], labels)
    # from zero, as a CRF run starts; edges=False: node features + a transition matrix
    device = cfg.get("device", "cpu")  # gpu_bench.py: "cuda"
    weights = ChainWeights(feats.num_features, labels, edges=edges).to(device)
    structure = ChainStructure(weights)
    learner = CRF(
        sigma2=cfg["sigma2"],
        tol=0.0,
        scan=cfg["semiring"],
        dtype=cfg["dtype"],
        support=cfg.get("support", "all"),
    )
    sw = Stopwatch()
    result = fit(  # the CRF is not online: fit runs its L-BFGS (CRF.fit)
        learner,
        structure,
        Updater(weights),
        ChainData(mats["train"], y),
        FitSettings(max_epochs=cfg["iterations"], progress=False, device=device),
    )
    out: dict = {"system": "structperc" if edges else "structperc_nodes"}
    out["train_total_s"] = sw.lap()[0]
    its = result.history
    out["iteration_s_all"] = [h.seconds for h in its]
    out["iteration_cpu_s_all"] = [h.extra["cpu_seconds"] for h in its]
    out["evaluations_all"] = [h.updates for h in its]
    out["objective_all"] = [h.extra["objective"] for h in its]
    out["setup_s"] = out["train_total_s"] - sum(out["iteration_s_all"])
    out["parameters"] = sum(t.numel() for t in weights.tables().values())
    if learner.support == "observed":  # the weights that move (the rest stays 0)
        from structperc.crf.sparse import Support

        support = Support.observed(weights, mats["train"], y)
        out["parameters"] = support.size
    out["surface_features"] = feats.num_features
    out["peak_rss_train_mb"] = max_rss_mb()  # up to the end of training, before decoding
    pred = structure.predict(ChainData(mats["test"]), device=device)
    out["test_f1_after_k"] = test_f1(corpus["test"], [[labels[i] for i in p] for p in pred])
    out["peak_rss_mb"] = max_rss_mb()
    times = ", ".join(f"{s:.2f}" for s in out["iteration_s_all"])
    log(f"crf {out['system']}: {times} s/iteration")
    return out


def worker_structperc_nodes(cfg: dict) -> dict:
    """``worker_structperc`` with ``features.edges=false``: CRFsuite's model."""
    return worker_structperc(cfg, edges=False)


def worker_crfsuite(cfg: dict) -> dict:
    import pycrfsuite

    setup_threads(cfg["threads"])
    corpus = load_corpus(cfg, ("train", "dev", "test"))
    feats = make_features(cfg)
    templates, train = feats.templates, corpus["train"]
    cols = feats._columns(train, training=True)
    bounds = bounds_of(train)
    keep = kept_values(templates, cols, bounds, feats.min_count)
    strings = attribute_strings(templates, keep)
    trainer = stamped_trainer(algorithm="lbfgs", verbose=False)
    for doc, xseq in zip(train, attribute_lists(cols, bounds, templates, strings), strict=True):
        trainer.append(xseq, doc.tags)
    del cols
    out: dict = {"system": "crfsuite"}
    params = {"c1": 0.0, "c2": 1.0 / (2.0 * cfg["sigma2"]), "feature.minfreq": 0}
    if cfg.get("full"):
        params.update({"max_iterations": 10_000, "epsilon": 1e-5})
    else:
        params.update({"max_iterations": cfg["iterations"], "epsilon": 0.0, "delta": 0.0})
    trainer.set_params(params)
    with tempfile.TemporaryDirectory(prefix="structperc-crfbench-") as tmp:
        model = Path(tmp) / "model.crfsuite"
        sw = Stopwatch()
        trainer.train(str(model))
        out["train_total_s"] = sw.lap()[0]
        out["peak_rss_train_mb"] = max_rss_mb()  # up to the end of training, before tagging
        out["iteration_s_all"] = iteration_times(trainer.stamped, 0)
        out["iteration_cpu_s_all"] = iteration_times(trainer.stamped, 1)
        lp = trainer.logparser
        out["evaluations_all"] = [it.get("linesearch_trials") for it in lp.iterations]
        out["objective_all"] = [it.get("loss") for it in lp.iterations]
        out["setup_s"] = out["train_total_s"] - sum(out["iteration_s_all"])
        out["parameters"] = lp.featgen_num_features
        out["surface_features"] = num_attributes(keep)
        tagger = pycrfsuite.Tagger()
        tagger.open(str(model))
        for split in ("dev", "test"):
            docs = corpus[split]
            c = feats._columns(docs, training=False)
            xs = attribute_lists(c, bounds_of(docs), templates, strings)
            pred = [tagger.tag(pycrfsuite.ItemSequence(x)) for x in xs]
            out[f"{split}_f1"] = test_f1(docs, pred)
        tagger.close()
    out["test_f1_after_k"] = out["test_f1"]
    out["peak_rss_mb"] = max_rss_mb()
    log(f"crf CRFsuite: {', '.join(f'{s:.2f}' for s in out['iteration_s_all'])} s/iteration")
    return out


WORKERS = {
    "structperc": worker_structperc,
    "structperc_nodes": worker_structperc_nodes,
    "crfsuite": worker_crfsuite,
}


def full_run(sigma2: float) -> dict | None:
    """The full structperc CRF training at this sigma^2 (Kazama reproduction runs), if present."""
    path = RUNS / f"crf_sigma2_{sigma2:g}" / "results.json"
    if not path.is_file():
        return None
    r = json.loads(path.read_text())
    secs = [h["seconds"] for h in r.get("history", [])]
    return {
        "path": str(path.relative_to(REPO)),
        "iterations": r.get("epochs"),
        "stopped_by": r.get("stopped_by"),
        "train_seconds": r.get("train_seconds"),
        "median_iteration_s": median(secs),
        "evaluations": sum(h.get("updates", 0) for h in r.get("history", [])),
        "dev_f1": (r.get("dev") or {}).get("f1"),
        "test_f1": (r.get("test") or {}).get("f1"),
    }


def summarize(rounds: list[dict]) -> dict:
    out = {}
    for system in SYSTEMS:
        if any(system not in r for r in rounds):
            continue
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
            "peak_rss_mb": median([r[system]["peak_rss_mb"] for r in rounds]),
            "peak_rss_train_mb": median(  # (None in results from before this row)
                [m for r in rounds if (m := r[system].get("peak_rss_train_mb")) is not None]
            ),
        }
    for system, suffix in (("structperc", ""), ("structperc_nodes", "_nodes")):
        if system not in out:  # (results from before the edges=false system)
            continue
        per_round = [
            ratio(
                "time",
                median(r[system]["iteration_s_all"][1:]),
                median(r["crfsuite"]["iteration_s_all"][1:]),
            )
            for r in rounds
        ]
        out[f"ratio{suffix}_per_round"] = per_round
        out[f"ratio{suffix}"] = median([x for x in per_round if x is not None])
        cpu = [
            ratio(
                "time",
                median(r[system]["iteration_cpu_s_all"][1:]),
                median(r["crfsuite"]["iteration_cpu_s_all"][1:]),
            )
            for r in rounds
        ]
        out[f"ratio{suffix}_cpu"] = median([x for x in cpu if x is not None])
    return out


def run(cfg: dict) -> dict:
    """``cfg["repeats"]`` rounds of both workers, ``cfg["iterations"]`` iterations each."""
    t_start = time.perf_counter()
    rounds = []
    for r in range(cfg["repeats"]):
        rounds.append({})
        for system in SYSTEMS if r % 2 == 0 else SYSTEMS[::-1]:
            log(f"crf round {r + 1}/{cfg['repeats']}: {system}")
            rounds[-1][system] = run_worker(SCRIPT, system, cfg)
    full = None
    if cfg.get("crfsuite_full"):
        log("crf: CRFsuite L-BFGS to convergence")
        full = run_worker(SCRIPT, "crfsuite", {**cfg, "full": True})
    return {
        "config": {**cfg, "rounds_done": len(rounds)},
        "wall_seconds": time.perf_counter() - t_start,
        "summary": summarize(rounds),
        "structperc_full_run": full_run(cfg["sigma2"]),
        "crfsuite_full": full,
        "rounds": rounds,
    }


# ---------------------------------------------------------------------------------------------
# README section
# ---------------------------------------------------------------------------------------------
def headline(section: dict) -> list[dict]:
    s = section["summary"]
    sp, cs = s["structperc"], s["crfsuite"]
    rows = []
    if "structperc_nodes" in s:
        rows.append(
            {
                "measure": "CRF, seconds per L-BFGS iteration, features.edges=false "
                "(CRFsuite's model)",
                "structperc": fmt(s["structperc_nodes"]["iteration_s"]),
                "peer": f"CRFsuite {fmt(cs['iteration_s'])}",
                "ratio": ratio_words("time", s["ratio_nodes"]),
                "ratio_cpu": ratio_words("time", s.get("ratio_nodes_cpu")),
            }
        )
    rows.append(
        {
            "measure": "CRF, seconds per L-BFGS iteration, edge features (Kazama's Table 1)",
            "structperc": fmt(sp["iteration_s"]),
            "peer": f"CRFsuite {fmt(cs['iteration_s'])}",
            "ratio": ratio_words("time", s["ratio"]),
            "ratio_cpu": ratio_words("time", s.get("ratio_cpu")),
        }
    )
    run_ = section.get("structperc_full_run")
    if run_:
        rows.append(
            {
                "measure": f"CRF, final test F1 (dev) of the full run `{run_['path']}` "
                "(read from the file, not re-measured)",
                "structperc": f"{run_['test_f1']:.2f} ({run_['dev_f1']:.2f})",
                "peer": "",
                "ratio": "",
                "ratio_cpu": "",
            }
        )
    return rows


def versus(kind: str, a: dict, b: dict, key: str) -> str:
    """``ratio_words`` of a[key] against b[key] (empty when either is missing)."""
    return ratio_words(kind, ratio(kind, a.get(key), b.get(key)))


SUPPORT_TEXT = {
    "all": "every (feature, label) pair (`learner.support=all`)",
    "observed": "the (feature, label) pairs seen in training, as CRFsuite's "
    "(`learner.support=observed`)",
}


SCAN_TEXT = {
    "auto": "`scan=auto`: the edge-feature column runs the sequential scan (the forward "
    "algorithm, O(N L²) like CRFsuite's recursion, over one bucket of every row, "
    "`decode/sequential_scan.py`), the `edges=false` column torch-struct's O(N L³) tree scan in "
    "buckets (its lower peak memory).",
    "sequential": "Both structperc columns run the sequential scan (O(N L²), like CRFsuite).",
    "scaled": "Both structperc columns run torch-struct's O(N L³) tree scan where CRFsuite runs "
    "an O(N L²) recursion.",
    "log": "Both structperc columns run torch-struct's own O(N L³) scan where CRFsuite runs an "
    "O(N L²) recursion.",
}


def render(section: dict) -> list[str]:
    s, cfg = section["summary"], section["config"]
    sp, cs = s.get("structperc", {}), s.get("crfsuite", {})
    sn = s.get("structperc_nodes", {})

    def cell(system: dict, key: str, spec: str = "{:.2f}") -> str:
        v = system.get(key)
        return "n/a" if v is None else spec.format(v)

    lines = [
        "## 2. CRF: structperc (torch-struct) vs CRFsuite, L-BFGS",
        "",
        f"Script: `experiments/bench/crf_bench.py`. k = {cfg['iterations']} L-BFGS iterations "
        f"from zero weights per system and round, {cfg['rounds_done']} round(s), sigma² = "
        f"{cfg['sigma2']:g}, structperc DP {cfg['semiring']} semiring in {cfg['dtype']}, "
        f"weights: {SUPPORT_TEXT[cfg.get('support', 'all')]}; "
        "medians over all iterations but the first of each round (both systems spend extra "
        f"line-search evaluations there); {section['wall_seconds']:.0f} s in all.",
        "",
        "| measure | structperc CRF, edges=false | structperc CRF, edge features "
        "| CRFsuite L-BFGS | edges=false vs CRFsuite | edge features vs CRFsuite |",
        "|---|---:|---:|---:|---:|---:|",
        f"| seconds per L-BFGS iteration (wall) | {cell(sn, 'iteration_s')} "
        f"| {cell(sp, 'iteration_s')} | {cell(cs, 'iteration_s')} "
        f"| {ratio_words('time', s.get('ratio_nodes'))} | {ratio_words('time', s.get('ratio'))} |",
        f"| CPU seconds per L-BFGS iteration | {cell(sn, 'iteration_cpu_s')} "
        f"| {cell(sp, 'iteration_cpu_s')} | {cell(cs, 'iteration_cpu_s')} "
        f"| {ratio_words('time', s.get('ratio_nodes_cpu'))} "
        f"| {ratio_words('time', s.get('ratio_cpu'))} |",
        f"| seconds per objective+gradient evaluation | {cell(sn, 'evaluation_s')} "
        f"| {cell(sp, 'evaluation_s')} | {cell(cs, 'evaluation_s')} "
        f"| {versus('time', sn, cs, 'evaluation_s')} | {versus('time', sp, cs, 'evaluation_s')} |",
        f"| evaluations per iteration (mean) | {cell(sn, 'evaluations_per_iteration')} "
        f"| {cell(sp, 'evaluations_per_iteration')} | {cell(cs, 'evaluations_per_iteration')} "
        "| | |",
        f"| peak memory, whole worker process (MiB) | {cell(sn, 'peak_rss_mb', '{:,.0f}')} "
        f"| {cell(sp, 'peak_rss_mb', '{:,.0f}')} | {cell(cs, 'peak_rss_mb', '{:,.0f}')} "
        f"| {versus('memory', sn, cs, 'peak_rss_mb')} "
        f"| {versus('memory', sp, cs, 'peak_rss_mb')} |",
        "| peak memory, worker process up to the end of training (MiB) "
        f"| {cell(sn, 'peak_rss_train_mb', '{:,.0f}')} "
        f"| {cell(sp, 'peak_rss_train_mb', '{:,.0f}')} "
        f"| {cell(cs, 'peak_rss_train_mb', '{:,.0f}')} "
        f"| {versus('memory', sn, cs, 'peak_rss_train_mb')} "
        f"| {versus('memory', sp, cs, 'peak_rss_train_mb')} |",
        f"| test F1 after k iterations (not converged) | {cell(sn, 'test_f1_after_k')} "
        f"| {cell(sp, 'test_f1_after_k')} | {cell(cs, 'test_f1_after_k')} | | |",
        f"| model parameters | {cell(sn, 'parameters', '{:,.0f}')} "
        f"| {cell(sp, 'parameters', '{:,.0f}')} | {cell(cs, 'parameters', '{:,.0f}')} | | |",
        f"| surface features | {cell(sn, 'surface_features', '{:,.0f}')} "
        f"| {cell(sp, 'surface_features', '{:,.0f}')} "
        f"| {cell(cs, 'surface_features', '{:,.0f}')} | | |",
        "",
        "What each row includes: an iteration is timed from the end of the previous one; it "
        "holds every objective+gradient evaluation of its line search (structperc: "
        "`EpochLog.seconds` of `CRF.fit`, run by `structperc.train.fit`: potentials, "
        "torch-struct marginals, gradient scatter; CRFsuite: between its iteration log "
        "lines). Setup (CRFsuite's feature generation, structperc's table allocation) is "
        "outside. The memory rows are each worker's `ru_maxrss` (CRFsuite's includes its Python "
        "attribute strings; structperc's loads ready feature matrices): at the end of the "
        "worker, and at the end of training, before it decodes the test set (structperc at its "
        "default batch of 256 documents, CRFsuite one document at a time). With "
        "`features.edges=false` structperc's model is CRFsuite's (node features and a "
        "transition matrix); the edge features add 81 weights per surface feature. "
        f"{SCAN_TEXT.get(cfg['semiring'], '')}",
        "",
    ]
    run_ = section.get("structperc_full_run")
    full = section.get("crfsuite_full")
    if run_ or full:
        lines += [
            "Full trainings:",
            "",
            "| system | source | iterations | stopped by | train s | s/iteration | dev F1 "
            "| test F1 |",
            "|---|---|---:|---|---:|---:|---:|---:|",
        ]
    if run_:
        lines.append(
            f"| structperc CRF | `{run_['path']}` (an earlier full run, read from the file) | "
            f"{run_['iterations']} | {run_['stopped_by']} | {run_['train_seconds']:,.0f} | "
            f"{run_['median_iteration_s']:.2f} | {run_['dev_f1']:.2f} | {run_['test_f1']:.2f} |"
        )
    if full:
        its = full["iteration_s_all"]
        lines.append(
            f"| CRFsuite L-BFGS | this bench (`crfsuite_full`) | {len(its)} | epsilon 1e-5 | "
            f"{full['train_total_s']:,.0f} | {median(its):.2f} | {full['dev_f1']:.2f} | "
            f"{full['test_f1']:.2f} |"
        )
    if run_ or full:
        lines.append("")
    else:
        lines += [
            f"No full run at sigma² = {cfg['sigma2']:g} "
            f"(`experiments/kazama2007/runs/crf_sigma2_{cfg['sigma2']:g}/results.json`): "
            "no final F1 to show.",
            "",
        ]
    return lines


if __name__ == "__main__":
    worker_main(WORKERS)
