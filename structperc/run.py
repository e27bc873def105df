"""Command-line entry: ``python -m structperc.run +experiment=conll03_local [key=value ...]``.

Hydra composes ``conf/config.yaml`` with the chosen experiment and overrides; this module is the
only one below the entry points that reads the config: it turns it into plain objects and calls
the task driver that the ``task`` group names (``structperc/tasks``: tagging, joint, cascade).  It
returns the run's headline metric (dev F1 for tagging, test NP F1 for the joint tasks), so
sweepers (``-m learner.C=...``) can optimise it.  ``--help`` lists the config groups and keys.
A bad setting or input prints one line and exits with status 2 (a setting left ``???``: the
usage line too); Ctrl-C prints ``structperc-train: interrupted`` and exits with status 130
(``HYDRA_FULL_ERROR=1``: the tracebacks).
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path

import hydra
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from structperc.cli import config_dir, fail_cleanly, full_error, run_entry_point, usage_error
from structperc.data.loading import load_corpus, resolve_data_dir
from structperc.distributed import SERIAL, Group
from structperc.features.cache import feature_cache_key
from structperc.rerank.candidates import ListSettings
from structperc.tasks.cascade import run_cascade
from structperc.tasks.joint import run_joint
from structperc.tasks.loading import ColumnTagger, check_column_tagger
from structperc.tasks.rerank import RankerSettings, run_rerank
from structperc.tasks.tagchunk import run_tagchunk
from structperc.tasks.tagging import run_tagging
from structperc.train import FitSettings

log = logging.getLogger("structperc")

TASKS = ("tagging", "joint", "cascade", "rerank", "tagchunk")
PROGRAM = "structperc-train"
USAGE = "+experiment=NAME [key=value ...]  (--help: the config groups and keys)"
DISTRIBUTED_TASKS = ("tagging", "joint")  # the tasks that train one model on several ranks


def fit_settings(cfg: DictConfig, group: Group = SERIAL) -> FitSettings:
    """The training loop's settings: ``trainer.{max_epochs,tol,patience,shuffle,progress,
    mixing,processes}``, ``seed`` and ``device`` (this rank's GPU under torchrun)."""
    keys = ("max_epochs", "tol", "patience", "shuffle", "progress")
    return FitSettings(
        **{k: cfg.trainer[k] for k in keys},
        seed=cfg.seed,
        device=group.device_of(cfg.device),
        mixing=cfg.trainer.get("mixing", "uniform"),
        processes=check_processes(cfg.trainer.get("processes", 1)),
    )


def check_processes(processes, cores: int | None = None) -> int:
    """``trainer.processes`` as an int >= 1 (else ValueError naming the key), at most the
    ``cores`` this process may run on (default: its CPU affinity): more would only queue."""
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise ValueError(f"trainer.processes must be an integer >= 1, got {processes!r}")
    if cores is None:
        affinity = getattr(os, "sched_getaffinity", None)
        cores = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    if processes > cores:
        log.info("trainer.processes=%d but %d core(s) here: using %d", processes, cores, cores)
    return min(processes, cores)


def start_group(cfg: DictConfig) -> Group:
    """The processes of this run: ``distributed=torch`` joins torchrun's group."""
    name = cfg.distributed.name
    if name == "none":
        world = int(os.environ.get("WORLD_SIZE", "1"))
        if world > 1:
            raise ValueError(
                f"started by torchrun with {world} processes but distributed=none: each would "
                "train the whole model into the same folder; add distributed=torch"
            )
        return SERIAL
    if name != "torch":
        raise ValueError(f"distributed must be none or torch, got {name!r} (conf/distributed/)")
    group = Group.from_environment(cfg.distributed.backend, cfg.device)
    if group.parallel and cfg.task.name not in DISTRIBUTED_TASKS:
        raise ValueError(
            f"task={cfg.task.name} does not train on several ranks; distributed=torch runs "
            f"the tasks {DISTRIBUTED_TASKS}"
        )
    if not group.is_main:  # rank 0 speaks for the run
        logging.getLogger("structperc").setLevel(logging.WARNING)
    return group


def flat_hparams(cfg: DictConfig) -> dict:
    """The run's settings as a flat dict of scalars (TensorBoard's HPARAMS tab, results.json)."""
    flat: dict = {"task": cfg.task.name}
    groups = ("learner", "trainer", "features", "decoder", "task")
    for group in (*groups, "ranker") if cfg.task.name == "rerank" else groups:
        if cfg.get(group) is None:
            continue
        for k, v in OmegaConf.to_container(cfg[group], resolve=True).items():
            if k != "_target_":
                flat[f"{group}.{k}"] = v if isinstance(v, int | float | str | bool) else str(v)
        if "_target_" in cfg[group]:
            flat[group] = cfg[group]._target_.rsplit(".", 1)[-1]
    flat["seed"] = cfg.seed
    flat["data.max_docs"] = str(cfg.data.max_docs)
    flat["data.train_docs"] = str(cfg.data.get("train_docs"))
    return flat


def load_data(cfg: DictConfig, data_dir: Path | None) -> dict:
    """The corpus's splits; train cut to ``data.train_docs`` documents when set."""
    corpus = load_corpus(cfg.data.name, data_dir or cfg.data.dir, max_docs=cfg.data.max_docs)
    n = cfg.data.get("train_docs")
    if n is not None:
        corpus["train"] = corpus["train"][: int(n)]
    return corpus


def local_features(cfg: DictConfig, data_dir: Path | None):
    """Instantiate the feature pipeline, a relative gazetteer path taken from the data folder;
    returns (features, the settings as a dict)."""
    fcfg = OmegaConf.to_container(cfg.features, resolve=True)
    gaz = fcfg.get("gazetteer_path")
    if gaz and fcfg.get("gazetteer") != "none" and not Path(gaz).is_absolute() and data_dir:
        if not Path(gaz).is_file():
            fcfg["gazetteer_path"] = str(data_dir / gaz)
    return instantiate(fcfg), fcfg


def extraction_settings(fcfg: dict) -> dict:
    """The feature settings that decide the feature ids (the cache key's): ``edges`` is the
    model's, not the ids', and the tagger's columns enter through its files; an empty
    ``gazetteers`` or ``trigram_attributes`` is left out, so runs keep the key they had before
    those settings existed."""
    out = {k: v for k, v in fcfg.items() if k not in ("edges", "tags", "tagger")}
    for optional in ("gazetteers", "trigram_attributes"):
        if optional in out and not out[optional]:
            del out[optional]
    return out


def tagging_inputs(cfg: DictConfig, data_dir: Path | None) -> tuple[dict, object, dict]:
    """(corpus, local features, their cache key) of a CoNLL-2003 task; with
    ``features.tags=auto`` the corpus's POS and chunk columns are the tagger's."""
    corpus = load_data(cfg, data_dir)
    features, fcfg = local_features(cfg, data_dir)
    files = [data_dir / cfg.data.name / f"{s}.txt" for s in corpus] if data_dir else []
    if fcfg.get("gazetteer") != "none" and fcfg.get("gazetteer_path"):
        files.append(Path(fcfg["gazetteer_path"]))
    extraction = extraction_settings(fcfg)
    if features.gazetteers:  # their lists change with their packages' versions
        extraction["gazetteer_versions"] = features.gazetteer_versions
        extraction["external_outside"] = "no feature"  # (the first version had an "O" value)
    if features.tagger:  # (tags=given: carried by the run folder, checked before training)
        check_column_tagger(features.tagger)
    if features.tags == "auto":
        tagger = ColumnTagger.load(features.tagger)
        corpus = {s: tagger.fill(docs) for s, docs in corpus.items()}
        files += [Path(features.tagger) / m / "model.safetensors" for m in ("pos", "chunk")]
        # how the tagger reads: Penn Treebank brackets and quotes, one sentence at a time
        extraction["tagger_input"] = "treebank sentences"
    return corpus, features, feature_cache_key(extraction, files, cfg.data.max_docs)


def tagging(cfg: DictConfig, out_dir: Path, data_dir: Path | None, group: Group) -> float:
    corpus, features, key = tagging_inputs(cfg, data_dir)
    t = cfg.trainer
    doc_features = cfg.get("document_features")
    results = run_tagging(
        corpus=corpus,
        features=features,
        learner=instantiate(cfg.learner),
        out_dir=out_dir,
        cache_dir=cfg.cache_dir,
        cache_key=key,
        settings=fit_settings(cfg, group),
        eval_every=t.eval_every,
        batch_size=t.batch_size,
        save=cfg.save_model,
        write_predictions=cfg.write_predictions,
        hparams=flat_hparams(cfg),
        checkpoint=t.checkpoint,
        resume=resume_wanted(cfg, group),
        doc_features=instantiate(doc_features) if doc_features else None,
        n_test=cfg.decoder.n_test,
        constraints=cfg.decoder.constraints,
        group=group,
    )
    return float(results.get("dev", results.get("test", {})).get("f1", 0.0))


def rerank(cfg: DictConfig, out_dir: Path, data_dir: Path | None) -> float:
    corpus, features, key = tagging_inputs(cfg, data_dir)
    task = cfg.task
    settings = fit_settings(cfg)
    lists = ListSettings(folds=task.folds, unit=task.unit, n=task.n, n_test=task.n_test)
    trainer = {k: cfg.trainer[k] for k in ("max_epochs", "tol", "patience", "shuffle")}
    first = OmegaConf.to_container(cfg.learner, resolve=True)
    if first.get("support") == "all":  # (the CRF's default: its lists keep the key they had)
        del first["support"]
    lists_key = {
        "learner": first,
        "trainer": trainer | {"seed": cfg.seed},
        "features": key,
        "lists": {"folds": task.folds, "unit": task.unit},  # n and n_test name the files
    }
    if not features.edges:  # (keys of the default model stay as they were)
        lists_key["edges"] = False
    keys = ("features", "base_feature", "base_weight", "local_features", "target", "min_units")
    second = RankerSettings(**{k: task[k] for k in keys}, select_on_dev=task.select_on_dev)
    doc_features = cfg.get("document_features")
    results = run_rerank(
        corpus=corpus,
        features=features,
        first_learner=instantiate(cfg.learner),
        ranker=instantiate(cfg.ranker),
        out_dir=out_dir,
        cache_dir=cfg.cache_dir,
        cache_key=key,
        lists_dir=task.lists_dir,
        lists_key=lists_key,
        settings=settings,
        ranker_settings=replace(settings, max_epochs=task.epochs),
        lists=lists,
        second=second,
        fold=task.fold,
        doc_features=instantiate(doc_features) if doc_features else None,
        eval_every=cfg.trainer.eval_every,
        write_predictions=cfg.write_predictions,
        hparams=flat_hparams(cfg),
    )
    return float(results.get("dev", results.get("test", {})).get("f1", 0.0))


def joint(cfg: DictConfig, out_dir: Path, data_dir: Path | None, group: Group) -> float:
    corpus = _joint_corpus(cfg, data_dir)
    t = cfg.trainer
    results = run_joint(
        corpus=corpus,
        features=instantiate(cfg.features),
        learner=instantiate(cfg.learner),
        out_dir=out_dir,
        settings=fit_settings(cfg, group),
        eval_every=t.eval_every,
        batch_size=t.batch_size,
        backoff_epochs=int(cfg.task.backoff_epochs),
        maximal_outside=bool(cfg.task.maximal_outside),
        write_test_predictions=cfg.write_predictions,
        hparams=flat_hparams(cfg),
        checkpoint=t.checkpoint,
        resume=resume_wanted(cfg, group),
        group=group,
    )
    return float(results["test"]["np_f1"]) if group.is_main else 0.0


def cascade(cfg: DictConfig, out_dir: Path, data_dir: Path | None) -> float:
    results = run_cascade(
        corpus=_joint_corpus(cfg, data_dir),
        learner=instantiate(cfg.learner),
        out_dir=out_dir,
        settings=fit_settings(cfg),
        min_count=int(cfg.features.get("min_count", 1)),
        batch_size=cfg.trainer.batch_size,
        write_test_predictions=cfg.write_predictions,
        hparams=flat_hparams(cfg),
    )
    return float(results["test"]["np_f1"])


def tagchunk(cfg: DictConfig, out_dir: Path, data_dir: Path | None) -> float:
    corpus = _joint_corpus(cfg, data_dir)
    task, keys, built = cfg.task, {}, {}
    files = [data_dir / cfg.data.name / f"{s}.txt" for s in corpus] if data_dir else []
    for part in ("pos", "chunk"):
        fcfg = OmegaConf.to_container(cfg.features, resolve=True)
        fcfg.update(
            attributes=list(task[f"{part}_attributes"]),
            bigram_attributes=list(task[f"{part}_bigrams"]),
            trigram_attributes=list(task.get(f"{part}_trigrams") or []),
            gazetteer="none",
            gazetteers=[],
        )
        if part == "chunk" and task.get("chunk_edges") is not None:
            fcfg["edges"] = bool(task.chunk_edges)  # the weight tables', not the feature ids'
        built[part] = instantiate(fcfg)
        extraction = extraction_settings(fcfg)
        extraction["part"] = part
        keys[part] = feature_cache_key(extraction, files, cfg.data.max_docs) | {
            "dev_sentences": task.dev_sentences
        }
    train_pos, jackknife_key = task.get("chunk_train_pos", "given"), None
    if train_pos != "given":  # the chunker's training POS column is the fold taggers'
        keys["chunk"] |= {
            "chunk_train_pos": train_pos,
            "pos_folds": task.pos_folds,
            "pos_tagger": {  # what decides the fold taggers' tags
                "features": keys["pos"],
                "learner": OmegaConf.to_container(cfg.learner, resolve=True),
                "trainer": {k: cfg.trainer[k] for k in ("max_epochs", "tol", "patience")},
                "shuffle": cfg.trainer.shuffle,
                "seed": cfg.seed,
            },
        }
        # the fold taggers' column is cached apart: a run that changes only the chunker reuses it
        jackknife_key = {k: keys["chunk"][k] for k in ("pos_folds", "pos_tagger")}
    results = run_tagchunk(
        corpus=corpus,
        pos_features=built["pos"],
        chunk_features=built["chunk"],
        pos_learner=instantiate(cfg.learner),
        chunk_learner=instantiate(cfg.learner),
        out_dir=out_dir,
        settings=fit_settings(cfg),
        dev_sentences=task.dev_sentences,
        cache_dir=cfg.cache_dir,
        cache_keys=keys,
        eval_every=cfg.trainer.eval_every,
        batch_size=cfg.trainer.batch_size,
        hparams=flat_hparams(cfg),
        chunk_train_pos=train_pos,
        pos_folds=int(task.get("pos_folds", 5)),
        chunk_encoding=task.get("chunk_encoding", "iob2"),
        jackknife_key=jackknife_key,
    )
    return float(results["dev"]["chunk_f1"]) if "dev" in results else float("nan")  # no dev split


def resume_wanted(cfg: DictConfig, group: Group) -> bool:
    """``trainer.resume``, or a group that torchrun restarted after a failure."""
    if group.restarts and not cfg.trainer.resume:
        log.warning("torchrun restart %d: resuming from the last checkpoint", group.restarts)
        return True
    return bool(cfg.trainer.resume)


def _joint_corpus(cfg: DictConfig, data_dir: Path | None) -> dict:
    corpus = load_data(cfg, data_dir)
    if "test" not in corpus:
        raise ValueError(f"{cfg.data.name} has no test split; the {cfg.task.name} task tests on it")
    return corpus


def main_from_config(cfg: DictConfig, out_dir: Path, group: Group = SERIAL) -> float:
    """Run the task ``cfg.task.name`` into ``out_dir`` on the ranks of ``group``; returns its
    headline metric (0 on ranks other than 0)."""
    name = cfg.task.name
    if name not in TASKS:
        raise ValueError(f"task.name must be one of {TASKS}, got {name!r} (conf/task/)")
    if cfg.get("threads"):
        torch.set_num_threads(int(cfg.threads))
    data_dir = resolve_data_dir(cfg.data.dir)
    if name == "tagging":
        return tagging(cfg, out_dir, data_dir, group)
    if name == "joint":
        return joint(cfg, out_dir, data_dir, group)
    drivers = {"cascade": cascade, "rerank": rerank, "tagchunk": tagchunk}
    return drivers[name](cfg, out_dir, data_dir)


def explicit_run_dir(hydra_cfg) -> None:
    """ValueError unless ``hydra.run.dir`` was given (several ranks must share one folder, and
    a restarted group must find it again)."""
    if str(hydra_cfg.mode) == "RunMode.MULTIRUN":
        raise ValueError("distributed=torch runs one job; sweep with -m without torchrun")
    given = [o for o in hydra_cfg.overrides.hydra if o.split("=", 1)[0] == "hydra.run.dir"]
    if not given:
        raise ValueError(
            "distributed=torch with several ranks needs an explicit hydra.run.dir=FOLDER "
            "(each rank would otherwise make its own time-stamped folder)"
        )


@hydra.main(version_base="1.3", config_path=config_dir(), config_name="config")
def train_main(cfg: DictConfig) -> float:
    """Hydra's job: the run of ``cfg`` (``main_from_config``) on the processes that started it."""
    group = SERIAL
    try:
        group = start_group(cfg)
        if group.parallel:
            explicit_run_dir(HydraConfig.get())
        return main_from_config(cfg, Path(HydraConfig.get().runtime.output_dir), group)
    except Exception as err:
        # bad input or a bad setting (also inside a component Hydra built): one line, status 2
        cause = err.__cause__ if isinstance(err, InstantiationException) else err
        if isinstance(cause, MissingMandatoryValue) and not full_error():
            usage_error(PROGRAM, USAGE, f"missing setting {cause.full_key}=")
        if isinstance(cause, ValueError | OSError):
            fail_cleanly(PROGRAM, cause)
        raise
    finally:
        group.close()


def main() -> None:
    """``structperc-train``: the command line (``sys.argv``) through Hydra; Ctrl-C: one line."""
    run_entry_point(PROGRAM, train_main)


if __name__ == "__main__":
    main()
