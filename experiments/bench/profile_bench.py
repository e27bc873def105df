"""Where the time goes: a profile of the averaged-perceptron epoch, the proposed algorithm's
epoch and the CRF's L-BFGS iteration on CoNLL-2003, with the top costs of each.

    make profile          # = .venv/bin/python experiments/bench/profile_bench.py
    .venv/bin/python experiments/bench/profile_bench.py --quick          # 40 documents
    .venv/bin/python experiments/bench/profile_bench.py --only crf       # some workloads
    .venv/bin/python experiments/bench/profile_bench.py --render-only    # the markdown again

Workloads (each in a fresh worker process, one torch thread, after ``common.load_shared_model``
of the model every bench section starts from: the averaged perceptron of
``perceptron_bench.worker_model``, k = 5 epochs, trained here in a temporary folder):

* ``perceptron``: one epoch of ``structperc.trainer.fit`` with the learner of
  ``conf/learner/averaged.yaml`` (``+experiment=conll03_local``) on the chain, from zero weights.
  A first epoch (not measured) builds and caches every document's batch, as training does.
* ``proposed``: one epoch of Kazama & Torisawa's Alg. 4.2 (``conf/learner/proposed.yaml``, n = 20,
  the non-local features of ``conf/experiment/conll03_nonlocal.yaml``), local weights from the
  shared model and non-local ones from zero, without BPM (as ``proposed_bench.py``).  A first
  epoch (not measured) caches the batches and the documents' non-local indexes.
* ``crf``: one L-BFGS iteration of ``conf/learner/crf.yaml`` (sigma^2 = 100, its default
  ``scan=auto``: the sequential scan with edge features, the tree scan without; float64
  DP) from zero weights: ``LBFGSTraining.iteration``, the loop body of ``CRF.fit``.
  Iteration 1 (its line search tries several steps) is not measured; the measured one is
  iteration 2.

Every workload's unit (the epoch or the iteration) runs four times from the same state (the
weights, averaging sums and L-BFGS memory after the warm-up are copied and put back before each
run; the epochs differ only in their shuffled order), once per instrument:

1. ``plain``: nothing but the clock — the reference wall time.
2. ``timers``: the functions that make up the work (``TARGETS``: the feature lookups, the DP,
   the deltas, the updates, ...) are wrapped, in this process only and for this run only, by a
   timer that books each call's wall time minus that of timed calls nested in it to a bucket;
   whatever no bucket holds is the last row (the Python loop around the calls).  Two clock reads
   per call: the buckets add up to this run's wall time and cost almost nothing.
3. ``cprofile``: ``cProfile`` over the run; the functions of largest own time (torch calls show
   up as ``<built-in method ...>``/``<method ... of TensorBase>``), with the caller that spent
   most of it.  Its per-call overhead inflates cheap Python calls, so its percentages are of the
   profiled total and lean towards Python.
4. ``torch``: ``torch.profiler`` (CPU activity): the aten operators (and autograd nodes) of
   largest self CPU time, and how much of the wall time is inside any operator at all.

Writes ``profile.json`` (every number) next to this file (``--quick``: under ``quick/``) and the
markdown breakdown: into ``README.md`` as its last section when ``results.json`` is there
(``bench.py`` re-renders it from ``profile.json``, ``--render-only`` too), else ``PROFILE.md``.
"""

from __future__ import annotations

import argparse
import cProfile
import inspect
import json
import os
import pstats
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import perceptron_bench
from common import (
    HERE,
    REPO,
    base_config,
    chosen,
    corpus_info,
    load_corpus,
    load_shared_model,
    log,
    machine_info,
    max_rss_mb,
    public_config,
    run_worker,
    setup_threads,
    worker_main,
)
from proposed_bench import shared_document_weights
from render import page

SCRIPT = Path(__file__).resolve()
MODES = ("plain", "timers", "cprofile", "torch")  # the instruments, in the order they run
CONF = REPO / "conf"
WORKLOADS = ("perceptron", "proposed", "crf", "crf_nodes")
QUICK_DOCS = {"train": 40, "dev": 10, "test": 10}
TOP = 15
SIGMA2 = 100.0
BATCHES = "batches: instance/make_batch (built in epoch 1 and kept by fit: 0 calls)"
REST = {
    "perceptron": "rest: epoch loop, Perceptron.step, StepStats, tick (Python per document)",
    "proposed": "rest: epoch loop, StepStats, tick (Python per document)",
    "crf": "rest: iteration bookkeeping outside the functions above",
    "crf_nodes": "rest: iteration bookkeeping outside the functions above",
}


# ---------------------------------------------------------------------------------------------
# instruments
# ---------------------------------------------------------------------------------------------
class Buckets:
    """Exclusive wall time per label: a timed call books its time minus that of the timed calls
    nested in it, so the labels add up to the time spent inside any timed call."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.stack: list[list] = []  # [label, start, time of timed calls nested in it]

    def wrap(self, label: str, fn):
        clock = time.perf_counter

        def timed(*args, **kwargs):
            frame = [label, clock(), 0.0]
            self.stack.append(frame)
            try:
                return fn(*args, **kwargs)
            finally:
                inclusive = clock() - frame[1]
                self.stack.pop()
                self.seconds[label] += inclusive - frame[2]
                self.calls[label] += 1
                if self.stack:
                    self.stack[-1][2] += inclusive

        timed.__wrapped__ = fn
        return timed


class Patched:
    """Wraps ``(label, owner, attribute)`` targets with ``Buckets.wrap`` until ``undo``.

    ``owner`` is a module or a class; static and class methods keep their kind; an attribute a
    class inherits is set on it and deleted again afterwards."""

    def __init__(self, buckets: Buckets, targets: list[tuple[str, object, str]]) -> None:
        self.undo_list: list[tuple[object, str, object, bool]] = []
        for label, owner, attr in targets:
            raw = inspect.getattr_static(owner, attr)  # AttributeError: the code moved
            own = attr in vars(owner)
            if isinstance(raw, staticmethod):
                new = staticmethod(buckets.wrap(label, raw.__func__))
            elif isinstance(raw, classmethod):
                new = classmethod(buckets.wrap(label, raw.__func__))
            else:
                new = buckets.wrap(label, raw)
            setattr(owner, attr, new)
            self.undo_list.append((owner, attr, raw, own))

    def undo(self) -> None:
        for owner, attr, raw, own in reversed(self.undo_list):
            if own:
                setattr(owner, attr, raw)
            else:
                delattr(owner, attr)
        self.undo_list = []


def short_path(path: str) -> str:
    """A source file as a reader finds it: relative to the repository or to site-packages."""
    marker = "site-packages" + os.sep
    if marker in path:
        return path.split(marker, 1)[1]
    if path.startswith(str(REPO) + os.sep):
        return os.path.relpath(path, REPO)
    return os.path.join(*Path(path).parts[-2:])  # the standard library: collections/__init__.py


def func_label(key: tuple[str, int, str]) -> str:
    file, line, name = key
    if file == "~":  # a built-in: "<built-in method torch.topk>", "<method 'item' of ...>"
        return name.replace("torch._C.TensorBase", "Tensor").replace("torch._C.", "")
    return f"{short_path(file)}:{line}({name})"


def cprofile_summary(profile: cProfile.Profile, top: int) -> dict:
    """Total profiled time and the ``top`` functions by own time, with their main caller."""
    stats = pstats.Stats(profile).stats
    total = sum(v[2] for v in stats.values())
    rows = []
    for key, (_cc, nc, tt, ct, callers) in sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]:
        caller, share = None, None
        if callers:
            ckey, edge = max(callers.items(), key=lambda kv: kv[1][2])
            caller, share = func_label(ckey), (edge[2] / tt if tt else None)
            # through torch's Python wrappers (F.embedding_bag, ...) up to the project's code
            hops = 0
            while not ckey[0].startswith(str(REPO / "structperc")) and hops < 3:
                up = stats.get(ckey, (None,) * 5)[4]
                if not up:
                    break
                ckey = max(up.items(), key=lambda kv: kv[1][3])[0]
                hops += 1
            if hops and ckey[0].startswith(str(REPO / "structperc")):
                caller = f"{caller} <- {func_label(ckey)}"
        rows.append(
            {
                "function": func_label(key),
                "calls": nc,
                "self_s": tt,
                "cum_s": ct,
                "main_caller": caller,
                "main_caller_share": share,
            }
        )
    return {"total_s": total, "functions": len(stats), "top": rows}


def torch_summary(prof, top: int) -> tuple[dict, str]:
    """The ``top`` operators by self CPU time, the time inside any operator, and the table."""
    averages = prof.key_averages()
    events = sorted(averages, key=lambda e: -e.self_cpu_time_total)
    rows = [
        {
            "op": e.key,
            "calls": e.count,
            "self_cpu_s": e.self_cpu_time_total / 1e6,
            "cpu_total_s": e.cpu_time_total / 1e6,
        }
        for e in events[:top]
    ]
    inside = sum(e.self_cpu_time_total for e in events) / 1e6
    table = averages.table(sort_by="self_cpu_time_total", row_limit=top)
    # the backward pass by autograd node, operators inside included (the CRF's DP backward)
    prefix = "autograd::engine::evaluate_function: "
    nodes = sorted((e for e in events if e.key.startswith(prefix)), key=lambda e: -e.cpu_time_total)
    backward = [
        {"node": e.key[len(prefix) :], "calls": e.count, "cpu_total_s": e.cpu_time_total / 1e6}
        for e in nodes[:top]
    ]
    return {"ops_self_s": inside, "ops": len(events), "top": rows, "backward": backward}, table


class Recorder:
    """Runs one instrument (``MODES``) around one measured unit; ``results[mode]`` its findings."""

    def __init__(self, targets: list[tuple[str, object, str]], rest: str, top: int) -> None:
        self.targets, self.rest, self.top = targets, rest, top
        self.results: dict[str, dict] = {}
        self.mode: str | None = None

    def start(self, mode: str) -> None:
        import torch

        self.mode = mode
        log(f"  measuring: {mode}")
        if mode == "timers":
            self.buckets = Buckets()
            for label, _, _ in self.targets:  # every bucket has a row, called or not
                self.buckets.seconds[label] += 0.0
                self.buckets.calls[label] += 0
            self.patched = Patched(self.buckets, self.targets)
        elif mode == "cprofile":
            self.profile = cProfile.Profile()
        elif mode == "torch":
            self.tprof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
            self.tprof.start()
        self.cpu0, self.t0 = time.process_time(), time.perf_counter()
        if mode == "cprofile":
            self.profile.enable()

    def stop(self, info: dict) -> None:
        if self.mode == "cprofile":
            self.profile.disable()
        wall, cpu = time.perf_counter() - self.t0, time.process_time() - self.cpu0
        out = {"wall_s": wall, "cpu_s": cpu, **info}
        if self.mode == "timers":
            self.patched.undo()
            rows = [
                {"label": k, "seconds": s, "calls": self.buckets.calls[k]}
                for k, s in self.buckets.seconds.items()
            ]
            rest = wall - sum(self.buckets.seconds.values())
            rows.append({"label": self.rest, "seconds": rest, "calls": None})
            out["buckets"] = sorted(rows, key=lambda b: -b["seconds"])
        elif self.mode == "cprofile":
            out.update(cprofile_summary(self.profile, self.top))
        elif self.mode == "torch":
            self.tprof.stop()
            summary, table = torch_summary(self.tprof, self.top)
            out.update(summary)
            print(f"\n[{self.mode}] torch.profiler, top {self.top} by self CPU:\n{table}")
        log(f"  {self.mode}: {wall:.2f} s wall")
        self.results[self.mode] = out
        self.mode = None


# ---------------------------------------------------------------------------------------------
# what the timers wrap
# ---------------------------------------------------------------------------------------------
def chain_targets() -> list[tuple[str, object, str]]:
    """Feature lookups, potentials and deltas of the chain (both online workloads)."""
    import structperc.model.updates as updates_mod
    import structperc.model.weights as weights_mod
    from structperc.model.updates import Updater
    from structperc.model.weights import ChainWeights
    from structperc.structures.chain import ChainStructure

    potentials = "potentials: chain_potentials (edge + node, first-token rows)"
    return [
        (
            "feature lookup: the joint node + edge EmbeddingBag (csr_scores)",
            ChainWeights,
            "csr_scores",
        ),
        (potentials, weights_mod, "chain_potentials"),
        (potentials, ChainStructure, "potentials"),
        ("delta: path_delta (tokens whose labels differ)", ChainStructure, "delta"),
        ("delta: csr_rows (CSR rows of those tokens, numpy)", updates_mod, "csr_rows"),
        ("updates: index_add_ into the tables (+ averaging sums)", Updater, "apply"),
        (BATCHES, ChainStructure, "instance"),
    ]


def perceptron_targets() -> list[tuple[str, object, str]]:
    import structperc.decode.viterbi as viterbi_mod
    import structperc.structures.chain as chain_mod
    from structperc.structures.chain import ChainStructure

    rest = "Viterbi: rest of argmax/best_path (constraints, one-document check)"
    return chain_targets() + [
        ("Viterbi: blocked max-plus scan (scan_blocks)", viterbi_mod, "scan_blocks"),
        (
            "Viterbi: blocks from edge + node, alpha, back-pointers, back-trace (viterbi_tokens)",
            chain_mod,
            "viterbi_tokens",
        ),
        (rest, ChainStructure, "best_path"),
        (rest, ChainStructure, "argmax"),
        ("errors: (gold != pred).sum()", ChainStructure, "errors"),
    ]


def proposed_targets() -> list[tuple[str, object, str]]:
    import structperc.decode.nbest as nbest_mod
    import structperc.decode.sidetracks as sidetracks_mod
    import structperc.features.document as document_mod
    import structperc.structures.rescoring as rescoring_mod
    from structperc.features.document import NonLocalFeatures
    from structperc.learn.proposed import ProposedPerceptron
    from structperc.model.document_weights import DocumentWeights
    from structperc.model.updates import SparseDelta
    from structperc.structures.rescoring import DocumentRescoring

    glue = "rescoring glue (candidates, _rescore: masks, cat, is_gold)"
    delta = "delta: Φ^g difference and concatenation (candidate_delta)"
    return chain_targets() + [
        (BATCHES, DocumentRescoring, "instance"),
        ("n-best: Viterbi forward pass (forward_scores)", sidetracks_mod, "forward_scores"),
        ("n-best: back-pointers (backpointers)", sidetracks_mod, "backpointers"),
        (
            "n-best: sidetrack search (_search: costs, top-k per path, heap)",
            sidetracks_mod,
            "_search",
        ),
        ("n-best: paths and scores to tensors (kbest_sidetracks)", nbest_mod, "kbest_sidetracks"),
        ("gold local score (path_scores)", rescoring_mod, "path_scores"),
        ("Φ^g: candidate codes (candidate_codes, numpy)", document_mod, "candidate_codes"),
        ("Φ^g: CSR ids (csr)", document_mod, "csr"),
        ("Φ^g: document index lookup (built in epoch 1, cached)", NonLocalFeatures, "index"),
        ("Φ^g: rest of vectorize/code_counts", NonLocalFeatures, "vectorize"),
        ("Φ^g·α^g: global_scores (embedding_bag)", DocumentWeights, "global_scores"),
        (glue, DocumentRescoring, "candidates"),
        (glue, DocumentRescoring, "_rescore"),
        (delta, DocumentRescoring, "candidate_delta"),
        (delta, DocumentRescoring, "_global_difference"),
        (delta, SparseDelta, "__add__"),
        ("learner step: choice of the rival (ProposedPerceptron.step)", ProposedPerceptron, "step"),
    ]


def crf_targets() -> list[tuple[str, object, str]]:
    import torch

    import structperc.crf.edges as edges_mod
    import structperc.crf.objective as objective_mod
    import structperc.crf.optimization as optimization_mod
    import structperc.decode.marginals as marginals_mod
    import structperc.decode.scaled_scan as scaled_mod
    import structperc.decode.sequential_scan as sequential_mod
    from structperc.crf.edges import RowEdges
    from structperc.crf.optimization import LBFGS
    from structperc.crf.sparse import _Lookup
    from structperc.decode.scaled_scan import ScaledLinearChain

    vector = "L-BFGS: other vector ops (two-loop -g and scaling, s = t d, y = g' - g)"
    layout = "DP: torch-struct layout (to_log_potentials; edges=false: transition_log_potentials)"
    gold = "DP: gold path scores (path_scores; edges=false: edges.gold_scores)"
    return [
        (
            "lookup: S = X W, embedding_bag forward (joint node + edge table; edges=false: node)",
            objective_mod,
            "lookup",
        ),
        ("gradient: X^T dS, transposed embedding_bag (_Lookup.backward)", _Lookup, "backward"),
        ("DP: potentials from token scores (chain_potentials)", objective_mod, "chain_potentials"),
        (layout, marginals_mod, "to_log_potentials"),
        ("DP forward: the scan (ScaledLinearChain)", ScaledLinearChain, "logpartition"),
        ("DP forward: pair products (scaled_scan.scaled_product)", scaled_mod, "scaled_product"),
        ("DP: edges of packed rows from token scores (RowEdges.forward)", RowEdges, "forward"),
        ("DP forward: the sequential scan (forward_scan)", sequential_mod, "forward_scan"),
        ("DP backward: the sequential scan (backward_scan)", sequential_mod, "backward_scan"),
        ("DP backward: marginals back to the tokens (RowEdges.backward)", RowEdges, "backward"),
        ("DP backward: autograd of the sequential path (autograd.grad)", torch.autograd, "grad"),
        (layout, edges_mod, "transition_log_potentials"),
        (gold, marginals_mod, "path_scores"),
        (gold, edges_mod, "gold_scores"),
        ("DP: rest of bucket_loss/nll/log_partition", objective_mod, "bucket_loss"),
        ("DP backward: autograd through the scan (loss.backward)", torch.Tensor, "backward"),
        ("posterior errors (argmax of marginals)", objective_mod, "posterior_errors"),
        (
            "objective glue: score cat, per-bucket gather/scatter, prior, grad accumulation",
            optimization_mod,
            "full_objective",
        ),
        ("L-BFGS: inner products (dot)", optimization_mod, "dot"),
        ("L-BFGS: axpy updates (y += a x)", optimization_mod, "axpy_"),
        (vector, LBFGS, "direction"),
        (vector, LBFGS, "step"),
    ]


# ---------------------------------------------------------------------------------------------
# workers
# ---------------------------------------------------------------------------------------------
def instantiate_conf(path: Path):
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    return instantiate(OmegaConf.load(path))


def tables_state(updater) -> dict:
    """The weights, averaging sums and instance count of ``updater``, copied."""
    return {
        "tables": {n: t.clone() for n, t in updater.weights.tables().items()},
        "sums": {n: t.clone() for n, t in updater.sums.items()},
        "seen": updater.seen,
    }


def restore_tables(updater, state: dict) -> None:
    import torch

    with torch.no_grad():
        for n, t in updater.weights.tables().items():
            t.copy_(state["tables"][n])
        for n, t in updater.sums.items():
            t.copy_(state["sums"][n])
    updater.seen = state["seen"]


def run_online(cfg: dict, learner, structure, updater, data, targets, rest: str) -> dict:
    """Epoch 1 (warm-up), then one epoch per mode, each from the state after epoch 1."""
    from structperc.learn.fitting import FitSettings
    from structperc.trainer import fit

    rec = Recorder(targets, rest, cfg["top"])
    state: dict = {}
    warm: dict = {}

    def on_epoch_start(epoch: int) -> dict:
        if epoch == 2:
            state.update(tables_state(updater))
        elif epoch > 2:
            restore_tables(updater, state)
        if epoch >= 2:
            rec.start(MODES[epoch - 2])
        return {}

    def on_epoch(ep) -> None:
        info = {
            "epoch": ep.epoch,
            "tokens": ep.tokens,
            "errors": ep.errors,
            "updates": ep.updates,
            "extra": dict(ep.extra),
        }
        if ep.epoch == 1:
            warm.update(info, wall_s=ep.seconds)
            log(f"  warm-up epoch: {ep.seconds:.2f} s")
        else:
            rec.stop({**info, "epoch_log_s": ep.seconds})

    fit(
        learner,
        structure,
        updater,
        data,
        FitSettings(max_epochs=1 + len(MODES), tol=0.0, shuffle=True, seed=0, progress=False),
        on_epoch=on_epoch,
        on_epoch_start=on_epoch_start,
    )
    return {"warmup": warm, "modes": rec.results, "peak_rss_mb": max_rss_mb()}


def worker_perceptron(cfg: dict) -> dict:
    from structperc.data.tags import encode_labels
    from structperc.model.updates import Updater
    from structperc.model.weights import ChainWeights
    from structperc.structures.chain import ChainData, ChainStructure

    setup_threads(cfg["threads"])
    corpus = load_corpus(cfg, ("train",))
    shared, _, _, mats = load_shared_model(Path(cfg["model_dir"]))
    labels, num_features = shared.labels, shared.num_features
    del shared
    learner = instantiate_conf(CONF / "learner" / "averaged.yaml")
    weights = ChainWeights(num_features, labels)  # from zero, as training starts
    updater = Updater(weights, average=learner.average)
    data = ChainData(mats["train"], encode_labels(corpus["train"], labels))
    log(f"perceptron: {len(data)} documents, {data.num_tokens} tokens")
    out = run_online(
        cfg,
        learner,
        ChainStructure(weights),
        updater,
        data,
        perceptron_targets(),
        REST["perceptron"],
    )
    out.update(documents=len(data), tokens=data.num_tokens, surface_features=num_features)
    return out


def worker_proposed(cfg: dict) -> dict:
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from structperc.data.tags import encode_labels
    from structperc.model.updates import Updater
    from structperc.structures.chain import ChainData
    from structperc.structures.rescoring import DocumentRescoring

    setup_threads(cfg["threads"])
    corpus = load_corpus(cfg, ("train",))
    local, _, _, mats = load_shared_model(Path(cfg["model_dir"]))
    labels = local.labels
    learner = instantiate_conf(CONF / "learner" / "proposed.yaml")
    learner.bpm_runs = 0  # the local weights start from the shared model instead
    experiment = OmegaConf.load(CONF / "experiment" / "conll03_nonlocal.yaml")
    doc_features = instantiate(experiment.document_features)
    doc_features.fit(corpus["train"], labels)
    weights = shared_document_weights(local, doc_features, labels)
    del local
    data = ChainData(mats["train"], encode_labels(corpus["train"], labels), corpus["train"])
    log(f"proposed: {len(data)} documents, {data.num_tokens} tokens")
    out = run_online(
        cfg,
        learner,
        DocumentRescoring(weights, doc_features),
        Updater(weights, average=learner.average),
        data,
        proposed_targets(),
        REST["proposed"],
    )
    out.update(
        documents=len(data),
        tokens=data.num_tokens,
        learner={k: getattr(learner, k) for k in ("n", "C", "C_local", "local_update")},
        families=list(doc_features.families),
        global_features=doc_features.num_features,
    )
    return out


def worker_crf(cfg: dict, edges: bool = True) -> dict:
    from collections import deque

    import torch

    from structperc.crf.optimization import LBFGSTraining
    from structperc.data.tags import encode_labels
    from structperc.model.weights import ChainWeights
    from structperc.structures.chain import ChainStructure

    setup_threads(cfg["threads"])
    corpus = load_corpus(cfg, ("train",))
    shared, _, _, mats = load_shared_model(Path(cfg["model_dir"]))
    labels, num_features = shared.labels, shared.num_features
    del shared
    learner = instantiate_conf(CONF / "learner" / "crf.yaml")
    learner.sigma2, learner.tol = cfg["sigma2"], 0.0
    learner._validate()
    # from zero, as a CRF run starts; edges=False: node features + a transition matrix
    weights = ChainWeights(num_features, labels, edges=edges)
    y = encode_labels(corpus["train"], labels)
    t0 = time.perf_counter()
    learner = learner.resolved(edges)  # as CRF.fit does
    run = LBFGSTraining(learner, ChainStructure(weights), mats["train"], y, 0, "cpu", False)
    setup_s = time.perf_counter() - t0
    log(f"crf: setup (X^T, {len(run.buckets)} DP buckets) {setup_s:.1f} s")
    t0 = time.perf_counter()
    first = run.iteration(1)
    warm = {"wall_s": time.perf_counter() - t0, "evaluations": first.updates}
    log(f"  warm-up iteration 1: {warm['wall_s']:.2f} s, {first.updates} evaluation(s)")
    opt = run.opt
    state = {
        "tables": [w.clone() for w in weights.tables().values()],
        "grad": [g.clone() for g in opt.grad],
        "loss": opt.loss,
        "pairs": list(opt.pairs),  # never written in place by later steps
        "last": dict(run.last),
    }

    rec = Recorder(crf_targets(), REST["crf" if edges else "crf_nodes"], cfg["top"])
    for mode in MODES:
        with torch.no_grad():
            for w, saved in zip(weights.tables().values(), state["tables"], strict=True):
                w.copy_(saved)
        opt.grad = [g.clone() for g in state["grad"]]  # step turns it into y in place
        opt.loss = state["loss"]
        opt.pairs = deque(state["pairs"], maxlen=opt.history)
        run.last = dict(state["last"])
        rec.start(mode)
        it = run.iteration(2)
        rec.stop(
            {
                "evaluations": it.updates,
                "objective": it.objective,
                "errors": it.errors,
                "step": it.extra["step"],
            }
        )

    # the prior's share of the objective glue, measured apart on the same tables
    tables = weights.dense_tables  # what the objective adds the prior to
    grads = [torch.zeros_like(w) for w in tables]
    t0 = time.perf_counter()
    sq = 0.0
    for w, g in zip(tables, grads, strict=True):
        g.add_(w, alpha=1.0 / learner.sigma2)
        sq += float(torch.dot(w.view(-1), w.view(-1)))
    prior_s = time.perf_counter() - t0
    return {
        "setup_s": setup_s,
        "warmup": warm,
        "modes": rec.results,
        "prior_s": prior_s,
        "documents": mats["train"].num_docs,
        "tokens": mats["train"].num_tokens,
        "dp_buckets": len(run.buckets),
        "parameters": sum(w.numel() for w in tables),
        "learner": {
            k: getattr(learner, k)
            for k in ("sigma2", "scan", "dtype", "history", "dp_batch_tokens")
        },
        "peak_rss_mb": max_rss_mb(),
    }


def worker_crf_nodes(cfg: dict) -> dict:
    """``worker_crf`` with ``features.edges=false`` (CRFsuite's model)."""
    return worker_crf(cfg, edges=False)


WORKERS = {
    "perceptron": worker_perceptron,
    "proposed": worker_proposed,
    "crf": worker_crf,
    "crf_nodes": worker_crf_nodes,
}


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------
def print_summary(name: str, result: dict, top: int) -> None:
    """The top costs of one workload on stdout."""
    modes = result["modes"]
    print(f"\n=== {name} ===")
    print(f"plain wall {modes['plain']['wall_s']:.2f} s")
    timers = modes["timers"]
    print(f"buckets (timers pass, {timers['wall_s']:.2f} s wall):")
    for b in timers["buckets"]:
        print(
            f"  {b['seconds']:8.3f} s {100 * b['seconds'] / timers['wall_s']:5.1f}%  {b['label']}"
        )
    cp = modes["cprofile"]
    print(f"cProfile top {top} by own time ({cp['total_s']:.2f} s profiled):")
    for r in cp["top"]:
        print(
            f"  {r['self_s']:8.3f} s {100 * r['self_s'] / cp['total_s']:5.1f}% "
            f"{r['calls']:>9,}  {r['function']}  <- {r['main_caller']}"
        )


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help=f"first documents only: {QUICK_DOCS}")
    ap.add_argument("--only", help=f"comma-separated workloads of {','.join(WORKLOADS)}")
    ap.add_argument("--threads", type=int, default=1, help="torch threads in every worker")
    ap.add_argument("--top", type=int, default=TOP, help="rows of the function and op tables")
    ap.add_argument("--out", type=Path, help="output folder (default: here; --quick: quick/)")
    ap.add_argument("--render-only", action="store_true", help="the markdown from profile.json")
    args = ap.parse_args(argv)
    out_dir = args.out or (HERE / "quick" if args.quick else HERE)
    if args.render_only:
        write_markdown(out_dir, json.loads((out_dir / "profile.json").read_text()))
        return
    names = chosen(args.only, WORKLOADS, "workload")
    base = {**base_config(args.quick, args.threads, QUICK_DOCS), "top": args.top, "sigma2": SIGMA2}
    info = machine_info(args.threads)
    t_start = time.perf_counter()
    workloads: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="structperc-profile-model-") as model_dir:
        base["model_dir"] = model_dir
        shared_cfg = {
            **base,
            **(perceptron_bench.QUICK if args.quick else perceptron_bench.DEFAULTS),
        }
        log("training the shared model (perceptron_bench.worker_model)")
        perceptron_bench.train_shared_model(shared_cfg)
        for name in names:
            log(f"workload {name}")
            load0 = list(os.getloadavg())
            result = run_worker(SCRIPT, name, base)
            result["loadavg_start"], result["loadavg_end"] = load0, list(os.getloadavg())
            workloads[name] = result
            print_summary(name, result, args.top)
    info["loadavg_end"] = list(os.getloadavg())
    config = public_config(base)
    profile = {
        "schema": 1,
        "command": " ".join([".venv/bin/python", "experiments/bench/profile_bench.py", *argv]),
        "config": config,
        "machine": info,
        "data": corpus_info(load_corpus(base, ("train",))),
        "shared_model": perceptron_bench.shared_info(shared_cfg),
        "wall_seconds": time.perf_counter() - t_start,
        "workloads": workloads,
    }
    path = out_dir / "profile.json"
    if args.only and path.is_file():
        old = json.loads(path.read_text())
        if old.get("config", {}).get("max_docs") == config["max_docs"]:
            kept = {k: v for k, v in old["workloads"].items() if k not in workloads}
            merged = {**kept, **workloads}
            for k in kept:
                merged[k].setdefault("run", old_run(old))
            profile["workloads"] = {k: merged[k] for k in WORKLOADS if k in merged}
            log(f"{path}: workloads {names} replaced, {list(kept)} kept")
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(profile, indent=1) + "\n")
    log(f"wrote {path}")
    write_markdown(out_dir, profile)
    log(f"done in {time.perf_counter() - t_start:.0f} s")


def old_run(old: dict) -> dict:
    """Where a kept workload was measured (an earlier run's command and machine)."""
    return {"command": old["command"], "machine": old["machine"]}


def write_markdown(out_dir: Path, profile: dict) -> None:
    """The breakdown as the last section of README.md (re-rendered by ``bench.py`` from
    results.json and this profile.json) when results.json is there, else as PROFILE.md."""
    if (out_dir / "results.json").is_file():
        import bench

        bench.write_readme(out_dir, json.loads((out_dir / "results.json").read_text()))
        log(f"wrote {out_dir / 'README.md'} (with the profile section)")
    else:
        (out_dir / "PROFILE.md").write_text(page("profile.md.j2", profile=profile, h="#"))
        log(f"wrote {out_dir / 'PROFILE.md'} (no results.json there)")


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker_main(WORKERS)
    else:
        main()
