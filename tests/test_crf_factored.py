"""crf/factored.py: the CRF's lookup as A (B W) equals X W and its gradient X^T dS, whatever the
groups and chunks; the build refuses where it would not pay, with real values, and on a hash
collision; features/lookup_groups.py's groups; a CRF trained with the factored lookup follows the
plain one."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from structperc.crf import factored
from structperc.crf.factored import FactoredIndex, lookup_index
from structperc.crf.learner import CRF
from structperc.crf.sparse import TransposedIndex, lookup
from structperc.features.extract import FeatureMatrix
from structperc.features.lookup_groups import FEW_VALUES, feature_groups
from structperc.learn.fitting import FitSettings
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.structures.chain import ChainData, ChainStructure
from structperc.trainer import fit


def window_problem(seed: int = 0, docs: int = 7, vocabulary: int = 5, labels: int = 3):
    """Documents of words from a small vocabulary, each token firing a bias, its word's four
    features and its previous word's three (offsets 0 and -1: two groups besides the bias), as
    window templates would: the feature sets recur. Returns (features, labels, groups [F], F)."""
    gen = np.random.default_rng(seed)
    lengths = gen.integers(1, 9, docs)
    lengths[0] = 1
    words = gen.integers(0, vocabulary, int(lengths.sum()))
    # rows: 0 bias; 1 + 4w + k the word's features; 1 + 4V + 3w + k the previous word's
    F_ = 1 + 7 * vocabulary
    ids, offsets, t = [], [0], 0
    for n in lengths:
        for i in range(n):
            w = words[t + i]
            row = [0] + [1 + 4 * w + k for k in range(4)]
            if i > 0:
                row += [1 + 4 * vocabulary + 3 * words[t + i - 1] + k for k in range(3)]
            gen.shuffle(row)  # a token's ids in any order
            ids += row
            offsets.append(len(ids))
        t += n
    doc_offsets = np.concatenate([[0], np.cumsum(lengths)])
    groups = np.array([0] + [1] * (4 * vocabulary) + [2] * (3 * vocabulary), np.int32)
    features = FeatureMatrix(
        torch.tensor(ids, dtype=torch.int32),
        torch.tensor(offsets, dtype=torch.long),
        torch.tensor(doc_offsets, dtype=torch.long),
    )
    y = torch.from_numpy(words % labels).long()
    return features, y, groups, F_


def plain_and_factored(features, groups, F_, D=4, chunk=factored.CHUNK):
    index = FactoredIndex.build(features.ids, features.offsets, groups, F_, chunk=chunk)
    assert index is not None
    table = torch.randn(F_, D, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    grad = torch.randn(features.num_tokens, D, dtype=torch.float64)
    out = []
    for make in (
        lambda t: lookup(
            t,
            features.ids,
            features.offsets,
            TransposedIndex.build(features.ids, features.offsets, F_),
        ),
        lambda t: index.scores(t),
    ):
        leaf = table.clone().requires_grad_(True)
        scores = make(leaf)
        scores.backward(grad)
        out.append((scores.detach(), leaf.grad))
    return index, out


@pytest.mark.parametrize("chunk", [1, 5, 1 << 20])
def test_factored_lookup_equals_the_plain_one_forward_and_backward(chunk):
    features, _, groups, F_ = window_problem()
    index, ((s_plain, g_plain), (s_fact, g_fact)) = plain_and_factored(
        features, groups, F_, chunk=chunk
    )
    torch.testing.assert_close(s_fact, s_plain)
    torch.testing.assert_close(g_fact, g_plain)
    # the recurring sets are shared: one bias unit, at most 5 words x 2 groups of sets
    assert index.num_units <= 1 + 5 + 5
    docs = (
        features.num_docs
    )  # every token a bias and a word slot, all but the first a previous word's
    assert len(index.token_units) == 3 * features.num_tokens - docs


def test_the_lexsort_of_large_keys_builds_the_same_index(monkeypatch):
    features, _, groups, F_ = window_problem(7)
    one_key = FactoredIndex.build(features.ids, features.offsets, groups, F_, chunk=9)
    monkeypatch.setattr(factored, "KEY_LIMIT", 0)  # every chunk: np.lexsort
    sorted_apart = FactoredIndex.build(features.ids, features.offsets, groups, F_, chunk=9)
    assert torch.equal(one_key.unit_ids, sorted_apart.unit_ids)
    assert torch.equal(one_key.token_units, sorted_apart.token_units)


def test_units_are_shared_across_chunks():
    features, _, groups, F_ = window_problem(1)
    whole = FactoredIndex.build(features.ids, features.offsets, groups, F_)
    chunked = FactoredIndex.build(features.ids, features.offsets, groups, F_, chunk=3)
    assert whole.num_units == chunked.num_units
    assert torch.equal(whole.unit_ids, chunked.unit_ids)
    assert torch.equal(whole.token_units, chunked.token_units)


def test_any_grouping_gives_the_same_sums(monkeypatch):
    """The groups decide what is shared, never the result: one group for all, one per row
    (built here although it reads more rows than X: the refusal is switched off)."""
    monkeypatch.setattr(factored, "MAX_FRACTION", 100.0)
    features, _, _, F_ = window_problem(2)
    for groups in (np.zeros(F_, np.int32), np.arange(F_, dtype=np.int32)):
        index = FactoredIndex.build(features.ids, features.offsets, groups, F_, chunk=4)
        assert index is not None
        table = torch.randn(F_, 3, dtype=torch.float64)
        plain = lookup(
            table,
            features.ids,
            features.offsets,
            TransposedIndex.build(features.ids, features.offsets, F_),
        )
        torch.testing.assert_close(index.scores(table), plain)


def test_a_hash_collision_is_caught_not_merged(monkeypatch):
    """Every slot hashing alike: the slots are compared with their units, and the build gives up
    (the caller keeps the plain lookup) rather than merge different sets."""
    features, _, groups, F_ = window_problem(3)
    monkeypatch.setattr(
        factored, "_slot_hashes", lambda ids, starts, g: np.zeros(len(starts), np.uint64)
    )
    assert FactoredIndex.build(features.ids, features.offsets, groups, F_) is None
    assert isinstance(lookup_index(features, groups, F_), TransposedIndex)


def test_no_factoring_where_it_does_not_pay_or_values_are_real():
    features, _, groups, F_ = window_problem(4)
    one_per_row = np.arange(F_, dtype=np.int32)  # every slot one feature: more rows, not fewer
    assert FactoredIndex.build(features.ids, features.offsets, one_per_row, F_) is None
    values = torch.ones(len(features.ids))
    assert FactoredIndex.build(features.ids, features.offsets, groups, F_, values) is None
    assert isinstance(lookup_index(features, None, F_), TransposedIndex)
    assert isinstance(lookup_index(features, groups, F_), FactoredIndex)


def test_features_not_in_the_tokens_get_a_sparse_gradient():
    features, _, groups, F_ = window_problem(5)
    wider = F_ + 3  # three rows no token fires
    groups = np.concatenate([groups, [1, 1, 1]]).astype(np.int32)
    index = FactoredIndex.build(features.ids, features.offsets, groups, wider)
    leaf = torch.randn(wider, 2, dtype=torch.float64, requires_grad=True)
    index.scores(leaf).sum().backward()
    assert leaf.grad.is_sparse
    dense = leaf.grad.to_dense()
    assert torch.all(dense[F_:] == 0)
    plain_leaf = leaf.detach().clone().requires_grad_(True)
    plain = TransposedIndex.build(features.ids, features.offsets, wider)
    lookup(plain_leaf, features.ids, features.offsets, plain).sum().backward()
    torch.testing.assert_close(dense, plain_leaf.grad.to_dense())


def test_feature_groups_split_offsets_and_few_valued_templates():
    # templates: bias (), w[0] (many rows), pos[0] (few), w[-1]/w[0] (many), pos[-1] (few)
    reads = [(), (0,), (0,), (-1, 0), (-1,)]
    many = FEW_VALUES + 1
    template_of_row = np.repeat(np.arange(5), [1, many, 3, many, 2])
    groups = feature_groups(reads, template_of_row)
    of = {t: set(groups[template_of_row == t].tolist()) for t in range(5)}
    assert all(len(g) == 1 for g in of.values())  # a template is in one group
    g = {t: of[t].pop() for t in range(5)}
    assert len({g[0], g[1], g[2], g[3], g[4]}) == 5  # w[0] and pos[0] apart: few vs many
    assert groups.dtype == np.int32 and len(groups) == len(template_of_row)


def test_a_crf_with_the_factored_lookup_follows_the_plain_one(monkeypatch):
    """CRF.fit on features with groups (the factored lookup) and without (X^T): the same
    objective, iteration by iteration, up to rounding."""
    from structperc.crf import learner as crf_learner

    monkeypatch.setattr(crf_learner, "numba_available", lambda: False)  # the torch scans
    runs = []
    for with_groups in (False, True):
        features, y, groups, F_ = window_problem(6, docs=12)
        features.groups = groups if with_groups else None
        weights = ChainWeights(F_, ["a", "b", "c"], edges=True)
        result = fit(
            CRF(sigma2=10.0, tol=0.0),
            ChainStructure(weights),
            Updater(weights),
            ChainData(features, y),
            FitSettings(max_epochs=6, progress=False),
        )
        runs.append([h.extra["objective"] for h in result.history])
    assert runs[0] == pytest.approx(runs[1], rel=1e-5)
    assert runs[0][-1] < runs[0][0]
