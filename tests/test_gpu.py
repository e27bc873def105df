"""The same code on a CUDA device: every dynamic program, the CRF objective and the online
learners give on the GPU what they give on the CPU.  Skipped, with the reason, where torch sees no
CUDA device (CI); on a machine with one run it with ``STRUCTPERC_REQUIRE_CUDA=1``, which makes
such a skip a failure (``conftest.py``).  ``experiments/bench/gpu/GPU.md`` says how and when it
last ran.

Random float potentials have no ties, so the decoders must return the same paths and scores
within float tolerance.  Perceptron weights are sums of +-1 updates, so they are exact in any
summation order; training on the GPU must reproduce the CPU's weights exactly wherever the
decoders break no tie differently (checked on a corpus whose updates do not tie).
"""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
from hypothesis import given, settings
from test_crf_learner import random_weights, toy_problem
from test_decode_label_chunk import potentials as label_chunk_potentials
from test_decode_nbest import chains
from test_train import corpus  # noqa: F401 - the synthetic corpus fixture

from structperc.crf.buckets import make_buckets
from structperc.crf.learner import CRF
from structperc.crf.objective import full_objective
from structperc.crf.sparse import TransposedIndex
from structperc.decode.label_chunk import LabelChunkPotentials, decode
from structperc.decode.nbest import BEAM_FROM_N, nbest, two_best
from structperc.decode.viterbi import viterbi, viterbi_tokens
from structperc.features.extract import FeatureMatrix
from structperc.forking import can_fork
from structperc.learn.fitting import FitSettings
from structperc.learn.margin import MarginPerceptron
from structperc.learn.perceptron import Perceptron
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.structures.chain import ChainData, ChainStructure
from structperc.trainer import fit

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(
        not torch.cuda.is_available(),
        reason=f"torch {torch.__version__} sees no CUDA device (torch.cuda.is_available() False)",
    ),
]
CUDA = torch.device("cuda")


def random_chains(seed: int, B: int = 6, T: int = 40, L: int = 9):
    gen = torch.Generator().manual_seed(seed)
    pot = torch.randn(B, T, L, L, generator=gen, dtype=torch.float64)
    lengths = torch.randint(1, T + 1, (B,), generator=gen)
    lengths[0] = T
    return pot, lengths


@pytest.mark.parametrize("seed", range(5))
def test_viterbi_on_cuda_equals_cpu(seed):
    pot, lengths = random_chains(seed)
    paths, scores = viterbi(pot, lengths)
    gpaths, gscores = viterbi(pot.to(CUDA), lengths.to(CUDA))
    assert torch.equal(gpaths.cpu(), paths)
    torch.testing.assert_close(gscores.cpu(), scores)


@pytest.mark.parametrize("T", [1, 2, 40, 215])
def test_viterbi_from_token_scores_on_cuda_equals_cpu(T):
    gen = torch.Generator().manual_seed(T)
    node = torch.randn(T, 9, generator=gen, dtype=torch.float64)
    edge = torch.randn(T, 9, 9, generator=gen, dtype=torch.float64)
    path, score = viterbi_tokens(node, edge)
    gpath, gscore = viterbi_tokens(node.to(CUDA), edge.to(CUDA))
    assert gpath.device.type == "cuda" and torch.equal(gpath.cpu(), path)
    torch.testing.assert_close(gscore.cpu(), score)


@pytest.mark.parametrize("n", [2, 5, 20, BEAM_FROM_N, 3 * BEAM_FROM_N])
def test_nbest_on_cuda_equals_cpu(n):
    for seed in range(3):
        pot, lengths = random_chains(seed, B=4, T=25)
        paths, scores = nbest(pot, lengths, n)
        gpaths, gscores = nbest(pot.to(CUDA), lengths.to(CUDA), n)
        torch.testing.assert_close(gscores.cpu(), scores)
        assert torch.equal(gpaths.cpu(), paths)


def test_two_best_on_cuda_equals_cpu():
    pot, lengths = random_chains(7)
    p, s = two_best(pot, lengths)
    gp, gs = two_best(pot.to(CUDA), lengths.to(CUDA))
    assert torch.equal(gp.cpu(), p)
    torch.testing.assert_close(gs.cpu(), s)


@settings(max_examples=40, deadline=None)
@given(chains(max_b=3, max_t=5, max_l=3, integer=True))
def test_nbest_scores_with_ties_on_cuda_equal_cpu(chain):
    """Integer potentials tie often: the paths may be other tied ones, the scores may not."""
    pot, lengths = chain
    _, s = nbest(pot, lengths, 4)
    _, gs = nbest(pot.to(CUDA), lengths.to(CUDA), 4)
    torch.testing.assert_close(gs.cpu(), s)


@settings(max_examples=25, deadline=None)
@given(label_chunk_potentials(max_b=4, max_t=9))
def test_label_chunk_dp_on_cuda_equals_cpu(pot):
    fields = {f.name: getattr(pot, f.name).to(CUDA) for f in dataclasses.fields(pot)}
    best, scores = decode(pot)
    gbest, gscores = decode(LabelChunkPotentials(**fields))
    torch.testing.assert_close(gscores.cpu(), scores, rtol=1e-5, atol=1e-5)
    assert torch.equal(gbest.pos.cpu(), best.pos) and torch.equal(gbest.start.cpu(), best.start)
    assert torch.equal(gbest.chunk.cpu(), best.chunk)


def objective_on(device, weights, features, labels, sigma2=2.0):
    """f, nll, gradients and errors of the CRF with every tensor on ``device``."""
    weights = copy.deepcopy(weights).to(device)
    index = TransposedIndex.build(features.ids, features.offsets, weights.num_features)
    buckets = make_buckets(
        features, labels, 16, with_index=False, num_features=weights.num_features, device=device
    )
    on_device = FeatureMatrix(*(t.to(device) for t in features.tensors().values()))
    crf = CRF(sigma2=sigma2).resolved(weights.edges, device)
    return full_objective(crf, ChainStructure(weights), on_device, index.to(device), buckets)


@pytest.mark.parametrize("edges", [True, False])
def test_crf_objective_and_gradient_on_cuda_equal_cpu(edges):
    features, labels, names = toy_problem(5, docs=9)
    weights = random_weights(12, names, edges=edges)
    f, _, grads, errors = objective_on("cpu", weights, features, labels)
    gf, _, ggrads, gerrors = objective_on(CUDA, weights, features, labels)
    assert gf == pytest.approx(f, rel=1e-9) and gerrors == errors
    for a, b in zip(ggrads, grads, strict=True):
        torch.testing.assert_close(a.cpu(), b, rtol=1e-7, atol=1e-9)


def train_on(device, corpus, learner, epochs=3, processes=1):  # noqa: F811
    weights = ChainWeights(corpus["features"].num_features, corpus["labels"]).to(device)
    updater = Updater(weights, average=learner.average)
    settings = FitSettings(
        max_epochs=epochs, patience=10, seed=4, progress=False, device=device, processes=processes
    )
    result = fit(
        learner, ChainStructure(weights), updater, ChainData(corpus["X"], corpus["y"]), settings
    )
    return weights, updater, result


@pytest.mark.parametrize("learner", [Perceptron(average=True), MarginPerceptron(C=3.0, bpm_runs=2)])
def test_online_training_on_cuda_equals_cpu(corpus, learner):  # noqa: F811
    w, u, r = train_on("cpu", corpus, learner)
    gw, gu, gr = train_on(CUDA, corpus, learner, processes=2)  # processes: no fork on CUDA
    assert not can_fork(CUDA)
    assert [h.errors for h in gr.history] == [h.errors for h in r.history]
    for n, t in w.tables().items():
        assert torch.equal(gw.tables()[n].cpu(), t), n
    for n, t in u.averaged_tables().items():
        torch.testing.assert_close(gu.averaged_tables()[n].cpu(), t)
    pred = ChainStructure(w).predict(ChainData(corpus["X_dev"]))
    gpred = ChainStructure(gw).predict(ChainData(corpus["X_dev"]), device=CUDA)
    assert [list(map(int, p)) for p in gpred] == [list(map(int, p)) for p in pred]


def test_nonlocal_and_crf_runs_on_cuda_equal_cpu(tmp_path, monkeypatch):
    """The Hydra entry point with device=cuda: the proposed algorithm (Φ^g updates made on the
    CPU reach the GPU tables) and the CRF give the CPU's figures."""
    from hydra_runs import run_main, write_synthetic_conll2003

    (tmp_path / "data").mkdir()
    data = write_synthetic_conll2003(tmp_path / "data", {"train": 30, "dev": 10, "test": 10})
    runs = {
        "proposed": [
            "+experiment=conll03_nonlocal",
            "features.gazetteer=none",
            "features.gazetteers=[]",
            "trainer.max_epochs=2",
            "learner.n=5",
            "learner.bpm_runs=2",
            "decoder.n_test=8",
        ],
        "crf": ["+experiment=conll03_crf", "features.gazetteer=none", "trainer.max_epochs=4"],
    }
    for name, overrides in runs.items():
        results = {}
        for device in ("cpu", "cuda"):
            out = tmp_path / f"{name}_{device}"
            extra = [f"cache_dir={tmp_path / 'cache'}", f"device={device}"]
            results[device] = run_main([*overrides, *extra], data, out, monkeypatch)[1]
        cpu, gpu = results["cpu"], results["cuda"]
        assert gpu["test"]["f1"] == pytest.approx(cpu["test"]["f1"], abs=1e-9), name
        assert [h["word_error"] for h in gpu["history"]] == pytest.approx(
            [h["word_error"] for h in cpu["history"]]
        )


@pytest.mark.parametrize("seed", range(3))
def test_restricted_and_forbidding_decoders_on_cuda_equal_cpu(seed):
    """Allowed labels (node offsets) and forbidden spans (the augmented lattice) on the GPU."""
    from structperc.decode.forbidden_spans import nbest_forbidding, viterbi_forbidding
    from structperc.decode.node_offsets import offset_potentials, restriction

    pot, lengths = random_chains(seed, L=5)
    gen = torch.Generator().manual_seed(seed)
    allowed = torch.rand(pot.shape[0], pot.shape[1], 5, generator=gen) < 0.6
    allowed[..., 0] = True
    within = offset_potentials(pot, restriction(allowed, pot.dtype))
    spans = [[(2, 4, 1, 2), (5, 6, 3, 4)] for _ in range(pot.shape[0])]
    for fn, args in ((viterbi_forbidding, ()), (nbest_forbidding, (7,))):
        paths, scores = fn(within, lengths, spans, *args)
        gpaths, gscores = fn(within.to(CUDA), lengths.to(CUDA), spans, *args)
        assert torch.equal(gpaths.cpu(), paths)
        torch.testing.assert_close(gscores.cpu(), scores)
