"""The shared-transition scan (``decode/transition_scan.py``) against torch-struct's scan of the
same edge potentials (``crf/edges.py``) and against enumeration: log Z and both gradients, on
rows of several documents end to end."""

from __future__ import annotations

import itertools

import torch

from structperc.crf.buckets import packed_batch
from structperc.crf.edges import padded_nodes, transition_log_potentials
from structperc.decode.marginals import log_partition_of_edges
from structperc.decode.transition_scan import shared_transition_log_partition
from structperc.features.extract import FeatureMatrix


def rows_of(lengths: list[int], rows: list[list[int]]):
    """A ``packed_batch`` layout of documents of ``lengths`` (no features) in ``rows``."""
    doc_offsets = torch.zeros(len(lengths) + 1, dtype=torch.long)
    torch.cumsum(torch.tensor(lengths), 0, out=doc_offsets[1:])
    n = int(doc_offsets[-1])
    features = FeatureMatrix(
        torch.zeros(0, dtype=torch.int32), torch.zeros(n + 1, dtype=torch.long), doc_offsets
    )
    return packed_batch(features, rows)


def both(node, transition, batch):
    """(log Z [B], d/d node, d/d transition) by the new scan and by torch-struct's."""
    out = []
    for new in (True, False):
        n = node.clone().requires_grad_(True)
        a = transition.clone().requires_grad_(True)
        if new:
            padded, first = padded_nodes(n, batch)
            logz = shared_transition_log_partition(padded, a, batch.lengths, first)
        else:
            edges, lengths = transition_log_potentials(n, a, batch)
            logz = log_partition_of_edges(edges, lengths, "log")
        (logz * torch.arange(1.0, len(logz) + 1, dtype=logz.dtype)).sum().backward()
        out.append((logz.detach(), n.grad, a.grad))
    return out


def test_rows_of_documents_match_torch_struct():
    gen = torch.Generator().manual_seed(3)
    lengths = [4, 1, 3, 5, 2, 1, 6]
    batch = rows_of(lengths, [[3, 1], [0, 2, 5], [6], [4]])
    L = 4
    node = torch.randn(sum(lengths), L, generator=gen, dtype=torch.float64) * 3
    transition = torch.randn(L, L, generator=gen, dtype=torch.float64) * 2
    (z1, gn1, ga1), (z2, gn2, ga2) = both(node, transition, batch)
    assert torch.allclose(z1, z2, atol=1e-9)
    assert torch.allclose(gn1, gn2, atol=1e-9)
    assert torch.allclose(ga1, ga2, atol=1e-9)


def test_one_document_matches_enumeration():
    gen = torch.Generator().manual_seed(8)
    L, n = 3, 4
    node = torch.randn(1, n, L, generator=gen, dtype=torch.float64)
    transition = torch.randn(L, L, generator=gen, dtype=torch.float64)
    first = torch.zeros(1, n, dtype=torch.bool)
    first[0, 0] = True
    scores = {
        y: float(
            sum(node[0, t, y[t]] for t in range(n))
            + sum(transition[y[t - 1], y[t]] for t in range(1, n))
        )
        for y in itertools.product(range(L), repeat=n)
    }
    log_z = torch.logsumexp(torch.tensor(list(scores.values()), dtype=torch.float64), 0)
    nd, a = node.clone().requires_grad_(True), transition.clone().requires_grad_(True)
    got = shared_transition_log_partition(nd, a, torch.tensor([n]), first)
    got.sum().backward()
    assert abs(float(got.detach()) - float(log_z)) < 1e-10
    for t, j in itertools.product(range(n), range(L)):  # node marginals
        p = sum(
            torch.exp(torch.tensor(s, dtype=torch.float64) - log_z)
            for y, s in scores.items()
            if y[t] == j
        )
        assert abs(float(nd.grad[0, t, j]) - float(p)) < 1e-10
    for i, j in itertools.product(range(L), range(L)):  # expected transition counts
        c = sum(
            sum(y[t - 1] == i and y[t] == j for t in range(1, n))
            * torch.exp(torch.tensor(s, dtype=torch.float64) - log_z)
            for y, s in scores.items()
        )
        assert abs(float(a.grad[i, j]) - float(c)) < 1e-10


def test_the_crf_objective_with_one_transition_matrix_is_the_same_by_every_scan():
    from structperc.crf.buckets import make_buckets
    from structperc.crf.learner import CRF
    from structperc.crf.objective import full_objective
    from structperc.crf.sparse import TransposedIndex
    from structperc.data.synthetic import make_corpus
    from structperc.features.pipeline import LocalFeatures
    from structperc.model.weights import ChainWeights
    from structperc.structures.chain import ChainStructure

    train = make_corpus(12, seed=2)
    lf = LocalFeatures(gazetteer="none", window=1).fit(train)
    labels = sorted({t for d in train for t in d.tags})
    index = {t: i for i, t in enumerate(labels)}
    gold = torch.tensor([index[t] for d in train for t in d.tags])
    features = lf.transform(train, training=True)
    weights = ChainWeights(lf.num_features, labels, edges=False)
    gen = torch.Generator().manual_seed(4)
    with torch.no_grad():
        for table in weights.dense_tables:
            table.copy_(torch.randn(table.shape, generator=gen) * 0.3)
    x_t = TransposedIndex.build(features.ids, features.offsets, weights.num_features)
    results = {}
    for scan in ("sequential", "scaled"):
        learner = CRF(sigma2=3.0, scan=scan)
        buckets = make_buckets(
            features,
            gold,
            4000,
            with_index=False,
            num_features=weights.num_features,
            device="cpu",
            packed=True,
            sequential=scan == "sequential",
        )
        results[scan] = full_objective(learner, ChainStructure(weights), features, x_t, buckets)
    (f1, nll1, g1, e1), (f2, nll2, g2, e2) = results["sequential"], results["scaled"]
    assert abs(f1 - f2) < 1e-6 * abs(f2) and abs(nll1 - nll2) < 1e-6 * abs(nll2) and e1 == e2
    for a, b in zip(g1, g2, strict=True):
        assert float((a - b).norm()) < 1e-5 * float(b.norm())
