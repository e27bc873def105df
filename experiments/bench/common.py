"""Helpers shared by the benchmark sections (``bench.py`` runs them all).

Timing and memory (``Stopwatch``, ``max_rss_mb``), the data and the features every section uses,
CRFsuite's attribute strings built from ``LocalFeatures`` (so both systems see the same surface
features), a ``pycrfsuite.Trainer`` that timestamps its log, worker subprocesses, machine facts,
and the shared model: the averaged perceptron the perceptron section trains, saved with its
feature matrices so that later sections start from a trained model without extracting again.
"""

from __future__ import annotations

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
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RUNS = REPO / "experiments" / "kazama2007" / "runs"
# --quick: the first documents of each split
QUICK_DOCS = {"train": 60, "dev": 15, "test": 20}
# what perceptron_bench.py's workers measure (cfg["task"]): NER on CoNLL-2003, or POS tagging
TASKS = ("ner", "pos")


# ---------------------------------------------------------------------------------------------
# timing, memory, logging
# ---------------------------------------------------------------------------------------------
def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def max_rss_mb() -> float:
    """This process's peak resident set size so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def median(xs: list[float]) -> float | None:
    return float(statistics.median(xs)) if xs else None


def tensor_mb(*tensors) -> float:
    return sum(t.numel() * t.element_size() for t in tensors) / 2**20


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


def timed_passes(fn: Callable[[], object], repeats: int, budget_s: float) -> dict:
    """Run ``fn`` up to ``repeats`` times, starting no pass (after the first) that would end past
    ``budget_s`` seconds at the passes' mean pace; wall and CPU seconds of each, and medians."""
    wall, cpu = [], []
    for _ in range(max(repeats, 1)):
        if wall and sum(wall) * (len(wall) + 1) / len(wall) > budget_s:
            break
        sw = Stopwatch()
        fn()
        w, c = sw.lap()
        wall.append(w)
        cpu.append(c)
    return {"s_all": wall, "cpu_s_all": cpu, "s": median(wall), "cpu_s": median(cpu)}


def setup_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set in this process
        pass


# ---------------------------------------------------------------------------------------------
# data and features
# ---------------------------------------------------------------------------------------------
def find_data_dir() -> Path:
    """The data folder with ``conll2003/``: ``$STRUCTPERC_DATA``, else ``../shared/data`` beside
    the repository (``structperc.data.loading.require_data_dir``); exits with its message."""
    from structperc.data.loading import require_data_dir

    try:
        path = require_data_dir(corpus="conll2003", default=REPO.parent / "shared" / "data")
    except FileNotFoundError as err:
        sys.exit(f"CoNLL-2003 not found: {err}")
    return path.resolve()


def chosen(only: str | None, known: tuple | list | dict, what: str) -> list[str]:
    """The names of a comma-separated ``--only`` (every name of ``known`` without one), in the
    order of ``known``; exits on a name not in it (``what``: "section", "workload")."""
    names = list(known) if not only else [s.strip() for s in only.split(",")]
    unknown = [s for s in names if s not in known]
    if unknown:
        sys.exit(f"--only: unknown {what}(s) {unknown}; known: {list(known)}")
    return [s for s in known if s in names]


def base_config(quick: bool, threads: int, quick_docs: dict = QUICK_DOCS) -> dict:
    """The settings every worker of a run gets: the data folder (``find_data_dir``), with
    ``quick`` the first ``quick_docs`` documents of each split, and the torch threads."""
    return {
        "data_dir": str(find_data_dir()),
        "max_docs": quick_docs if quick else None,
        "quick": quick,
        "threads": threads,
    }


def public_config(cfg: dict) -> dict:
    """Settings as a results file keeps them: without this run's temporary ``model_dir``, the
    data folder relative to the repository when it lies beside it."""
    out = {k: v for k, v in cfg.items() if k != "model_dir"}
    path = Path(cfg["data_dir"])
    out["data_dir"] = os.path.relpath(path, REPO) if path.is_relative_to(REPO.parent) else str(path)
    return out


def task_of(cfg: dict) -> str:
    """The task a worker measures: ``cfg["task"]``, "ner" (CoNLL-2003, the default) or "pos"
    (the tagchunk POS tagger on CoNLL-2000)."""
    task = cfg.get("task", "ner")
    if task not in TASKS:
        raise ValueError(f"bench task must be one of {TASKS}, got {task!r}")
    return task


def load_corpus(cfg: dict, splits: tuple[str, ...] = ("train", "dev", "test")) -> dict:
    """CoNLL-2003 documents of ``splits``, the first ``cfg["max_docs"][split]`` if set; with
    ``cfg["task"] == "pos"`` the POS tagger's sentences instead (``load_pos_corpus``)."""
    from structperc.data.conll import read_conll

    if task_of(cfg) == "pos":
        return load_pos_corpus(cfg, splits)
    folder = Path(cfg["data_dir"]) / "conll2003"
    corpus = {}
    for split in splits:
        docs = read_conll(folder / f"{split}.txt")
        corpus[split] = first_docs(cfg, split, docs)
    return corpus


def first_docs(cfg: dict, split: str, docs: list) -> list:
    """The first ``cfg["max_docs"][split]`` documents (``--quick``), else all."""
    limit = cfg["max_docs"].get(split) if cfg.get("max_docs") else None
    return docs[:limit] if limit else docs


def load_pos_corpus(cfg: dict, splits: tuple[str, ...] = ("train", "dev", "test")) -> dict:
    """The tagchunk POS tagger's data, as ``structperc.tasks.tagchunk.run_tagchunk`` makes it:
    CoNLL-2000 sentences in Penn Treebank form (``as_treebank``), train minus its last
    ``cfg["dev_sentences"]`` sentences (those are dev: ``split_dev``), tags = the POS column
    (``as_pos_task``).  ``cfg["max_docs"]`` cuts each split after the dev split is taken."""
    from structperc.data.loading import load_corpus as load_named
    from structperc.data.treebank import as_treebank
    from structperc.tasks.tagchunk import as_pos_task, split_dev

    raw = load_named("conll2000", cfg["data_dir"])
    corpus = split_dev(
        {s: [as_treebank(d) for d in docs] for s, docs in raw.items()}, cfg["dev_sentences"]
    )
    return {s: as_pos_task(first_docs(cfg, s, corpus[s])) for s in splits}


def tagchunk_pos_settings() -> dict:
    """The tagchunk POS tagger's settings, read from the project's Hydra config so that they
    cannot drift: ``+experiment=conll00_tagchunk`` composed as ``python -m structperc.run`` does,
    its features with the task's ``pos_attributes``, ``pos_bigrams`` and ``pos_trigrams``, no
    gazetteer (``structperc.tasks.tagchunk.tagchunk_settings``, the "pos" part), and
    ``task.dev_sentences``."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base=None):
        cfg = compose("config", overrides=["+experiment=conll00_tagchunk"])
    task = cfg.task
    features = OmegaConf.to_container(cfg.features, resolve=True)
    features.pop("_target_", None)
    features.update(
        attributes=list(task.pos_attributes),
        bigram_attributes=list(task.pos_bigrams),
        trigram_attributes=list(task.get("pos_trigrams") or []),
        gazetteer="none",
        gazetteers=[],
    )
    return {
        "features": features,
        "dev_sentences": int(task.dev_sentences),
        "settings_from": "+experiment=conll00_tagchunk",
    }


def corpus_info(corpus: dict) -> dict:
    return {
        s: {"documents": len(docs), "tokens": sum(len(d) for d in docs)}
        for s, docs in corpus.items()
    }


def make_features(cfg: dict):
    """Kazama & Torisawa's local features (the defaults of ``LocalFeatures``, jackknifed
    gazetteer); with ``cfg["task"] == "pos"`` the tagchunk POS tagger's, ``cfg["features"]``
    (``tagchunk_pos_settings``: no gazetteer, ``edges=False``)."""
    from structperc.features.pipeline import LocalFeatures

    if task_of(cfg) == "pos":
        return LocalFeatures(**cfg["features"])
    return LocalFeatures(gazetteer_path=str(Path(cfg["data_dir"]) / "conll2003" / "eng.list"))


def test_f1(gold_docs, pred_tags) -> float:
    from structperc.eval import evaluate

    starts = [d.sentence_starts for d in gold_docs]
    return evaluate([d.tags for d in gold_docs], pred_tags, starts).f1


def test_accuracy(gold_docs, pred_tags) -> float:
    """Token accuracy in percent: predicted tags equal to the gold ones, over every token."""
    pairs = [
        (g, p)
        for d, tags in zip(gold_docs, pred_tags, strict=True)
        for g, p in zip(d.tags, tags, strict=True)
    ]
    return 100.0 * sum(g == p for g, p in pairs) / len(pairs) if pairs else 0.0


def test_quality(cfg: dict, gold_docs, pred_tags) -> dict:
    """The test score of a task: {"test_f1": chunk F1} for NER, {"test_accuracy": token
    accuracy} for POS (both in percent)."""
    if task_of(cfg) == "pos":
        return {"test_accuracy": test_accuracy(gold_docs, pred_tags)}
    return {"test_f1": test_f1(gold_docs, pred_tags)}


# ---------------------------------------------------------------------------------------------
# CRFsuite attribute strings from the same LocalFeatures columns
# ---------------------------------------------------------------------------------------------
def attribute_lists(feats, docs, training: bool = False):
    """Per document, per token, its CRFsuite attribute strings ("bias", "w[-1]=Germany", ...):
    the features the fitted ``feats`` (``LocalFeatures``) gives it through the library's own
    template code (``transform``; ``training``: the training documents' jackknifed columns),
    named as its vocabulary names them (``Vocabulary.feature_string``), each string made once
    and shared."""
    names = [feats.vocab.feature_string(i) for i in range(feats.num_features)]
    matrix = feats.transform(list(docs), training=training)
    # a document's ids as Python ints at a time: the whole set's (19M on CoNLL-2003's training
    # set) as one list would add ~700 MB of int objects to the CRFsuite worker's peak memory
    ids, offsets = matrix.ids.numpy(), matrix.offsets.numpy()
    token = 0
    for doc in docs:
        first, end = int(offsets[token]), int(offsets[token + len(doc)])
        doc_ids = ids[first:end].tolist()
        bounds = (offsets[token : token + len(doc) + 1] - first).tolist()
        pairs = zip(bounds[:-1], bounds[1:], strict=True)
        rows = [[names[i] for i in doc_ids[a:b]] for a, b in pairs]
        token += len(doc)
        yield rows


def stamped_trainer(**kwargs):
    """A ``pycrfsuite.Trainer`` that notes (wall, CPU) time of every line CRFsuite logs, in
    ``trainer.stamped``."""
    import pycrfsuite

    class Stamped(pycrfsuite.Trainer):
        def message(self, message):
            self.stamped.append((time.perf_counter(), time.process_time(), message))
            super().message(message)

    trainer = Stamped(**kwargs)
    trainer.stamped = []
    return trainer


def iteration_times(stamped: list[tuple[float, float, str]], clock: int) -> list[float]:
    """Seconds of each CRFsuite iteration (clock 0: wall, 1: CPU) from a stamped log.

    Iteration i runs from the end of iteration i-1's log (for i = 1: the "epsilon" line, the last
    before the loop) to its "Seconds required for this iteration" line.
    """
    lines = [(stamp[clock], stamp[2]) for stamp in stamped]
    start = next(t for t, m in lines if m.startswith("epsilon:"))
    ends = [t for t, m in lines if m.startswith("Seconds required for this iteration")]
    return [b - a for a, b in zip([start, *ends[:-1]], ends, strict=True)]


# ---------------------------------------------------------------------------------------------
# the shared model: averaged perceptron + feature matrices, saved once per bench run
# ---------------------------------------------------------------------------------------------
def train_shared_weights(cfg: dict, epochs: int) -> tuple:
    """The bench's shared model: CoNLL-2003 (``load_corpus``), the local features fitted on
    train, ``epochs`` averaged-perceptron epochs (shuffled, seed 0), averaged.

    Returns (corpus, features, matrices by split, labels, training label ids, weights)."""
    from structperc.data.tags import encode_labels, label_set
    from structperc.learn.fitting import FitSettings
    from structperc.learn.perceptron import Perceptron
    from structperc.model.updates import Updater
    from structperc.model.weights import ChainWeights
    from structperc.structures.chain import ChainData, ChainStructure
    from structperc.trainer import fit

    corpus = load_corpus(cfg)
    feats = make_features(cfg)
    feats.fit(corpus["train"])
    mats = {s: feats.transform(docs, training=(s == "train")) for s, docs in corpus.items()}
    labels = label_set(corpus["train"])
    y = encode_labels(corpus["train"], labels)
    weights = ChainWeights(feats.num_features, labels, edges=feats.edges)  # NER: True
    updater = Updater(weights, average=True)
    fit(
        Perceptron(average=True),
        ChainStructure(weights),
        updater,
        ChainData(mats["train"], y),
        FitSettings(max_epochs=epochs, tol=0.0, shuffle=True, seed=0, progress=False),
    )
    updater.finalize()
    return corpus, feats, mats, labels, y, weights


def save_shared_model(directory: Path, weights, features, mats: dict, info: dict) -> None:
    """The model (``save_model``: tables, vocabulary) and the CSR matrices of every split."""
    from structperc.io import atomic_save_tensors
    from structperc.model.files import save_model

    save_model(directory, weights, features, info)
    tensors = {f"{s}.{n}": t for s, m in mats.items() for n, t in m.tensors().items()}
    atomic_save_tensors(directory / "matrices.safetensors", tensors)


def load_shared_model(directory: Path):
    """(weights, features, info, matrices by split) written by ``save_shared_model``."""
    from structperc.features.extract import FeatureMatrix
    from structperc.io import load_tensors
    from structperc.model.files import load_model

    weights, features, info = load_model(directory)
    tensors = load_tensors(directory / "matrices.safetensors")
    mats = {}
    for split in {k.split(".", 1)[0] for k in tensors}:
        t = {k.split(".", 1)[1]: v for k, v in tensors.items() if k.startswith(split + ".")}
        mats[split] = FeatureMatrix(t["ids"], t["offsets"], t["doc_offsets"])
    return weights, features, info, mats


# ---------------------------------------------------------------------------------------------
# worker subprocesses
# ---------------------------------------------------------------------------------------------
def run_worker(script: Path, name: str, cfg: dict) -> dict:
    """Run ``script --worker name`` in a fresh process with ``cfg`` (JSON); its result dict.

    Its ``[bench ...]`` log lines pass through; its last 50 stderr lines on failure.
    """
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(cfg.get("threads", 1))
    env["PYTHONHASHSEED"] = "0"
    with tempfile.TemporaryDirectory(prefix="structperc-bench-") as tmp:
        result = Path(tmp) / "result.json"
        cmd = [sys.executable, str(script), "--worker", name]
        cmd += ["--worker-config", json.dumps(cfg), "--worker-out", str(result)]
        proc = subprocess.Popen(cmd, env=env, cwd=REPO, stderr=subprocess.PIPE, text=True)
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if "[bench " in line:
                print(line[line.index("[bench ") :], end="", file=sys.stderr, flush=True)
        if proc.wait() != 0:
            sys.stderr.write("".join(lines[-50:]))
            raise RuntimeError(f"{script.name} worker {name} failed (exit {proc.returncode})")
        return json.loads(result.read_text())


def worker_main(workers: dict[str, Callable[[dict], dict]]) -> None:
    """The entry point of a section script: ``--worker NAME --worker-config JSON --worker-out
    PATH`` runs ``workers[NAME](config)`` and writes its dict as JSON."""
    import argparse

    ap = argparse.ArgumentParser(description="a bench worker (run by experiments/bench/bench.py)")
    ap.add_argument("--worker", choices=sorted(workers), required=True)
    ap.add_argument("--worker-config", required=True)
    ap.add_argument("--worker-out", type=Path, required=True)
    args = ap.parse_args()
    out = workers[args.worker](json.loads(args.worker_config))
    args.worker_out.write_text(json.dumps(out))


# ---------------------------------------------------------------------------------------------
# ratios and machine facts
# ---------------------------------------------------------------------------------------------
def ratio(kind: str, sp: float | None, peer: float | None) -> float | None:
    """structperc relative to its peer: for times peer / sp (> 1: structperc faster), else
    sp / peer (rates: > 1 structperc faster; memory, counts: > 1 structperc larger)."""
    if sp is None or peer is None:
        return None
    num, den = (peer, sp) if kind == "time" else (sp, peer)
    return num / den if den else None


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
