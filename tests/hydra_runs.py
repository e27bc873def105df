"""What the end-to-end tests (``test_run``, ``test_crf_run``, ``test_joint_run``) share: the
Hydra config composed from ``conf/``, a synthetic CoNLL-2003 folder, and one run through
``structperc.run.main_from_config``."""

from __future__ import annotations

import json
from pathlib import Path

from hydra import compose, initialize_config_dir

from structperc.data.conll import write_conll
from structperc.data.synthetic import make_corpus
from structperc.run import main_from_config

ROOT = Path(__file__).resolve().parent.parent
CONF = str(ROOT / "conf")


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
