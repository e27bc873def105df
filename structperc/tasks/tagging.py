"""The tagging task: sequence labeling (CoNLL-2003 NER, or any column corpus: NER, chunking, POS
tagging), one labeler trained end to end.

The builder reads the composed config into ``LabelerSettings`` (``labeler.py``); the driver
trains the labeler (``train_labeler``: the first-order chain, or Kazama & Torisawa's document
rescoring with non-local features for the learners that need it) into the run folder, and, for
a model trained on a tagger's columns (``features.tags=auto``), copies that tagger beside it
(``tagger/``), so the model tags new text alone.  It runs on several ranks (``distributed=torch``).
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from structperc.distributed import SERIAL, Group
from structperc.tasks.completion import Completion
from structperc.tasks.inputs import document_features, tagging_inputs, training_files
from structperc.tasks.labeler import LabelerSettings, train_labeler
from structperc.tasks.registry import task
from structperc.tasks.warm_start import InitialModel, check_average


def tagging_settings(config) -> LabelerSettings:
    """The tagging run of the composed ``config`` (``run.ComposedConfig``); with
    ``trainer.init_from``, continuing that run's model (``warm_start.py``), whose digest joins
    the feature cache's key (its features are in the vocabulary)."""
    cfg = config.cfg
    corpus, features, key, record = tagging_inputs(config)
    t = cfg.trainer
    init = InitialModel.load(t.init_from) if t.get("init_from") else None
    if init is not None:
        key = {**key, "init_from": init.digest}
    return LabelerSettings(
        corpus=corpus,
        features=features,
        learner=config.make(cfg.learner),
        cache_dir=cfg.cache_dir,
        cache_key=key,
        fit=replace(config.fit_settings(), warm=init is not None),
        eval_every=t.eval_every,
        batch_size=t.batch_size,
        save=cfg.save_model,
        write_predictions=cfg.write_predictions,
        hparams=config.hparams(),
        checkpoint=t.checkpoint,
        resume=config.resume(),
        doc_features=document_features(config),
        n_test=cfg.decoder.n_test,
        constraints=cfg.decoder.constraints,
        corpus_record=record,
        train_files=tuple(training_files(config)),
        init_from=init,
        init_average=check_average(t.get("init_average", "auto")),
        complete_with=Completion.load(t.complete_with) if t.get("complete_with") else None,
    )


@task(
    "tagging",
    build=tagging_settings,
    headline=("dev.f1", "test.f1", "dev.accuracy", "test.accuracy"),  # plain tags: accuracy
    distributed=True,
    warm_start=True,
)
def run_tagging(settings: LabelerSettings, out_dir: Path, group: Group = SERIAL) -> dict:
    """Train, evaluate and save the labeler of ``settings`` into ``out_dir``; returns the
    results (rank 0's; {} on the others)."""
    results = train_labeler(settings, out_dir, group)
    features = settings.features
    if results and settings.save and features.tagger:  # the column tagger travels with the
        carry_tagger(Path(features.tagger), out_dir / "tagger")  # model (for input without columns)
    return results


def carry_tagger(source: Path, target: Path) -> None:
    """Copy the POS and chunk models of a tagchunk run folder into ``target``."""
    for part in ("pos", "chunk"):
        (target / part).mkdir(parents=True, exist_ok=True)
        for name in ("model.json", "model.safetensors"):
            shutil.copyfile(source / part / name, target / part / name)
