"""What the end-to-end tests (``test_run``, ``test_crf_run``, ``test_tasks_joint``, the tagging
command's) share: the Hydra config composed from ``conf/``, a synthetic CoNLL-2003 folder, one
run through ``structperc.run.main_from_config``, and ``structperc-tag`` called in-process as its
console script (the trained models the tagging tests share are fixtures of ``conftest.py``)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import traceback
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


def console(program: str, *args: str, stdin: str | bytes | None = None):
    """The console script ``program`` (``structperc-tag``, ``-train``, ``-explain``, ``-report``)
    run with ``ARGS`` in this process: its function in ``structperc.console`` with ``sys.argv``
    and the standard streams replaced, and ``HYDRA_FULL_ERROR`` unset.  A ``CompletedProcess``
    with the exit status a process would have: ``SystemExit``'s, or 1 and the traceback on
    stderr for any other exception.  (A second or more less per call than a new Python
    importing torch.)"""
    from structperc import console as scripts

    entry = {
        "structperc-tag": scripts.tag,
        "structperc-train": scripts.train,
        "structperc-explain": scripts.explain,
        "structperc-report": scripts.report,
    }[program]
    data = stdin.encode() if isinstance(stdin, str) else stdin or b""
    streams = (io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"), io.StringIO(), io.StringIO())
    saved = (sys.argv, sys.stdin, sys.stdout, sys.stderr)
    full_error = os.environ.pop("HYDRA_FULL_ERROR", None)
    sys.argv = [program, *args]
    sys.stdin, sys.stdout, sys.stderr = streams
    status = 0
    try:
        entry()
    except SystemExit as err:
        if isinstance(err.code, str):
            print(err.code, file=sys.stderr)
        status = err.code if isinstance(err.code, int) else int(err.code is not None)
    except Exception:
        traceback.print_exc()
        status = 1
    finally:
        sys.argv, sys.stdin, sys.stdout, sys.stderr = saved
        if full_error is not None:
            os.environ["HYDRA_FULL_ERROR"] = full_error
    return subprocess.CompletedProcess(args, status, streams[1].getvalue(), streams[2].getvalue())


def tag_cli(*args: str, stdin: str | bytes | None = None) -> subprocess.CompletedProcess:
    """``structperc-tag ARGS`` in this process (``console``)."""
    return console("structperc-tag", *args, stdin=stdin)


def without_full_error() -> dict[str, str]:
    """The environment less ``HYDRA_FULL_ERROR`` (a child process then fails in one line)."""
    return {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}


def one_line_failure(done: subprocess.CompletedProcess, *expected: str) -> None:
    """``done`` failed with status 2 and one line on stderr holding every ``expected``."""
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for text in expected:
        assert text in lines[0], lines[0]
