"""Raw text in two commands: ``make run`` (which makes the column tagger first, ``make tagger``,
once) and ``structperc-tag model=runs/main input=notes.txt input_format=text ...``, the run
folder carrying the tagger; without a tagger, input lacking the columns fails in one line naming
``tagger=`` and ``make tagger``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hydra_runs import ROOT, console, one_line_failure, tag_cli, trained_run

from structperc.data.conll import read_conll
from structperc.inference.tagger import Tagger

TEXT = ["input_format=text", "output_format=jsonl"]
README = re.sub(r" *\\\n *", " ", (ROOT / "README.md").read_text())  # lines joined


def make_dry_run(target: str, tmp_path: Path, **variables: str) -> str:
    """What ``make -n TARGET`` would run, with the venv's stamp in place (nothing to install)."""
    if shutil.which("make") is None:
        pytest.skip("no make")
    (tmp_path / "stamp").touch()
    assigned = [f"{k}={v}" for k, v in {"STAMP": tmp_path / "stamp", **variables}.items()]
    # a make that runs this test (make test) passes its flags down: a plain make's output
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", target, *assigned],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_make_tagger_trains_the_column_tagger_once(tmp_path):
    tagger = tmp_path / "tagchunk"
    first = make_dry_run("tagger", tmp_path, TAGGER=tagger)
    assert "+experiment=conll00_tagchunk task.dev_sentences=0" in first
    assert f"hydra.run.dir={tagger}" in first
    tagger.mkdir()
    (tagger / "results.json").write_text("{}")  # the last file a finished training writes
    assert "structperc.run" not in make_dry_run("tagger", tmp_path, TAGGER=tagger)


def test_make_run_makes_the_tagger_first_and_gives_it_to_the_main_job(tmp_path):
    tagger, classes = tmp_path / "tagchunk", tmp_path / "wordclasses"
    folders = {"TAGGER": tagger, "MAIN_RUN": tmp_path / "main", "WC_CACHE": classes}
    lines = make_dry_run("run", tmp_path, **folders).splitlines()
    assert "+experiment=conll00_tagchunk" in lines[0]  # absent: trained first
    shipped = sorted((ROOT / "experiments" / "wordclasses" / "classes").glob("*.json.gz"))
    assert len(shipped) == 4  # the word classes unpacked into their cache
    assert [line.split("gunzip -c ")[1].split()[0] for line in lines[1:5]] == [
        str(p.relative_to(ROOT)) for p in shipped
    ]
    assert lines[5].endswith(
        "+experiment=conll03_nonlocal features=kazama_wordclasses "
        "features.word_classes.architecture=cbow features.word_classes.brown=1000 "
        f"features.tagger={tagger} "
        f"hydra.run.dir={tmp_path / 'main'}"
    )
    assert lines[6].endswith(f"-m structperc.report.cli run={tmp_path / 'main'}")  # its page
    tagger.mkdir()
    (tagger / "results.json").write_text("{}")
    classes.mkdir()
    for p in shipped:
        (classes / p.name.removesuffix(".gz")).write_text("{}")
    lines = make_dry_run("run", tmp_path, **folders).splitlines()
    assert len(lines) == 2 and "conll03_nonlocal" in lines[0]  # cached: the main job alone
    assert "structperc.report.cli" in lines[1]  # and its report page


def test_the_readme_tags_text_with_the_folders_the_makefile_writes():
    makefile = (ROOT / "Makefile").read_text()
    folders = dict(re.findall(r"^(TAGGER|MAIN_RUN) := (\S+)$", makefile, re.M))
    assert folders == {"TAGGER": "runs/tagchunk", "MAIN_RUN": "runs/main"}
    one_command = (
        ".venv/bin/structperc-tag model=runs/main input=notes.txt output=entities.jsonl "
        "input_format=text output_format=jsonl"
    )
    assert one_command in README  # after `make run`, with no tagger=
    assert "tagger=$T" not in README and "conll00_tagchunk_compact_final" not in README


@pytest.fixture(scope="module")
def carrying_run(tmp_path_factory, synthetic_dir, synthetic_tagger) -> Path:
    """A chain reading POS and chunk columns, trained with ``features.tagger`` (tags=given)."""
    overrides = ["+experiment=conll03_local", "trainer.max_epochs=2", "features.gazetteer=none"]
    overrides.append(f"features.tagger={synthetic_tagger}")
    return trained_run(tmp_path_factory, synthetic_dir, "carrying", overrides)


def paragraphs(synthetic_dir: Path) -> str:
    docs = read_conll(synthetic_dir / "conll2003" / "test.txt")
    return "\n\n".join(" ".join(d.tokens) for d in docs[:3]) + "\n"


def test_a_run_trained_with_a_tagger_tags_text_without_tagger(
    carrying_run, synthetic_dir, synthetic_tagger, tmp_path
):
    for part in ("pos", "chunk"):
        for name in ("model.json", "model.safetensors"):
            carried = (carrying_run / "tagger" / part / name).read_bytes()
            assert carried == (synthetic_tagger / part / name).read_bytes()
    text = paragraphs(synthetic_dir)
    (tmp_path / "notes.txt").write_text(text)
    out = tmp_path / "entities.jsonl"
    done = tag_cli(
        f"model={carrying_run}", f"input={tmp_path / 'notes.txt'}", f"output={out}", *TEXT
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 3
    entities = Tagger.load(carrying_run).entities(text)
    assert [e for line in lines for e in line["entities"]] == entities
    assert all(text[e["start"] : e["end"]] == e["text"] for e in entities)


def test_the_carried_tagger_is_loaded_only_for_input_without_the_columns(
    carrying_run, synthetic_dir
):
    tagger = Tagger.load(carrying_run)
    docs = read_conll(synthetic_dir / "conll2003" / "test.txt")
    with_columns = tagger.tag_documents(docs)
    assert isinstance(tagger._column_tagger, Path)  # the input had the columns: not loaded
    tokens_only = tagger.tag_documents([type(d)(tokens=d.tokens) for d in docs])
    assert not isinstance(tagger._column_tagger, Path)
    assert len(tokens_only) == len(with_columns)


def test_text_for_a_model_without_a_tagger_fails_naming_tagger_and_make_tagger(
    column_model, synthetic_dir, tmp_path
):
    (tmp_path / "notes.txt").write_text(paragraphs(synthetic_dir))
    done = tag_cli(
        f"model={column_model}", f"input={tmp_path / 'notes.txt'}", f"output={tmp_path / 'o'}",
        *TEXT,
    )  # fmt: skip
    one_line_failure(done, f"{tmp_path / 'notes.txt'}:1: the model's features read the chunk")
    assert "tagger=runs/tagchunk" in done.stderr and "`make tagger`" in done.stderr
    assert not (tmp_path / "o").exists()


def test_a_tagger_folder_without_models_fails_naming_make_tagger(column_model, tmp_path):
    (tmp_path / "in.txt").write_text("John lives in Paris .\n")
    (tmp_path / "empty").mkdir()
    done = tag_cli(
        f"model={column_model}", f"input={tmp_path / 'in.txt'}", f"output={tmp_path / 'o'}",
        f"tagger={tmp_path / 'empty'}", *TEXT,
    )  # fmt: skip
    one_line_failure(done, f"{tmp_path / 'empty'}: not a column tagger (no pos/model.json)")
    assert "`make tagger`" in done.stderr


def test_training_with_a_missing_tagger_fails_before_training(synthetic_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("STRUCTPERC_DATA", raising=False)
    done = console(
        "structperc-train", "+experiment=conll03_local", f"data.dir={synthetic_dir}",
        "features.gazetteer=none", f"features.tagger={tmp_path / 'nowhere'}",
        f"hydra.run.dir={tmp_path / 'run'}",
    )  # fmt: skip
    one_line_failure(done, "structperc-train: error:", f"{tmp_path / 'nowhere'}: not a column")
    assert not (tmp_path / "run" / "model.json").exists()
