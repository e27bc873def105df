"""Training on several cores of one machine (``CRF(n_jobs=k)``), started for the user.

k processes forked from the estimator's (``forking.Child``: each sees the training data as it
was at the fork, without a copy, and uses one torch thread) join one gloo process group through
a file store in a temporary folder, and run ``training.train_chain`` as the ranks of
``torchrun``'s distributed training (``distributed.Group``): each rank trains on its
token-balanced shard; the CRF sums its objective and gradient over the ranks and every rank
takes the same L-BFGS step, and the online learners mix their weights (and averaging sums)
after every epoch (iterative parameter mixing, McDonald et al. 2010).  Rank 0 writes its final
tables into shared memory (``forking.SharedTables``), where the estimator reads them, and
returns the training log.  The compiled kernels are loaded before the fork
(``sklearn/warm.py``), so that the ranks do not each load them again.
"""

from __future__ import annotations

import os
import tempfile

import torch
import torch.distributed as dist

from structperc.distributed import Group
from structperc.forking import Child, SharedTables, can_fork
from structperc.learn.base import Learner
from structperc.learn.fitting import FitSettings
from structperc.model.weights import ChainWeights
from structperc.sklearn.continuation import Start
from structperc.sklearn.training import TrainingLog, train_chain
from structperc.sklearn.warm import warm_kernels
from structperc.structures.chain import ChainData


def usable_jobs(n_jobs: int | None) -> int:
    """scikit-learn's ``n_jobs``: None or 1 one process, -1 every core, -2 all but one..."""
    cores = os.cpu_count() or 1
    if n_jobs is None or n_jobs == 0:
        return 1
    if n_jobs < 0:
        return max(cores + 1 + n_jobs, 1)
    return int(n_jobs)


def train_parallel(
    world: int,
    learner: Learner,
    weights: ChainWeights,
    data: ChainData,
    settings: FitSettings,
    dev: ChainData | None = None,
    start: Start | None = None,
    keep_state: bool = False,
) -> tuple[TrainingLog, dict]:
    """``train_chain`` over ``world`` forked ranks (each from ``start``); ``weights`` (on the
    CPU) receive rank 0's final tables, and its log and kept state are returned."""
    if not can_fork(settings.device):
        raise ValueError(
            f"n_jobs={world} trains in forked processes, on Linux with device='cpu' "
            f"(device={settings.device!r} here); use n_jobs=1"
        )
    warm_kernels(learner, weights, data, settings.device)  # loaded once, inherited by the ranks
    shared = SharedTables(weights.tables())
    with tempfile.TemporaryDirectory(prefix="structperc-ranks-") as folder:
        store = os.path.join(folder, "store")

        def rank_run(rank: int):
            def run():
                dist.init_process_group(
                    "gloo",
                    store=dist.FileStore(store, world),
                    rank=rank,
                    world_size=world,
                )
                try:
                    group = Group.joined()
                    log, state = train_chain(
                        learner, weights, data, settings, dev, group, start, keep_state
                    )
                    if group.is_main:
                        shared.copy_from(weights.tables())
                        return log, state
                    return None
                finally:
                    dist.destroy_process_group()

            return run

        children = [Child(rank_run(r), f"rank {r} of {world}") for r in range(world)]
        try:
            results = [child.result() for child in children]
        finally:
            for child in children:
                child.kill()
    with torch.no_grad():
        for name, table in weights.tables().items():
            table.copy_(shared.tables[name])
    return results[0]
