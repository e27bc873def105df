"""Section 2 of ``make bench``: seconds per L-BFGS iteration of structperc's CRF (torch-struct)
against CRFsuite's L-BFGS on the same CoNLL-2003 data, and the final F1 of the full run.

Both systems see the same surface features (CRFsuite's attribute strings are built from
``LocalFeatures``, ``common.attribute_lists``) and the same objective,
-log-likelihood + ||w||^2 / (2 sigma^2) (CRFsuite: ``c2 = 1 / (2 sigma^2)``, ``c1 = 0``), both by
L-BFGS.  CRFsuite's crf1d has node features (attribute x label) and label transitions only;
structperc's CRF is run twice: with ``features.edges=false`` (``structperc_nodes``: the same model
as CRFsuite's, L = 9 weights per feature plus an L x L transition matrix) and with the edge
weight per (feature, previous label, label) of Kazama & Torisawa 2007, Table 1 (``structperc``:
L + L^2 = 90 weights per feature, about 10x the lookup work per token, which
``crf/factored.py`` cuts by summing each recurring feature set once).  Its forward-backward is
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
    iteration_times,
    load_corpus,
    load_shared_model,
    log,
    make_features,
    max_rss_mb,
    median,
    ratio,
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
    from structperc.trainer import fit

    setup_threads(cfg["threads"])
    corpus = load_corpus(cfg, ("train", "test"))
    shared, feats, _, mats = load_shared_model(Path(cfg["model_dir"]))
    labels = shared.labels
    del shared  # the perceptron's tables (111 MB): only its features and matrices are used here
    y = encode_labels(corpus["train"], labels)
    mats["train"].groups = feats.lookup_groups()  # as extract_features gives them to a run
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
    train = corpus["train"]
    feats.fit(train)
    trainer = stamped_trainer(algorithm="lbfgs", verbose=False)
    for doc, xseq in zip(train, attribute_lists(feats, train, training=True), strict=True):
        trainer.append(xseq, doc.tags)
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
        out["surface_features"] = feats.num_features
        tagger = pycrfsuite.Tagger()
        tagger.open(str(model))
        for split in ("dev", "test"):
            docs = corpus[split]
            xs = attribute_lists(feats, docs)
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
    """The full structperc CRF training at this sigma^2, if present: this code's
    (``experiments/crf_lookup``, Table 2's grid again with the factored lookup), else the Kazama
    reproduction's (``experiments/kazama2007``, an older code path)."""
    name = f"crf_sigma2_{sigma2:g}"
    path = REPO / "experiments" / "crf_lookup" / "runs" / name / "results.json"
    if not path.is_file():
        path = RUNS / name / "results.json"
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


if __name__ == "__main__":
    worker_main(WORKERS)
