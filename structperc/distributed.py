"""One training run over several processes: the process group, sharding and collectives.

``torchrun`` starts N copies of a command and sets ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` /
``MASTER_PORT`` (and ``TORCHELASTIC_RESTART_COUNT``) in each; ``Group.from_environment`` joins
them into a ``torch.distributed`` process group (gloo on CPU, NCCL when the tables live on
CUDA).  Everything above this module sees a ``Group``: its rank, its size, whether it is the
main rank (rank 0 alone writes files), and the few collectives structperc needs.  ``SERIAL`` is
the group of one process: every collective is then the identity, so a one-process run takes no
distributed code path at all.

Sharding (``token_balanced_shards``) is the longest-processing-time rule (Graham 1969): instances
in decreasing size, each to the rank with the fewest tokens so far, ties to the lowest rank; the
largest shard exceeds the mean by at most one instance.  Each rank's shard keeps the instances'
order.  An epoch's order (``learn/fitting.py``: ``shard_order``) shuffles a shard with a seed of
(seed, epoch, rank), and rank 0's seed is the serial run's, so a run on one rank is the serial
run.
"""

from __future__ import annotations

import logging
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import Tensor

log = logging.getLogger(__name__)

BACKENDS = ("auto", "gloo", "nccl")
STORE_TIMEOUT = timedelta(minutes=30)  # how long ranks wait for each other (torch's default)


@dataclass(frozen=True)
class Group:
    """The processes of one run.

    rank:     this process's number, 0 ... world - 1.
    world:    how many processes.
    restarts: how often ``torchrun`` has restarted the group (``TORCHELASTIC_RESTART_COUNT``):
              above 0 the run resumes from its last checkpoint.
    """

    rank: int = 0
    world: int = 1
    restarts: int = 0

    @property
    def is_main(self) -> bool:
        """Rank 0: the process that writes files, evaluates and logs."""
        return self.rank == 0

    @property
    def parallel(self) -> bool:
        return self.world > 1

    @classmethod
    def from_environment(cls, backend: str = "auto", device: str = "cpu") -> Group:
        """Join the process group ``torchrun`` describes in the environment.

        Without ``WORLD_SIZE`` (not under torchrun) or with one process: ``SERIAL``-like, no
        process group.  ``backend="auto"``: NCCL for CUDA tables, else gloo.
        """
        if backend not in BACKENDS:
            raise ValueError(f"distributed.backend must be one of {BACKENDS}, got {backend!r}")
        world = int(os.environ.get("WORLD_SIZE", "1"))
        restarts = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
        if world <= 1:
            return cls(0, 1, restarts)
        if backend == "auto":
            backend = "nccl" if str(device).startswith("cuda") else "gloo"
        if not dist.is_initialized():
            if backend == "nccl":
                local = int(os.environ.get("LOCAL_RANK", "0"))
                torch.cuda.set_device(local)
            rank = int(os.environ["RANK"])
            store = attempt_store(rank, world, restarts)
            dist.init_process_group(backend=backend, store=store, rank=rank, world_size=world)
        group = cls(dist.get_rank(), dist.get_world_size(), restarts)
        log.info("rank %d of %d (%s backend)", group.rank, group.world, backend)
        return group

    @classmethod
    def joined(cls) -> Group:
        """The group of an already initialised process group (tests spawn their own)."""
        return cls(dist.get_rank(), dist.get_world_size())

    def device_of(self, device: str | torch.device) -> str:
        """The device of this rank's tables: ``cuda`` becomes ``cuda:<LOCAL_RANK>``."""
        if self.parallel and str(device) == "cuda":
            return f"cuda:{os.environ.get('LOCAL_RANK', '0')}"
        return str(device)

    # collectives (the identity on one process) --------------------------------------------

    def all_sum_(self, *tensors: Tensor) -> None:
        """Sum each tensor over the ranks, in place."""
        if self.parallel:
            for t in tensors:
                dist.all_reduce(t, op=dist.ReduceOp.SUM)

    def all_sum(self, *numbers: float) -> list[float]:
        """The sums over the ranks of a few numbers (float64 on the wire)."""
        if not self.parallel:
            return list(numbers)
        t = torch.tensor(numbers, dtype=torch.float64, device=self._wire)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t.tolist()

    def all_gather(self, *numbers: float) -> list[list[float]]:
        """Every rank's ``numbers``, in rank order."""
        if not self.parallel:
            return [list(numbers)]
        t = torch.tensor(numbers, dtype=torch.float64, device=self._wire)
        out = [torch.empty_like(t) for _ in range(self.world)]
        dist.all_gather(out, t)
        return [o.tolist() for o in out]

    def all_gather_varlen(self, tensor: Tensor) -> list[Tensor]:
        """Every rank's 1-d ``tensor`` (lengths may differ), in rank order."""
        if not self.parallel:
            return [tensor]
        size = torch.tensor([len(tensor)], device=tensor.device)
        sizes = [torch.empty_like(size) for _ in range(self.world)]
        dist.all_gather(sizes, size)
        lengths = [int(s) for s in sizes]
        padded = torch.zeros(max(lengths), dtype=tensor.dtype, device=tensor.device)
        padded[: len(tensor)] = tensor
        out = [torch.empty_like(padded) for _ in range(self.world)]
        dist.all_gather(out, padded)
        return [o[:n] for o, n in zip(out, lengths, strict=True)]

    def all_gather_objects(self, obj) -> list:
        """Every rank's picklable ``obj``, in rank order, on every rank."""
        if not self.parallel:
            return [obj]
        out = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    def gather_objects(self, obj) -> list | None:
        """Every rank's picklable ``obj`` on rank 0 (in rank order); None on the others."""
        if not self.parallel:
            return [obj]
        out = [None] * self.world if self.is_main else None
        dist.gather_object(obj, out, dst=0)
        return out

    def barrier(self) -> None:
        if self.parallel:
            dist.barrier()

    @contextmanager
    def main_first(self):
        """Rank 0 runs the block first (e.g. builds a cache), the others after it (read it)."""
        if not self.is_main:
            self.barrier()
        yield
        if self.is_main:
            self.barrier()

    def check_identical(self, tables: dict[str, Tensor], what: str) -> None:
        """RuntimeError unless every rank holds the same ``tables`` (a float64 checksum)."""
        if not self.parallel:
            return
        checksum = float(sum(t.double().sum() for t in tables.values()))
        sums = [s[0] for s in self.all_gather(checksum)]
        if len(set(sums)) != 1:
            raise RuntimeError(f"{what}: the ranks' weights differ (checksums {sums})")

    @property
    def _wire(self) -> str:
        return "cuda" if dist.get_backend() == "nccl" else "cpu"

    def close(self) -> None:
        if self.parallel and dist.is_initialized():
            dist.destroy_process_group()


SERIAL = Group()


def attempt_store(rank: int, world: int, restarts: int) -> dist.Store:
    """The rendezvous store of this attempt: torchrun's (``MASTER_ADDR:MASTER_PORT``), its keys
    under a prefix per restart.

    torchrun's agent keeps one store across restarts, so a restarted group that joined through
    ``env://`` would read the previous attempt's gloo addresses and wait on dead peers; a fresh
    prefix per ``TORCHELASTIC_RESTART_COUNT`` keeps the attempts apart.  Outside torchrun's agent
    rank 0 hosts the store.
    """
    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    store = dist.TCPStore(
        os.environ.get("MASTER_ADDR", "localhost"),
        int(os.environ.get("MASTER_PORT", "29500")),
        world,
        is_master=not agent and rank == 0,
        timeout=STORE_TIMEOUT,
    )
    return dist.PrefixStore(f"structperc/attempt_{restarts}", store)


def token_balanced_shards(sizes: list[int], world: int) -> list[list[int]]:
    """Instances 0 ... len(sizes) - 1 split over ``world`` ranks, balancing the summed sizes
    (longest processing time first); each shard in increasing instance order."""
    if world < 1:
        raise ValueError(f"world size must be >= 1, got {world}")
    loads = [0] * world
    shards: list[list[int]] = [[] for _ in range(world)]
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        r = min(range(world), key=lambda r: (loads[r], r))
        shards[r].append(i)
        loads[r] += sizes[i]
    return [sorted(s) for s in shards]


def contiguous_shards(sizes: list[int], world: int) -> list[range]:
    """Instances split into ``world`` consecutive blocks of about equal summed size (prediction:
    concatenating the blocks' outputs in rank order restores the input's order)."""
    total = sum(sizes)
    bounds, acc, r = [0], 0, 1
    for i, s in enumerate(sizes):
        acc += s
        while r < world and acc >= total * r / world:
            bounds.append(i + 1)
            r += 1
    bounds += [len(sizes)] * (world + 1 - len(bounds))
    return [range(bounds[k], bounds[k + 1]) for k in range(world)]


class Stopwatch:
    """Seconds spent in communication, summed over ``with watch:`` blocks."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __enter__(self) -> Stopwatch:
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds += time.perf_counter() - self._t0
