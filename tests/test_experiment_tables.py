"""The result tables under experiments/ are generated from run folders: check the generators.

Fake run folders in the shape a Hydra run leaves (``results.json`` + ``.hydra/config.yaml`` +
``.hydra/overrides.yaml``); no training here.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS, TOOLS = ROOT / "experiments", ROOT / "tools"


@pytest.fixture()
def scripts():
    paths = [str(TOOLS), str(EXPERIMENTS / "kazama2007")]
    sys.path[:0] = paths
    try:
        yield importlib.import_module("summarize"), importlib.import_module("table2")
    finally:
        for p in paths:
            sys.path.remove(p)


def make_run(
    folder: Path, dev: float, test: float, learner: dict, overrides=(), document_level=False
) -> Path:
    """A run folder; ``document_level``: made before the scoring change (no ``f1_document``)."""
    (folder / ".hydra").mkdir(parents=True)
    splits = {"dev": {"f1": dev}, "test": {"f1": test}}
    if not document_level:
        splits = {k: v | {"f1_document": v["f1"] - 0.3} for k, v in splits.items()}
    result = {**splits, "epochs": 3, "stopped_by": "max_epochs"}
    result["train_seconds"] = 12.0
    (folder / "results.json").write_text(json.dumps(result))
    cfg = "learner:\n" + "".join(f"  {k}: {v}\n" for k, v in learner.items())
    (folder / ".hydra" / "config.yaml").write_text(cfg)
    (folder / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    return folder


MARGIN = {"_target_": "structperc.learn.margin.MarginPerceptron", "C": 500, "average": False}


def test_summarize_reads_learner_from_config_not_overrides(scripts, tmp_path):
    summarize, _ = scripts
    run = make_run(tmp_path / "sweep" / "a", 90.0, 84.0, MARGIN, ["+experiment=x"])
    make_run(tmp_path / "sweep" / "b", 91.0, 83.0, {**MARGIN, "C": 1414}, ["learner.C=1414"])
    runs = summarize.find_runs([str(tmp_path / "sweep")])
    assert [r.name for r in runs] == ["a", "b"]
    assert summarize.learner_settings(run) == "MarginPerceptron C=500 average=False"
    table = summarize.render([summarize.row(r, {}) for r in runs])
    assert "| a | MarginPerceptron C=500 average=False | `+experiment=x` | 90.00 | 84.00 |" in table
    assert "Best by dev F1: **b** (dev 91.00, test 83.00)." in table
    assert "ᵈ" not in table


def test_tables_mark_whole_document_figures(scripts, tmp_path):
    """A run made before the scoring change (no f1_document) on CoNLL-2003 is marked, one on
    CoNLL-2000 (sentences are documents) and one scored by conlleval are not."""
    summarize, _ = scripts
    make_run(tmp_path / "sweep" / "new", 90.0, 84.0, MARGIN)
    old = make_run(tmp_path / "sweep" / "old", 91.0, 85.0, MARGIN, document_level=True)
    chunking = make_run(tmp_path / "sweep" / "old00", 93.0, 92.0, MARGIN, document_level=True)
    (chunking / ".hydra" / "config.yaml").write_text("data:\n  name: conll2000\n")
    table = summarize.render([summarize.row(r, {}) for r in summarize.find_runs([str(old.parent)])])
    assert "| 90.00 | 84.00 |" in table and "| 91.00ᵈ | 85.00ᵈ |" in table
    assert "| 93.00 | 92.00 |" in table
    assert "whole-document F1 of a run made before" in table


def test_replace_section_keeps_other_sections(scripts, tmp_path):
    sections = importlib.import_module("sections")
    readme = tmp_path / "README.md"
    readme.write_text(
        "x\n<!-- a:begin -->\nold\n<!-- a:end -->\n<!-- b:begin -->\nB\n<!-- b:end -->\n"
    )
    sections.replace_section(readme, "a", "new")
    assert readme.read_text() == (
        "x\n<!-- a:begin -->\nnew\n<!-- a:end -->\n<!-- b:begin -->\nB\n<!-- b:end -->\n"
    )
    with pytest.raises(SystemExit, match="no <!-- c:begin -->"):
        sections.replace_section(readme, "c", "t")


def test_publish_prints_every_section_and_writes_it_between_its_markers(scripts, tmp_path, capsys):
    sections = importlib.import_module("sections")
    readme = tmp_path / "README.md"
    readme.write_text("<!-- a:begin -->\n<!-- a:end -->\n<!-- b:begin -->\nold\n<!-- b:end -->\n")
    sections.publish(readme, {"a": "| x |\n", "b": "text"})
    assert readme.read_text() == (
        "<!-- a:begin -->\n| x |\n<!-- a:end -->\n<!-- b:begin -->\ntext\n<!-- b:end -->\n"
    )
    assert capsys.readouterr().out == "## a\n\n| x |\n\n## b\n\ntext\n"
    sections.publish(None, {"a": "y\n"})  # no README: printed only
    assert "<!-- a:begin -->\n| x |\n" in readme.read_text()


def test_table2_picks_best_dev_and_lists_the_grid(scripts, tmp_path, monkeypatch):
    _, table2 = scripts
    monkeypatch.setattr(table2, "RUNS", tmp_path)
    for c, dev, test in [(500, 89.0, 85.0), (1414, 90.5, 84.0), (32000, 89.5, 86.0)]:
        make_run(tmp_path / "margin_sweep" / f"margin_C{c}", dev, test, {**MARGIN, "C": c})
    monkeypatch.setattr(
        table2, "TABLE2", [("Margin", ["margin_sweep/*"], "learner.C", 90.98, 85.64, "C = 11313")]
    )
    row = table2.table2().splitlines()[2]
    # the dev choice, not the best test F1; the whole grid; test minus the paper's
    assert row.startswith("| Margin | C = 1414 | 500, 1414, 32000 | 90.50 | 84.00 | 12 |")
    assert "| -1.64 | `margin_sweep/margin_C1414` |" in row


def test_table2_ablation_differences(scripts, tmp_path, monkeypatch):
    _, table2 = scripts
    monkeypatch.setattr(table2, "RUNS", tmp_path)
    make_run(tmp_path / "full", 91.0, 85.0, MARGIN)
    make_run(tmp_path / "ablation" / "no_x", 90.5, 85.25, MARGIN)
    monkeypatch.setattr(
        table2, "ABLATION", [("all", "full"), ("no x", "ablation/no_x"), ("gone", "none")]
    )
    lines = table2.ablation().splitlines()
    assert lines[2] == "| all | 91.00 | 85.00 | +0.00 | +0.00 | `full` |"
    assert lines[3] == "| no x | 90.50 | 85.25 | -0.50 | +0.25 | `ablation/no_x` |"
    assert len(lines) == 4  # a run that does not exist is left out


def test_table2_seeds_mean_and_difference(scripts, tmp_path, monkeypatch):
    _, table2 = scripts
    monkeypatch.setattr(table2, "RUNS", tmp_path)
    for name, (dev, test) in {
        "a0": (90, 84),
        "a1": (91, 85),
        "b0": (92, 86),
        "b1": (92, 87),
    }.items():
        make_run(tmp_path / name, dev, test, MARGIN)
    monkeypatch.setattr(table2, "SEEDS", [("A", ["a0", "a1"]), ("B", ["b0", "b1"])])
    lines = table2.seeds().splitlines()
    assert lines[2] == "| A | 2 | 90.50 ± 0.71 | 84.50 ± 0.71 | 84.00, 85.00 |"
    # dev: 92 - 90.5, se = sqrt(0.5 / 2 + 0 / 2) = 0.5; test: 86.5 - 84.5, se = sqrt(0.25 + 0.25)
    assert lines[-1].endswith("(± standard error): dev +1.50 ± 0.50, test +2.00 ± 0.71.")


def test_table2_convergence_reads_the_history(scripts, tmp_path, monkeypatch):
    _, table2 = scripts
    monkeypatch.setattr(table2, "RUNS", tmp_path)
    run = make_run(tmp_path / "converge" / "avg", 89.0, 83.0, MARGIN)
    result = json.loads((run / "results.json").read_text())
    result["history"] = [
        {"epoch": e, "dev_f1": f, "word_error": 1e-4 * e, "updates": 10 + e}
        for e, f in [(1, 80.0), (2, 90.0), (3, 88.0), (4, 89.0)]
    ]
    result["epochs"] = 4
    (run / "results.json").write_text(json.dumps(result))
    monkeypatch.setattr(
        table2, "CONVERGE", [("Avg", "converge/avg", 89.32, 84.08), ("x", "no", 1, 2)]
    )
    monkeypatch.setattr(table2, "CONVERGE_AT", 2)
    monkeypatch.setattr(table2, "CONVERGE_LAST", 2)
    lines = table2.convergence().splitlines()
    assert len(lines) == 3  # a run without results.json is left out
    # dev at epoch 2, the best epoch, the mean ± sd of the last two, the last epoch's counts
    assert lines[2] == (
        "| Avg | 4 | max_epochs | 89.00 | 83.00 | 90.00 | 90.00 (2) | 88.50 ± 0.71 "
        "| 0.00040, 14 | 12 | 89.32 | 84.08 | `converge/avg` |"
    )
    # a run evaluated every other epoch (the CRF: every 10): the late mean is over the
    # evaluations of the last CONVERGE_LAST epochs, not over the last CONVERGE_LAST evaluations
    for h in result["history"]:
        if h["epoch"] % 2:
            del h["dev_f1"]
    (run / "results.json").write_text(json.dumps(result))
    assert "| 90.00 (2) | 89.00 ± 0.00 |" in table2.convergence().splitlines()[2]
    monkeypatch.setattr(table2, "CONVERGE", [])
    assert table2.convergence().startswith("(no convergence run")


def test_gazetteer_coverage_counts_entities_and_matches():
    sys.path.insert(0, str(EXPERIMENTS / "kazama2007"))
    try:
        coverage = importlib.import_module("gazetteer_coverage").coverage
    finally:
        sys.path.remove(str(EXPERIMENTS / "kazama2007"))
    from structperc.data.document import Document

    doc = Document(
        tokens="New York and Acme Corp met York".split(),
        tags=["B-LOC", "I-LOC", "O", "B-ORG", "I-ORG", "O", "B-PER"],
    )
    # New York is listed as LOC (covered, match correct); York is listed as LOC but is a PER
    # here (a match that is no entity of its type); Acme Corp is not listed
    out = coverage([doc], [{"LOC": {("New", "York"), ("York",)}}])
    assert out["entities"] == 3
    assert out["covered"] == pytest.approx(100 / 3)
    assert out["matches"] == 2
    assert out["match_precision"] == pytest.approx(50.0)


def test_wordclasses_table_reads_runs_and_remembers_sizes(tmp_path, monkeypatch):
    """experiments/wordclasses/table.py: F1, features and time from results.json, the word-class
    settings from the run's config, the model size from its files (kept once seen)."""
    sys.path.insert(0, str(EXPERIMENTS / "wordclasses"))
    try:
        table = importlib.import_module("table")
    finally:
        sys.path.remove(str(EXPERIMENTS / "wordclasses"))
    run = tmp_path / "runs" / "wc"
    (run / ".hydra").mkdir(parents=True)
    result = {"dev": {"f1": 90.5}, "test": {"f1": 85.25}, "num_features": 1234}
    (run / "results.json").write_text(json.dumps(result | {"epochs": 3, "train_seconds": 9.6}))
    (run / ".hydra" / "config.yaml").write_text(
        "features:\n  word_classes:\n    kmeans: [100, 500]\n    brown: 0\n"
        "    corpora: all\n    architecture: skipgram\n"
    )
    (run / "model.safetensors").write_bytes(b"x" * 1_500_000)
    state = {"attributes": ["wc2"], "identity": {}, "words": "a b", "families": {"wc2": "0 1"}}
    (run / "model.json").write_text(json.dumps({"features": {"word_classes": state}}))
    monkeypatch.setattr(table, "HERE", tmp_path / "wordclasses")  # rows named from its parent
    monkeypatch.setattr(table, "ROWS", [(run, "Averaged + wc")])
    sizes: dict = {}
    out = table.runs_table(sizes)
    assert "| Averaged + wc (`runs/wc`) | wc{100,500} skipgram (all) | 90.50 | 85.25 |" in out
    assert "| 1,234 | 3 | 10 | 1.5 | 0.0 (0.0) |" in out and sizes["wc"]["MB"] == 1.5
    (run / "model.safetensors").unlink()
    assert table.runs_table(sizes) == out
