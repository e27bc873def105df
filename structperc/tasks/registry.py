"""The tasks by name: each task module registers its builder and driver here with ``@task``.

A run's ``conf/task/<name>.yaml`` names the module that defines the task (``module:``);
``run.py`` imports it, which registers the task, and looks ``task.name`` up here.  A task is
then two files, the module and its yaml, and a module outside the package works the same way
(``module: my_package.my_task``, the yaml in a folder of ``hydra.searchpath``).

What a task module defines:

    settings  one frozen dataclass: everything the run needs, as plain objects
    builder   (config) -> settings; ``config`` is ``run.ComposedConfig``: the composed Hydra
              config and what Hydra makes of it, so no task module imports Hydra
    driver    (settings, out_dir, group) -> results (the run's results.json, {} on ranks > 0)

and registers the driver::

    @task("tagging", build=tagging_settings, headline=("dev.f1", "test.f1"), distributed=True)
    def run_tagging(settings: LabelerSettings, out_dir: Path, group: Group = SERIAL) -> dict: ...

``headline`` names the run's headline metric (what a sweeper optimises) as ``split.metric``
paths into the results, the first one present; ``distributed`` says whether the task trains
one model on several ranks (``distributed=torch``); ``warm_start`` whether it continues a saved
model (``trainer.init_from``).  Tasks compose through functions of shared
modules (``labeler.py``, ``pos_np.py``, ``training.py``), never through each other's drivers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from structperc.distributed import Group


@dataclass(frozen=True)
class Task:
    """A registered task: its builder, its driver, its headline metric and whether it runs on
    several ranks and continues a saved model (``warm_start``).  ``missing`` is the headline of
    results that hold none of ``headline``."""

    name: str
    build: Callable[[Any], Any]
    drive: Callable[[Any, Path, Group], dict]
    headline: tuple[str, ...]
    distributed: bool = False
    missing: float = 0.0
    warm_start: bool = False

    def headline_of(self, results: dict) -> float:
        """The first ``split.metric`` of ``headline`` that ``results`` hold, as a float."""
        for path in self.headline:
            split, metric = path.split(".", 1)
            if metric in results.get(split, {}):
                return float(results[split][metric])
        return self.missing


_TASKS: dict[str, Task] = {}


def task(
    name: str,
    *,
    build: Callable[[Any], Any],
    headline: tuple[str, ...],
    distributed: bool = False,
    missing: float = 0.0,
    warm_start: bool = False,
) -> Callable[[Callable], Callable]:
    """Decorator of a task's driver: registers ``name`` -> (``build``, the driver).  A second
    module registering the same name is an error; the same module again (a reload) replaces it."""

    def register(drive: Callable) -> Callable:
        known = _TASKS.get(name)
        if known is not None and known.drive.__module__ != drive.__module__:
            raise ValueError(
                f"task {name!r} is registered twice: by {known.drive.__module__} and "
                f"{drive.__module__}"
            )
        _TASKS[name] = Task(name, build, drive, tuple(headline), distributed, missing, warm_start)
        return drive

    return register


def registered() -> list[str]:
    """The names of the tasks registered so far."""
    return sorted(_TASKS)


def lookup(name: str, known: Iterable[str] = ()) -> Task:
    """The task registered as ``name``; else ValueError listing the registered ones and the
    ``known`` names (those with a ``conf/task/*.yaml``)."""
    if name in _TASKS:
        return _TASKS[name]
    names = ", ".join(sorted({*_TASKS, *known}))
    raise ValueError(f"task.name must be one of {names} (conf/task/*.yaml), got {name!r}")
