"""What every task writes after it trains: results.json and the hyperparameters.

``chunk_scores`` is conlleval's scores in results.json's form, ``token_results`` a plain tagging
task's, ``chunk_curves`` the per-type F1 and error classes of an evaluation; ``finish`` writes
``results.json`` (atomically) and the hyperparameters against the final metrics (the HPARAMS
tab); ``timed`` measures a call.  What a task reports while it trains is ``training.py``'s.
"""

from __future__ import annotations

import logging
import resource
import time
from pathlib import Path

from structperc.eval.chunks import ChunkScores
from structperc.eval.errors import chunk_errors, class_totals, error_counts
from structperc.eval.tokens import TokenScores
from structperc.io import atomic_write_json
from structperc.monitor import Monitor

log = logging.getLogger("structperc")


def chunk_scores(s: ChunkScores) -> dict:
    """conlleval's precision, recall, F1, token accuracy, chunk counts, per-type F1 and per-type
    precision, recall and F1 (percent) for results.json, and the F1 over whole documents
    (``f1_document``) where it was scored."""
    out = {
        "f1": s.f1,
        "precision": s.precision,
        "recall": s.recall,
        "accuracy": s.accuracy,
        "n_gold": s.n_gold,
        "n_pred": s.n_pred,
        "n_correct": s.n_correct,
        "per_type": {t: ts.f1 for t, ts in s.per_type.items()},
        "per_type_scores": {
            t: {"precision": ts.precision, "recall": ts.recall, "f1": ts.f1}
            for t, ts in s.per_type.items()
        },
    }
    if s.f1_document is not None:
        out["f1_document"] = s.f1_document
    return out


def chunk_curves(s: ChunkScores, gold, pred, sentence_starts) -> dict[str, float]:
    """What an evaluation during training adds to TensorBoard beside the overall scores: the F1
    of every type (``f1/<type>``), the error classes (``errors/<class>``, ``eval/errors.py``) and
    each type's (``errors/<type>/<class>``), so the curves of a sweep's jobs compare them."""
    errors = chunk_errors(gold, pred, sentence_starts)
    out = {f"f1/{t}": ts.f1 for t, ts in s.per_type.items()}
    out.update({f"errors/{k.replace(' ', '_')}": float(n) for k, n in class_totals(errors).items()})
    for typ, classes in error_counts(errors).items():
        out.update({f"errors/{typ}/{k.replace(' ', '_')}": float(n) for k, n in classes.items()})
    return out


def token_results(s: TokenScores) -> dict:
    """A plain tagging task's scores for results.json: token accuracy, the macro F1 and each
    label's precision, recall and F1 (percent), with the counts."""
    return {
        "accuracy": s.accuracy,
        "macro_f1": s.macro_f1,
        "n_tokens": s.n_tokens,
        "n_correct": s.n_correct,
        "per_label": {
            label: {"precision": x.precision, "recall": x.recall, "f1": x.f1, "n_gold": x.n_gold}
            for label, x in s.per_label.items()
        },
    }


def peak_memory() -> dict[str, float]:
    """The peak resident memory (MB) of this process and of its finished children (the forked
    BPM epochs and evaluations, ``forking.py``), as the kernel counts it (``getrusage``)."""
    kb = 1024.0  # ru_maxrss is in kilobytes on Linux
    return {
        "process_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / kb,
        "children_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / kb,
    }


def finish(out_dir: Path, monitor: Monitor, results: dict, final: dict[str, float]) -> None:
    """Write ``results.json`` (with the peak memory so far) and the hyperparameters against the
    ``final`` metrics."""
    results.setdefault("memory", peak_memory())
    atomic_write_json(out_dir / "results.json", results)
    monitor.hparams(results.get("hparams", {}), final)
    monitor.close()
    log.info("results in %s", out_dir / "results.json")


def timed(fn, *args, **kw):
    """(fn(*args, **kw), seconds)."""
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0
