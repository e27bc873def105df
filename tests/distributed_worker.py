"""One rank of the distributed tests (``test_distributed.py`` starts R of these as processes).

    python tests/distributed_worker.py RANK WORLD STORE OUT SCENARIO [SCENARIO ...]

joins a gloo group through the file store STORE and runs each scenario on a small synthetic
corpus, writing what the test compares into OUT/<scenario>.rank<RANK>.{safetensors,json}.  The
data, learners and seeds are fixed here and in ``synthetic_task`` (imported by the test too).
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from safetensors.torch import save_file

from structperc.checkpoint import Checkpoint
from structperc.crf.buckets import make_buckets
from structperc.crf.objective import full_objective
from structperc.crf.sparse import TransposedIndex
from structperc.data.synthetic import make_corpus
from structperc.distributed import SERIAL, Group
from structperc.features.pipeline import LocalFeatures
from structperc.learn.fitting import FitSettings
from structperc.learn.margin import MarginPerceptron
from structperc.learn.perceptron import Perceptron
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.structures.chain import ChainData, ChainStructure
from structperc.trainer import fit, run_epochs


class Killed(Exception):
    """The fault the "kill" scenario injects at the start of an epoch."""


def synthetic_task(n_docs: int = 24):
    """(features, labels, ChainData) of a small synthetic corpus, the same in every process."""
    train = make_corpus(n_docs, seed=3)
    lf = LocalFeatures(gazetteer="none", window=1).fit(train)
    labels = sorted({t for d in train for t in d.tags}, key=lambda t: (t != "O", t))
    index = {t: i for i, t in enumerate(labels)}
    y = torch.tensor([index[t] for d in train for t in d.tags])
    return lf, labels, ChainData(lf.transform(train, training=True), y)


def start_weights(num_features: int, labels: list[str], seed: int = 7) -> ChainWeights:
    """Random integer-valued weights (the same everywhere): a common non-zero start."""
    weights = ChainWeights(num_features, labels)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for t in weights.tables().values():
            t.copy_(torch.randint(-2, 3, t.shape, generator=gen).float())
    return weights


SETTINGS = FitSettings(max_epochs=4, seed=1, progress=False, tol=1e-12, patience=50)


def train_run(group: Group, learner, checkpoint_dir=None, resume=False, kill_at=None):
    """``fit`` of ``learner`` on the synthetic task; (updater, result)."""
    lf, labels, data = synthetic_task()
    weights = ChainWeights(lf.num_features, labels)
    updater = Updater(weights, average=learner.average)
    checkpoint = Checkpoint(checkpoint_dir, {"labels": labels}) if checkpoint_dir else None

    def on_epoch_start(epoch: int) -> dict:
        if kill_at is not None and epoch == kill_at:
            raise Killed(f"killed at the start of epoch {epoch}")
        return {}

    result = fit(
        learner,
        ChainStructure(weights),
        updater,
        data,
        SETTINGS,
        checkpoint=checkpoint,
        resume=resume,
        group=group,
        on_epoch_start=on_epoch_start,
    )
    return updater, result


def save(out: Path, name: str, rank: int, tensors: dict, meta: dict) -> None:
    save_file(
        {k: v.contiguous() for k, v in tensors.items()}, out / f"{name}.rank{rank}.safetensors"
    )
    (out / f"{name}.rank{rank}.json").write_text(json.dumps(meta))


def scenario_mix(group: Group, out: Path) -> None:
    """One epoch of the plain perceptron from a random start; two epochs of the averaged one
    from zero (the mixed tables, the averaged tables, seen)."""
    lf, labels, data = synthetic_task()
    weights = start_weights(lf.num_features, labels)
    updater = Updater(weights)
    one = FitSettings(max_epochs=1, seed=1, progress=False)
    run_epochs(Perceptron(), ChainStructure(weights), updater, data, one, group=group)
    tensors = {f"plain.{n}": t.detach() for n, t in weights.tables().items()}
    weights = ChainWeights(lf.num_features, labels)
    updater = Updater(weights, average=True)
    two = FitSettings(max_epochs=2, seed=1, progress=False, tol=1e-12, patience=50)
    result = run_epochs(
        Perceptron(average=True), ChainStructure(weights), updater, data, two, group=group
    )
    tensors.update({f"averaged.{n}": t for n, t in updater.averaged_tables().items()})
    meta = {
        "seen": updater.seen,
        "errors": [h.errors for h in result.history],
        "tokens": [h.tokens for h in result.history],
    }
    save(out, "mix", group.rank, tensors, meta)


def scenario_crf(group: Group, out: Path) -> None:
    """The CRF objective and gradient at random weights, this rank's shard, summed over ranks."""
    from structperc.crf.learner import CRF
    from structperc.crf.sparse import Support
    from structperc.learn.fitting import rank_shard

    lf, labels, data = synthetic_task()
    weights = start_weights(lf.num_features, labels, seed=11)
    with torch.no_grad():
        for t in weights.tables().values():
            t.mul_(0.1)
    shard = data.subset(rank_shard(data, group)) if group.parallel else data
    feats = shard.features
    index = TransposedIndex.build(feats.ids, feats.offsets, weights.num_features)
    buckets = make_buckets(
        feats, shard.labels, 2000, with_index=False, num_features=weights.num_features, device="cpu"
    )
    scan = "sequential" if weights.edges else "scaled"  # the torch scans
    crf, structure = CRF(sigma2=10.0, scan=scan), ChainStructure(weights)
    f, nll, grads, errors = full_objective(crf, structure, feats, index, buckets, group)
    support = Support.observed(weights, feats, shard.labels, group)  # the union over the shards
    save(
        out,
        "crf",
        group.rank,
        {
            **{f"grad{i}": g for i, g in enumerate(grads)},  # of weights.dense_tables
            **{f"support{i}": m.to(torch.uint8) for i, m in enumerate(support.masks)},
        },
        {"f": f, "nll": nll, "errors": errors},
    )


def scenario_stop(group: Group, out: Path) -> None:
    """A loose convergence rule: every rank must stop in the same epoch."""
    lf, labels, data = synthetic_task()
    weights = ChainWeights(lf.num_features, labels)
    settings = FitSettings(max_epochs=30, seed=1, progress=False, tol=0.3, patience=2)
    result = fit(
        Perceptron(), ChainStructure(weights), Updater(weights), data, settings, group=group
    )
    save(
        out,
        "stop",
        group.rank,
        {},
        {
            "epochs": result.epochs,
            "stopped_by": result.stopped_by,
            "errors": [h.word_error for h in result.history],
        },
    )


def scenario_train(group: Group, out: Path, name="train", **kw) -> None:
    """Four epochs of the averaged margin perceptron after a 2-run BPM start, checkpointed."""
    learner = MarginPerceptron(C=5.0, average=True, bpm_runs=2)
    updater, result = train_run(group, learner, checkpoint_dir=out / f"{name}_checkpoint", **kw)
    tensors = {f"w.{n}": t.detach() for n, t in updater.weights.tables().items()}
    tensors.update({f"avg.{n}": t for n, t in updater.averaged_tables().items()})
    meta = {
        "epochs": result.epochs,
        "errors": [h.errors for h in result.history],
        "mix_seconds": [h.extra.get("mix_seconds") for h in result.history],
        "seconds": [h.seconds for h in result.history],
        "resumed_from": result.resumed_from,
    }
    save(out, name, group.rank, tensors, meta)


def scenario_kill(group: Group, out: Path) -> None:
    """The training of ``scenario_train`` into its own checkpoint, killed at epoch 3."""
    try:
        scenario_train(group, out, name="resumed", kill_at=3)
    except Killed:
        (out / f"killed.rank{group.rank}").write_text("killed\n")


def scenario_resume(group: Group, out: Path) -> None:
    scenario_train(group, out, name="resumed", resume=True)


SCENARIOS = {
    "mix": scenario_mix,
    "crf": scenario_crf,
    "stop": scenario_stop,
    "train": scenario_train,
    "kill": scenario_kill,
    "resume": scenario_resume,
}


def main(argv: list[str]) -> None:
    rank, world, store, out = int(argv[0]), int(argv[1]), argv[2], Path(argv[3])
    torch.set_num_threads(1)
    if world > 0:
        dist.init_process_group(
            "gloo",
            init_method=f"file://{store}",
            rank=rank,
            world_size=world,
            timeout=timedelta(seconds=60),
        )
        group = Group.joined()
    else:  # world 0: no process group at all (the serial reference)
        group = SERIAL
    for name in argv[4:]:
        SCENARIOS[name](group, out)
    group.close()
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1:])
