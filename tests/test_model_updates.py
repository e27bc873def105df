"""Tests for structperc.model: batches, potentials, sparse feature differences, averaging."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import chain as reference

from structperc.features.extract import FeatureMatrix
from structperc.model.batch import FeatureBatch, make_batch
from structperc.model.updates import SparseDelta, Updater, path_delta
from structperc.model.weights import ChainWeights, flat_at

SETTINGS = settings(max_examples=50, deadline=None)


Doc = list[list[int]]  # one document: the feature ids of each token


def feature_matrix(docs: list[Doc]) -> FeatureMatrix:
    ids = [f for doc in docs for tok in doc for f in tok]
    counts = [len(tok) for doc in docs for tok in doc]
    offsets = [0]
    for c in counts:
        offsets.append(offsets[-1] + c)
    doc_offsets = [0]
    for doc in docs:
        doc_offsets.append(doc_offsets[-1] + len(doc))
    return FeatureMatrix(
        torch.tensor(ids, dtype=torch.int32),
        torch.tensor(offsets, dtype=torch.long),
        torch.tensor(doc_offsets, dtype=torch.long),
    )


def phi(docs: list[Doc], labels: list[list[int]], F: int, L: int) -> dict[str, torch.Tensor]:
    """Dense Phi(x, y): node[f, y_t] and edge[f, y_{t-1} * L + y_t] counts, by the formula."""
    node = torch.zeros(F, L)
    edge = torch.zeros(F, L * L)
    for doc, y in zip(docs, labels, strict=True):
        for t, feats in enumerate(doc):
            for f in feats:
                node[f, y[t]] += 1
                if t > 0:
                    edge[f, y[t - 1] * L + y[t]] += 1
    return {"node": node, "edge": edge}


def dense_delta(delta: SparseDelta, F: int, L: int) -> dict[str, torch.Tensor]:
    """The delta written into zero tables through ``Updater.apply``."""
    weights = ChainWeights(F, [str(i) for i in range(L)])
    Updater(weights).apply(delta)
    return {n: t.clone() for n, t in weights.tables().items()}


def labels_of(L: int) -> list[str]:
    return [f"L{i}" for i in range(L)]


def random_weights(F: int, L: int, seed: int) -> ChainWeights:
    gen = torch.Generator().manual_seed(seed)
    w = ChainWeights(F, labels_of(L))
    with torch.no_grad():
        for t in w.tables().values():
            t.copy_(torch.randn(t.shape, generator=gen))
    return w


@st.composite
def corpora(draw, max_docs: int = 4, max_len: int = 5):
    """(docs, F, L, gold, pred): random documents of random feature ids (repeats allowed)."""
    F = draw(st.integers(1, 6))
    L = draw(st.integers(1, 4))
    n_docs = draw(st.integers(1, max_docs))
    docs, gold, pred = [], [], []
    for _ in range(n_docs):
        n = draw(st.integers(1, max_len))
        docs.append([draw(st.lists(st.integers(0, F - 1), max_size=4)) for _ in range(n)])
        gold.append(draw(st.lists(st.integers(0, L - 1), min_size=n, max_size=n)))
        pred.append(draw(st.lists(st.integers(0, L - 1), min_size=n, max_size=n)))
    return docs, F, L, gold, pred


# hand example: 3 tokens, F = 4 features, L = 3 labels; token 1 fires feature 1 twice
HAND_DOC: Doc = [[0, 2], [1, 1, 3], [2]]


def hand_batch() -> FeatureBatch:
    return make_batch(feature_matrix([HAND_DOC]), [0])


# ---------------------------------------------------------------- make_batch


def test_make_batch_single_document_by_hand():
    fm = feature_matrix([[[5]], HAND_DOC, [[7, 8]]])
    b = make_batch(fm, [1])
    assert b.ids.tolist() == [0, 2, 1, 1, 3, 2]
    assert b.offsets.tolist() == [0, 2, 5, 6]
    assert b.lengths.tolist() == [3]
    assert b.first_token.tolist() == [0]
    assert b.flat_positions.tolist() == [0, 1, 2]
    assert (b.num_docs, b.max_length, b.num_tokens) == (1, 3, 3)


@SETTINGS
@given(corpora(max_docs=5), st.randoms(use_true_random=False))
def test_make_batch_equals_concatenation_of_single_documents(corpus, rnd):
    docs = corpus[0]
    fm = feature_matrix(docs)
    order = list(range(len(docs)))
    rnd.shuffle(order)
    order = order[: rnd.randint(1, len(order))]
    batch = make_batch(fm, order)
    singles = [make_batch(fm, [d]) for d in order]
    assert torch.equal(batch.ids, torch.cat([s.ids for s in singles]))
    assert batch.ids.tolist() == [f for d in order for tok in docs[d] for f in tok]
    counts = torch.cat([s.offsets.diff() for s in singles])
    assert torch.equal(batch.offsets.diff(), counts)
    assert batch.offsets[0] == 0 and batch.offsets[-1] == len(batch.ids)
    lengths = [len(docs[d]) for d in order]
    assert batch.lengths.tolist() == lengths
    firsts = [sum(lengths[:b]) for b in range(len(order))]
    assert batch.first_token.tolist() == firsts
    T = max(lengths)
    assert batch.flat_positions.tolist() == [
        b * T + t for b, n in enumerate(lengths) for t in range(n)
    ]
    # pad / unpad round trip
    values = torch.arange(batch.num_tokens)
    padded = batch.pad(values)
    assert padded.shape == (len(order), T)
    for b, n in enumerate(lengths):
        assert padded[b, :n].tolist() == list(range(firsts[b], firsts[b] + n))
        assert (padded[b, n:] == -1).all()
    assert torch.equal(batch.unpad(padded), values)


# ---------------------------------------------------------------- potentials


def test_potentials_formula_by_hand():
    F, L = 4, 3
    w = random_weights(F, L, seed=1)
    node, edge = w.tables()["node"], w.tables()["edge"].view(F, L, L)
    pot = w.potentials(hand_batch())
    assert pot.shape == (1, 3, L, L)
    n0 = node[0] + node[2]
    for i in range(L):  # t = 0: every row is the node scores
        torch.testing.assert_close(pot[0, 0, i], n0)
    torch.testing.assert_close(pot[0, 1], 2 * node[1] + node[3] + 2 * edge[1] + edge[3])
    torch.testing.assert_close(pot[0, 2], node[2].expand(L, L) + edge[2])


@SETTINGS
@given(corpora(max_docs=4), st.integers(0, 2**31 - 1))
def test_potentials_batched_equal_one_at_a_time(corpus, seed):
    docs, F, L, _, _ = corpus
    w = random_weights(F, L, seed)
    fm = feature_matrix(docs)
    order = list(range(len(docs)))[::-1]
    batch = make_batch(fm, order)
    pot = w.potentials(batch)
    T = max(len(d) for d in docs)
    assert pot.shape == (len(docs), T, L, L)
    node, edge = w.tables()["node"].double(), w.tables()["edge"].view(F, L, L).double()
    for b, d in enumerate(order):
        n = len(docs[d])
        single = w.potentials(make_batch(fm, [d]))
        assert single.shape == (1, n, L, L)
        assert torch.allclose(pot[b, :n], single[0], rtol=1e-6, atol=1e-6)
        assert (pot[b, n:] == 0).all()
        # and the formula, token by token: counts [n, F] times the tables
        counts = torch.zeros(n, F, dtype=torch.float64)
        for t, feats in enumerate(docs[d]):
            for f in feats:
                counts[t, f] += 1
        expected = torch.einsum("tf,fj->tj", counts, node).unsqueeze(1).expand(n, L, L).clone()
        expected[1:] += torch.einsum("tf,fij->tij", counts[1:], edge)
        assert torch.allclose(pot[b, :n].double(), expected, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- path_delta


def test_path_delta_by_hand_interior_difference():
    F, L = 4, 3
    gold, pred = torch.tensor([0, 1, 2]), torch.tensor([0, 2, 2])
    got = dense_delta(path_delta(hand_batch(), gold, pred, L), F, L)
    node = torch.zeros(F, L)
    edge = torch.zeros(F, L * L)
    # token 1 (features 1, 1, 3): label 1 vs 2
    node[1, 1], node[1, 2] = 2, -2
    node[3, 1], node[3, 2] = 1, -1
    # token 1 pairs: gold (0, 1) -> column 1, pred (0, 2) -> column 2
    edge[1, 1], edge[1, 2] = 2, -2
    edge[3, 1], edge[3, 2] = 1, -1
    # token 2 (feature 2): same label, but pairs (1, 2) -> 5 and (2, 2) -> 8 differ
    edge[2, 5], edge[2, 8] = 1, -1
    assert torch.equal(got["node"], node)
    assert torch.equal(got["edge"], edge)
    want = phi([HAND_DOC], [gold.tolist()], F, L)
    have = phi([HAND_DOC], [pred.tolist()], F, L)
    assert torch.equal(got["node"], want["node"] - have["node"])
    assert torch.equal(got["edge"], want["edge"] - have["edge"])


def test_path_delta_by_hand_first_token_has_no_edge():
    F, L = 4, 3
    gold, pred = torch.tensor([1, 0, 0]), torch.tensor([0, 0, 0])
    delta = path_delta(hand_batch(), gold, pred, L)
    got = dense_delta(delta, F, L)
    node = torch.zeros(F, L)
    node[0, 1], node[0, 0] = 1, -1  # token 0, features 0 and 2
    node[2, 1], node[2, 0] = 1, -1
    edge = torch.zeros(F, L * L)
    edge[1, 3], edge[1, 0] = 2, -2  # token 1: pairs (1, 0) -> 3 vs (0, 0) -> 0
    edge[3, 3], edge[3, 0] = 1, -1
    assert torch.equal(got["node"], node)
    assert torch.equal(got["edge"], edge)
    # nothing for token 2, whose pair (0, 0) agrees: feature 2 has no edge entry at all
    edge_rows = delta.parts["edge"][0] // (L * L)
    assert 2 not in edge_rows.tolist()


def test_path_delta_equal_paths_is_empty():
    delta = path_delta(hand_batch(), torch.tensor([2, 0, 1]), torch.tensor([2, 0, 1]), 3)
    assert all(len(i) == 0 for i, _ in delta.parts.values())
    assert delta.norm_sq() == 0.0


def test_path_delta_no_edge_across_documents():
    """The first token of the second document must not pair with the last of the first."""
    F, L = 3, 2
    docs = [[[0], [1]], [[2], [2]]]
    batch = make_batch(feature_matrix(docs), [0, 1])
    gold = torch.tensor([0, 1, 0, 0])
    pred = torch.tensor([0, 0, 0, 0])  # differs only at the last token of document 0
    got = dense_delta(path_delta(batch, gold, pred, L), F, L)
    assert torch.equal(got["node"], torch.tensor([[0.0, 0.0], [-1.0, 1.0], [0.0, 0.0]]))
    edge = torch.zeros(F, L * L)
    edge[1, 1], edge[1, 0] = 1, -1  # token 1 only: (0, 1) vs (0, 0)
    assert torch.equal(got["edge"], edge)  # feature 2 (document 1) untouched


@SETTINGS
@given(corpora(max_docs=4))
def test_path_delta_equals_dense_phi_difference(corpus):
    docs, F, L, gold, pred = corpus
    order = list(range(len(docs)))[::-1]
    batch = make_batch(feature_matrix(docs), order)
    g = torch.tensor([y for d in order for y in gold[d]])
    p = torch.tensor([y for d in order for y in pred[d]])
    delta = path_delta(batch, g, p, L)
    got = dense_delta(delta, F, L)
    want = phi(docs, gold, F, L)
    have = phi(docs, pred, F, L)
    expected = {n: want[n] - have[n] for n in want}
    for n in ("node", "edge"):
        assert torch.equal(got[n], expected[n]), n
    # the norm of the coalesced entries is the norm of the dense difference
    dense_norm = sum(float((t * t).sum()) for t in expected.values())
    assert delta.norm_sq() == pytest.approx(dense_norm)


def test_norm_sq_coalesces_duplicates_and_cancellations():
    L = 3
    # token 1 fires feature 1 twice: node entries (1, 1) +1 twice and (1, 2) -1 twice
    delta = path_delta(hand_batch(), torch.tensor([0, 1, 2]), torch.tensor([0, 2, 2]), L)
    assert len(delta.parts["node"][0]) == 6  # 3 ids x (+1, -1), uncoalesced
    # dense: node 2^2 + 2^2 + 1 + 1 = 10, edge 2^2 + 2^2 + 1 + 1 + 1 + 1 = 12
    assert delta.norm_sq() == 22.0
    uncoalesced = sum(float((v * v).sum()) for _, v in delta.parts.values())
    assert uncoalesced != 22.0  # the duplicates matter
    # a swap at two tokens firing the same feature cancels in the node table
    batch = make_batch(feature_matrix([[[0], [0]]]), [0])
    swap = path_delta(batch, torch.tensor([0, 1]), torch.tensor([1, 0]), 2)
    got = dense_delta(swap, 1, 2)
    assert (got["node"] == 0).all()
    # edges: gold (0, 1) -> column 1, pred (1, 0) -> column 2
    assert got["edge"].tolist() == [[0.0, 1.0, -1.0, 0.0]]
    assert swap.norm_sq() == 2.0


@SETTINGS
@given(corpora(max_docs=3), st.integers(0, 2**31 - 1))
def test_dot_equals_score_difference(corpus, seed):
    docs, F, L, gold, pred = corpus
    w = random_weights(F, L, seed)
    order = list(range(len(docs)))
    batch = make_batch(feature_matrix(docs), order)
    g = torch.tensor([y for y in sum(gold, [])])
    p = torch.tensor([y for y in sum(pred, [])])
    delta = path_delta(batch, g, p, L)
    pot = w.potentials(batch)
    expected = sum(
        reference.path_score(pot[b], gold[b]) - reference.path_score(pot[b], pred[b]) for b in order
    )
    assert delta.dot(w.tables()) == pytest.approx(expected, abs=1e-4)


def test_add_and_scaled():
    F, L = 4, 3
    d1 = path_delta(hand_batch(), torch.tensor([0, 1, 2]), torch.tensor([0, 2, 2]), L)
    d2 = path_delta(hand_batch(), torch.tensor([1, 0, 0]), torch.tensor([0, 0, 0]), L)
    a, b = dense_delta(d1, F, L), dense_delta(d2, F, L)
    s = dense_delta(d1 + d2.scaled(-2.5), F, L)
    for n in a:
        assert torch.equal(s[n], a[n] - 2.5 * b[n])
    only_node = SparseDelta({"node": d1.parts["node"]})
    combined = dense_delta(only_node + d2, F, L)
    assert torch.equal(combined["edge"], b["edge"])


# ---------------------------------------------------------------- Updater and averaging


def test_averaging_closed_form_single_weight():
    w = ChainWeights(1, ["A"])  # one node weight, one edge weight
    up = Updater(w, average=True)
    one = SparseDelta({"node": (torch.tensor([0]), torch.tensor([1.0]))})
    up.apply(one)  # instance 1: w = 1
    up.tick()
    up.tick()  # instance 2: no update, w = 1
    up.apply(one, scale=2.0)  # instance 3: w = 3
    up.tick()
    assert w.tables()["node"].item() == 3.0
    avg = up.averaged_tables()
    assert avg["node"].item() == pytest.approx((1 + 1 + 3) / 3)
    assert avg["edge"].item() == 0.0
    assert w.tables()["node"].item() == 3.0  # averaged_tables does not touch the weights


@st.composite
def update_sequences(draw):
    """Per instance, a list of (flat indices, values, scale) updates of a F=3, L=2 model."""
    n = draw(st.integers(1, 6))
    seq = []
    for _ in range(n):
        ups = []
        for _ in range(draw(st.integers(0, 2))):
            table = draw(st.sampled_from(["node", "edge"]))
            size = 3 * (2 if table == "node" else 4)
            k = draw(st.integers(1, 4))
            idx = draw(st.lists(st.integers(0, size - 1), min_size=k, max_size=k))
            vals = draw(st.lists(st.integers(-2, 2), min_size=k, max_size=k))
            scale = draw(st.sampled_from([1.0, 0.5, -1.0, 3.0]))
            ups.append((table, idx, vals, scale))
        seq.append(ups)
    return seq


@SETTINGS
@given(update_sequences())
def test_averaged_tables_equal_mean_of_snapshots(seq):
    w = ChainWeights(3, ["A", "B"])
    up = Updater(w, average=True)
    snapshots = []
    manual = {"node": torch.zeros(3, 2), "edge": torch.zeros(3, 4)}
    for ups in seq:
        for table, idx, vals, scale in ups:
            delta = SparseDelta({table: (torch.tensor(idx), torch.tensor(vals, dtype=torch.float))})
            up.apply(delta, scale=scale)
            for i, v in zip(idx, vals, strict=True):
                manual[table].view(-1)[i] += scale * v
        up.tick()
        snapshots.append({n: t.clone() for n, t in manual.items()})
    assert up.seen == len(seq)
    for n, t in w.tables().items():
        assert torch.equal(t, manual[n])  # the current weights are the plain sums
    avg = up.averaged_tables()
    for n in ("node", "edge"):
        mean = torch.stack([s[n] for s in snapshots]).mean(dim=0)
        torch.testing.assert_close(avg[n], mean, rtol=1e-6, atol=1e-6)
    # state round trip into a fresh updater
    w2 = ChainWeights(3, ["A", "B"])
    with torch.no_grad():
        for n, t in w2.tables().items():
            t.copy_(w.tables()[n])
    up2 = Updater(w2, average=True)
    up2.load_state(up.state())
    for n, t in up2.averaged_tables().items():
        assert torch.equal(t, avg[n])


def make_averaging_updater() -> tuple[ChainWeights, Updater]:
    w = ChainWeights(2, ["A", "B"])
    up = Updater(w, average=True)
    up.apply(SparseDelta({"node": (torch.tensor([0, 3]), torch.tensor([1.0, -1.0]))}))
    up.tick()
    up.apply(SparseDelta({"edge": (torch.tensor([5]), torch.tensor([2.0]))}))
    up.apply(SparseDelta({"node": (torch.tensor([0]), torch.tensor([1.0]))}))
    up.tick()
    return w, up


def test_averaged_context_installs_then_restores():
    w, up = make_averaging_updater()
    current = {n: t.clone() for n, t in w.tables().items()}
    avg = up.averaged_tables()
    # snapshots: node[0,0] 1 then 2 -> 1.5; node[1,1] -1, -1 -> -1; edge[1,1] 0 then 2 -> 1
    assert avg["node"].tolist() == [[1.5, 0.0], [0.0, -1.0]]
    assert avg["edge"].tolist() == [[0.0] * 4, [0.0, 1.0, 0.0, 0.0]]
    with up.averaged():
        for n, t in w.tables().items():
            assert torch.equal(t, avg[n])
    for n, t in w.tables().items():
        assert torch.equal(t, current[n])
    with pytest.raises(RuntimeError), up.averaged():
        raise RuntimeError("boom")
    for n, t in w.tables().items():
        assert torch.equal(t, current[n])  # restored after an exception too
    # training goes on correctly after an evaluation inside the context
    up.apply(SparseDelta({"node": (torch.tensor([0]), torch.tensor([1.0]))}))
    up.tick()
    # node[0,0] snapshots 1, 2, 3 -> 2
    assert up.averaged_tables()["node"][0, 0].item() == pytest.approx(2.0)


def test_finalize_installs_average():
    w, up = make_averaging_updater()
    avg = up.averaged_tables()
    up.finalize()
    for n, t in w.tables().items():
        assert torch.equal(t, avg[n])


def test_no_averaging_and_nothing_seen():
    w = ChainWeights(2, ["A", "B"])
    up = Updater(w, average=True)
    up.apply(SparseDelta({"node": (torch.tensor([1]), torch.tensor([4.0]))}))
    # nothing ticked yet: the average is the current weights, finalize keeps them
    assert up.averaged_tables()["node"].tolist() == [[0.0, 4.0], [0.0, 0.0]]
    up.finalize()
    assert w.tables()["node"].tolist() == [[0.0, 4.0], [0.0, 0.0]]

    plain = Updater(ChainWeights(2, ["A", "B"]), average=False)
    plain.apply(SparseDelta({"node": (torch.tensor([1]), torch.tensor([4.0]))}))
    plain.tick()
    plain.apply(SparseDelta({"node": (torch.tensor([1]), torch.tensor([4.0]))}))
    plain.tick()
    assert plain.sums == {}
    assert plain.averaged_tables()["node"].tolist() == [[0.0, 8.0], [0.0, 0.0]]
    with plain.averaged():
        assert plain.weights.tables()["node"].tolist() == [[0.0, 8.0], [0.0, 0.0]]
    plain.finalize()
    assert plain.weights.tables()["node"].tolist() == [[0.0, 8.0], [0.0, 0.0]]


def test_flat_at_addresses_contiguous_and_strided_tables():
    """flat_at: entry row * W + column of a [R, W] table, also for a column block of a wider
    table (strided rows), reads and writes exactly that entry and nothing beside it."""
    wide = torch.arange(4 * 7, dtype=torch.float32).view(4, 7)
    for table in (wide, wide[:, :3], wide[:, 3:], wide[1:, 2:5]):
        R, W = table.shape
        index = torch.arange(R * W)
        flat, pos = flat_at(table, index)
        assert torch.equal(flat[pos], table.reshape(-1))
    block = wide[:, 3:]  # [4, 4] with rows 7 apart
    before = wide.clone()
    flat, pos = flat_at(block, torch.tensor([0, 5, 5, 15]))
    flat.index_add_(0, pos, torch.tensor([1.0, 2.0, 3.0, 4.0]))
    expected = before.clone()
    expected[0, 3] += 1.0
    expected[1, 4] += 5.0  # entry 5 = row 1, column 1 of the block, twice
    expected[3, 6] += 4.0
    assert torch.equal(wide, expected)
    with pytest.raises(ValueError, match="strides"):
        flat_at(wide.t(), torch.tensor([0]))


def test_edge_features_share_one_joint_row_per_feature():
    """With edge features the node and edge tables are the column blocks [:, :L] and [:, L:]
    of one [F, L + L*L] table, and an update through ``Updater`` lands in both (by hand)."""
    w = ChainWeights(3, ["O", "B-X"])
    tables = w.tables()
    assert w.joint.weight.shape == (3, 2 + 4) and w.dense_tables == [w.joint.weight]
    assert tables["node"].data_ptr() == w.joint.weight.data_ptr()
    delta = SparseDelta(
        {
            "node": (torch.tensor([2 * 2 + 1]), torch.tensor([1.0])),
            "edge": (torch.tensor([1 * 4 + 2, 1 * 4 + 2]), torch.tensor([1.0, -3.0])),
        }
    )
    Updater(w).apply(delta, scale=2.0)
    expected = torch.zeros(3, 6)
    expected[2, 1] = 2.0  # node[2, label 1]
    expected[1, 2 + 2] = -4.0  # edge[1, from 1 to 0]: (1 - 3) * 2
    assert torch.equal(w.joint.weight, expected)
    assert delta.dot(w.tables()) == 2.0 * 1.0 + (-4.0) * (1.0 - 3.0)
    node, edge = w.csr_scores(torch.tensor([1, 2], dtype=torch.int32), torch.tensor([0, 2]))
    assert node.tolist() == [[0.0, 2.0]] and edge.tolist() == [[[0.0, 0.0], [-4.0, 0.0]]]
    plain = ChainWeights(3, ["O", "B-X"], edges=False)
    assert [t.shape for t in plain.dense_tables] == [(3, 2), (1, 4)]
