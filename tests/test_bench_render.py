"""The benchmark's README is rendered from its results JSON: every section, every required row.

Synthetic results in the shape ``experiments/bench/bench.py`` writes (no measurement runs here;
``make bench-quick`` checks the real plumbing in about two minutes).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "experiments" / "bench"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    try:
        import bench as module

        yield module
    finally:
        sys.path.remove(str(BENCH))


def _perceptron_worker(system: str, x: float) -> dict:
    out = {
        "num_labels": 9,
        "features_breakdown_s": {"all": x},
        "train_breakdown_s": {"fit": x},
        "epoch_s_all": [x, x],
        "rss_after_load_mb": 100.0,
        "rss_after_features_mb": 150.0,
        "rss_after_training_mb": 180.0,
        "peak_rss_mb": 200.0 * x,
        "rss_delta_mb": 100.0 * x,
        "test_f1": 60.0 + x,
        "surface_features": 1000,
        "parameters": 90_000 if system == "structperc" else 9_000,
    }
    for key in ("features_s", "epoch_s", "train_total_s"):
        out[key] = out[key.replace("_s", "_cpu_s")] = x
    for key in ("decode_b1_tps", "decode_b16_tps", "decode_b256_tps"):
        out[key] = out[key.replace("_tps", "_cpu_tps")] = 1000.0 / x
    return out


def _results(bench) -> dict:
    rounds = [{"structperc": _perceptron_worker("structperc", 1.0)}]
    rounds[0]["crfsuite"] = _perceptron_worker("crfsuite", 2.0)
    crf_worker = {
        "iteration_s_all": [3.0, 2.0, 2.0],
        "iteration_cpu_s_all": [3.0, 2.0, 2.0],
        "evaluations_all": [2, 1, 1],
        "parameters": 90_000,
        "surface_features": 1000,
        "test_f1_after_k": 0.0,
        "peak_rss_mb": 300.0,
    }
    crf_rounds = [
        {"structperc": crf_worker, "crfsuite": {**crf_worker, "iteration_s_all": [1, 1, 1]}}
    ]
    nbest_rows = [
        {
            "split": split,
            "n": n,
            "documents": 4,
            "tokens": 400,
            "seconds_all": [0.5],
            "seconds": 0.5,
            "cpu_seconds": 0.5,
            "nbest_seconds": 0.4,
            "peak_rss_mb": 300.0,
            "rss_before_decoding_mb": 250.0,
        }
        for split, n in bench.nbest_bench.ROWS
    ]
    common = {"quick": True, "threads": 1, "data_dir": "data", "max_docs": {"train": 4}}
    machine = {
        "cpu_count": 2,
        "cpu_model": "test",
        "platform": "test",
        "python": "3",
        "torch": "2",
        "numpy": "2",
        "python_crfsuite": "0.9",
        "torch_threads": 1,
        "date": "today",
        "loadavg_start": [0.5, 0.5, 0.5],
        "loadavg_end": [0.5, 0.5, 0.5],
        "git": {"commit": "abc", "structperc_files_changed": 0},
    }
    split = {"documents": 4, "tokens": 400}
    speed = {"seconds": 1.0, "sentences_per_second": 10.0, "tokens_per_second": 100.0}
    results = {
        "schema": bench.SCHEMA,
        "command": ".venv/bin/python experiments/bench/bench.py --quick",
        "config": {**common, "sections": list(bench.SECTIONS)},
        "machine": machine,
        "data": {"train": split, "dev": split, "test": split},
        "wall_seconds": 1.0,
        "shared_model": {"learner": "averaged perceptron", "epochs": 2, "shuffle_seed": 0},
        "sections": {
            "perceptron": {
                "config": {**common, "epochs": 2, "repeats": 1, "budget_s": 1, "rounds_done": 1},
                "wall_seconds": 1.0,
                "summary": bench.perceptron_bench.summarize(rounds),
                "rounds": rounds,
            },
            "crf": {
                "config": {**common, **bench.crf_bench.QUICK, "rounds_done": 1},
                "wall_seconds": 1.0,
                "summary": bench.crf_bench.summarize(crf_rounds),
                "structperc_full_run": {
                    "path": "experiments/kazama2007/runs/crf_sigma2_100/results.json",
                    "iterations": 10,
                    "stopped_by": "converged",
                    "train_seconds": 100.0,
                    "median_iteration_s": 10.0,
                    "dev_f1": 90.0,
                    "test_f1": 85.0,
                },
                "rounds": crf_rounds,
            },
            "nbest": {
                "config": {**common, **bench.nbest_bench.QUICK},
                "wall_seconds": 1.0,
                "rows": nbest_rows,
            },
            "proposed": {
                "config": {**common, **bench.proposed_bench.QUICK},
                "wall_seconds": 1.0,
                "result": {
                    "learner": {"n": 20, "C": 5657.0, "C_local": 5657.0, "local_update": True},
                    "families": ["phrase"],
                    "global_features": 10,
                    "train_documents": 4,
                    "train_tokens": 400,
                    "test_documents": 4,
                    "test_tokens": 400,
                    "epoch_s_all": [1.0, 1.0],
                    "epoch_s": 1.0,
                    "epoch_cpu_s": 1.0,
                    "epoch_word_error": [0.1, 0.05],
                    "epoch_extra": [{"updates_a": 3, "gold_in_nbest": 1}, {"updates_b": 1}],
                    "n_test": 100,
                    "rescore_s_all": [0.5, 0.5],
                    "rescore_s": 0.5,
                    "rescore_cpu_s": 0.5,
                    "test_f1": 50.0,
                    "peak_rss_mb": 300.0,
                },
            },
            "dp": {
                "config": {**common, **bench.dp_bench.QUICK},
                "wall_seconds": 1.0,
                "result": {
                    "conll2000_test": {
                        "sentences": 200,
                        "tokens": 5000,
                        "repeats": 1,
                        "batch1": speed,
                        "batch32": speed,
                    }
                },
            },
        },
    }
    return json.loads(json.dumps(results))  # as read back from results.json


def test_render_every_section_and_required_row(bench):
    text = bench.render(_results(bench))
    for heading in ("## 1. ", "## 2. ", "## 3. ", "## 4. ", "## 5. ", "## Every row at a glance"):
        assert heading in text
    for row in (
        "20-best, training loop",
        "100-best of the test set",
        "1,600-best of the test set",
        "6,400-best of the test set",
        "CRF, seconds per L-BFGS iteration",
        "crf_sigma2_100/results.json",
        "Proposed algorithm (n = 20, non-local features), seconds per training epoch",
        "n' = 100 rescoring of the test set",
        "Label-chunk DP, CoNLL-2000 test (200 sentences), batch 1: sentences/s",
        "batch 32: sentences/s",
    ):
        assert row in text, row
    assert "0.50×, i.e. 2.00× slower" in text  # CRF: 2 s against CRFsuite's 1 s per iteration
    assert "Quick run on small slices" in text
    assert "target < 600 s" not in text  # a slice of the test set says nothing of the target


def test_render_schema_1_results(bench):
    """The perceptron-only bench's results.json still renders, as section 1 alone."""
    new = _results(bench)
    old = {
        "schema": 1,
        "command": ".venv/bin/python experiments/bench/bench.py",
        "data_dir": "data",
        "config": {**new["sections"]["perceptron"]["config"], "quick": False},
        "machine": new["machine"],
        "data": new["data"],
        "wall_seconds": 1.0,
        "summary": new["sections"]["perceptron"]["summary"],
        "rounds": new["sections"]["perceptron"]["rounds"],
    }
    text = bench.render(bench.upgrade(old))
    assert "## 1. " in text and "## 2. " not in text
    assert "Not in this results.json: section(s) crf, nbest, proposed, dp" in text


def test_parse_sets(bench):
    assert bench.parse_sets(["nbest.repeats=1", "crf.semiring=log"]) == {
        "nbest": {"repeats": 1},
        "crf": {"semiring": "log"},
    }
