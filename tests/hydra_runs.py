"""What the end-to-end tests (``test_run``, ``test_crf_run``, ``test_tasks_joint``, the tagging
command's) share: the Hydra config composed from ``conf/``, a synthetic CoNLL-2003 folder, one
run through ``structperc.run.main_from_config``, and ``structperc-tag`` as a console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from structperc.data.conll import write_conll
from structperc.data.synthetic import make_corpus
from structperc.run import main_from_config

ROOT = Path(__file__).resolve().parent.parent
CONF = str(ROOT / "conf")
# token-level attributes only: the model needs no POS or chunk column
TOKEN_FEATURES = [
    "features.gazetteer=none",
    "features.attributes=[w,wl,p1,p2,p3,s1,s2,s3,ic,ac,l,cp]",
    "features.bigram_attributes=[wl]",
]


def compose_config(overrides: list[str], hydra: bool = False):
    """``conf/config.yaml`` with ``overrides`` (and the ``hydra`` node when asked)."""
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose(config_name="config", overrides=overrides, return_hydra_config=hydra)


def write_synthetic_conll2003(root: Path, sizes: dict[str, int]) -> Path:
    """``root/conll2003/<split>.txt`` with ``sizes[split]`` synthetic documents each (seeds 1, 2,
    ... in the order of ``sizes``); returns ``root``."""
    (root / "conll2003").mkdir()
    for seed, (split, n) in enumerate(sizes.items(), start=1):
        write_conll(root / "conll2003" / f"{split}.txt", make_corpus(n, seed=seed))
    return root


def run_main(overrides: list[str], data_dir: Path, out: Path, monkeypatch) -> tuple[float, dict]:
    """``main_from_config`` into ``out`` on the data of ``data_dir`` only, without progress
    bars; returns its score and the run's results.json."""
    monkeypatch.delenv("STRUCTPERC_DATA", raising=False)
    cfg = compose_config([*overrides, f"data.dir={data_dir}", "trainer.progress=false"])
    score = main_from_config(cfg, out)
    return score, json.loads((out / "results.json").read_text())


def trained_run(tmp_path_factory, data_dir: Path, name: str, overrides: list[str]) -> Path:
    """The folder of a run with ``overrides`` on ``data_dir`` (a module-scoped fixture's)."""
    out = tmp_path_factory.mktemp("runs") / name
    mp = pytest.MonkeyPatch()
    try:
        run_main([o.replace("{out}", str(out)) for o in overrides], data_dir, out, mp)
    finally:
        mp.undo()
    return out


def tag_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``structperc-tag ARGS``: ``main`` called from a plain import, as the console script does
    (``python -m`` would run it as ``__main__``, where Hydra finds its configs differently)."""
    code = "import sys; from structperc.predict import main; sys.argv[0] = 'structperc-tag'; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"},
    )


def one_line_failure(done: subprocess.CompletedProcess, *expected: str) -> None:
    """``done`` failed with status 2 and one line on stderr holding every ``expected``."""
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for text in expected:
        assert text in lines[0], lines[0]
