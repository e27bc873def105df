"""Section 10 of ``make bench``: sklearn-crfsuite's tutorial pipeline through
``sklearn_crfsuite.CRF`` and through ``structperc.sklearn.CRF``, the same script and settings.

The tutorial's ``word2features`` / ``sent2labels`` (sklearn-crfsuite's docs, "Tutorial"; the same
functions as ``tests/test_sklearn_tutorial.py``) on CoNLL-2003's sentences as (word, POS tag,
label) triples (IOB1 labels as in the files): train on the training sentences, label the test
sentences.  For each algorithm (CRFsuite's names, the settings of ``ALGORITHMS`` for both) and
each estimator, one fresh worker process per repeat (``--worker``: one torch thread) measures
``fit`` (wall and CPU seconds, forked children's included; the python-crfsuite item
conversion included for both), then
``predict`` and ``predict_marginals`` of the test sentences (tokens/s), the entity F1 (seqeval's
default mode, conlleval's chunk rules) and the model's non-zero weights; structperc trains with
``n_jobs=1`` and ``n_jobs=2``.  Medians over the repeats.  pa and arow (structperc's
``learn/passive_aggressive.py`` and ``learn/arow.py``) and c1 > 0 (the CRF's L1) are run where
this tree has them, else the lbfgs row runs with c1 = 0 and says so.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

EVERY = ["lbfgs", "l2sgd", "ap", "pa", "arow"]
DEFAULTS = {
    "repeats": 3,
    "train_sentences": None,
    "test_sentences": None,
    "jobs": [1, 2],
    "algorithms": EVERY,
}
QUICK = {**DEFAULTS, "repeats": 1, "train_sentences": 2000, "test_sentences": 1000}
ALGORITHMS = {  # the estimators' settings, the same for both
    "lbfgs": {"c1": 0.1, "c2": 0.1, "max_iterations": 100, "all_possible_transitions": True},
    "l2sgd": {"c2": 0.1, "max_iterations": 20},
    "ap": {"max_iterations": 10},
    "pa": {"max_iterations": 10},
    "arow": {"max_iterations": 10},
}
ENGINE = {"pa": "structperc.learn.passive_aggressive", "arow": "structperc.learn.arow"}


def available(algorithm: str) -> bool:
    """Whether structperc has the algorithm's learner in this tree."""
    module = ENGINE.get(algorithm)
    return module is None or importlib.util.find_spec(module) is not None


def has_c1() -> bool:
    from structperc.crf.learner import CRF

    return "c1" in inspect.signature(CRF).parameters


def settings_of(algorithm: str) -> dict:
    out = {"algorithm": algorithm, **ALGORITHMS[algorithm]}
    if "c1" in out and not has_c1():
        out["c1"] = 0.0
    return out


# -- the tutorial's pipeline ---------------------------------------------------------------------
def iob_sents(path: Path, limit: int | None) -> list[list[tuple[str, str, str]]]:
    """CoNLL-2003 sentences as (word, POS tag, NER label), the first ``limit`` (None: all)."""
    sents, current = [], []
    for line in path.read_text().splitlines():
        cols = line.split()
        if not cols or cols[0] == "-DOCSTART-":
            if current:
                sents.append(current)
                current = []
            continue
        current.append((cols[0], cols[1], cols[3]))
    if current:
        sents.append(current)
    return sents if limit is None else sents[:limit]


def word2features(sent, i):
    word = sent[i][0]
    postag = sent[i][1]
    features = {
        "bias": 1.0,
        "word.lower()": word.lower(),
        "word[-3:]": word[-3:],
        "word[-2:]": word[-2:],
        "word.isupper()": word.isupper(),
        "word.istitle()": word.istitle(),
        "word.isdigit()": word.isdigit(),
        "postag": postag,
        "postag[:2]": postag[:2],
    }
    if i > 0:
        word1 = sent[i - 1][0]
        postag1 = sent[i - 1][1]
        features.update(
            {
                "-1:word.lower()": word1.lower(),
                "-1:word.istitle()": word1.istitle(),
                "-1:word.isupper()": word1.isupper(),
                "-1:postag": postag1,
                "-1:postag[:2]": postag1[:2],
            }
        )
    else:
        features["BOS"] = True
    if i < len(sent) - 1:
        word1 = sent[i + 1][0]
        postag1 = sent[i + 1][1]
        features.update(
            {
                "+1:word.lower()": word1.lower(),
                "+1:word.istitle()": word1.istitle(),
                "+1:word.isupper()": word1.isupper(),
                "+1:postag": postag1,
                "+1:postag[:2]": postag1[:2],
            }
        )
    else:
        features["EOS"] = True
    return features


def sent2features(sent):
    return [word2features(sent, i) for i in range(len(sent))]


def sent2labels(sent):
    return [label for token, postag, label in sent]


# -- one worker: one estimator, one algorithm ----------------------------------------------------
def worker(job: dict) -> dict:
    """Train and apply one estimator; what it measured."""
    import torch

    torch.set_num_threads(1)
    from seqeval.metrics import f1_score

    data = Path(job["data_dir"]) / "conll2003"
    train = iob_sents(data / "train.txt", job["train_sentences"])
    test = iob_sents(data / "test.txt", job["test_sentences"])
    X_train, y_train = [sent2features(s) for s in train], [sent2labels(s) for s in train]
    X_test, y_test = [sent2features(s) for s in test], [sent2labels(s) for s in test]
    if job["estimator"] == "crfsuite":
        import sklearn_crfsuite

        crf = sklearn_crfsuite.CRF(**job["settings"])
    else:
        from structperc.sklearn import CRF

        crf = CRF(**job["settings"], n_jobs=job["n_jobs"])
    t0, c0 = time.perf_counter(), cpu_seconds()
    crf.fit(X_train, y_train)
    fit_s, fit_cpu = time.perf_counter() - t0, cpu_seconds() - c0
    tokens = sum(len(s) for s in X_test)
    t0 = time.perf_counter()
    y_pred = crf.predict(X_test)
    predict_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    crf.predict_marginals(X_test)
    marginals_s = time.perf_counter() - t0
    nonzero = len(crf.state_features_) + len(crf.transition_features_)
    if job["estimator"] == "crfsuite":
        weights = crf.training_log_.featgen_num_features
    else:
        weights = trainable_weights(crf, X_train, y_train)
    return {
        "fit_s": fit_s,
        "fit_cpu_s": fit_cpu,
        "predict_tokens_per_s": tokens / predict_s,
        "marginals_tokens_per_s": tokens / marginals_s,
        "f1": 100 * f1_score(y_test, [list(p) for p in y_pred]),
        "nonzero_weights": nonzero,
        "weights": weights,
        "attributes": len(crf.attributes_),
        "train_tokens": sum(len(s) for s in X_train),
        "test_tokens": tokens,
    }


def trainable_weights(crf, X, y) -> int:
    """The weights structperc's model trains: with ``all_possible_states`` off and L-BFGS the
    (attribute, label) pairs seen in training (CRFsuite's features), else every pair; and the
    L x L transition matrix."""
    from structperc.sklearn.algorithms import resolved

    params = resolved(crf.get_params())
    L, A = len(crf.classes_), len(crf.attributes_)
    if params["algorithm"] != "lbfgs" or params["all_possible_states"]:
        return A * L + L * L
    index = {label: i for i, label in enumerate(crf.classes_)}
    seen = crf.model_.attributes.index
    pairs = set()
    for xseq, yseq in zip(X, y, strict=True):
        for item, label in zip(xseq, yseq, strict=True):
            for name, value in item.items():
                key = name + ":" + value if isinstance(value, str) else name
                if value is not False and key in seen:
                    pairs.add((seen[key], index[label]))
    return len(pairs) + L * L


def cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (``n_jobs`` > 1 trains in
    forked children)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_worker(job: dict) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(job)],
        capture_output=True,
        text=True,
    )
    if out.returncode:
        raise RuntimeError(f"worker {job['estimator']} {job['settings']}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def medians(runs: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def run(cfg: dict) -> dict:
    from common import log

    from structperc.sklearn.algorithms import ALGORITHMS as ALGORITHMS_OF_STRUCTPERC

    rows = []
    for algorithm in cfg["algorithms"]:
        if not available(algorithm):
            log(f"sklearn: {algorithm} skipped (structperc has no {ENGINE[algorithm]} here)")
            continue
        settings = settings_of(algorithm)
        row = {"algorithm": algorithm, "settings": settings, "runs": {}}
        parallel = ALGORITHMS_OF_STRUCTPERC[algorithm].parallel
        systems = [("crfsuite", 1)] + [("structperc", j) for j in cfg["jobs"] if parallel or j == 1]
        for estimator, jobs in systems:
            name = estimator if estimator == "crfsuite" else f"structperc_jobs{jobs}"
            runs = []
            for _ in range(cfg["repeats"]):
                job = {
                    "estimator": estimator,
                    "settings": settings,
                    "n_jobs": jobs,
                    "data_dir": str(cfg["data_dir"]),
                    "train_sentences": cfg["train_sentences"],
                    "test_sentences": cfg["test_sentences"],
                }
                runs.append(run_worker(job))
                log(f"sklearn {algorithm} {name}: {runs[-1]}")
            row["runs"][name] = runs
            row[name] = medians(runs)
        rows.append(row)
    return {"config": cfg, "rows": rows}


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        print(json.dumps(worker(json.loads(sys.argv[2]))))
    else:
        sys.exit("run through bench.py (--only sklearn), or --worker JOB_JSON")
