"""A fixed list of candidates: the structure of reranking (Collins 2002; Kazama & Torisawa 2007).

Each instance (a document or a sentence: a *unit*) comes with the n best labelings of a first
model (``data/candidates.py``); a labeling outside the list cannot be predicted.  A row (a
candidate, or the unit's reference labeling) scores

    F(x) = w_0 · β L(x) + Σ_s w_s h_s(x) [ + Φ^l(x)·α^l ]          (``model/ranker_weights.py``)

with L(x) the first model's score, h_s the global features of the row (Collins's, or Kazama &
Torisawa's non-local ones, as CSR rows) and, for re-ranking 2, the chain's local features
re-trained.  The argmax is the best candidate of the list; ``delta`` is the difference of two
rows' feature vectors.  For training, a unit's first row is its *reference*: the gold labeling
(``target=gold``; it need not be in the list) or the candidate with the fewest tag errors
(``target=oracle``, ties to the first model's rank, as Collins's x_{i,1}).

Capabilities: "argmax"; "rescoring" (``candidates`` and ``candidate_delta``, which Kazama &
Torisawa's candidate algorithm needs: their re-rankers replace its n-best by the first model's);
"ranking" (whole-list access: boosting, and the voted prediction of ``structures/voting.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from structperc.decode.scores import PathIndex, indexed_scores, path_index
from structperc.model.batch import Device, FeatureBatch, make_batch
from structperc.model.ranker_weights import RankerWeights
from structperc.model.updates import SparseDelta, path_delta
from structperc.progress import bar
from structperc.structures.chain import ChainData
from structperc.structures.rescoring import Candidates


@dataclass
class RankingData:
    """U units with fixed lists of rows.

    offsets:       [U + 1] rows of unit u are offsets[u]:offsets[u + 1] (the reference first
                   when ``has_reference``, then the candidates, best under the first model first).
    labels:        flat label ids; row r's are labels[label_offsets[r]:label_offsets[r + 1]].
    label_offsets: [R + 1].
    base:          [R] float64, L(x) of each row.
    ids, id_offsets: CSR global features of each row ([nnz], [R + 1]).
    tokens:        the units as chain instances (their local features and gold labels).
    has_reference: whether each unit's first row is its reference labeling.
    """

    offsets: Tensor
    labels: Tensor
    label_offsets: Tensor
    base: Tensor
    ids: Tensor
    id_offsets: Tensor
    tokens: ChainData
    has_reference: bool

    unit = "unit"  # what an instance is, for progress bars

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def first_candidate(self) -> int:
        return int(self.has_reference)

    def row(self, r: int) -> Tensor:
        return self.labels[int(self.label_offsets[r]) : int(self.label_offsets[r + 1])]

    def candidate_rows(self, u: int) -> range:
        return range(int(self.offsets[u]) + self.first_candidate, int(self.offsets[u + 1]))


@dataclass
class RankingBatch:
    """One unit: its rows as paths [r, T], their L(x) [r], CSR global features, local features,
    and where the rows' local scores are read in the potentials (``decode.scores.PathIndex``,
    made once per unit: the rows are scored again after every update)."""

    paths: Tensor
    base: Tensor
    ids: Tensor
    id_offsets: Tensor
    features: FeatureBatch
    first_candidate: int
    path_index: PathIndex | None  # None without a chain (no local scores)
    is_reference: Tensor  # [r] bool, the row equals row 0 (all False without a reference)

    def to(self, device) -> RankingBatch:
        index = None if self.path_index is None else self.path_index.to(device)
        return RankingBatch(
            self.paths.to(device),
            self.base.to(device),
            self.ids.to(device),
            self.id_offsets.to(device),
            self.features.to(device),
            self.first_candidate,
            index,
            self.is_reference.to(device),
        )


class CandidateList:
    """Reranking of fixed lists with ``weights`` (``RankerWeights``).

    Args:
        weights: the base weight, global table and (re-ranking 2) chain tables.
        base_scale: β, the scale of L(x) as a feature (Collins's voted perceptron: 0.5; 0: L(x)
            is not a feature).
        base_weight: None: w_0 is learned (``weights.base``); a number: w_0 is that constant
            and never updated (Kazama & Torisawa's re-ranking 1 adds the first model's score
            as it is, so the margin C keeps the first model's scale).
    """

    capabilities = frozenset({"argmax", "rescoring", "ranking"})

    def __init__(
        self, weights: RankerWeights, base_scale: float = 1.0, base_weight: float | None = None
    ):
        self.weights = weights
        self.base_scale = base_scale
        self.base_weight = base_weight

    # -- instances and scores ------------------------------------------------------------------
    def instance(self, data: RankingData, u: int, device) -> tuple[RankingBatch, Tensor]:
        """Unit u's rows as a batch, and its reference labeling [T] (its gold without one)."""
        lo, hi = int(data.offsets[u]), int(data.offsets[u + 1])
        paths = torch.stack([data.row(r) for r in range(lo, hi)])  # [r, T]
        a, b = int(data.id_offsets[lo]), int(data.id_offsets[hi])
        features = make_batch(data.tokens.features, [u])
        chain = self.weights.chain
        batch = RankingBatch(
            paths,
            data.base[lo:hi],
            data.ids[a:b],
            data.id_offsets[lo : hi + 1] - a,
            features,
            data.first_candidate,
            None if chain is None else path_index(paths[None], features.lengths, chain.num_labels),
            (paths == paths[0]).all(dim=1)
            if data.has_reference
            else torch.zeros(len(paths), dtype=torch.bool),
        ).to(device)
        gold = paths[0] if data.has_reference else data.tokens.gold(u).to(device)
        return batch, gold

    def row_scores(self, batch: RankingBatch) -> tuple[Tensor, Tensor]:
        """(F of every row [r], its local part [r]: Φ^l·α^l, or w_0 β L without a chain)."""
        w = self.weights
        w0 = w.base[0, 0] if self.base_weight is None else self.base_weight
        base = (self.base_scale * batch.base).to(w.base.dtype) * w0  # [r]
        total = base + w.global_scores(batch.ids, batch.id_offsets)
        if w.chain is None:
            return total, base
        potentials = w.chain.potentials(batch.features)  # [1, T, L, L]
        local = indexed_scores(potentials, batch.path_index)[0]  # path_scores of the rows
        return total + local, local

    def potentials(self, batch: RankingBatch) -> Tensor:
        return self.row_scores(batch)[0]

    def _row_of(self, batch: RankingBatch, y: Tensor) -> int:
        match = (batch.paths == y.unsqueeze(0)).all(dim=1).nonzero()
        if not len(match):
            raise ValueError("the labeling is not in the unit's list: a reranker scores its rows")
        return int(match[0])

    def score(self, batch: RankingBatch, y: Tensor) -> Tensor:
        """F of the row equal to ``y`` (a one-element tensor)."""
        return self.row_scores(batch)[0][self._row_of(batch, y)].view(1)

    def argmax(self, batch: RankingBatch) -> Tensor:
        """The candidate of highest F (the first on ties), label ids [T]."""
        total, _ = self.row_scores(batch)
        k = int(total[batch.first_candidate :].argmax())
        return batch.paths[batch.first_candidate + k]

    # -- differences -----------------------------------------------------------------------------
    def row_delta(self, batch: RankingBatch, a: int, b: int, local: bool = True) -> SparseDelta:
        """h(row a) − h(row b) over every table (the chain's when ``local``)."""
        device, dtype = batch.base.device, self.weights.base.dtype
        parts = {}
        if self.base_weight is None and self.base_scale:  # w_0 learned: it moves too
            diff = self.base_scale * float(batch.base[a] - batch.base[b])
            zero = torch.zeros(1, dtype=torch.long, device=device)
            parts["base"] = (zero, torch.tensor([diff], dtype=dtype, device=device))
        off = batch.id_offsets
        ids_a, ids_b = batch.ids[off[a] : off[a + 1]], batch.ids[off[b] : off[b + 1]]
        values = torch.cat([torch.ones(len(ids_a)), -torch.ones(len(ids_b))]).to(device, dtype)
        parts["global"] = (torch.cat([ids_a, ids_b]).long(), values)
        delta = SparseDelta(parts)
        if local and self.weights.chain is not None:
            L = self.weights.chain.num_labels
            chain = self.weights.chain
            delta = delta + path_delta(
                batch.features, batch.paths[a], batch.paths[b], L, chain.edges, chain.node_only
            )
        return delta

    def delta(self, batch: RankingBatch, gold: Tensor, pred: Tensor) -> SparseDelta:
        """h(reference) − h(pred) of two rows of the unit."""
        return self.row_delta(batch, self._row_of(batch, gold), self._row_of(batch, pred))

    def errors(self, gold: Tensor, pred: Tensor) -> int:
        return int((gold != pred).sum())

    def loss(self, gold: Tensor, pred: Tensor) -> float:
        return float((gold != pred).sum())

    # -- the candidate algorithm (Kazama & Torisawa's re-rankers) --------------------------------
    def candidates(self, batch: RankingBatch, n: int, gold: Tensor | None = None) -> Candidates:
        """The first n candidates, best under the local part first (as the n-best of the
        proposed algorithm is ordered by Φ^l·α), with their F; the reference row as the gold."""
        total, local = self.row_scores(batch)
        first = batch.first_candidate
        rows = first + torch.arange(min(n, len(total) - first), device=total.device)
        rows = rows[torch.argsort(local[rows], descending=True, stable=True)]
        cands = batch.paths[rows]
        if gold is None:
            is_gold = torch.zeros(len(cands), dtype=torch.bool, device=cands.device)
        elif first and torch.equal(gold, batch.paths[0]):  # the reference: compared once
            is_gold = batch.is_reference[rows]
        else:
            is_gold = (cands == gold.unsqueeze(0)).all(dim=1)
        gold_total = total[0] if first else None
        gold_local = local[0] if first else None
        csr = (batch.ids, batch.id_offsets)
        return Candidates(
            cands, local[rows], total[rows], is_gold, gold_local, gold_total, csr, list_rows=rows
        )

    def candidate_delta(
        self, batch: RankingBatch, gold: Tensor, cands: Candidates, k: int, total: bool = True
    ) -> SparseDelta:
        """h(reference) − h(candidate k) (``total=False``: the local part alone)."""
        if not batch.first_candidate:
            raise ValueError("candidate_delta needs units with a reference row")
        if cands.list_rows is None:
            raise ValueError("candidate_delta needs the candidates of CandidateList.candidates")
        delta = self.row_delta(batch, 0, int(cands.list_rows[k]))
        if total:
            return delta
        return SparseDelta({n: v for n, v in delta.parts.items() if n in ("node", "edge")})

    # -- prediction --------------------------------------------------------------------------------
    @torch.no_grad()
    def predict(
        self, data: RankingData, batch_size: int = 1, device: Device = "cpu", progress: bool = False
    ) -> list[list[int]]:
        """The best candidate of every unit (label ids)."""
        winners = self.winners(data, device, progress)
        return [data.row(r).tolist() for r in winners]

    @torch.no_grad()
    def winners(
        self,
        data: RankingData,
        device: Device = "cpu",
        progress: bool = False,
        cache: dict | None = None,
    ) -> list[int]:
        """The row of the best candidate of every unit.  ``cache`` (a dict kept by the caller
        for this ``data``) keeps each unit's batch for the next call (evaluation every epoch)."""
        out = []
        for u in bar(range(len(data)), enabled=progress, desc="rerank"):
            if cache is None:
                batch, _ = self.instance(data, u, device)
            else:
                if u not in cache:
                    cache[u] = self.instance(data, u, device)
                batch, _ = cache[u]
            total, _ = self.row_scores(batch)
            out.append(
                int(data.offsets[u])
                + data.first_candidate
                + int(total[data.first_candidate :].argmax())
            )
        return out
