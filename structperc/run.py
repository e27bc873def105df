"""Command-line entry: ``python -m structperc.run +experiment=conll03_local [key=value ...]``.

Hydra composes ``conf/config.yaml`` with the chosen experiment and overrides; this module turns
the config into plain objects and calls ``experiment.run_experiment``.  It returns the dev F1, so
sweepers (``-m learner.C=...``) can optimise it.  ``--help`` lists the config groups and keys.
"""

from __future__ import annotations

import logging
from pathlib import Path

import hydra
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from structperc.data.loading import load_corpus, resolve_data_dir
from structperc.experiment import feature_cache_key, run_experiment
from structperc.train import FitSettings

log = logging.getLogger("structperc")


def build_features(cfg: DictConfig, data_dir: Path | None):
    """Instantiate the feature pipeline, resolving a relative gazetteer path against the data."""
    fcfg = OmegaConf.to_container(cfg.features, resolve=True)
    gaz = fcfg.get("gazetteer_path")
    if gaz and fcfg.get("gazetteer") != "none" and not Path(gaz).is_absolute() and data_dir:
        if not Path(gaz).is_file():
            fcfg["gazetteer_path"] = str(data_dir / gaz)
    return instantiate(fcfg), fcfg


def fit_settings(cfg: DictConfig) -> FitSettings:
    """The training loop's settings: ``trainer.{max_epochs,tol,patience,shuffle,progress}``,
    ``seed`` and ``device``."""
    t = cfg.trainer
    return FitSettings(
        max_epochs=t.max_epochs,
        tol=t.tol,
        patience=t.patience,
        shuffle=t.shuffle,
        seed=cfg.seed,
        device=cfg.device,
        progress=t.progress,
    )


def main_from_config(cfg: DictConfig, out_dir: Path) -> float:
    if cfg.get("task", "tagging") != "tagging":  # joint / cascade: Shimizu & Haas (2006)
        from structperc.joint.entry import main_from_config as joint_main

        return joint_main(cfg, out_dir)
    if cfg.get("threads"):
        torch.set_num_threads(int(cfg.threads))
    data_dir = resolve_data_dir(cfg.data.dir)
    corpus = load_corpus(cfg.data.name, cfg.data.dir, max_docs=cfg.data.max_docs)
    features, fcfg = build_features(cfg, data_dir)
    learner = instantiate(cfg.learner)
    files = [data_dir / cfg.data.name / f"{s}.txt" for s in corpus] if data_dir else []
    if fcfg.get("gazetteer") != "none" and fcfg.get("gazetteer_path"):
        files.append(Path(fcfg["gazetteer_path"]))
    t = cfg.trainer
    results = run_experiment(
        corpus=corpus,
        features=features,
        learner=learner,
        out_dir=out_dir,
        cache_dir=cfg.cache_dir,
        cache_key=feature_cache_key(fcfg, files, cfg.data.max_docs),
        settings=fit_settings(cfg),
        eval_every=t.eval_every,
        batch_size=t.batch_size,
        save=cfg.save_model,
        write_predictions=cfg.write_predictions,
        hparams=_flat_hparams(cfg),
        checkpoint=t.checkpoint,
        resume=t.resume,
        doc_features=instantiate(cfg.document_features) if cfg.get("document_features") else None,
        n_test=cfg.decoder.n_test,
    )
    log.info("results in %s", out_dir / "results.json")
    return float(results.get("dev", results.get("test", {})).get("f1", 0.0))


def _flat_hparams(cfg: DictConfig) -> dict:
    flat = {}
    for group in ("learner", "trainer", "features"):
        for k, v in OmegaConf.to_container(cfg[group], resolve=True).items():
            if k != "_target_":
                flat[f"{group}.{k}"] = v if isinstance(v, (int, float, str, bool)) else str(v)
        if "_target_" in cfg[group]:
            flat[group] = cfg[group]._target_.rsplit(".", 1)[-1]
    flat["seed"] = cfg.seed
    flat["data.max_docs"] = str(cfg.data.max_docs)
    return flat


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> float:
    return main_from_config(cfg, Path(HydraConfig.get().runtime.output_dir))


if __name__ == "__main__":
    main()
