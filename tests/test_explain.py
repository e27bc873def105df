"""Explanations are exact, on every model kind.

For each structure of ``test_structures.CASES`` (random weights over tiny instances, scored by
oracles written from the definitions, not through the structures) and every token, chunk or list:

* the features' contributions (local, transition, non-local, chunk parts, a ranker's base score)
  add up to the margin the explanation names;
* the margin is the oracle's s(x, y') − s(x, z) of the predicted labeling and the runner-up;
* the runner-up is what the explanation says it is, found by enumeration: the best labeling
  with another label at the token (the chain, the CRF's chain with a transition matrix, IOB2
  constraints; the rescoring's best candidate), the best structure with another POS tag at the
  token or without the chunk (label-chunk), the best other candidate (a ranker).

Then the same on trained models: the scikit-learn face (``explain_prediction``, eli5), a saved
tagging model through ``Tagger.explain`` and ``structperc-explain``.
"""

from __future__ import annotations

import json

import pytest
import torch
from test_structures import CASES, LabelChunkCase

from structperc.data.label_chunk import chunks
from structperc.explain.label_chunk import explain_label_chunk, token_labels
from structperc.explain.names import LabelChunkNamer, chain_namer, ranker_namer
from structperc.explain.ranking import explain_ranking
from structperc.explain.tokens import explain_chain, explain_rescoring

CHAIN_CASES = [c for c in CASES if c.name.startswith("chain")]


class Named:
    """A vocabulary stand-in: feature r is named ``f<r>``."""

    def feature_string(self, row: int) -> str:
        return f"f{row}"


def runner_up_of(predicted: list[int], changed: dict[int, str], labels: list[str]) -> list[int]:
    z = list(predicted)
    for position, label in changed.items():
        z[position] = labels.index(label)
    return z


# (case, seed): the rescoring's oracle enumerates 5^5 labelings of non-local features: one seed
CHAIN_RUNS = [(c, seed) for c in CHAIN_CASES for seed in (0, 1, 2)]
CHAIN_RUNS += [(c, 0) for c in CASES if c.name == "rescoring"]


@pytest.mark.parametrize("case, seed", CHAIN_RUNS, ids=lambda x: getattr(x, "name", str(x)))
def test_a_chain_explanation_adds_up_to_the_margin_to_the_best_other_labeling(case, seed):
    structure, data = case.build(seed)
    labels = structure.weights.labels
    rescoring = case.name == "rescoring"
    names = structure.doc_features.feature_names() if rescoring else None
    namer = chain_namer(labels, lambda r: f"f{r}", structure.weights.edges, names)
    checked = 0
    for d in range(len(data)):
        batch, _ = structure.instance(data, d, "cpu")
        T = int(batch.lengths[0])
        if rescoring:
            predicted, items = explain_rescoring(structure, batch, namer)
        else:
            predicted, items = explain_chain(structure, batch, [f"t{t}" for t in range(T)], namer)
        every = {
            tuple(y.tolist()): case.oracle(structure, data, d, y)
            for y in case.labelings(structure, data, d)
        }
        assert every[tuple(predicted)] == pytest.approx(max(every.values()))
        for item in items:
            z = runner_up_of(predicted, item.changed, labels)
            t = item.position
            assert z[t] != predicted[t] and labels[z[t]] == item.runner_up
            assert item.margin == pytest.approx(every[tuple(predicted)] - every[tuple(z)], abs=1e-9)
            assert item.explained == pytest.approx(item.margin, abs=1e-9)
            others = [s for y, s in every.items() if y[t] != predicted[t]]
            assert every[tuple(z)] == pytest.approx(max(others), abs=1e-9)
            assert item.in_candidates  # every labeling is a candidate here
            checked += 1
    assert checked == sum(case.lengths)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_label_chunk_explanation_adds_up_per_token_and_per_chunk(seed):
    case = LabelChunkCase()
    structure, data = case.build(seed)
    weights = structure.weights
    namer = LabelChunkNamer(
        {g: Named() for g in weights.widths}, weights.pos_tags, weights.chunk_tags
    )
    for d in range(len(data)):
        batch, _ = structure.instance(data, d, "cpu")
        n = int(batch.lengths[0])
        y, by_token, by_chunk = explain_label_chunk(
            structure, batch, [f"t{t}" for t in range(n)], namer
        )
        every = [
            (z, case.oracle(structure, data, d, z)) for z in case.labelings(structure, data, d)
        ]
        best = case.oracle(structure, data, d, y)
        assert best == pytest.approx(max(s for _, s in every))
        tags = token_labels(y, weights.pos_tags, weights.chunk_tags)
        for item in by_token + by_chunk:
            changed = [tags[t] != item.changed.get(t, tags[t]) for t in range(n)]
            assert any(changed) and item.explained == pytest.approx(item.margin, abs=1e-9)
        for t, item in enumerate(by_token):  # the best structure with another POS tag at t
            others = [s for z, s in every if int(z.pos[t]) != int(y.pos[t])]
            assert best - item.margin == pytest.approx(max(others), abs=1e-9)
        for (q, r, c), item in zip(chunks(y), by_chunk, strict=True):  # ... without the chunk
            others = [s for z, s in every if (q, r, c) not in chunks(z)]
            assert best - item.margin == pytest.approx(max(others), abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("base_weight", [None, 1.5])
def test_a_ranker_explanation_adds_up_to_the_margin_to_the_second_candidate(seed, base_weight):
    case = next(c for c in CASES if c.name == "candidate_list")
    structure, data = case.build(seed)
    structure.base_weight = base_weight  # a constant w_0 (re-ranking 1) or a learned one
    if base_weight is not None:
        structure.weights.base.data.fill_(base_weight)  # the oracle reads the table
    namer = ranker_namer([f"g{k}" for k in range(6)], ["A", "B", "C"], lambda r: f"f{r}")
    for u in range(len(data)):
        batch, _ = structure.instance(data, u, "cpu")
        item = explain_ranking(structure, batch, namer)
        rows = list(data.candidate_rows(u))
        scores = [case.oracle(structure, data, u, data.row(r)) for r in rows]
        order = sorted(range(len(rows)), key=lambda k: -scores[k])
        assert item.winner == order[0] and item.runner_up == order[1]
        assert item.margin == pytest.approx(scores[order[0]] - scores[order[1]], abs=1e-9)
        assert item.explained == pytest.approx(item.margin, abs=1e-9)
        assert any(c.table == "base" for c in item.contributions)


def test_a_feature_names_its_labels_and_the_margin_splits_into_node_and_edge_terms():
    case = CHAIN_CASES[0]
    structure, data = case.build(3)
    batch, _ = structure.instance(data, 0, "cpu")
    namer = chain_namer(structure.weights.labels, lambda r: f"f{r}")
    _, items = explain_chain(structure, batch, ["a", "b", "c"], namer)
    item = items[1]
    tables = {c.table for c in item.contributions}
    assert tables <= {"node", "edge"} and "node" in tables
    for c in item.contributions:
        assert c.feature.startswith("f") and c.contribution == pytest.approx(
            sum(t.value * t.weight for t in c.terms)
        )
        if c.table == "edge":
            assert all(" -> " in t.target for t in c.terms)
    as_json = item.to_json(top=2)
    assert len(as_json["contributions"]) == 2
    rest = as_json["other_contributions"]["sum"]
    shown = sum(c["contribution"] for c in as_json["contributions"])
    assert shown + rest == pytest.approx(item.margin)


# -- trained models -------------------------------------------------------------------------------
def small_ner(n: int = 24):
    from structperc.data.synthetic import make_corpus

    docs = make_corpus(n, seed=5)

    def items(doc):
        return [
            {
                "w": w.lower(),
                "title": w.istitle(),
                "prev": doc.tokens[i - 1].lower() if i else "<s>",
            }
            for i, w in enumerate(doc.tokens)
        ]

    return [items(d) for d in docs], [d.tags for d in docs]


@pytest.fixture(scope="module")
def face():
    pytest.importorskip("sklearn")
    from structperc.sklearn import CRF

    X, y = small_ner()
    return CRF(algorithm="lbfgs", max_iterations=20).fit(X, y), X


def test_the_face_explains_a_prediction_exactly(face):
    crf, X = face
    explained = crf.explain_prediction(X[0])
    assert explained.predicted == list(crf.predict_single(X[0]))
    model = crf.model_
    node, trans = model.node.double(), model.edge.double()
    index = {a: i for i, a in enumerate(model.attributes.names)}

    def score(labels: list[str]) -> float:  # CRFsuite's score, from the items themselves
        ids = [model.labels.index(t) for t in labels]
        total = 0.0
        for t, item in enumerate(X[0]):
            for key, value in item.items():
                name = f"{key}:{value}" if isinstance(value, str) else key
                weight = float(value) if not isinstance(value, str) else 1.0
                if name in index:
                    total += weight * float(node[index[name], ids[t]])
            if t:
                total += float(trans[ids[t - 1], ids[t]])
        return total

    for item in explained.explanations:
        z = list(explained.predicted)
        for position, label in item.changed.items():
            z[position] = label
        assert item.margin == pytest.approx(score(explained.predicted) - score(z), abs=1e-6)
        assert item.explained == pytest.approx(item.margin, abs=1e-9)
        assert item.margin >= -1e-9


def test_the_face_explains_its_weights_as_eli5_does(face):
    crf, _ = face
    weights = crf.explain_weights(top=5)
    assert set(weights["per_label"]) == set(crf.classes_)
    for label, ranked in weights["per_label"].items():
        expected = sorted(
            (w for (a, l), w in crf.state_features_.items() if l == label), reverse=True
        )[:5]
        assert [x["weight"] for x in ranked["positive"]] == pytest.approx(
            [w for w in expected if w > 0]
        )
    trans = crf.transition_features_
    L = crf.classes_
    assert weights["transitions"][0][1] == pytest.approx(trans.get((L[0], L[1]), 0.0))
    eli5 = pytest.importorskip("eli5")
    text = eli5.format_as_text(eli5.explain_weights(crf, top=5))
    assert (
        "Transition features" in text
        and weights["per_label"][L[0]]["positive"][0]["feature"] in text
    )


def test_a_saved_model_explains_text_and_files(token_model, tmp_path):
    from hydra_runs import console

    from structperc.inference.tagger import Tagger

    tagger = Tagger.load(token_model)
    explained = tagger.explain(["Anna", "Weber", "visited", "Paris", "."])
    assert explained.predicted == tagger.tag(["Anna", "Weber", "visited", "Paris", "."])
    for item in explained.explanations:
        assert item.runner_up != item.predicted
        assert item.explained == pytest.approx(item.margin, rel=1e-9, abs=1e-6)
    weights = tagger.explain_weights(top=3)
    assert set(weights["per_label"]) == set(tagger.labels) and weights["transitions"] is not None
    text = tmp_path / "in.txt"
    text.write_text("Anna Weber visited Paris .\n\nJohn left .\n")
    done = console(
        "structperc-explain",
        f"model={token_model}",
        f"input={text}",
        "input_format=text",
        f"output={tmp_path / 'out.json'}",
        "top=3",
    )
    assert done.returncode == 0, done.stderr
    out = json.loads((tmp_path / "out.json").read_text())
    assert [len(d["tokens"]) for d in out["documents"]] == [5, 3]
    first = out["documents"][0]["explanations"][0]
    shown = sum(c["contribution"] for c in first["contributions"])
    assert shown + first["other_contributions"]["sum"] == pytest.approx(first["margin"])
    assert len(first["contributions"]) <= 3 and "per_label" in out["weights"]
    bad = console("structperc-explain", f"model={token_model}", "input=x", "output=-", "colour=red")
    assert bad.returncode == 2 and "unknown setting colour=" in bad.stderr


# -- weights --------------------------------------------------------------------------------------
def test_the_top_weights_of_every_model_kind_are_its_largest_and_most_negative():
    from structperc.explain.weights import (
        chain_weights,
        label_chunk_weights,
        non_local_weights,
        ranker_weights,
    )

    structure, _ = next(c for c in CASES if c.name == "rescoring").build(0)
    weights, labels = structure.weights, structure.weights.labels
    namer = chain_namer(labels, lambda r: f"f{r}")
    out = chain_weights(weights, namer, top=2, pairs=True, bias=4)
    node = weights.tables()["node"]
    for j, label in enumerate(labels):
        column = sorted(node[:, j].tolist())
        ranked = out["per_label"][label]
        assert [x["weight"] for x in ranked["positive"]] == pytest.approx(
            [w for w in column[::-1][:2] if w > 0]
        )
        assert [x["weight"] for x in ranked["negative"]] == pytest.approx(
            [w for w in column[:2] if w < 0]
        )
    L = len(labels)
    bias_edges = weights.tables()["edge"][4].view(L, L)
    assert torch.equal(torch.tensor(out["transitions"], dtype=bias_edges.dtype), bias_edges)
    assert len(out["per_label_pair"]) == L * L
    names = structure.doc_features.feature_names()
    families = non_local_weights(weights, names)
    assert sum(len(v) for v in families.values()) == len(names)
    assert set(families) == {n.split("=")[0] for n in names}
    table = weights.tables()["global"][:, 0].tolist()
    for items in families.values():
        assert all(x["weight"] == pytest.approx(table[names.index(x["feature"])]) for x in items)

    case = next(c for c in CASES if c.name == "candidate_list")
    ranker, _ = case.build(0)
    rnamer = ranker_namer([f"g{k}" for k in range(6)], ["A", "B", "C"], lambda r: f"f{r}")
    out = ranker_weights(ranker.weights, rnamer, top=3)
    assert out["base"]["weight"] == pytest.approx(float(ranker.weights.base[0, 0]))
    top = max(ranker.weights.tables()["global"][:, 0].tolist())
    if top > 0:
        assert out["global"]["positive"][0]["weight"] == pytest.approx(top)

    chunker, _ = LabelChunkCase().build(0)
    w = chunker.weights
    lnamer = LabelChunkNamer({g: Named() for g in w.widths}, w.pos_tags, w.chunk_tags)
    out = label_chunk_weights(w, lnamer, top=1)
    assert set(out) == set(w.widths) and len(out["pos_edge"]) == w.widths["pos_edge"]
    assert "NP/N -> V" in out["pos_edge"] and "O -> NP" in out["chunk_edge"]
