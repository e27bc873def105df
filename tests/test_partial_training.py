"""Training from partial annotation and with label costs, against enumeration: the CRF's
likelihood of the compatible labelings (Tsuboi et al. 2008) and the softmax-margin of costs,
their values and gradients, on every scan and the compiled kernel; the perceptrons' latent gold;
cost-augmented decoding."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from structperc.crf.buckets import make_buckets
from structperc.crf.compiled import CompiledObjective
from structperc.crf.learner import CRF
from structperc.crf.objective import full_objective
from structperc.crf.sparse import TransposedIndex
from structperc.crf.targets import likelihood_targets
from structperc.data.partial import partial_cell
from structperc.data.synthetic import make_corpus
from structperc.data.tags import encode_partial, label_set
from structperc.features.extract import FeatureMatrix
from structperc.learn.costs import cost_vector
from structperc.learn.fitting import FitSettings
from structperc.learn.margin import MarginPerceptron
from structperc.learn.perceptron import Perceptron
from structperc.learn.targets import StepTargets
from structperc.model.batch import make_batch
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.native import available as numba_available
from structperc.structures.chain import ChainData, ChainStructure
from structperc.trainer import fit


def toy(seed=0, docs=5, F_=10, L=3):
    """Random CSR features of short documents, labels [N], and an annotation that leaves about
    half the tokens open (some any label, some one of two)."""
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 5, (docs,), generator=gen).tolist()
    N = sum(lengths)
    counts = torch.randint(1, 4, (N,), generator=gen)
    offsets = torch.zeros(N + 1, dtype=torch.long)
    torch.cumsum(counts, 0, out=offsets[1:])
    ids = torch.randint(0, F_, (int(offsets[-1]),), generator=gen, dtype=torch.int32)
    doc_offsets = torch.zeros(docs + 1, dtype=torch.long)
    torch.cumsum(torch.tensor(lengths), 0, out=doc_offsets[1:])
    labels = torch.randint(0, L, (N,), generator=gen)
    allowed = torch.nn.functional.one_hot(labels, L).bool()
    draw = torch.rand(N, generator=gen)
    allowed[draw < 0.25] = True  # open: any label
    two = (draw >= 0.25) & (draw < 0.5)
    allowed[two, (labels[two] + 1) % L] = True  # open: one of two
    gold = torch.where(allowed.sum(1) > 1, torch.full_like(labels, -1), labels)
    return FeatureMatrix(ids, offsets, doc_offsets), gold, allowed, [f"y{i}" for i in range(L)]


def random_weights(F_, labels, edges, seed=1, scale=0.6):
    w = ChainWeights(F_, labels, edges).double()
    gen = torch.Generator().manual_seed(seed)
    for t in w.tables().values():
        t.copy_(scale * torch.randn(t.shape, generator=gen, dtype=t.dtype))
    return w


def brute(weights, features, gold, allowed, costs, sigma2):
    """The objective sum_d [log sum_y e^{s(y) + o(y)} - log sum_{y allowed} e^{s(y)}] + prior,
    by enumerating every labeling, differentiable in the tables (autograd gives the gradient)."""
    leaves = [t.detach().clone().requires_grad_(True) for t in weights.dense_tables]
    L = weights.num_labels
    total = sum((t * t).sum() for t in leaves) / (2 * sigma2)
    for d in range(features.num_docs):
        a, b = int(features.doc_offsets[d]), int(features.doc_offsets[d + 1])
        batch = make_batch(features, [d])
        ids, off = batch.ids.long(), batch.offsets
        node_rows = []
        for t in range(b - a):
            fs = ids[off[t] : off[t + 1]]
            node_rows.append(leaves[0][fs].sum(0))
        tok = torch.stack(node_rows)  # [T, L (+ L*L)]
        node = tok[:, :L]
        edge = tok[:, L:].view(-1, L, L) if weights.edges else leaves[1].view(1, L, L)
        all_scores, kept = [], []
        for path in itertools.product(range(L), repeat=b - a):
            s = node[0, path[0]]
            for t in range(1, b - a):
                s = s + node[t, path[t]] + edge[t if weights.edges else 0, path[t - 1], path[t]]
            cost = 0.0
            for t, y in enumerate(path):
                g = int(gold[a + t])
                if costs is not None and g >= 0 and y != g:
                    cost += float(costs[g])
            all_scores.append(s + cost)
            if all(allowed[a + t, y] for t, y in enumerate(path)):
                kept.append(s)
        total = total + torch.logsumexp(torch.stack(all_scores), 0)
        total = total - torch.logsumexp(torch.stack(kept), 0)
    grads = torch.autograd.grad(total, leaves)
    return float(total.detach()), grads


def torch_objective(crf, weights, features, targets, packed):
    index = TransposedIndex.build(features.ids, features.offsets, weights.num_features)
    buckets = make_buckets(
        features, targets.labels, 8, with_index=False, num_features=weights.num_features,
        device="cpu", packed=packed, sequential=crf.scan == "sequential", targets=targets,
    )  # fmt: skip
    return full_objective(crf, ChainStructure(weights), features, index, buckets)


CASES = [
    ("log", True, False),
    ("scaled", True, True),
    ("sequential", True, True),
    ("scaled", False, False),
    ("sequential", False, True),
]


@pytest.mark.parametrize("with_costs", [False, True])
@pytest.mark.parametrize("scan,edges,packed", CASES)
def test_partial_likelihood_and_gradient_match_enumeration(scan, edges, packed, with_costs):
    features, gold, allowed, names = toy()
    weights = random_weights(10, names, edges)
    costs = torch.tensor([1.0, 2.5, 0.5]) if with_costs else None
    sigma2 = 3.0
    crf = CRF(sigma2=sigma2, scan=scan)
    targets = likelihood_targets(gold, allowed, costs)
    f, _, grads, _ = torch_objective(crf, weights, features, targets, packed)
    f_brute, g_brute = brute(weights, features, gold, allowed, costs, sigma2)
    assert f == pytest.approx(f_brute, rel=1e-9, abs=1e-9)
    for g, gb in zip(grads, g_brute, strict=True):
        assert torch.allclose(g.double(), gb, atol=1e-8)


@pytest.mark.skipif(not numba_available(), reason="the compiled kernel needs numba")
@pytest.mark.parametrize("with_costs", [False, True])
def test_compiled_kernel_partial_likelihood_and_gradient_match_enumeration(with_costs):
    features, gold, allowed, names = toy(seed=3)
    weights = random_weights(10, names, edges=False, seed=4)
    costs = torch.tensor([0.3, 1.0, 2.0]) if with_costs else None
    crf = CRF(sigma2=5.0, scan="compiled")
    targets = likelihood_targets(gold, allowed, costs)
    f, _, grads, errors = CompiledObjective(weights, features, targets.labels, targets)(crf)
    f_brute, g_brute = brute(weights, features, gold, allowed, costs, 5.0)
    assert f == pytest.approx(f_brute, rel=1e-9)
    for g, gb in zip(grads, g_brute, strict=True):
        assert torch.allclose(g.double(), gb, atol=1e-8)
    # large weights: the log-space rescue of the kernel keeps the restricted pass exact
    big = random_weights(10, names, edges=False, seed=4, scale=400.0)
    f, _, grads, _ = CompiledObjective(big, features, targets.labels, targets)(crf)
    f_brute, g_brute = brute(big, features, gold, allowed, costs, 5.0)
    assert f == pytest.approx(f_brute, rel=1e-7)


def test_full_annotation_is_the_plain_likelihood():
    features, gold, allowed, names = toy(seed=5)
    known = gold.clone()
    known[known < 0] = 0
    one_hot = torch.nn.functional.one_hot(known, 3).bool()
    targets = likelihood_targets(known, one_hot)
    assert targets.allowed is None and targets.offset is None


def test_crf_fit_on_partial_data_runs_and_moves_towards_the_compatible_labelings():
    features, gold, allowed, names = toy(seed=6, docs=20)
    weights = ChainWeights(10, names, edges=False)
    data = ChainData(features, gold, allowed=allowed)
    result = fit(
        CRF(sigma2=10.0, scan="scaled"), ChainStructure(weights), Updater(weights), data,
        FitSettings(max_epochs=30, progress=False),
    )  # fmt: skip
    objectives = [h.extra["objective"] for h in result.history]
    assert objectives[-1] < objectives[0]


def test_the_latent_gold_is_the_best_compatible_labeling():
    features, gold, allowed, names = toy(seed=7)
    weights = random_weights(10, names, edges=True, seed=8)
    structure = ChainStructure(weights)
    for d in range(features.num_docs):
        batch = make_batch(features, [d])
        a, b = int(features.doc_offsets[d]), int(features.doc_offsets[d + 1])
        pot = weights.potentials(batch)[0]
        best, best_path = -math.inf, None
        for path in itertools.product(range(3), repeat=b - a):
            if not all(allowed[a + t, y] for t, y in enumerate(path)):
                continue
            s = float(pot[0, 0, path[0]]) + sum(
                float(pot[t, path[t - 1], path[t]]) for t in range(1, b - a)
            )
            if s > best:
                best, best_path = s, path
        assert tuple(structure.complete(batch, allowed[a:b]).tolist()) == best_path


def test_perceptron_learns_from_partial_annotation_and_skips_the_compiled_epochs():
    """A learnable problem (label = first feature mod 3) with half the labels hidden: the
    perceptron trained on the partial data labels the hidden tokens right, as the full one."""
    gen = torch.Generator().manual_seed(0)
    lengths = [4] * 40
    N = sum(lengths)
    ids = torch.randint(0, 9, (N,), generator=gen, dtype=torch.int32)
    offsets = torch.arange(N + 1)
    doc_offsets = torch.arange(0, N + 1, 4)
    features = FeatureMatrix(ids, offsets, doc_offsets)
    labels = ids.long() % 3
    hidden = torch.rand(N, generator=gen) < 0.5
    allowed = torch.nn.functional.one_hot(labels, 3).bool()
    allowed[hidden] = True
    gold = labels.masked_fill(hidden, -1)
    weights = ChainWeights(9, ["a", "b", "c"], edges=False)
    structure = ChainStructure(weights)
    data = ChainData(features, gold, allowed=allowed)
    fit(Perceptron(), structure, Updater(weights), data, FitSettings(max_epochs=10, progress=False))
    pred = torch.tensor([y for p in structure.predict(data) for y in p])
    assert bool((pred == labels).all())


def test_step_targets_cost_augment_the_decoded_batch():
    features, gold, allowed, names = toy(seed=9)
    weights = random_weights(10, names, edges=True, seed=2)
    structure = ChainStructure(weights)
    learner = MarginPerceptron(C=1.0, label_costs={"y1": 100.0})
    data = ChainData(features, gold.clamp(min=0))
    targets = StepTargets(learner, structure, data)
    assert targets.active and structure.label_costs.tolist() == [1.0, 100.0, 1.0]
    batch, g = structure.instance(data, 1, "cpu")
    augmented, same = targets(1, batch, g)
    assert same is g
    pred = structure.argmax(augmented)
    # a huge cost of missing y1: the loss-augmented argmax mislabels every gold y1 token
    assert bool((pred[g == 1] != 1).all())
    assert structure.loss(g, pred) == pytest.approx(
        float((torch.tensor([1.0, 100.0, 1.0])[g] * (g != pred)).sum())
    )


def test_cost_vector_reads_labels_and_types():
    labels = ["O", "B-MISC", "I-MISC", "B-PER", "I-PER"]
    assert cost_vector({"MISC": 3, "I-MISC": 2}, labels).tolist() == [1, 3, 2, 1, 1]
    assert cost_vector(None, labels) is None
    with pytest.raises(ValueError, match="'LOC', which is no label"):
        cost_vector({"LOC": 2}, labels)
    with pytest.raises(ValueError, match=">= 0"):
        cost_vector({"PER": -1}, labels)


def test_partial_cells_encode_to_allowed_rows():
    docs = make_corpus(3, seed=1)
    docs[0].tags[1] = partial_cell()
    docs[0].tags[2] = partial_cell(["O", "B-PER"])
    labels = label_set(docs)
    ids, allowed = encode_partial(docs, labels)
    assert ids[1] == -1 and ids[2] == -1 and bool(allowed[1].all())
    assert sorted(labels[j] for j in allowed[2].nonzero().flatten()) == ["B-PER", "O"]
    assert int(allowed[0].sum()) == 1


def test_the_rescoring_latent_gold_is_the_best_total_of_the_compatible_nbest():
    """Kazama & Torisawa's structure: the latent gold of a partial annotation is, of the n best
    compatible labelings under the local model, the best under local + non-local features."""
    from test_structures import RescoringCase

    case = RescoringCase()
    structure, data = case.build(seed=4)
    gen = torch.Generator().manual_seed(5)
    L = structure.chain.num_labels
    for d in range(len(data)):
        batch, _ = structure.instance(data, d, "cpu")
        T = case.lengths[d]
        allowed = torch.rand(T, L, generator=gen) < 0.5
        allowed[torch.arange(T), torch.randint(0, L, (T,), generator=gen)] = True
        compatible = [
            y for y in case.labelings(structure, data, d) if all(allowed[t, y[t]] for t in range(T))
        ]
        compatible.sort(key=lambda y: -case.local(structure, data, d, y))
        for n in (1, 3):
            best = max(case.oracle(structure, data, d, y) for y in compatible[:n])
            got = structure.complete(batch, allowed, n)
            assert all(allowed[t, got[t]] for t in range(T))
            assert case.oracle(structure, data, d, got) == pytest.approx(best)


def test_the_proposed_algorithm_trains_on_partial_annotation():
    from test_structures import RescoringCase

    from structperc.learn.proposed import ProposedPerceptron

    structure, data = RescoringCase().build(seed=6)
    structure.weights.float()  # (the case builds float64 tables; updates are float32)
    L = structure.chain.num_labels
    allowed = torch.nn.functional.one_hot(data.labels, L).bool()
    allowed[::2] = True  # every other token open
    data.allowed, data.labels = allowed, data.labels.masked_fill(allowed.sum(1) > 1, -1)
    learner = ProposedPerceptron(n=4, C=1.0, bpm_runs=0)
    result = fit(
        learner,
        structure,
        Updater(structure.weights),
        data,
        FitSettings(max_epochs=3, progress=False),
    )
    assert result.history[0].extra["gold_in_nbest"] >= 0 and result.history[-1].tokens == len(
        data.labels
    )
