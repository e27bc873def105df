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


def _perceptron_worker(system: str, x: float, task: str = "ner") -> dict:
    out = {
        "num_labels": 9 if task == "ner" else 45,
        "features_breakdown_s": {"all": x},
        "train_breakdown_s": {"fit": x},
        "epoch_s_all": [x, x],
        "rss_after_load_mb": 100.0,
        "rss_after_features_mb": 150.0,
        "rss_after_training_mb": 180.0,
        "peak_rss_mb": 200.0 * x,
        "rss_delta_mb": 100.0 * x,
        "surface_features": 1000,
        "parameters": 90_000 if system == "structperc" else 9_000,
    }
    if task == "ner":
        out["test_f1"] = 60.0 + x
    else:
        out["test_accuracy"] = 95.0 + x
        out["data"] = {s: {"documents": 4, "tokens": 100} for s in ("train", "dev", "test")}
        if system == "structperc":
            out |= {"train_median_length": 23, "blocked_scan_pays_at_median_length": False}
    for key in ("features_s", "epoch_s", "train_total_s"):
        out[key] = out[key.replace("_s", "_cpu_s")] = x
    for key in ("decode_b1_tps", "decode_b64_tps", "decode_b256_tps"):
        out[key] = out[key.replace("_tps", "_cpu_tps")] = 1000.0 / x
    return out


def _rerank_section(bench, common: dict) -> dict:
    passes = {"s_all": [2.0, 2.0], "cpu_s_all": [2.0, 2.0], "s": 2.0, "cpu_s": 2.0}
    features = {f"features_{k}": v for k, v in passes.items()} | {"features_per_s": 50.0}
    epochs = {"epoch_s_all": [3.0, 1.0, 1.0], "epoch_cpu_s_all": [3.0, 1.0, 1.0]}
    epochs |= {"epoch_s": 1.0, "epoch_cpu_s": 1.0, "updates": [5, 4, 3]}
    lists = [
        {"unit": unit, "n": n, "units": 4, "tokens": 400, "candidates": 4 * n}
        | {"candidates_per_unit": float(n), "gold_in_list": 3, "units_per_s": 2.0, **passes}
        for unit, n in bench.rerank_bench.LISTS
    ]
    kazama = {
        "learner": {"n": 20, "C": 1000.0, "local_update": False, "average": False},
        "base_weight": 1.0,
        "families": ["phrase", "conj"],
        "global_features": 10,
        "train_units": 4,
        "train_rows": 84,
        "train_lists_s": 1.0,
        "train_features_s": 1.0,
        "test_documents": 4,
        "test_candidates": 80,
        "first_model_test_f1": 60.0,
        "candidate_test_f1": 61.0,
        "peak_rss_mb": 300.0,
        **features,
        **{f"candidate_{k}": v for k, v in epochs.items()},
    }
    collins = {
        "min_units": 5,
        "global_features": 100,
        "train_units": 40,
        "train_rows": 840,
        "train_lists_s": 1.0,
        "train_features_s": 1.0,
        "test_sentences": 40,
        "test_candidates": 800,
        "first_model_test_f1": 60.0,
        "voted": {"beta": 0.5, "vote": True},
        "vote_updates": 12,
        "vote_vectors": 120,
        "vote_s_all": [4.0],
        "vote_s": 4.0,
        "vote_cpu_s": 4.0,
        "last_weights_s": 0.5,
        "last_weights_cpu_s": 0.5,
        "voted_test_f1": 62.0,
        "boost": {"epsilon": 1e-4, "report_every": 50},
        "boost_rounds": 200,
        "boost_rounds_s": 0.5,
        "boost_rounds_per_s": 400.0,
        "boost_report_s_all": [0.125] * 4,
        "boost_setup_s": 1.0,
        "boost_pairs": 800,
        "boost_test_f1": 63.0,
        "peak_rss_mb": 600.0,
        **features,
        **{f"voted_{k}": v for k, v in epochs.items()},
    }
    return {
        "config": {**common, **bench.rerank_bench.QUICK},
        "wall_seconds": 1.0,
        "lists": {"documents": 4, "rows": lists, "peak_rss_mb": 300.0},
        "kazama": kazama,
        "collins": collins,
    }


def _pos_section(bench, common: dict) -> dict:
    rounds = [
        {s: _perceptron_worker(s, x, "pos") for s, x in (("structperc", 1.0), ("crfsuite", 2.0))}
    ]
    features = {
        "attributes": ["w", "wl", "p1"],
        "window": 2,
        "bigram_attributes": ["wl"],
        "trigram_attributes": [],
        "gazetteer": "none",
        "min_count": 2,
        "edges": False,
    }
    return {
        "config": {
            **common,
            **bench.pos_bench.QUICK,
            "task": "pos",
            "features": features,
            "dev_sentences": 1000,
            "settings_from": "+experiment=conll00_tagchunk",
            "rounds_done": 1,
        },
        "wall_seconds": 1.0,
        "summary": bench.perceptron_bench.summarize(rounds, "pos"),
        "rounds": rounds,
    }


def _tagging_section(bench, common: dict) -> dict:
    """Section 11 as ``tagging_bench.run`` writes it: every case before and after."""

    def row(seconds: float, tokens: int = 1000, sha: str = "x") -> dict:
        finished = {"status": 0, "tokens": tokens, "seconds": seconds, "output_sha256": sha}
        run = {**finished, "peak_mb": 500.0, "stopped_over_mb": None, "error": None}
        run["load_start"] = 0.5
        return {**finished, "runs": [run], "tokens_per_second": tokens / seconds, "peak_mb": 500.0}

    stopped = {"seconds": 9.0, "status": -9, "stopped_over_mb": 6000, "error": "killed",
               "runs": [{"seconds": 9.0, "load_start": 0.5}]}  # fmt: skip
    cases = {case: {"before": row(10.0), "after": row(1.0)} for case in bench.tagging_bench.CASES}
    cases["names_1m"]["before"] = stopped
    cases["names_100k"]["after"]["agreement"] = 99.5
    cases["names_100k"]["exact"] = row(2.0)
    return {
        "config": {**common, **bench.tagging_bench.QUICK},
        "base_commit": bench.tagging_bench.BASE_COMMIT,
        "cases": cases,
    }


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
        {
            "structperc": crf_worker,
            "structperc_nodes": {**crf_worker, "iteration_s_all": [0.5, 0.5, 0.5]},
            "crfsuite": {**crf_worker, "iteration_s_all": [1, 1, 1]},
        }
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
    sklearn_run = {
        "fit_s": 2.0,
        "fit_cpu_s": 2.0,
        "predict_tokens_per_s": 1000.0,
        "marginals_tokens_per_s": 500.0,
        "f1": 70.0,
        "nonzero_weights": 300,
        "weights": 1000,
        "attributes": 200,
        "train_tokens": 4000,
        "test_tokens": 1000,
    }
    sklearn_runs = {
        "crfsuite": sklearn_run,
        "structperc_jobs1": {**sklearn_run, "fit_s": 1.5, "f1": 70.2},
        "structperc_jobs2": {**sklearn_run, "fit_s": 1.0, "fit_cpu_s": 2.1, "f1": 70.1},
    }
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
                "algorithms": [
                    {
                        "split": "train",
                        "n": 20,
                        "batch": 1,
                        "documents": 4,
                        "picked": "kbest_sidetracks",
                        "seconds": {"kbest_dp": 0.3, "kbest_beam": 0.9, "kbest_sidetracks": 0.1},
                    }
                ],
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
            "rerank": _rerank_section(bench, common),
            "pos": _pos_section(bench, common),
            "scoring": {
                "config": {**common, **bench.scoring_bench.QUICK},
                "rows": [
                    {
                        "copies": 1,
                        "tokens": 20315,
                        "sentences": 1440,
                        "f1": 81.64,
                        "ours_in_memory": 0.1,
                        "ours_file": 0.09,
                        "seqeval": 0.6,
                        "seqeval_f1": 81.64,
                    }
                ],
            },
            "templates": {
                "config": {**common, **bench.templates_bench.QUICK},
                "tokens": {"train": 8000, "dev": 2000},
                "times": {
                    "named": {"wall": [2.0], "cpu": [1.9]},
                    "templates": {"wall": [1.0], "cpu": [0.95]},
                },
                "named_s": 2.0,
                "templates_s": 1.0,
                "named_cpu_s": 1.9,
                "templates_cpu_s": 0.95,
            },
            "sklearn": {
                "config": {**common, **bench.sklearn_bench.QUICK, "algorithms": ["lbfgs"]},
                "rows": [
                    {
                        "algorithm": "lbfgs",
                        "settings": {"algorithm": "lbfgs", "c1": 0.1, "c2": 0.1},
                        "runs": {name: [{**run}] for name, run in sklearn_runs.items()},
                        **sklearn_runs,
                    }
                ],
                "loadavg_start": [0.5, 0.5, 0.5],
                "loadavg_end": [0.5, 0.5, 0.5],
            },
            "tagging": _tagging_section(bench, common),
        },
    }
    return json.loads(json.dumps(results))  # as read back from results.json


def test_render_every_section_and_required_row(bench):
    text = bench.render(_results(bench))
    for heading in ("## 1. ", "## 2. ", "## 3. ", "## 4. ", "## 5. ", "## 6. ", "## 10. "):
        assert heading in text
    assert "## 7. POS tagger (45 tags, CoNLL-2000): structperc vs CRFsuite" in text
    assert "## Every row at a glance" in text
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
        "20-best of every test document (`nbest_lists`), documents/s (seconds) | 2 (2.00)",
        "100-best of every test document",
        "20-best of every test sentence (`nbest_lists`), sentences/s",
        "Kazama's non-local features of the test documents' 20-best, candidates/s | 50",
        "Collins's features of the test sentences' 20-best, candidates/s | 50",
        "Re-ranking 1 (candidate algorithm, n = 20, non-local features), seconds per epoch",
        "Voted perceptron (Collins's features), seconds per epoch",
        "Voted prediction of the test sentences' lists (12 updates replayed), seconds | 4.00",
        "Boosting (Collins's features), rounds/s | 400",
        "not made by a jackknife",
        "no peer, absolute figures only",
        "| train (4), n = 20, batch 1 | 0.300 | 0.900 | **0.100** |",
        "| 7 | POS tagger: Test accuracy (%) after k epochs | 96.00 | CRFsuite 97.00 | 0.990 "
        "(-1.00 accuracy points) |",
        "| 7 | POS tagger: Training, seconds per epoch (averaged perceptron) |",
        "| Test F1 after k epochs | 61.00 | 62.00 |",  # section 1 keeps its F1
        "no edge features",
        "its decoding takes the compiled Viterbi at every batch size",
        "train 4 sentences / 100 tokens",
        "## 8. Scoring: our conlleval port against seqeval",
        "| 20,315 | 1,440 | 81.64 | 0.10 | 0.09 | 0.60 | 6.0x |",
        "| 8 | Scoring 20,315 tokens (conlleval F1, per type): seconds | 0.10 | 0.60 (seqeval) "
        "| 6.0x faster |",
        "## 9. Feature extraction: templates against the named attributes",
        "| 9 | Feature extraction, Table 1 as templates (8,000 + 2,000 tokens): seconds | 1.00 "
        "| 2.00 (named attributes) | 2.00× faster | 2.00× faster |",
        "| named / templates | 2.00× | 2.00× | |",
    ):
        assert row in text, row
    pos = text[text.index("## 7. ") :]
    assert "Test F1" not in pos and "edge features (feature x previous" not in pos
    assert "0.50×, i.e. 2.00× slower" in text  # CRF: 2 s against CRFsuite's 1 s per iteration
    assert "2.00× faster" in text  # CRF, edges=false: 0.5 s against CRFsuite's 1 s
    assert "Quick run on small slices" in text
    assert "target < 600 s" not in text  # a slice of the test set says nothing of the target


@pytest.mark.parametrize("folder", ["", "crf_float32", "crf_observed", "sklearn_slice"])
def test_committed_readmes_are_rendered_from_their_results(bench, folder):
    """Each committed README of the bench is what ``bench.py --render-only`` makes of the
    results.json (and profile.json) beside it: nothing in it typed by hand, nothing stale."""
    out = BENCH / folder
    readme = (out / "README.md").read_text()
    results = json.loads((out / "results.json").read_text())
    text = bench.render(results)
    if (out / "profile.json").is_file():
        profile = json.loads((out / "profile.json").read_text())
        text += "\n" + bench.page("profile.md.j2", profile=profile, h="##")
    assert text == readme


def test_committed_gpu_and_main_job_pages_are_rendered_from_their_json(bench):
    import main_job

    gpu = json.loads((BENCH / "gpu" / "gpu.json").read_text())
    assert bench.page("gpu.md.j2", data=gpu) == (BENCH / "gpu" / "GPU.md").read_text()
    runs = json.loads((BENCH / "main_job.json").read_text())
    assert main_job.render(runs) == (BENCH / "MAIN_JOB.md").read_text()


def test_merge_keeps_the_other_sections(bench, tmp_path):
    """``--only rerank`` replaces that section in the results.json there, keeps the others."""
    old = _results(bench)
    del old["sections"]["rerank"]
    old["config"]["sections"] = [n for n in old["config"]["sections"] if n != "rerank"]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(old))
    new = _results(bench)
    new["command"] += " --only rerank"
    new["machine"] = {**new["machine"], "date": "tomorrow"}
    new["config"]["sections"] = ["rerank"]
    new["sections"] = {"rerank": new["sections"]["rerank"]}
    merged = bench.merge(path, new)
    assert list(merged["sections"]) == list(bench.SECTIONS)
    for name in old["sections"]:
        assert merged["sections"][name] == old["sections"][name]
    assert merged["machine"] == old["machine"] and merged["command"] == old["command"]
    assert merged["config"]["sections"] == list(bench.SECTIONS)
    assert merged["sections"]["rerank"]["run"]["machine"]["date"] == "tomorrow"
    text = bench.render(merged)
    assert "Not in this results.json" not in text
    assert "This section was measured by a later run of its own, `" + new["command"] in text
    # another slice of the data: no merge
    other = {**new, "data": {**new["data"], "test": {"documents": 5, "tokens": 500}}}
    assert bench.merge(path, other) is other
    assert bench.merge(tmp_path / "missing.json", new) is new


def test_parse_sets(bench):
    assert bench.parse_sets(["nbest.repeats=1", "crf.semiring=log"]) == {
        "nbest": {"repeats": 1},
        "crf": {"semiring": "log"},
    }


def test_pos_section_runs_section_1_workers_on_pos_without_saving(bench, monkeypatch):
    """Section 7 runs section 1's workers with ``task: pos`` and the tagchunk tagger's settings
    from conf/, and never saves the shared model; section 1 (NER) still saves it."""
    from omegaconf import OmegaConf

    calls = []

    def fake_worker(script, system, cfg):
        calls.append((system, cfg))
        return _perceptron_worker(system, 1.0, cfg.get("task", "ner"))

    monkeypatch.setattr(bench.perceptron_bench, "run_worker", fake_worker)
    base = {"data_dir": "d", "max_docs": None, "quick": True, "threads": 1, "model_dir": "m"}
    section = bench.pos_bench.run({**base, **bench.pos_bench.QUICK})
    assert [system for system, _ in calls] == ["structperc", "crfsuite"]
    for _, cfg in calls:
        assert cfg["task"] == "pos" and "save_model" not in cfg and "model_dir" not in cfg
    task = OmegaConf.load(BENCH.parents[1] / "conf" / "task" / "tagchunk.yaml")
    features = calls[0][1]["features"]
    assert features["attributes"] == list(task.pos_attributes)
    assert features["bigram_attributes"] == list(task.pos_bigrams)
    assert features["edges"] is False and features["gazetteer"] == "none"
    assert calls[0][1]["dev_sentences"] == task.dev_sentences
    assert "test_accuracy" in section["summary"] and "test_f1" not in section["summary"]
    calls.clear()
    section = bench.perceptron_bench.run({**base, **bench.perceptron_bench.QUICK})
    assert [cfg.get("save_model") for _, cfg in calls] == ["m", None]
    assert all(cfg.get("task", "ner") == "ner" for _, cfg in calls)
    assert "test_f1" in section["summary"] and "test_accuracy" not in section["summary"]
