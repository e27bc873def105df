"""The label-chunk structure: part features, Phi differences, the update rules on it (closed
forms), training with the back-off, and batched prediction."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles.label_chunk import parts

from structperc.data.document import Document
from structperc.data.label_chunk import LabelChunk, from_document, from_tags, hamming
from structperc.decode.label_chunk import structure_scores
from structperc.features.extract import FeatureMatrix
from structperc.features.part_features import PartFeatures, token_type
from structperc.learn.fitting import FitSettings
from structperc.learn.max_margin import MaxMarginPerceptron, max_margin_tau
from structperc.learn.perceptron import Perceptron
from structperc.model.batch import make_batch
from structperc.model.label_chunk_weights import (
    LabelChunkWeights,
    make_part_batch,
    part_columns,
    restrict,
    structure_delta,
)
from structperc.model.updates import Updater
from structperc.structures.label_chunk import LabelChunkStructure, PartData
from structperc.trainer import fit

SENTS = [
    ("The cat sat on the mat .", "DT NN VBD IN DT NN .", "B I O O B I O"),
    ("IBM bought 12 small firms quickly", "NNP VBD CD JJ NNS RB", "B O B I I O"),
    ("Dogs bark", "NNS VBP", "B O"),
    ("He said the McDonald deal was big", "PRP VBD DT NNP NN VBD JJ", "B O B I I O O"),
]


def docs() -> list[Document]:
    out = []
    for words, pos, np in SENTS:
        tags = [t if t == "O" else f"{t}-NP" for t in np.split()]
        out.append(Document(tokens=words.split(), columns={"pos": pos.split()}, tags=tags))
    return out


@pytest.fixture(scope="module")
def model():
    corpus = docs()
    features = PartFeatures().fit(corpus)
    mats = features.transform(corpus)
    gold = LabelChunk.cat([from_document(d) for d in corpus])
    return features, mats, gold


def random_weights(features: PartFeatures, seed: int) -> LabelChunkWeights:
    weights = LabelChunkWeights(features.num_features)
    gen = torch.Generator().manual_seed(seed)
    for t in weights.tables().values():
        t.copy_(torch.randint(-3, 4, t.shape, generator=gen).float())
    return weights


def test_token_types_follow_table5():
    assert token_type("Smith") == "CAPITAL" and token_type("A") == "CAP_ONE"
    assert token_type("IBM") == "CAP_ALL" and token_type("McDonald") == "CAP_MIX"
    assert token_type("1996") == "NUMBER" and token_type("B-52") == "NUMBER"
    assert token_type("the") is None and token_type(",") is None


def test_unlexicalized_rows_are_the_bias_and_token_type(model):
    features, _, _ = model
    rows = features.unlexicalized_rows()
    # pos_node: bias + the token types seen (t_r); every other part type: only the bias
    assert int(rows["pos_node"].sum()) == 1 + len(features.vocabs["pos_node"].values["t"])
    for g in ("pos_edge", "chunk_start", "chunk_edge"):
        assert int(rows[g].sum()) == 1
    assert int(rows["chunk_end"].sum()) == 0


def naive_phi(features, mats, y: LabelChunk, d: int, weights: LabelChunkWeights) -> dict:
    """Phi(x_d, y) as {(table, flat index): count}, from the part list of the paper's notation."""
    C, P = len(weights.chunk_tags), len(weights.pos_tags)
    lo = int(next(iter(mats.values())).doc_offsets[d])

    def feats(g, t):
        m = mats[g]
        a, b = int(m.offsets[lo + t]), int(m.offsets[lo + t + 1])
        return m.ids[a:b].tolist()

    phi: dict = {}

    def add(g, t, col):
        for f in feats(g, t):
            key = (g, f * weights.widths[g] + col)
            phi[key] = phi.get(key, 0) + 1

    for part in parts(y):
        kind = part[0]
        if kind == "pos_node":
            _, c, p, r = part
            add("pos_node", r, c * P + p)
        elif kind == "pos_edge":
            _, c, p0, p, _, r = part
            add("pos_edge", r, (c * P + p0) * P + p)
        elif kind == "chunk_node":
            _, c, q, r = part
            add("chunk_start", q, c)
            add("chunk_end", r, c)
        else:
            _, c0, c, _, q = part
            add("chunk_edge", q, c0 * C + c)
    return phi


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 3), st.integers(0, 10**6))
def test_delta_matches_parts_and_scores(model, d, seed):
    features, mats, gold = model
    weights = random_weights(features, seed)
    batch = make_part_batch(mats, [d])
    lo, hi = (int(x) for x in mats["pos_node"].doc_offsets[d : d + 2])
    y_star = gold.slice(lo, hi)
    y_pred = LabelChunkStructure(weights).argmax(batch)
    delta = structure_delta(weights, batch, y_star, y_pred)
    pot = weights.potentials(batch)
    s = structure_scores(
        pot, LabelChunk(*(t.unsqueeze(0) for t in (y_star.pos, y_star.chunk, y_star.start)))
    )
    s_pred = structure_scores(
        pot, LabelChunk(*(t.unsqueeze(0) for t in (y_pred.pos, y_pred.chunk, y_pred.start)))
    )
    assert math.isclose(delta.dot(weights.tables()), float(s - s_pred), abs_tol=1e-4)
    gold_phi = naive_phi(features, mats, y_star, d, weights)
    pred_phi = naive_phi(features, mats, y_pred, d, weights)
    diff = {k: gold_phi.get(k, 0) - pred_phi.get(k, 0) for k in gold_phi.keys() | pred_phi.keys()}
    assert delta.norm_sq() == sum(v * v for v in diff.values())
    coalesced = {
        (g, i): v
        for g, (idx, vals) in delta.coalesced().items()
        for i, v in zip(idx.tolist(), vals.tolist(), strict=True)
        if v
    }
    assert coalesced == {k: v for k, v in diff.items() if v}


def test_part_columns_mark_chunk_boundaries():
    y = from_tags(["NOUN", "NOUN", "VERB"], ["B-NP", "I-NP", "O"])
    batch = make_batch(_fake_matrix(3), [0])
    cols = part_columns(y, batch, 2, 5)
    assert cols["chunk_start"].tolist() == [1, -1, 0]
    assert cols["chunk_end"].tolist() == [-1, 1, 0]
    assert cols["chunk_edge"].tolist() == [-1, -1, 2]  # NP -> O
    assert cols["pos_edge"].tolist()[0] == -1 and cols["pos_edge"].tolist()[2] == -1


def _fake_matrix(n: int) -> FeatureMatrix:
    return FeatureMatrix(
        torch.zeros(n, dtype=torch.int32), torch.arange(n + 1), torch.tensor([0, n])
    )


def test_max_margin_tau_closed_form():
    # (loss - margin) / ||d||^2, clipped to [0, C]
    assert max_margin_tau(loss=3, margin=-1, norm_sq=8, C=1) == 0.5
    assert max_margin_tau(loss=3, margin=-1, norm_sq=2, C=1) == 1.0
    assert max_margin_tau(loss=3, margin=-1, norm_sq=2, C=5) == 2.0
    assert max_margin_tau(loss=1, margin=4, norm_sq=2, C=1) == 0.0
    assert max_margin_tau(loss=1, margin=0, norm_sq=0, C=1) == 0.0


def _one_update(model, learner, seed):
    features, mats, gold = model
    weights = random_weights(features, seed)
    updater = Updater(weights)
    structure = LabelChunkStructure(weights)
    d = seed % 4
    batch = make_part_batch(mats, [d])
    lo, hi = (int(x) for x in mats["pos_node"].doc_offsets[d : d + 2])
    y_star = gold.slice(lo, hi)
    y_pred = structure.argmax(batch)
    delta = structure_delta(weights, batch, y_star, y_pred)
    before = delta.dot(weights.tables())
    stats = learner.step(structure, updater, batch, y_star)
    after = delta.dot(weights.tables())
    return y_star, y_pred, delta, before, after, stats


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**6))
def test_perceptron_update_moves_margin_by_norm(model, seed):
    y_star, y_pred, delta, before, after, stats = _one_update(model, Perceptron(average=True), seed)
    if y_star.equal(y_pred):
        assert stats.updates == 0 and after == before
    else:
        assert math.isclose(after - before, delta.norm_sq(), abs_tol=1e-3)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**6))
def test_max_margin_update_makes_the_constraint_tight(model, seed):
    y_star, y_pred, delta, before, after, stats = _one_update(
        model, MaxMarginPerceptron(C=1e9), seed
    )
    if y_star.equal(y_pred):
        return
    loss = sum(hamming(y_star, y_pred))
    tau = (loss - before) / delta.norm_sq()
    assert math.isclose(after, loss, abs_tol=1e-3)  # s(y*) - s(y') = l(y') (unclipped)
    assert math.isclose(after - before, tau * delta.norm_sq(), abs_tol=1e-3)


def test_clipped_max_margin_step_is_c(model):
    y_star, y_pred, delta, before, after, _ = _one_update(model, MaxMarginPerceptron(C=1e-3), 7)
    assert not y_star.equal(y_pred)
    assert math.isclose(after - before, 1e-3 * delta.norm_sq(), rel_tol=1e-3)


def test_restrict_keeps_unlexicalized_rows(model):
    features, mats, gold = model
    weights = random_weights(features, 3)
    batch = make_part_batch(mats, [0])
    lo, hi = (int(x) for x in mats["pos_node"].doc_offsets[0:2])
    delta = structure_delta(
        weights, batch, gold.slice(lo, hi), LabelChunkStructure(weights).argmax(batch)
    )
    rows = features.unlexicalized_rows()
    kept = restrict(delta, rows, weights.widths)
    for g, (idx, _) in kept.parts.items():
        assert rows[g][idx // weights.widths[g]].all()


def test_backoff_epoch_leaves_lexicalized_weights_at_zero(model):
    features, mats, gold = model
    weights = LabelChunkWeights(features.num_features)
    updater = Updater(weights, average=True)
    rows = features.unlexicalized_rows()
    structure = LabelChunkStructure(weights)
    structure.trainable = rows
    one_epoch = FitSettings(max_epochs=1, progress=False)
    fit(MaxMarginPerceptron(), structure, updater, PartData(mats, gold), one_epoch)
    for g, table in weights.tables().items():
        assert (table[~rows[g]] == 0).all()
    assert any(table.abs().sum() > 0 for table in weights.tables().values())


@pytest.mark.parametrize("learner", [Perceptron(average=True), MaxMarginPerceptron()])
def test_separable_toy_set_is_learned(model, learner):
    features, mats, gold = model
    weights = LabelChunkWeights(features.num_features)
    up_to_30 = FitSettings(max_epochs=30, progress=False)
    structure = LabelChunkStructure(weights)
    result = fit(learner, structure, Updater(weights), PartData(mats, gold), up_to_30)
    assert result.history[-1].errors == 0


def test_predict_batched_equals_one_at_a_time(model):
    features, mats, _ = model
    weights = random_weights(features, 11)
    structure = LabelChunkStructure(weights)
    one = structure.predict(PartData(mats), batch_size=1)
    many = structure.predict(PartData(mats), batch_size=3)
    assert all(a.equal(b) for a, b in zip(one, many, strict=True))
    assert [len(y) for y in one] == [len(s[0].split()) for s in SENTS]


def test_constrained_argmax_keeps_the_constraints_and_is_best_among_such(model):
    """The structure's constrained argmax equals the best structure, by enumeration, among those
    whose POS and NP tags are allowed and that hold no forbidden chunk."""
    from oracles.label_chunk import as_lists, enumerate_structures, part_score

    from structperc.data.label_chunk import chunks, token_codes

    features, mats, _ = model
    structure = LabelChunkStructure(random_weights(features, seed=11))
    d = 2  # "Dogs bark": few enough structures to enumerate
    offsets = mats["pos_node"].doc_offsets
    n = int(offsets[d + 1] - offsets[d])
    batch = make_part_batch(mats, [d])
    gen = torch.Generator().manual_seed(2)
    pos_allowed = torch.rand(1, n, 5, generator=gen) < 0.6
    pos_allowed[..., 0] |= ~pos_allowed.any(-1)
    tag_allowed = torch.rand(1, n, 3, generator=gen) < 0.7
    tag_allowed[..., 0] |= ~tag_allowed.any(-1)
    forbidden = [[(0, 2, 1)]]
    y = structure.constrained_argmax(batch, pos_allowed, tag_allowed, forbidden)
    pot = structure.potentials(batch)
    lists = as_lists(pot, 0)
    best = max(
        part_score(lists, 0, z)
        for z in enumerate_structures(n, 2, 5)
        if all(pos_allowed[0, t, token_codes(z)[0][t]] for t in range(n))
        and all(tag_allowed[0, t, token_codes(z)[1][t]] for t in range(n))
        and (0, 1, 1) not in chunks(z)
    )
    assert part_score(lists, 0, y) == pytest.approx(best)
