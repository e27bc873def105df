"""Every structure against enumeration, one parametrised suite (torch-struct's tests/extensions.py).

A case builds a structure with random weights over a few tiny instances, lists every labeling of
an instance, and scores a labeling by an oracle written from the definitions — Φ(x, y)·w summed
feature by feature from the CSR rows and the tables, not through the structure's potentials.  The
same checks then run on each structure:

* the argmax reaches the best oracle score of the enumeration;
* ``score`` equals the oracle, and ``delta(y*, y')·w`` equals the oracle's s(y*) − s(y');
  ``errors`` and ``loss`` count the tokens and the tags y' gets wrong (``token_tags``);
* where the structure has n-best lists, their scores are the enumeration's top n, in order;
* where it offers "marginals", log Z is the logsumexp of the enumeration's scores, the marginals
  are the expected parts of a labeling under p(y | x), and the nll is log Z − s(y*), by every
  scan;
* ``predict`` over the data set (batched) equals the argmax of each instance alone.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from oracles.label_chunk import chunks, enumerate_structures, parts

from structperc.data.document import Document
from structperc.data.label_chunk import LabelChunk
from structperc.features.document import NonLocalFeatures
from structperc.features.extract import FeatureMatrix
from structperc.model.document_weights import DocumentWeights
from structperc.model.label_chunk_weights import GROUPS, LabelChunkWeights
from structperc.model.ranker_weights import RankerWeights
from structperc.model.weights import ChainWeights
from structperc.structures.base import check_capabilities
from structperc.structures.candidates import CandidateList, RankingData
from structperc.structures.chain import ChainData, ChainStructure
from structperc.structures.label_chunk import LabelChunkStructure, PartData
from structperc.structures.rescoring import DocumentRescoring

NER = ["O", "B-LOC", "B-PER", "I-LOC", "I-PER"]


def iob2_valid(tags: list[str]) -> bool:
    """No I-X after O or after another type, none at the start."""
    previous = ["O", *tags[:-1]]
    return all(
        not t.startswith("I-") or p[2:] == t[2:] for p, t in zip(previous, tags, strict=True)
    )


def random_matrix(lengths: list[int], num_features: int, gen: torch.Generator) -> FeatureMatrix:
    """CSR features of documents of the given lengths, 1-3 random ids per token (repeats too)."""
    n = sum(lengths)
    counts = torch.randint(1, 4, (n,), generator=gen)
    offsets = torch.zeros(n + 1, dtype=torch.long)
    torch.cumsum(counts, 0, out=offsets[1:])
    ids = torch.randint(0, num_features, (int(offsets[-1]),), generator=gen, dtype=torch.int32)
    doc_offsets = torch.zeros(len(lengths) + 1, dtype=torch.long)
    torch.cumsum(torch.tensor(lengths), 0, out=doc_offsets[1:])
    return FeatureMatrix(ids, offsets, doc_offsets)


def randomize(tables: dict[str, torch.Tensor], gen: torch.Generator) -> None:
    with torch.no_grad():
        for t in tables.values():
            t.copy_(torch.randn(t.shape, generator=gen))


def token_ids(features: FeatureMatrix, token: int) -> list[int]:
    return features.ids[int(features.offsets[token]) : int(features.offsets[token + 1])].tolist()


def chain_oracle(weights: ChainWeights, features: FeatureMatrix, d: int, y: list[int]) -> float:
    """Σ_t Σ_{f in x_t} node[f, y_t] + [t > 0] edge[f, y_{t-1} L + y_t]."""
    L, first = weights.num_labels, int(features.doc_offsets[d])
    node, edge = weights.tables()["node"], weights.tables()["edge"]
    total = 0.0
    for t, label in enumerate(y):
        for f in token_ids(features, first + t):
            total += float(node[f, label])
            if t:
                total += float(edge[f, y[t - 1] * L + label])
    return total


class ChainCase:
    name = "chain"
    lengths = [3, 1, 4, 2]

    def build(self, seed: int):
        gen = torch.Generator().manual_seed(seed)
        features = random_matrix(self.lengths, 7, gen)
        weights = ChainWeights(7, ["A", "B", "C"]).double()
        randomize(weights.tables(), gen)
        labels = torch.randint(0, 3, (sum(self.lengths),), generator=gen)
        return ChainStructure(weights), ChainData(features, labels)

    def labelings(self, structure, data, d):
        T = len(data.gold(d))
        return [torch.tensor(p) for p in itertools.product(range(3), repeat=T)]

    def local(self, structure, data, d, y) -> float:
        """The chain's score (what its n-best lists rank by)."""
        return chain_oracle(structure.weights, data.features, d, y.tolist())

    def oracle(self, structure, data, d, y) -> float:
        return self.local(structure, data, d, y)

    def same(self, a, b) -> bool:
        return torch.equal(torch.as_tensor(a), torch.as_tensor(b))

    def parts(self, structure, y) -> torch.Tensor:
        """The parts of labeling y as ``marginals`` lays them out: [T, L, L] (from, to), the
        start y_0 in row 0 of t = 0, the pair (y_{t-1}, y_t) at t."""
        L = structure.num_labels
        out = torch.zeros(len(y), L, L, dtype=torch.float64)
        out[0, 0, y[0]] = 1.0
        for t in range(1, len(y)):
            out[t, y[t - 1], y[t]] = 1.0
        return out


class TransitionChainCase(ChainCase):
    """The chain with node features and one label transition matrix (``edges=False``)."""

    name = "chain_transitions"

    def build(self, seed: int):
        structure, data = super().build(seed)
        weights = ChainWeights(7, ["A", "B", "C"], edges=False).double()
        randomize(weights.tables(), torch.Generator().manual_seed(seed + 100))
        return ChainStructure(weights), data

    def local(self, structure, data, d, y) -> float:
        L, first, y = 3, int(data.features.doc_offsets[d]), y.tolist()
        node, trans = structure.weights.tables()["node"], structure.weights.tables()["edge"][0]
        total = 0.0
        for t, label in enumerate(y):
            total += sum(float(node[f, label]) for f in token_ids(data.features, first + t))
            if t:
                total += float(trans[y[t - 1] * L + label])
        return total


class ConstrainedChainCase(ChainCase):
    """The chain with ``constraints="iob2"``: only IOB2-valid labelings exist."""

    name = "chain_iob2"

    def build(self, seed: int):
        gen = torch.Generator().manual_seed(seed)
        features = random_matrix(self.lengths, 7, gen)
        weights = ChainWeights(7, NER).double()
        randomize(weights.tables(), gen)
        with torch.no_grad():  # make the forbidden moves attractive
            weights.tables()["node"][:, 3:] += 2.0
        labels = torch.zeros(sum(self.lengths), dtype=torch.long)
        return ChainStructure(weights, constraints="iob2"), ChainData(features, labels)

    def labelings(self, structure, data, d):
        T = len(data.gold(d))
        out = []
        for p in itertools.product(range(len(NER)), repeat=T):
            if iob2_valid([NER[i] for i in p]):
                out.append(torch.tensor(p))
        return out


class RescoringCase(ChainCase):
    """Chain scores plus non-local features of documents whose strings repeat."""

    name = "rescoring"
    texts = ["Smith met Jones and Smith", "Paris", "in Paris , Smith"]

    def build(self, seed: int):
        gen = torch.Generator().manual_seed(seed)
        docs = [Document(tokens=t.split(), tags=["O"] * len(t.split())) for t in self.texts]
        self.lengths = [len(d) for d in docs]
        features = random_matrix(self.lengths, 6, gen)
        doc_features = NonLocalFeatures(labels=NER)
        weights = DocumentWeights(6, NER, doc_features.num_features).double()
        randomize(weights.tables(), gen)
        labels = torch.randint(0, len(NER), (sum(self.lengths),), generator=gen)
        n = len(NER) ** max(self.lengths)  # every labeling is a candidate: the argmax is exact
        return DocumentRescoring(weights, doc_features, n=n), ChainData(features, labels, docs)

    def labelings(self, structure, data, d):
        T = self.lengths[d]
        return [torch.tensor(p) for p in itertools.product(range(len(NER)), repeat=T)]

    def oracle(self, structure, data, d, y) -> float:
        local = chain_oracle(structure.weights, data.features, d, y.tolist())
        names = structure.doc_features.feature_names()
        (counts,) = structure.doc_features.features(data.documents[d], y.view(1, -1))
        table = structure.weights.global_.weight
        return local + sum(k * float(table[names.index(f), 0]) for f, k in counts.items())


class LabelChunkCase:
    name = "label_chunk"
    lengths = [2, 3, 1]
    C, P = 2, 3

    def build(self, seed: int):
        gen = torch.Generator().manual_seed(seed)
        features = {g: random_matrix(self.lengths, 5, gen) for g in GROUPS}
        # the same tokens in every part type
        for g in GROUPS:
            features[g].doc_offsets = features[GROUPS[0]].doc_offsets
        weights = LabelChunkWeights(
            {g: 5 for g in GROUPS}, pos_tags=("N", "V", "X"), chunk_tags=("O", "NP")
        ).double()
        randomize(weights.tables(), gen)
        golds = [next(iter(self.labelings(None, None, d))) for d in range(len(self.lengths))]
        gold = LabelChunk.cat(golds)
        return LabelChunkStructure(weights), PartData(features, gold)

    def labelings(self, structure, data, d):
        return enumerate_structures(self.lengths[d], self.C, self.P)

    def oracle(self, structure, data, d, y) -> float:
        """Σ over the parts of y of their features' weights; -inf for two touching O chunks."""
        weights, C, P = structure.weights, self.C, self.P
        first = int(data.doc_offsets[d])
        total = 0.0

        def add(group: str, t: int, column: int) -> float:
            table = weights.tables()[group]
            return sum(float(table[f, column]) for f in token_ids(data.features[group], first + t))

        spans = chunks(y)
        for k in range(1, len(spans)):
            if spans[k - 1][2] == 0 and spans[k][2] == 0:
                return float("-inf")  # maximal_outside: an O chunk never follows an O chunk
        for part in parts(y):
            kind = part[0]
            if kind == "pos_node":
                _, c, p, r = part
                total += add("pos_node", r, c * P + p)
            elif kind == "pos_edge":
                _, c, p0, p, _, r = part
                total += add("pos_edge", r, (c * P + p0) * P + p)
            elif kind == "chunk_node":
                _, c, q, r = part
                total += add("chunk_start", q, c) + add("chunk_end", r, c)
            else:
                _, c0, c, _, q = part
                total += add("chunk_edge", q, c0 * C + c)
        return total

    def same(self, a, b) -> bool:
        return a.equal(b)


class CandidateListCase:
    """Fixed lists: L(x) scaled by β, counted global features and re-trained local features."""

    name = "candidate_list"
    lengths = [3, 2, 4]

    def build(self, seed: int):
        gen = torch.Generator().manual_seed(seed)
        tokens = ChainData(random_matrix(self.lengths, 5, gen), torch.zeros(9, dtype=torch.long))
        chain = ChainWeights(5, ["A", "B", "C"]).double()
        weights = RankerWeights(6, chain).double()
        randomize(weights.tables(), gen)
        paths, base, ids, counts, offsets = [], [], [], [], [0]
        for T in self.lengths:
            rows = torch.randperm(3**T, generator=gen)[:4].tolist()  # 4 distinct labelings
            for code in rows:
                paths.append(torch.tensor([(code // 3**t) % 3 for t in range(T)]))
                feats = torch.randint(0, 6, (3,), generator=gen)  # repeats count twice
                ids.append(feats)
                counts.append(len(feats))
            base.append(torch.randn(4, generator=gen, dtype=torch.float64))
            offsets.append(offsets[-1] + 4)
        data = RankingData(
            offsets=torch.tensor(offsets),
            labels=torch.cat(paths),
            label_offsets=torch.tensor([0, *torch.tensor([len(p) for p in paths]).cumsum(0)]),
            base=torch.cat(base),
            ids=torch.cat(ids),
            id_offsets=torch.tensor([0, *torch.tensor(counts).cumsum(0).tolist()]),
            tokens=tokens,
            has_reference=False,
        )
        self.data = data
        return CandidateList(weights, base_scale=0.5), data

    def labelings(self, structure, data, d):
        return [data.row(r) for r in data.candidate_rows(d)]

    def oracle(self, structure, data, d, y) -> float:
        r = next(r for r in data.candidate_rows(d) if torch.equal(data.row(r), y))
        w = structure.weights
        total = 0.5 * float(data.base[r]) * float(w.base[0, 0])
        for k in data.ids[int(data.id_offsets[r]) : int(data.id_offsets[r + 1])].tolist():
            total += float(w.global_.weight[k, 0])
        return total + chain_oracle(w.chain, data.tokens.features, d, y.tolist())

    def same(self, a, b) -> bool:
        return torch.equal(torch.as_tensor(a), torch.as_tensor(b))


CASES = [
    ChainCase(),
    TransitionChainCase(),
    ConstrainedChainCase(),
    RescoringCase(),
    LabelChunkCase(),
    CandidateListCase(),
]
NBEST_CASES = [c for c in CASES if c.name not in ("label_chunk", "candidate_list")]
MARGINAL_CASES = [c for c in CASES if "marginals" in c.build(0)[0].capabilities]


def token_tags(y) -> list[tuple]:
    """The tags a labeling gives each token, from the definitions: its label id on a chain (or a
    candidate row); on a label-chunk structure its POS tag and its NP tag, O or (B or I, chunk
    tag).  ``errors`` counts the tokens with a tag wrong, ``loss`` the tags wrong."""
    if not isinstance(y, LabelChunk):
        return [(label,) for label in y.tolist()]
    pos, tags = y.pos.tolist(), [None] * len(y)
    for q, r, c in chunks(y):
        for t in range(q, r + 1):
            tags[t] = (pos[t], "O" if c == 0 else ("B" if t == q else "I", c))
    return tags


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) or a == b


@pytest.fixture(params=CASES, ids=[c.name for c in CASES])
def case(request):
    return request.param


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_argmax_reaches_the_best_enumerated_score(case, seed):
    structure, data = case.build(seed)
    for d in range(len(data)):
        batch, _ = structure.instance(data, d, "cpu")
        best = max(case.oracle(structure, data, d, y) for y in case.labelings(structure, data, d))
        assert close(case.oracle(structure, data, d, structure.argmax(batch)), best)


@pytest.mark.parametrize("seed", [0, 1])
def test_score_and_delta_equal_the_oracle(case, seed):
    structure, data = case.build(seed)
    gen = torch.Generator().manual_seed(seed)
    tables = structure.weights.tables()
    for d in range(len(data)):
        batch, _ = structure.instance(data, d, "cpu")
        ys = list(case.labelings(structure, data, d))
        picks = torch.randint(0, len(ys), (6,), generator=gen).tolist()
        finite = [ys[i] for i in picks if math.isfinite(case.oracle(structure, data, d, ys[i]))]
        for y in finite:
            assert close(float(structure.score(batch, y)[0]), case.oracle(structure, data, d, y))
        for gold, pred in zip(finite, finite[1:], strict=False):
            expected = case.oracle(structure, data, d, gold) - case.oracle(structure, data, d, pred)
            assert close(structure.delta(batch, gold, pred).dot(tables), expected)
            g, p = token_tags(gold), token_tags(pred)
            wrong = [[a != b for a, b in zip(x, z, strict=True)] for x, z in zip(g, p, strict=True)]
            assert structure.errors(gold, pred) == sum(any(w) for w in wrong)
            assert structure.loss(gold, pred) == sum(sum(w) for w in wrong)
        assert structure.errors(finite[0], finite[0]) == 0 == structure.loss(finite[0], finite[0])


@pytest.mark.parametrize("case", NBEST_CASES, ids=[c.name for c in NBEST_CASES])
@pytest.mark.parametrize("n", [1, 2, 5, 70])
def test_nbest_lists_are_the_enumerations_top_n(case, n):
    structure, data = case.build(3)
    assert "nbest" in structure.capabilities
    for d in range(len(data)):
        batch, _ = structure.instance(data, d, "cpu")
        # the n best under the chain's scores (the local model, for the rescoring structure)
        scored = sorted(
            case.local(structure, data, d, y) for y in case.labelings(structure, data, d)
        )
        scored = scored[::-1]
        paths, scores = structure.nbest(batch, n)
        m = min(n, len(scored))
        for k in range(m):
            assert close(float(scores[k]), scored[k])
            assert close(case.local(structure, data, d, paths[k]), scored[k])
        assert bool(torch.isinf(scores[m:]).all()) and bool((paths[m:] == -1).all())


@pytest.mark.parametrize("case", MARGINAL_CASES, ids=[c.name for c in MARGINAL_CASES])
@pytest.mark.parametrize("scan", ["log", "scaled", "sequential"])
def test_log_partition_marginals_and_nll_equal_the_enumeration(case, scan):
    structure, data = case.build(5)
    for d in range(len(data)):
        batch, gold = structure.instance(data, d, "cpu")
        ys = case.labelings(structure, data, d)
        scores = [case.oracle(structure, data, d, y) for y in ys]
        scores = torch.tensor(scores, dtype=torch.float64)  # [Y]
        logz = float(torch.logsumexp(scores, 0))
        probs = (scores - logz).exp()  # p(y | x) of each labeling
        expected = sum(p * case.parts(structure, y) for p, y in zip(probs, ys, strict=True))
        assert close(float(structure.log_partition(batch, scan=scan)[0]), logz)
        got = structure.marginals(batch, scan=scan)[0]
        torch.testing.assert_close(got, expected, rtol=0, atol=1e-9)
        nll = float(structure.nll(batch, gold, scan=scan)[0])
        assert close(nll, logz - case.oracle(structure, data, d, gold))


@pytest.mark.parametrize("packed_from", [32, 2], ids=["one-by-one", "packed"])
def test_predict_equals_the_argmax_of_each_instance(case, packed_from, monkeypatch):
    """Also both ways a chain decodes a small batch on a CPU (``chain.PACKED_FROM``)."""
    import structperc.structures.chain as chain_mod

    monkeypatch.setattr(chain_mod, "PACKED_FROM", packed_from)
    structure, data = case.build(4)
    predicted = structure.predict(data, batch_size=2)
    assert len(predicted) == len(data)
    for d in range(len(data)):
        batch, _ = structure.instance(data, d, "cpu")
        assert case.same(predicted[d], structure.argmax(batch))


def test_capabilities_are_checked():
    from structperc.crf.learner import CRF
    from structperc.learn.margin import MarginPerceptron
    from structperc.learn.max_margin import MaxMarginPerceptron
    from structperc.learn.perceptron import Perceptron
    from structperc.learn.proposed import ProposedPerceptron

    chain, _, _, rescoring, label_chunk, _ = (c.build(0)[0] for c in CASES)
    offered = [
        (Perceptron(), (chain, rescoring, label_chunk)),
        (MaxMarginPerceptron(), (chain, rescoring, label_chunk)),
        (MarginPerceptron(), (chain, rescoring)),
        (ProposedPerceptron(), (rescoring,)),
        (CRF(), (chain,)),
    ]
    for learner, structures in offered:
        for structure in (chain, rescoring, label_chunk):
            if structure in structures:
                check_capabilities(learner, structure)
            else:
                with pytest.raises(ValueError, match=f"learner {learner.name} requires"):
                    check_capabilities(learner, structure)


def test_iob2_constraints_change_what_the_chain_decodes():
    constrained, data = ConstrainedChainCase().build(0)
    free = ChainStructure(constrained.weights)

    def valid(y) -> bool:
        return iob2_valid([NER[i] for i in torch.as_tensor(y).tolist()])

    free_paths = [free.argmax(free.instance(data, d, "cpu")[0]) for d in range(len(data))]
    assert not all(valid(y) for y in free_paths)  # the weights favour forbidden moves
    for y in constrained.predict(data, batch_size=3):  # one document at a time
        assert valid(y)
    for y in constrained.predict(data, batch_size=100):  # one packed batch
        assert valid(y)
    with pytest.raises(ValueError, match="unknown constraint scheme"):
        ChainStructure(constrained.weights, constraints="bio")


def test_candidate_list_winners_from_kept_batches_equal_fresh_ones():
    structure, data = CandidateListCase().build(0)
    cache: dict = {}
    assert structure.winners(data, cache=cache) == structure.winners(data)
    assert sorted(cache) == list(range(len(data)))
    for seed in (1, 2):  # new weights: the kept batches hold no scores
        randomize(structure.weights.tables(), torch.Generator().manual_seed(seed))
        assert structure.winners(data, cache=cache) == structure.winners(data)
