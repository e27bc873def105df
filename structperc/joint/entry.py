"""The Hydra-facing layer of the joint tasks: config -> plain objects -> ``experiment.py``.

``structperc.run`` hands over here when ``task`` is ``joint`` or ``cascade``:

    python -m structperc.run +experiment=conll00_joint                  # MMVP joint, Table 7
    python -m structperc.run +experiment=conll00_joint learner=vp       # VP joint
    python -m structperc.run +experiment=conll00_cascade                # MMVP+MMVP cascade

Keys read: ``data.{name,dir,max_docs,train_docs}`` (``train_docs``: the first N training
sentences, 447 in the paper; ``max_docs`` cuts every split, for smoke runs), ``features`` (a
``PartFeatures``), ``learner``, ``trainer.*``, ``joint.{backoff_epochs,maximal_outside}``,
``seed``, ``device``, ``threads``, ``write_predictions``.  Returns the test NP F1.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from structperc.data.loading import load_corpus
from structperc.joint.experiment import run_cascade, run_joint
from structperc.run import fit_settings

log = logging.getLogger("structperc")

TASKS = ("joint", "cascade")


def load(cfg: DictConfig) -> dict:
    """The corpus's train and test splits; train cut to ``data.train_docs`` sentences."""
    corpus = load_corpus(cfg.data.name, cfg.data.dir, max_docs=cfg.data.max_docs)
    n = cfg.data.get("train_docs")
    if n is not None:
        corpus["train"] = corpus["train"][: int(n)]
    if "test" not in corpus:
        raise ValueError(f"{cfg.data.name} has no test split; the joint tasks evaluate on test")
    return corpus


def hparams(cfg: DictConfig) -> dict:
    """The run's settings as a flat dict of scalars (TensorBoard's HPARAMS tab)."""
    flat: dict = {
        "task": cfg.task,
        "seed": cfg.seed,
        "data.train_docs": str(cfg.data.get("train_docs")),
    }
    for group in ("learner", "trainer", "joint"):
        if cfg.get(group) is None:
            continue
        for k, v in OmegaConf.to_container(cfg[group], resolve=True).items():
            if k != "_target_":
                flat[f"{group}.{k}"] = v if isinstance(v, (int, float, str, bool)) else str(v)
    flat["learner"] = str(cfg.learner._target_).rsplit(".", 1)[-1]
    flat["data.max_docs"] = str(cfg.data.max_docs)
    return flat


def main_from_config(cfg: DictConfig, out_dir: Path) -> float:
    """Run the task ``cfg.task`` into ``out_dir``; returns the test NP F1."""
    if cfg.task not in TASKS:
        raise ValueError(f"task must be one of {TASKS} here, got {cfg.task!r}")
    if cfg.get("threads"):
        torch.set_num_threads(int(cfg.threads))
    corpus = load(cfg)
    learner = instantiate(cfg.learner)
    t = cfg.trainer
    common = dict(
        corpus=corpus,
        learner=learner,
        out_dir=out_dir,
        settings=fit_settings(cfg),
        batch_size=t.batch_size,
        write_test_predictions=cfg.write_predictions,
        hparams=hparams(cfg),
    )
    if cfg.task == "joint":
        joint = cfg.get("joint") or {}
        results = run_joint(
            features=instantiate(cfg.features),
            eval_every=t.eval_every,
            backoff_epochs=int(joint.get("backoff_epochs", 1)),
            maximal_outside=bool(joint.get("maximal_outside", True)),
            **common,
        )
    else:
        results = run_cascade(min_count=int(cfg.features.get("min_count", 1)), **common)
    return float(results["test"]["np_f1"])
