"""The rerank task end to end through the Hydra entry point, on a synthetic CoNLL-2003 corpus:
fold jobs then the ranker, the lists cache, and every ranker of the four experiments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra_runs import compose_config, run_main, write_synthetic_conll2003

EXPERIMENTS = ["conll03_rerank1", "conll03_rerank2", "conll03_collins_boost", "conll03_collins_vp"]


@pytest.fixture(scope="module")
def synthetic_dir(tmp_path_factory) -> Path:
    sizes = {"train": 25, "dev": 8, "test": 8}
    return write_synthetic_conll2003(tmp_path_factory.mktemp("data"), sizes)


def small(tmp_path: Path) -> list[str]:
    """Quick first models and rankers."""
    return [
        "features.gazetteer=none",
        "trainer.max_epochs=2",
        "task.epochs=2",
        "task.n=5",
        "task.n_test=10",
        "task.folds=3",
        f"task.lists_dir={tmp_path / 'lists'}",
        f"cache_dir={tmp_path / 'cache'}",
    ]


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_experiments_compose(experiment):
    cfg = compose_config([f"+experiment={experiment}"])
    assert cfg.task.name == "rerank" and cfg.ranker._target_
    assert (cfg.task.unit == "sentence") == experiment.startswith("conll03_collins")


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_ranker_runs_and_reports_the_list_figures(
    tmp_path, synthetic_dir, monkeypatch, experiment
):
    extra = {  # the CRF base model with 2 L-BFGS iterations; a short boosting
        "conll03_collins_boost": ["ranker.rounds=300", "ranker.report_every=100"],
        "conll03_collins_vp": ["learner=averaged"],
    }.get(experiment, [])
    out = tmp_path / "run"
    f1, r = run_main(
        [f"+experiment={experiment}", *small(tmp_path), *extra], synthetic_dir, out, monkeypatch
    )
    assert f1 == pytest.approx(r["dev"]["f1"])
    for split in ("dev", "test"):
        figures = r[split]
        assert 0 <= figures["f1"] <= 100 and 0 <= figures["base_f1"] <= 100
        oracle = [figures["oracle_f1"][str(n)] for n in (1, 5, 10)]
        assert oracle == sorted(oracle) and oracle[0] == pytest.approx(figures["base_f1"])
        assert 0 <= figures["gold_in_list"] <= 100
    assert set(r["seconds"]) >= {"first_models", "global_features", "ranking"}
    assert (out / "test.pred.txt").is_file() and any((out / "tb").iterdir())


def test_fold_jobs_fill_the_cache_that_the_ranker_reads(tmp_path, synthetic_dir, monkeypatch):
    common = ["+experiment=conll03_rerank1", *small(tmp_path)]
    for fold in ("0", "1", "2", "all"):
        _, r = run_main([*common, f"task.fold={fold}"], synthetic_dir, tmp_path / fold, monkeypatch)
        assert r["fold"] == fold
    lists = Path(r["lists"])
    assert sorted(p.name for p in lists.glob("*.json")) == [
        "all_dev_n10.json",
        "all_test_n10.json",
        "fold0_n5.json",
        "fold1_n5.json",
        "fold2_n5.json",
    ]
    _, r = run_main(common, synthetic_dir, tmp_path / "rank", monkeypatch)
    assert r["lists"] == str(lists)
    assert r["seconds"]["lists_made_here"] < 1.0  # read from the cache, nothing trained
    meta = json.loads((lists / "fold0_n5.json").read_text())
    assert meta["fold"] == 0 and meta["train_seconds"] > 0
