"""Distributed training: sharding, iterative parameter mixing, the data-parallel CRF, resuming.

Each multi-process case starts real processes (``distributed_worker.py``, a gloo group through a
file store) and compares what they wrote with single-process references computed here.  The
last test runs ``torchrun`` itself, kills a rank mid-training and checks that the restarted
group ends with the model of an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from distributed_worker import SETTINGS, start_weights, synthetic_task, train_run
from hydra_runs import ROOT, write_synthetic_conll2003
from safetensors.torch import load_file

from structperc.crf.buckets import make_buckets
from structperc.crf.learner import CRF
from structperc.crf.objective import full_objective
from structperc.crf.sparse import TransposedIndex
from structperc.distributed import SERIAL, contiguous_shards, token_balanced_shards
from structperc.learn.fitting import instance_sizes, shard_order
from structperc.learn.margin import MarginPerceptron
from structperc.learn.perceptron import Perceptron
from structperc.model.updates import Updater
from structperc.predict import tag_file
from structperc.structures.chain import ChainStructure

WORKER = Path(__file__).with_name("distributed_worker.py")

# ---------------------------------------------------------------- sharding


def test_token_balanced_shards_partition_and_balance():
    gen = torch.Generator().manual_seed(0)
    sizes = torch.randint(1, 200, (101,), generator=gen).tolist()
    for world in (1, 2, 3, 4):
        shards = token_balanced_shards(sizes, world)
        assert sorted(i for s in shards for i in s) == list(range(len(sizes)))
        assert all(s == sorted(s) for s in shards)
        loads = [sum(sizes[i] for i in s) for s in shards]
        # longest processing time first: no shard exceeds the mean by more than one instance
        assert max(loads) - sum(sizes) / world <= max(sizes)
    assert token_balanced_shards([5, 1, 1, 1, 1, 1], 2) == [[0], [1, 2, 3, 4, 5]]
    assert token_balanced_shards([], 2) == [[], []]


def test_contiguous_shards_keep_the_order():
    sizes = [3, 1, 4, 1, 5, 9, 2, 6]
    for world in (1, 2, 3, 8, 10):
        blocks = contiguous_shards(sizes, world)
        assert len(blocks) == world
        assert [i for b in blocks for i in b] == list(range(len(sizes)))
    assert contiguous_shards([1, 1, 1, 1], 2) == [range(0, 2), range(2, 4)]


def test_rank_zero_orders_like_the_serial_run():
    from structperc.learn.fitting import epoch_order

    assert shard_order(30, None, True, 4, 2, 0) == epoch_order(30, True, 4, 2)
    assert shard_order(30, list(range(30)), True, 4, 2, 0) == epoch_order(30, True, 4, 2)
    shard = [1, 5, 8, 13]
    assert sorted(shard_order(30, shard, True, 4, 2, 1)) == shard
    assert shard_order(30, shard, False, 4, 2, 1) == shard
    # the rank enters the seed
    big = list(range(0, 60, 2))
    assert shard_order(60, big, True, 4, 2, 1) != shard_order(60, big, True, 4, 2, 2)


# ---------------------------------------------------------------- processes


def launch(tmp: Path, world: int, scenarios: list[str], timeout: float = 240) -> None:
    """Run ``world`` worker processes (a gloo group through a fresh file store) to the end."""
    store = tmp / f"store_{scenarios[0]}_{time.monotonic_ns()}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(WORKER.parent)])}
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(r), str(world), str(store), str(tmp), *scenarios],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in range(max(world, 1))
    ]
    errors = []
    for p in procs:
        _, err = p.communicate(timeout=timeout)
        if p.returncode != 0:
            errors.append(err[-3000:])
    assert not errors, "\n".join(errors)


def read(tmp: Path, name: str, rank: int) -> tuple[dict, dict]:
    tensors = load_file(tmp / f"{name}.rank{rank}.safetensors")
    return tensors, json.loads((tmp / f"{name}.rank{rank}.json").read_text())


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> Path:
    """Every scenario on two ranks; the killed training resumed by a second group."""
    tmp = tmp_path_factory.mktemp("two_ranks")
    launch(tmp, 2, ["mix", "crf", "stop", "train", "kill"])
    assert (tmp / "killed.rank0").is_file() and (tmp / "killed.rank1").is_file()
    launch(tmp, 2, ["resume"])
    return tmp


def one_epoch(structure, updater, data, shard, rank, epoch, on_tick=None) -> None:
    """Rank ``rank``'s epoch over ``shard`` done by hand: Perceptron steps in its order."""
    learner = Perceptron()
    for i in shard_order(len(data), shard, True, 1, epoch, rank):
        batch, gold = structure.instance(data, i, "cpu")
        learner.step(structure, updater, batch, gold)
        updater.tick()
        if on_tick is not None:
            on_tick()


def test_two_ranks_mix_to_the_mean_of_the_shards(two_ranks):
    lf, labels, data = synthetic_task()
    shards = token_balanced_shards(instance_sizes(data), 2)
    alone = []
    for rank in (0, 1):
        weights = start_weights(lf.num_features, labels)
        one_epoch(ChainStructure(weights), Updater(weights), data, shards[rank], rank, 1)
        alone.append(weights.tables())
    got0, _ = read(two_ranks, "mix", 0)
    got1, _ = read(two_ranks, "mix", 1)
    for name in ("node", "edge"):
        mean = (alone[0][name] + alone[1][name]) / 2
        assert not torch.equal(alone[0][name], alone[1][name])  # the shards did differ
        assert torch.allclose(got0[f"plain.{name}"], mean, atol=1e-6)
        assert torch.equal(got0[f"plain.{name}"], got1[f"plain.{name}"])


def test_two_ranks_average_every_vector_of_every_rank(two_ranks):
    """Brute force: the mean of all weight vectors both ranks visited in two mixed epochs."""
    lf, labels, data = synthetic_task()
    shards = token_balanced_shards(instance_sizes(data), 2)
    from structperc.model.weights import ChainWeights

    start = {
        n: torch.zeros_like(t) for n, t in ChainWeights(lf.num_features, labels).tables().items()
    }
    total = {n: torch.zeros_like(t, dtype=torch.float64) for n, t in start.items()}
    count = 0
    for epoch in (1, 2):
        ends = []
        for rank in (0, 1):
            weights = ChainWeights(lf.num_features, labels)
            with torch.no_grad():
                for n, t in weights.tables().items():
                    t.copy_(start[n])
            tables = weights.tables()

            def add(tables=tables):
                nonlocal count
                count += 1
                for n, t in tables.items():
                    total[n] += t.double()

            one_epoch(
                ChainStructure(weights), Updater(weights), data, shards[rank], rank, epoch, add
            )
            ends.append({n: t.detach().clone() for n, t in tables.items()})
        start = {n: (ends[0][n] + ends[1][n]) / 2 for n in start}
    got, meta = read(two_ranks, "mix", 0)
    assert meta["seen"] == count == 2 * len(data)
    assert meta["tokens"] == [data.num_tokens] * 2  # statistics summed over the ranks
    for n in start:
        expected = (total[n] / count).float()
        assert torch.allclose(got[f"averaged.{n}"], expected, atol=1e-4), n


def test_two_rank_crf_objective_and_gradient_equal_one_rank(two_ranks):
    lf, labels, data = synthetic_task()
    weights = start_weights(lf.num_features, labels, seed=11)
    with torch.no_grad():
        for t in weights.tables().values():
            t.mul_(0.1)
    feats = data.features
    index = TransposedIndex.build(feats.ids, feats.offsets, weights.num_features)
    buckets = make_buckets(
        feats, data.labels, 2000, with_index=False, num_features=weights.num_features, device="cpu"
    )
    scan = "sequential" if weights.edges else "scaled"  # the torch scans
    crf, structure = CRF(sigma2=10.0, scan=scan), ChainStructure(weights)
    f, nll, grads, errors = full_objective(crf, structure, feats, index, buckets, SERIAL)
    for rank in (0, 1):
        got, meta = read(two_ranks, "crf", rank)
        assert meta["f"] == pytest.approx(f, rel=1e-6)
        assert meta["nll"] == pytest.approx(nll, rel=1e-6)
        assert meta["errors"] == errors
        for i, g in enumerate(grads):  # of weights.dense_tables
            assert float((got[f"grad{i}"] - g).norm() / g.norm()) < 1e-6
    # learner.support=observed: every rank holds the support of the whole training set
    from structperc.crf.sparse import Support

    whole = Support.observed(weights, feats, data.labels)
    for rank in (0, 1):
        got, _ = read(two_ranks, "crf", rank)
        for i, mask in enumerate(whole.masks):
            assert torch.equal(got[f"support{i}"].bool(), mask)


def test_every_rank_stops_in_the_same_epoch(two_ranks):
    _, m0 = read(two_ranks, "stop", 0)
    _, m1 = read(two_ranks, "stop", 1)
    assert m0 == m1
    assert m0["stopped_by"] == "converged" and m0["epochs"] < 30


def test_two_ranks_hold_the_same_model_and_time_their_mixing(two_ranks):
    t0, m0 = read(two_ranks, "train", 0)
    t1, m1 = read(two_ranks, "train", 1)
    for k in t0:
        assert torch.equal(t0[k], t1[k]), k
    assert m0["epochs"] == SETTINGS.max_epochs
    # every epoch mixed once, in time that is part of the epoch's own
    assert len(m0["mix_seconds"]) == len(m0["seconds"]) == SETTINGS.max_epochs
    assert all(0 < mix <= s for mix, s in zip(m0["mix_seconds"], m0["seconds"], strict=True))


def test_a_killed_group_resumes_to_the_uninterrupted_model(two_ranks):
    whole, _ = read(two_ranks, "train", 0)
    for rank in (0, 1):
        resumed, meta = read(two_ranks, "resumed", rank)
        assert meta["resumed_from"] == 2
        for k in whole:
            assert torch.equal(resumed[k], whole[k]), k


def test_one_rank_equals_serial_training_bit_for_bit(tmp_path):
    launch(tmp_path, 1, ["train"])
    got, meta = read(tmp_path, "train", 0)
    learner = MarginPerceptron(C=5.0, average=True, bpm_runs=2)
    updater, result = train_run(SERIAL, learner)
    assert meta["errors"] == [h.errors for h in result.history]
    for n, t in updater.weights.tables().items():
        assert torch.equal(got[f"w.{n}"], t)
    for n, t in updater.averaged_tables().items():
        assert torch.equal(got[f"avg.{n}"], t)


# ---------------------------------------------------------------- torchrun


def worker_pids(parent: int) -> dict[int, int]:
    """rank -> pid of the processes under ``parent`` whose environment names a RANK."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[1]) != parent:
                continue
            env = dict(
                e.split("=", 1) for e in (proc / "environ").read_text().split("\0") if "=" in e
            )
        except (OSError, ValueError, IndexError):
            continue
        if "RANK" in env:
            found[int(env["RANK"])] = int(proc.name)
    return found


def torchrun(data_dir: Path, run_dir: Path, extra: list[str]) -> subprocess.Popen:
    torchrun_bin = Path(sys.executable).with_name("torchrun")
    cmd = [
        str(torchrun_bin),
        "--standalone",
        "--nproc-per-node=2",
        *extra,
        "-m",
        "structperc.run",
        "+experiment=conll03_local",
        "learner=margin",
        "learner.C=5",
        "distributed=torch",
        f"data.dir={data_dir}",
        "features.gazetteer=none",
        "trainer.max_epochs=12",
        "trainer.progress=false",
        "trainer.tol=1e-12",
        "trainer.patience=100",
        "cache_dir=null",
        "write_predictions=false",
        f"hydra.run.dir={run_dir}",
    ]
    env = {k: v for k, v in os.environ.items() if k != "STRUCTPERC_DATA"}
    env["OMP_NUM_THREADS"] = "1"
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the ranks' processes in /proc")
def test_torchrun_restarts_a_killed_rank_from_the_checkpoint(tmp_path):
    (tmp_path / "data").mkdir()
    data = write_synthetic_conll2003(tmp_path / "data", {"train": 60, "dev": 10, "test": 10})
    whole = torchrun(data, tmp_path / "whole", [])
    out, _ = whole.communicate(timeout=300)
    assert whole.returncode == 0, out[-3000:]

    run_dir = tmp_path / "killed"
    job = torchrun(data, run_dir, ["--max-restarts=1"])
    meta = run_dir / "checkpoint" / "checkpoint.json"
    killed_after = None
    deadline = time.monotonic() + 240
    while job.poll() is None and time.monotonic() < deadline:
        if meta.is_file():
            epoch = json.loads(meta.read_text())["epoch"]
            pids = worker_pids(job.pid)
            if epoch >= 3 and 1 in pids:
                os.kill(pids[1], signal.SIGKILL)
                killed_after = epoch
                break
        time.sleep(0.01)
    out, _ = job.communicate(timeout=300)
    assert killed_after is not None, "training ended before a rank could be killed:\n" + out[-2000:]
    assert killed_after < 12
    assert job.returncode == 0, out[-3000:]
    results = json.loads((run_dir / "results.json").read_text())
    assert results["resumed_from_epoch"] is not None and results["resumed_from_epoch"] >= 3
    assert results["world_size"] == 2 and results["epochs"] == 12
    a = load_file(tmp_path / "whole" / "model.safetensors")
    b = load_file(run_dir / "model.safetensors")
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k

    # sharded prediction: two ranks write the one output a single process writes
    test_file = data / "conll2003" / "test.txt"
    tag_file(run_dir, test_file, tmp_path / "serial.txt")
    cmd = [
        str(Path(sys.executable).with_name("torchrun")),
        "--standalone",
        "--nproc-per-node=2",
        "-m",
        "structperc.predict",
        f"model={run_dir}",
        f"input={test_file}",
        f"output={tmp_path / 'sharded.txt'}",
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    sharded = (tmp_path / "sharded.txt").read_text()
    assert sharded == (tmp_path / "serial.txt").read_text()
    assert len(sharded.split("-DOCSTART-")) == 11  # every document, once
    shutil.rmtree(tmp_path / "data")


# ---------------------------------------------------------------- configuration errors


def test_a_parallel_run_needs_an_explicit_run_dir():
    from types import SimpleNamespace

    from structperc.run import explicit_run_dir

    def hydra(mode, overrides):
        return SimpleNamespace(mode=mode, overrides=SimpleNamespace(hydra=overrides))

    explicit_run_dir(hydra("RunMode.RUN", ["hydra.run.dir=out/x"]))
    with pytest.raises(ValueError, match="explicit hydra.run.dir"):
        explicit_run_dir(hydra("RunMode.RUN", ["hydra.job.chdir=false"]))
    with pytest.raises(ValueError, match="sweep with -m without torchrun"):
        explicit_run_dir(hydra("RunMode.MULTIRUN", ["hydra.run.dir=out/x"]))


def test_torchrun_without_distributed_torch_is_refused(monkeypatch):
    from hydra_runs import compose_config

    from structperc.run import start_group

    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match="add distributed=torch"):
        start_group(compose_config(["+experiment=conll03_local"]))
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert start_group(compose_config(["+experiment=conll03_local", "distributed=torch"])) == SERIAL
    with pytest.raises(ValueError, match="does not run distributed"):
        CRF(optimizer="sgd").fit(None, None, None, None, group=type(SERIAL)(0, 2))
