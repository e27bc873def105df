"""The pipeline's warm-start and hashing runs on CoNLL-2003 (``README_pipeline.md``, written by
``pipeline_tables.py``): the averaged perceptron of ``+experiment=conll03_local`` through
Hydra, one training at a time, into ``experiments/warm_start/pipeline_runs/``.

Data.  CoNLL-2003's training file cut at its ``-DOCSTART-`` lines into its 946 documents, the
lines of each kept as they are (IOB1, four columns): half A is the first 473 documents, half B
the other 473 (``A.txt``, ``B.txt``); ``noMISC.txt`` is the whole file with the I-MISC and
B-MISC tags written O.  A run reads one of them through ``data.train=FILE`` (the conll03 preset
otherwise: dev, test, the eng.list jackknife over that file's documents); A ∪ B is the
preset's own training file.

Runs (``trainer.processes=1``, seed 0; ``trainer.init_from`` continues a run's model):

    A                       A from zero, 30 epochs (the preset's max_epochs)
    B                       B from zero, 30 epochs
    AB/epochs_K             A ∪ B from zero, stopped after K epochs
    A_then_AB/epochs_K      A's model continued on A ∪ B for K epochs (the same labels:
                            trainer.init_average=auto continues the average)
    A_then_AB_restart/epochs_K   the same with trainer.init_average=restart
    A_then_B/epochs_K       A's model continued on B alone for K epochs
    noMISC                  A ∪ B with MISC tagged O, 30 epochs
    noMISC_then_MISC/epochs_K   that model continued on A ∪ B with MISC for K epochs (two new
                            labels: trainer.init_average=auto restarts the average)
    noMISC_then_MISC_continue/epochs_K   the same with trainer.init_average=continue
    hashing/{edges,nodes}_{unhashed,bits_N}   A ∪ B, features.hash_bits=N, 30 epochs, with
                            edge features (the preset's) and with features.edges=false

With ``--seeds 1 2`` the halves' and MISC's chains (A, AB, A_then_AB, A_then_AB_restart,
noMISC, noMISC_then_MISC) are trained again with ``seed=S`` (the order of the training
documents) into ``seedS/...``: the spread of single runs beside the criteria's margins.

A chain of K's is one training stopped at each K and resumed (``trainer.resume=true`` from the
previous stage's copied checkpoint: the same epochs as one run, ``test_run``'s resume test), so
each stage's results.json holds the test F1 after K epochs.  After a run whose model is scored
on A's documents, ``half_a.json`` beside its results holds conlleval's scores of its
predictions on A, with the model's eng.list and with the list cut to the entities of half B
(``score_on_a``).

    PYTHONPATH=. .venv/bin/python experiments/warm_start/pipeline_train.py [--only halves misc]

A stage whose results.json exists is skipped, so the script resumes where it stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RUNS = HERE / "pipeline_runs"
HALF = 473  # documents of half A (of 946)
CHAIN = (1, 2, 3, 5, 8, 12, 20, 30)  # the epochs at which a chain stops and is scored
FORGET = (1, 3, 8, 30)  # A's model on B alone
HASH_BITS = (16, 18, 20, 22, 24)
EDGE_BITS = (16, 18, 20)  # edge features: 2^22 rows x 90 weights x 3 copies is 4.5 GB
BASE = ["+experiment=conll03_local", "trainer.processes=1", "trainer.progress=false"]


def data_folder() -> Path:
    return Path(os.environ.get("STRUCTPERC_DATA", ROOT.parent / "shared" / "data"))


def documents(path: Path) -> list[list[str]]:
    """The lines of each ``-DOCSTART-`` document of a CoNLL-2003 file, as they are."""
    docs: list[list[str]] = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("-DOCSTART-"):
            docs.append([])
        docs[-1].append(line)
    return docs


def write_splits(work: Path) -> dict[str, Path]:
    """A.txt, B.txt and noMISC.txt in ``work`` (module docstring)."""
    work.mkdir(parents=True, exist_ok=True)
    docs = documents(data_folder() / "conll2003" / "train.txt")
    assert len(docs) == 2 * HALF, len(docs)
    files = {"A": docs[:HALF], "B": docs[HALF:]}
    no_misc = [[_without_misc(line) for line in doc] for doc in docs]
    out = {}
    for name, chosen in [*files.items(), ("noMISC", no_misc)]:
        path = work / f"{name}.txt"
        path.write_text("".join(line for doc in chosen for line in doc), encoding="utf-8")
        out[name] = path
    return out


def _without_misc(line: str) -> str:
    parts = line.rstrip("\n").split(" ")
    if len(parts) == 4 and parts[3].endswith("-MISC"):
        return " ".join([*parts[:3], "O"]) + "\n"
    return line


def train(name: str, overrides: list[str], cache: Path) -> Path:
    """The run ``name`` (skipped when its results.json exists); its folder."""
    out = RUNS / name
    if (out / "results.json").is_file():
        return out
    command = [sys.executable, "-m", "structperc.run", *BASE, f"cache_dir={cache}", *overrides]
    command.append(f"hydra.run.dir={out}")
    print(" ".join(command[1:]), flush=True)
    subprocess.run(command, check=True, cwd=ROOT)
    return out


def chain(name: str, overrides: list[str], cache: Path, epochs=CHAIN) -> list[Path]:
    """``name/epochs_K`` for every K: one training stopped and resumed at each K."""
    out, previous = [], None
    for k in epochs:
        stage = RUNS / name / f"epochs_{k:02d}"
        more = [f"trainer.max_epochs={k}"]
        if previous is not None:
            if not (stage / "results.json").is_file():
                shutil.rmtree(stage / "checkpoint", ignore_errors=True)
                shutil.copytree(previous / "checkpoint", stage / "checkpoint")
            more.append("trainer.resume=true")
        done = train(f"{name}/epochs_{k:02d}", [*overrides, *more], cache)
        if previous is not None:  # (its checkpoint is the next stage's: kept once, 0.2 GB)
            shutil.rmtree(previous / "checkpoint", ignore_errors=True)
        previous = done
        out.append(done)
    return out


def score_on_a(run: Path) -> None:
    """conlleval's scores of ``run``'s model on the documents of half A (``half_a.json``), its
    gazetteer features from two lists: ``whole_list``, eng.list as the model holds it (the
    shared task's list, built from the training annotations: it names A's own entities), and
    ``list_of_b``, its entries that are entities of half B, with their type (the jackknife's
    rule for a training document, with A and B as the two folds): what a model recalls of A
    beyond what the list tells it."""
    target = run / "half_a.json"
    if target.is_file():
        return
    from structperc.data.loading import load_corpus
    from structperc.data.tags import iobes_to_iob2, spans
    from structperc.eval.chunks import evaluate
    from structperc.inference.loading import load_tagger, predict_labels
    from structperc.tasks.report import chunk_scores

    train = load_corpus("conll2003", data_folder())["train"]
    docs, half_b = train[:HALF], train[HALF:]
    in_b = {(t, tuple(d.tokens[s:e])) for d in half_b for s, e, t in spans(d.tags)}
    structure, features = load_tagger(run)
    whole = features.entries
    lists = {
        "whole_list": whole,
        "list_of_b": {t: {e for e in es if (t, e) in in_b} for t, es in whole.items()},
    }
    gold = [iobes_to_iob2(d.tags) for d in docs]
    out = {"documents": len(docs)}
    for name, entries in lists.items():
        features.entries = entries
        pred = predict_labels((structure, features), docs, batch_size=16)
        scores = evaluate(gold, [iobes_to_iob2(p) for p in pred], [d.sentence_starts for d in docs])
        out[name] = {"entries": sum(len(es) for es in entries.values()), **chunk_scores(scores)}
    target.write_text(json.dumps(out, indent=1))


def halves(files: dict[str, Path], cache: Path, seed: int = 0) -> None:
    at, seeded = (f"seed{seed}/", [f"seed={seed}"]) if seed else ("", [])
    a = train(f"{at}A", [*seeded, f"data.train={files['A']}"], cache)
    zero = chain(f"{at}AB", seeded, cache)
    continued = chain(f"{at}A_then_AB", [*seeded, f"trainer.init_from={a}"], cache)
    restarted = [*seeded, f"trainer.init_from={a}", "trainer.init_average=restart"]
    chain(f"{at}A_then_AB_restart", restarted, cache)
    if seed:
        return
    b = train("B", [f"data.train={files['B']}"], cache)
    on_b = [f"data.train={files['B']}", f"trainer.init_from={a}"]
    forgetting = chain("A_then_B", on_b, cache, FORGET)
    for run in [a, b, zero[-1], continued[-1], *forgetting]:
        score_on_a(run)


def misc(files: dict[str, Path], cache: Path, seed: int = 0) -> None:
    at, seeded = (f"seed{seed}/", [f"seed={seed}"]) if seed else ("", [])
    first = train(f"{at}noMISC", [*seeded, f"data.train={files['noMISC']}"], cache)
    chain(f"{at}noMISC_then_MISC", [*seeded, f"trainer.init_from={first}"], cache)
    if seed:
        return
    kept = [f"trainer.init_from={first}", "trainer.init_average=continue"]
    chain("noMISC_then_MISC_continue", kept, cache, FORGET)


def hashing(cache: Path) -> None:
    for bits in EDGE_BITS:
        train(f"hashing/edges_bits_{bits}", [f"features.hash_bits={bits}"], cache)
    train("hashing/nodes_unhashed", ["features.edges=false"], cache)
    for bits in HASH_BITS:
        nodes = ["features.edges=false", f"features.hash_bits={bits}"]
        train(f"hashing/nodes_bits_{bits}", nodes, cache)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=["halves", "misc", "hashing"])
    parser.add_argument("--seeds", nargs="*", type=int, default=[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/warm_start_splits"))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/warm_cache"))
    args = parser.parse_args()
    files = write_splits(args.work)
    for seed in args.seeds:
        if "halves" in args.only:
            halves(files, args.cache, seed)
        if "misc" in args.only:
            misc(files, args.cache, seed)
    if "hashing" in args.only:
        hashing(args.cache)


if __name__ == "__main__":
    main()
