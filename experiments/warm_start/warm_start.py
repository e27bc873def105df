"""Continued training through the scikit-learn face: the averaged perceptron on CoNLL-2003's
halves, trained on one, then continued (``partial_fit``, one epoch a call) on more data.

Data: CoNLL-2003's training documents (IOB2 labels, ``data.conll.read_conll``) as sentences
with sklearn-crfsuite's tutorial features (``word2features`` of experiments/bench/
sklearn_bench.py); half A is the first 473 documents' sentences, half B the other 473's.
Scores: conlleval's entity F1 (``eval.chunks.evaluate``, every sentence scored on its own) on
the test file, per type where named; "F1 on A" scores the model on A's own sentences (what it
keeps of what it was trained on).  ``CRF(algorithm="ap", random_state=seed)``; every model is
grown one epoch at a time by ``partial_fit``, scored after each epoch:

    zero      A u B from zero, E epochs (the reference: m calls of partial_fit are fit with
              max_iterations=m, tests/test_sklearn_warm_start.py)
    A         A from zero, E epochs
    A, AuB    A's model continued on A u B, E epochs
    A, B      A's model continued on B alone, E epochs
    no MISC   A u B with B-MISC and I-MISC tagged O, E epochs
    MISC on   that model continued on A u B with MISC, E epochs (two new labels)

each continued model a pickled copy of the one it continues (its training state with it), with
the estimator's default ``warm_average="auto"`` and, for A u B and MISC, the other choice too
(``continuation.py``).

The criteria, per seed: the first continued epoch on A u B whose test F1 is within 0.3 of the
zero model's after E epochs; the first continued epoch with MISC whose MISC F1 is within 2.0 of
the zero model's and every other type within 0.5.  A check that ``fit(warm_start=True)`` gives
the models of ``partial_fit``: A's model warm-started by ``fit`` on A u B with max_iterations=k
equals k partial_fit calls (the tables, bit for bit).

    python experiments/warm_start/warm_start.py [--epochs 15] [--seeds 0 1 2]

writes experiments/warm_start/{results.json,README.md}.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "experiments" / "bench"))

from sklearn_bench import sent2features  # noqa: E402

from structperc.data.conll import read_conll  # noqa: E402
from structperc.data.loading import require_data_dir  # noqa: E402
from structperc.eval.chunks import evaluate  # noqa: E402
from structperc.sklearn import CRF  # noqa: E402

TYPES = ("LOC", "MISC", "ORG", "PER")
STAGES = {  # name: (what the table calls it, its epochs in E's)
    "zero": ("A u B from zero", "{E} on A u B"),
    "A": ("A from zero", "{E} on A"),
    "A_then_AB": ("A, continued on A u B", "{E} on A + {E} on A u B"),
    "A_then_AB_restart": ("A, continued on A u B, average restarted", "{E} on A + {E} on A u B"),
    "A_then_B": ("A, continued on B alone", "{E} on A + {E} on B"),
    "no_misc": ("A u B, MISC tagged O", "{E} on A u B"),
    "misc_on": ("the same, continued with MISC", "{E} + {E} on A u B"),
    "misc_on_continue": ("the same, average continued", "{E} + {E} on A u B"),
}


def sentences_of(path: Path) -> list[list[list[tuple[str, str, str]]]]:
    """The documents of a CoNLL-2003 file, each a list of sentences of (word, POS, IOB2 tag)."""
    out = []
    for doc in read_conll(path):
        rows = list(zip(doc.tokens, doc.columns["pos"], doc.tags, strict=True))
        out.append([rows[a:b] for a, b in doc.sentence_spans()])
    return out


class Split:
    """Features and labels of the halves and the test file (module docstring)."""

    def __init__(self, data_dir: Path):
        docs = sentences_of(data_dir / "conll2003" / "train.txt")
        half = len(docs) // 2
        self.docs = (half, len(docs) - half)
        sents_a = [s for d in docs[:half] for s in d]
        sents_b = [s for d in docs[half:] for s in d]
        test = [s for d in sentences_of(data_dir / "conll2003" / "test.txt") for s in d]
        self.A = ([sent2features(s) for s in sents_a], [[t for *_, t in s] for s in sents_a])
        self.B = ([sent2features(s) for s in sents_b], [[t for *_, t in s] for s in sents_b])
        self.AB = (self.A[0] + self.B[0], self.A[1] + self.B[1])
        self.AB_no_misc = (self.AB[0], [[no_misc(t) for t in s] for s in self.AB[1]])
        self.test = ([sent2features(s) for s in test], [[t for *_, t in s] for s in test])

    def sizes(self) -> dict:
        return {
            name: {"sentences": len(y), "tokens": sum(map(len, y))}
            for name, (_, y) in (("A", self.A), ("B", self.B), ("test", self.test))
        } | {"documents": {"A": self.docs[0], "B": self.docs[1]}}


def no_misc(tag: str) -> str:
    return "O" if tag.endswith("-MISC") else tag


def scores(crf: CRF, data: tuple) -> dict:
    """Entity F1 overall and per type of ``crf`` on ``data`` = (X, y)."""
    X, y = data
    found = evaluate(y, [list(p) for p in crf.predict(X)])
    return {"f1": found.f1, **{t: found.per_type[t].f1 for t in TYPES if t in found.per_type}}


def curve(crf: CRF, data: tuple, epochs: int, split: Split, on_a: bool = False) -> list[dict]:
    """``epochs`` partial_fit calls of ``crf`` on ``data``, scored on the test set (and on A)
    after each."""
    out = []
    for k in range(1, epochs + 1):
        t0 = time.perf_counter()
        crf.partial_fit(*data)
        seconds = time.perf_counter() - t0
        point = {"epoch": k, "seconds": seconds, "test": scores(crf, split.test)}
        if on_a:
            point["A"] = scores(crf, split.A)
        out.append(point)
    return out


def first_epoch(points: list[dict], holds) -> int | None:
    """The first epoch whose point satisfies ``holds``, or None."""
    return next((p["epoch"] for p in points if holds(p)), None)


def copy_of(crf: CRF, average: str = "auto") -> CRF:
    """A pickled copy of ``crf`` (its training state with it), continuing with ``average``."""
    return pickle.loads(pickle.dumps(crf)).set_params(warm_average=average)


def one_seed(split: Split, epochs: int, seed: int, log=print) -> dict:
    zero = curve(CRF(algorithm="ap", random_state=seed), split.AB, epochs, split, on_a=True)
    log(f"seed {seed} zero: {zero[-1]['test']}")
    a_model = CRF(algorithm="ap", random_state=seed)
    a_only = curve(a_model, split.A, epochs, split, on_a=True)
    misc_model = CRF(algorithm="ap", random_state=seed)
    no_misc = curve(misc_model, split.AB_no_misc, epochs, split)
    runs = {  # name: (the model continued, its data, scored on A too)
        "A_then_AB": (copy_of(a_model), split.AB, False),
        "A_then_AB_restart": (copy_of(a_model, "restart"), split.AB, False),
        "A_then_B": (copy_of(a_model), split.B, True),
        "misc_on": (copy_of(misc_model), split.AB, False),
        "misc_on_continue": (copy_of(misc_model, "continue"), split.AB, False),
    }
    stages = {}
    for name, (model, data, on_a) in runs.items():
        stages[name] = curve(model, data, epochs, split, on_a)
        log(f"seed {seed} {name}: {stages[name][-1]['test']}")
    target = zero[-1]["test"]

    def reaches(p: dict) -> bool:
        return p["test"]["f1"] >= target["f1"] - 0.3

    def misc_reaches(p: dict) -> bool:
        others = all(p["test"][t] >= target[t] - 0.5 for t in TYPES if t != "MISC")
        return p["test"].get("MISC", 0.0) >= target["MISC"] - 2.0 and others

    return {
        "seed": seed,
        "zero": zero,
        "A": a_only,
        "no_misc": no_misc,
        **stages,
        "reach_epoch": {
            k: first_epoch(stages[k], reaches) for k in ("A_then_AB", "A_then_AB_restart")
        },
        "misc_reach_epoch": {
            k: first_epoch(stages[k], misc_reaches) for k in ("misc_on", "misc_on_continue")
        },
        "starts": {  # how each stage's first call started
            k: model.model_.info["lineage"][-epochs]["start"] for k, (model, *_) in runs.items()
        },
    }


def warm_fit_check(split: Split, epochs: int, k: int) -> dict:
    """A's model (``epochs`` partial_fit calls) continued on A u B by ``fit`` with warm_start
    and max_iterations=k, against k more partial_fit calls: the same tables?"""
    calls = CRF(algorithm="ap", warm_start=True)
    for _ in range(epochs):
        calls.partial_fit(*split.A)
    warm = CRF(algorithm="ap", warm_start=True, max_iterations=epochs, epsilon=0.0)
    warm.fit(*split.A)
    same_start = torch.equal(warm.model_.node, calls.model_.node)
    for _ in range(k):
        calls.partial_fit(*split.AB)
    warm.set_params(max_iterations=k).fit(*split.AB)
    same = torch.equal(warm.model_.node, calls.model_.node) and torch.equal(
        warm.model_.edge, calls.model_.edge
    )
    return {"epochs_on_A": epochs, "k": k, "same_start": same_start, "same": same}


def summary(runs: list[dict]) -> dict:
    def med(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    last = {
        name: {key: med([r[name][-1]["test"].get(key) for r in runs]) for key in ("f1", *TYPES)}
        for name in STAGES
    }
    on_a = {name: med([r[name][-1]["A"]["f1"] for r in runs]) for name in ("zero", "A", "A_then_B")}
    return {"test": last, "on_A": on_a}


def render(results: dict) -> str:
    E = results["epochs"]
    runs = results["runs"]
    s = results["summary"]
    sizes = results["sizes"]
    lines = [
        "# Continued training through the scikit-learn face: CoNLL-2003 in halves",
        "",
        "Written by `warm_start.py` from `results.json`:",
        "",
        "```",
        results["command"].strip(),
        "```",
        "",
        f"Half A: {sizes['documents']['A']} documents, {sizes['A']['sentences']:,} sentences, "
        f"{sizes['A']['tokens']:,} tokens; half B: {sizes['documents']['B']} documents, "
        f"{sizes['B']['sentences']:,} sentences, {sizes['B']['tokens']:,} tokens (CoNLL-2003 "
        "train, in file order); test: CoNLL-2003 test. sklearn-crfsuite's tutorial features, "
        f"IOB2 labels, `CRF(algorithm='ap', random_state=seed)`, every model grown by "
        f"`partial_fit` one epoch a call ({E} epochs a stage), seeds {results['seeds']}. "
        "Entity F1 (conlleval, per sentence); medians over the seeds.",
        "",
        "| model | epochs | test F1 | LOC | MISC | ORG | PER | F1 on A |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for key, (name, epochs) in STAGES.items():
        t = s["test"][key]
        on_a = s["on_A"].get(key)
        cells = [f"{t[k]:.2f}" if t.get(k) is not None else "-" for k in ("f1", *TYPES)]
        a = f"{on_a:.2f}" if on_a is not None else ""
        lines.append(f"| {name} | {epochs.format(E=E)} | {' | '.join(cells)} | {a} |")
    lines += ["", "Per seed, test F1 after each epoch of the continued stages:", ""]
    lines += ["| seed | stage | " + " | ".join(str(k) for k in range(1, E + 1)) + " |"]
    lines += ["|---|---|" + "---:|" * E]
    for r in runs:
        for key in ("zero", "A_then_AB", "A_then_AB_restart", "A_then_B", "misc_on",
                    "misc_on_continue"):  # fmt: skip
            name = STAGES[key][0] + (" (MISC F1)" if key.startswith("misc") else "")
            field = "MISC" if key.startswith("misc") else "f1"
            values = " | ".join(f"{p['test'].get(field, 0.0):.2f}" for p in r[key])
            lines.append(f"| {r['seed']} | {name} | {values} |")
    reach = [r["reach_epoch"]["A_then_AB"] for r in runs]
    reach_restart = [r["reach_epoch"]["A_then_AB_restart"] for r in runs]
    misc = [r["misc_reach_epoch"]["misc_on"] for r in runs]
    misc_continue = [r["misc_reach_epoch"]["misc_on_continue"] for r in runs]
    forget = [r["A_then_B"][-1]["A"]["f1"] - r["A"][-1]["A"]["f1"] for r in runs]
    check = results["warm_fit_check"]
    starts = runs[0]["starts"]
    lines += [
        "",
        'The continued models\' average (`warm_average`, default "auto": continued unless the '
        f"new data brings new labels): A, then A u B: {starts['A_then_AB']}; with MISC: "
        f"{starts['misc_on']} (the lineage's \"start\" of each stage's first call).",
        "",
        f"- **A, then A u B** reaches the zero model's test F1 (after its {E} epochs on A u B) "
        f"within 0.3 after {reach} epochs on A u B (per seed; None: not within {E}); with the "
        f"average restarted, after {reach_restart}.",
        f"- **MISC**: continued with MISC, MISC F1 within 2.0 of the zero model's and every "
        f"other type within 0.5 (or above) after {misc} epochs (per seed); with the average "
        f"continued, after {misc_continue}.",
        f"- **A, then B alone**: F1 on A's own sentences changes by "
        f"{', '.join(f'{d:+.2f}' for d in forget)} (per seed) against A's model; test F1 "
        f"{s['test']['A_then_B']['f1']:.2f} against {s['test']['A']['f1']:.2f} for A alone "
        f"and {s['test']['zero']['f1']:.2f} for A u B from zero (medians).",
        f"- `fit(warm_start=True)` on A u B with max_iterations={check['k']} after "
        f"{check['epochs_on_A']} epochs on A gives the tables of {check['k']} partial_fit "
        f"calls, bit for bit: **{'yes' if check['same'] and check['same_start'] else 'no'}**.",
        "",
        f"Load average {results['load_before']:.2f} before, {results['load_after']:.2f} after; "
        f"{results['seconds']:.0f} s in all.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    t0 = time.perf_counter()
    load_before = os.getloadavg()[0]
    torch.set_num_threads(1)
    split = Split(require_data_dir(None, "conll2003"))
    runs = [one_seed(split, args.epochs, seed) for seed in args.seeds]
    results = {
        "command": "python experiments/warm_start/warm_start.py " + " ".join(sys.argv[1:]),
        "epochs": args.epochs,
        "seeds": args.seeds,
        "sizes": split.sizes(),
        "runs": runs,
        "summary": summary(runs),
        "warm_fit_check": warm_fit_check(split, args.epochs, 3),
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "seconds": time.perf_counter() - t0,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "README.md").write_text(render(results))
    print(render(results))


if __name__ == "__main__":
    main()
