"""Command-line entry: ``python -m structperc.run +experiment=conll03_local [key=value ...]``.

Hydra composes ``conf/config.yaml`` with the chosen experiment and overrides.  The ``task``
group's file (``conf/task/<name>.yaml``) names the module that defines the task (``module:``);
this module imports it, which registers the task (``tasks/registry.py``), and runs it: the
task's builder reads the composed config through ``ComposedConfig`` (the only reader of the
config below the entry points: no task module imports Hydra) into its settings, and its driver
trains into the run folder.  It returns the run's headline metric (the task's: dev F1 for
tagging, test NP F1 for the joint tasks), so sweepers (``-m learner.C=...``) can optimise it.
``--help`` lists the config groups and keys.  A bad setting or input prints one line and exits
with status 2 (a setting left ``???``: the usage line too); Ctrl-C prints
``structperc-train: interrupted`` and exits with status 130 (``HYDRA_FULL_ERROR=1``: the
tracebacks).

``train(*overrides)`` is the same run from Python: ``structperc.train("+experiment=...")``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

import hydra
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import MissingMandatoryValue

from structperc.checkpoint import META as CHECKPOINT_META
from structperc.cli import config_dir, fail_cleanly, full_error, run_entry_point, usage_error
from structperc.data.loading import resolve_data_dir
from structperc.distributed import SERIAL, Group
from structperc.learn.fitting import FitSettings
from structperc.plugins import import_plugins
from structperc.tasks.registry import Task, lookup

if TYPE_CHECKING:
    from structperc.inference.tagger import Tagger

log = logging.getLogger("structperc")

PROGRAM = "structperc-train"
USAGE = "+experiment=NAME [key=value ...]  (--help: the config groups and keys)"
HPARAM_GROUPS = ("learner", "trainer", "features", "decoder", "task")


class ComposedConfig:
    """What a task's builder reads: the composed config (``cfg``), the data folder
    (``data_dir``: None where ``data.dir`` names none), the processes of the run (``group``),
    and what Hydra makes of the config's nodes (``make``, ``plain``), with the settings every
    task derives alike (``fit_settings``, ``hparams``, ``resume``)."""

    def __init__(self, cfg: DictConfig, data_dir: Path | None = None, group: Group = SERIAL):
        self.cfg, self.data_dir, self.group = cfg, data_dir, group

    @classmethod
    def of(cls, cfg: DictConfig, group: Group = SERIAL) -> ComposedConfig:
        """The config of a run, its data folder resolved from ``data.dir`` (the one place it
        is: ``data.loading.resolve_data_dir``, ``$STRUCTPERC_DATA`` first)."""
        return cls(cfg, resolve_data_dir(cfg.data.get("dir")), group)

    def make(self, node):
        """The object that a node (or a dict) with ``_target_`` describes (Hydra's
        ``instantiate``)."""
        return instantiate(node)

    def plain(self, node):
        """A node as plain dicts and lists, interpolations resolved."""
        return OmegaConf.to_container(node, resolve=True)

    def fit_settings(self) -> FitSettings:
        """The training loop's settings: ``trainer.{max_epochs,tol,patience,shuffle,progress,
        mixing,processes}``, ``seed`` and ``device`` (this rank's GPU under torchrun)."""
        cfg = self.cfg
        keys = ("max_epochs", "tol", "patience", "shuffle", "progress")
        return FitSettings(
            **{k: cfg.trainer[k] for k in keys},
            seed=cfg.seed,
            device=self.group.device_of(cfg.device),
            mixing=cfg.trainer.get("mixing", "uniform"),
            processes=check_processes(cfg.trainer.get("processes", 1)),
        )

    def hparams(self, *groups: str) -> dict:
        """The run's settings as a flat dict of scalars (TensorBoard's HPARAMS tab,
        results.json): ``HPARAM_GROUPS`` and the task's own further ``groups`` (the ranker's)."""
        cfg = self.cfg
        flat: dict = {"task": cfg.task.name}
        for group in (*HPARAM_GROUPS, *groups):
            if cfg.get(group) is None:
                continue
            for k, v in self.plain(cfg[group]).items():
                if k != "_target_" and (group, k) != ("task", "module"):  # code, not a setting
                    flat[f"{group}.{k}"] = v if isinstance(v, int | float | str | bool) else str(v)
            if "_target_" in cfg[group]:
                flat[group] = cfg[group]._target_.rsplit(".", 1)[-1]
        flat["seed"] = cfg.seed
        flat["data.max_docs"] = str(cfg.data.max_docs)
        flat["data.train_docs"] = str(cfg.data.get("train_docs"))
        return flat

    def resume(self) -> bool:
        """``trainer.resume``, or a group that torchrun restarted after a failure."""
        if self.group.restarts and not self.cfg.trainer.resume:
            log.warning(
                "torchrun restart %d: resuming from the last checkpoint", self.group.restarts
            )
            return True
        return bool(self.cfg.trainer.resume)


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
    if group.parallel and not task_of(cfg).distributed:
        raise ValueError(
            f"task={cfg.task.name} does not train on several ranks (its module registers it "
            "without distributed=True); run it without distributed=torch"
        )
    if not group.is_main:  # rank 0 speaks for the run
        logging.getLogger("structperc").setLevel(logging.WARNING)
    return group


def task_of(cfg: DictConfig) -> Task:
    """The task ``task.name``, registered by importing ``task.module`` (the module its
    ``conf/task/<name>.yaml`` names); an unknown one is a ValueError that lists the tasks."""
    module = cfg.task.get("module")
    if module:
        try:
            import_module(module)
        except ImportError as err:
            raise ValueError(f"task.module={module}: {err}") from err
    known = (p.stem for p in (Path(config_dir()) / "task").glob("*.yaml"))
    return lookup(cfg.task.name, known)


def main_from_config(cfg: DictConfig, out_dir: Path, group: Group = SERIAL) -> float:
    """Run the task ``cfg.task.name`` into ``out_dir`` on the ranks of ``group``; returns its
    headline metric (0 on ranks other than 0)."""
    import_plugins(cfg.get("plugins"))  # before the task: a plugin may register it
    task = task_of(cfg)
    if cfg.trainer.get("init_from") and not task.warm_start:
        raise ValueError(
            f"trainer.init_from continues a saved model of the tagging task; task="
            f"{cfg.task.name} does not continue models"
        )
    if cfg.trainer.get("complete_with") and not task.warm_start:
        raise ValueError(
            f"trainer.complete_with completes the training data of the tagging task; task="
            f"{cfg.task.name} does not take it"
        )
    if cfg.get("threads"):
        torch.set_num_threads(int(cfg.threads))
    settings = task.build(ComposedConfig.of(cfg, group))
    results = task.drive(settings, out_dir, group)
    if group.is_main and not cfg.trainer.get("keep_checkpoints", False):
        remove_checkpoints(out_dir)
    return task.headline_of(results) if group.is_main else 0.0


def remove_checkpoints(out_dir: Path) -> None:
    """Remove the per-epoch checkpoints of a finished run (every model's ``checkpoint/``
    folder under ``out_dir``: the tagchunk task trains several): they serve a run that is
    killed, and a finished one keeps its model files (``trainer.keep_checkpoints=true``
    keeps them too)."""
    for folder in sorted(Path(out_dir).rglob("checkpoint")):
        if folder.is_dir() and (folder / CHECKPOINT_META).is_file():
            shutil.rmtree(folder, ignore_errors=True)


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


@dataclass(frozen=True)
class Run:
    """A finished run (``train``): its ``folder`` (the model, results.json, predictions, the
    TensorBoard logs), its ``results`` (results.json) and its ``headline`` metric."""

    folder: Path
    results: dict
    headline: float

    def tagger(self, **settings) -> Tagger:
        """The run's model as a ``Tagger`` (``Tagger.load``'s ``settings``)."""
        from structperc.inference.tagger import Tagger

        return Tagger.load(self.folder, **settings)


def train(*overrides: str, folder: str | Path | None = None) -> Run:
    """Train as ``python -m structperc.run`` does with the same ``key=value`` ``overrides``
    (``+experiment=conll03_local``, ``data=columns``, ``learner.C=0.1`` ...), in this process,
    into ``folder`` (default: ``hydra.run.dir``, as the command line's); returns the ``Run``.

    Hydra's compose API reads ``conf/`` (``cli.config_dir``); a setting that is wrong raises
    as it would on the command line (ValueError, Hydra's ConfigCompositionException).  Logging is
    left as the caller set it up.
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        cfg = compose(config_name="config", overrides=list(overrides), return_hydra_config=True)
    if folder is None:
        folder = OmegaConf.select(cfg, "hydra.run.dir")  # (its ${now:...} resolved here)
    with open_dict(cfg):
        del cfg["hydra"]
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    headline = main_from_config(cfg, out)
    results = json.loads((out / "results.json").read_text())
    return Run(out, results, headline)


def main() -> None:
    """``structperc-train``: the command line (``sys.argv``) through Hydra; Ctrl-C: one line."""
    run_entry_point(PROGRAM, train_main)


if __name__ == "__main__":
    main()
