"""Document rescoring with non-local features (Kazama & Torisawa 2007, sections 4-5).

With Φ^l the chain's local features and Φ^g the non-local document features
(``features/document.py``), a document's labeling y scores

    Φ^a(x, y)·α = Φ^l(x, y)·α^l + Φ^g(x, y)·α^g.

Φ^g is not decomposable over label pairs, so no DP finds the argmax: the structure takes the n
best labelings under Φ^l·α (exact, ``decode/nbest.py``) and returns the one of highest Φ^a·α
among them.  ``candidates`` gives a learner the whole list (local and total scores, the gold's,
which candidates equal the gold) and ``candidate_delta`` Φ^a(y*) − Φ^a(y) or Φ^l(y*) − Φ^l(y)
for any of them, from the Φ^g rows already computed.  A batch is a ``DocumentBatch``: the
chain's ``FeatureBatch`` and the ``Document``s whose tokens Φ^g reads.

Cost per document: the n-best (O(T L^2 n log n) or the beam, ``decode/nbest.py``), Φ^g of n
candidates (``NonLocalFeatures.vectorize``) and one ``embedding_bag`` over their CSR rows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import Tensor

from structperc.data.document import Document
from structperc.decode.forbidden_spans import nbest_forbidding
from structperc.decode.nbest import nbest, nbest_batched, path_dtype
from structperc.decode.node_offsets import combined, restriction
from structperc.decode.scores import path_scores
from structperc.model.batch import Device, FeatureBatch
from structperc.model.document_weights import DocumentWeights
from structperc.model.updates import SparseDelta
from structperc.structures.chain import ChainData, ChainStructure, length_batches

# the padded tokens (documents x the longest) of a batch that ``DocumentRescoring.predict``
# decodes at once: its potentials take 324 bytes a token at 9 labels, its 100-best 100; never
# reached by CoNLL-2003's batches of 16 (test: 12,752), so only long input is cut finer
BATCH_TOKENS = 1 << 16


@dataclass
class DocumentBatch:
    """B documents: their chain features and the documents themselves."""

    features: FeatureBatch
    documents: list[Document]

    @property
    def lengths(self) -> Tensor:
        return self.features.lengths

    def to(self, device) -> DocumentBatch:
        return DocumentBatch(self.features.to(device), self.documents)


@dataclass
class Candidates:
    """The n-best labelings of one document under Φ^l·α, rescored with Φ^g·α.

    paths:      [m, T] the m <= n existing candidates, best under Φ^l·α first.
    local:      [m] Φ^l·α of each.
    total:      [m] Φ^a·α of each.
    is_gold:    [m] bool, the candidate equals the gold labeling (all False without a gold).
    gold_local: Φ^l(y*)·α (0-d), None without a gold.
    gold_total: Φ^a(y*)·α (0-d), None without a gold.
    rows:       CSR Φ^g (ids [nnz], offsets [r + 1]) of the gold (row 0) and the candidates,
                for ``DocumentRescoring.candidate_delta``; None without a gold.
    list_rows:  [m] the row of each candidate in a fixed list (``CandidateList``), or None.
    """

    paths: Tensor
    local: Tensor
    total: Tensor
    is_gold: Tensor
    gold_local: Tensor | None
    gold_total: Tensor | None
    rows: tuple[Tensor, Tensor] | None
    list_rows: Tensor | None = None

    def best(self) -> Tensor:
        """The candidate [T] of highest Φ^a·α (the first on ties)."""
        return self.paths[int(self.total.argmax())]


class DocumentRescoring:
    """The chain over ``weights.node``/``edge`` rescored with ``doc_features`` over ``global``.

    Args:
        weights: ``DocumentWeights`` (the chain tables and the non-local table).
        doc_features: a fitted ``NonLocalFeatures`` (its labels are the weights' labels).
        n: n', the candidates rescored by ``argmax`` and ``predict``.
        constraints: the chain's tag-scheme constraints (``"none"`` or ``"iob2"``).
    """

    capabilities = frozenset({"argmax", "nbest", "rescoring", "partial"})

    def __init__(
        self, weights: DocumentWeights, doc_features, n: int = 100, constraints: str = "none"
    ):
        if n < 1:
            raise ValueError(f"the n-best size must be >= 1, got {n}")
        self.weights = weights
        self.doc_features = doc_features
        self.n = n
        self.chain = ChainStructure(weights, constraints)

    def with_n(self, n: int) -> DocumentRescoring:
        """The same structure (shared weights) rescoring the n best instead."""
        return DocumentRescoring(self.weights, self.doc_features, n, self.chain.constraints)

    def instance(self, data: ChainData, d: int, device) -> tuple[DocumentBatch, Tensor]:
        """Document d as a one-document batch, and its gold label ids [T]."""
        if data.documents is None:
            raise ValueError("non-local features need the documents: ChainData(documents=...)")
        batch, gold = self.chain.instance(data, d, device)
        return DocumentBatch(batch, [data.documents[d]]), gold

    def potentials(self, batch: DocumentBatch) -> Tensor:
        """The chain's potentials [B, T, L, L]."""
        return self.chain.potentials(batch.features)

    def nbest(self, batch: DocumentBatch, n: int) -> tuple[Tensor, Tensor]:
        """The n best labelings [n, T] and scores [n] under Φ^l·α (one document)."""
        return self.chain.nbest(batch.features, n)

    def candidates(self, batch: DocumentBatch, n: int, gold: Tensor | None = None) -> Candidates:
        """The n-best of a one-document batch under Φ^l·α, rescored; with the gold's scores."""
        potentials = self.potentials(batch)  # [1, T, L, L]
        paths, local = nbest(potentials, batch.lengths, n)  # [1, n, T], [1, n]
        gold_local = None
        if gold is not None:
            gold_local = path_scores(potentials, batch.lengths, gold.view(1, 1, -1))[0, 0]
        return self._rescore(batch.documents[0], paths[0], local[0], gold, gold_local)

    def _rescore(
        self,
        doc: Document,
        paths: Tensor,
        local: Tensor,
        gold: Tensor | None = None,
        gold_local: Tensor | None = None,
    ) -> Candidates:
        """``Candidates`` of n-best paths [n, T] with local scores [n] (-inf: no such path)."""
        valid = torch.isfinite(local)
        cands, local = paths[valid], local[valid]  # [m, T], [m]
        if gold is None:  # the global scores a group of candidates at a time, the rows dropped
            pieces = self.doc_features.vectorize_pieces(doc, cands)
            total = local + torch.cat([self.weights.global_scores(*p) for p in pieces])
            is_gold = torch.zeros(len(cands), dtype=torch.bool, device=cands.device)
            return Candidates(cands, local, total, is_gold, None, None, None)
        rows = torch.cat([gold.unsqueeze(0), cands])
        ids, offsets = self.doc_features.vectorize(doc, rows)
        g_score = self.weights.global_scores(ids, offsets)  # [r]
        total = torch.cat([gold_local.view(1), local]) + g_score  # Φ^a·α, gold first
        is_gold = (cands == gold.unsqueeze(0)).all(dim=1)  # [m]
        return Candidates(cands, local, total[1:], is_gold, gold_local, total[0], (ids, offsets))

    def candidate_delta(
        self, batch: DocumentBatch, gold: Tensor, cands: Candidates, k: int, total: bool = True
    ) -> SparseDelta:
        """Φ^a(y*) − Φ^a(y_k) (``total``) or Φ^l(y*) − Φ^l(y_k) of candidate k of ``cands``
        (made with the gold)."""
        delta = self.chain.delta(batch.features, gold, cands.paths[k])
        if not total:
            return delta
        if cands.gold_total is None:
            raise ValueError("candidate_delta needs candidates made with the gold labeling")
        return delta + self._global_difference(*cands.rows, 0, k + 1)

    def _global_difference(self, ids: Tensor, offsets: Tensor, a: int, b: int) -> SparseDelta:
        """Φ^g(row a) − Φ^g(row b) of CSR rows, as entries of the "global" table."""
        counts = self.weights.global_counts(ids, offsets, self.weights.global_.num_embeddings)
        diff = counts[a] - counts[b]  # [G]
        nz = torch.nonzero(diff).squeeze(1)
        return SparseDelta({"global": (nz, diff[nz])})

    @property
    def label_costs(self) -> Tensor | None:
        """[L] or None: the chain's per-label costs (``learn/costs.py``)."""
        return self.chain.label_costs

    @label_costs.setter
    def label_costs(self, costs: Tensor | None) -> None:
        self.chain.label_costs = costs

    def complete(self, batch: DocumentBatch, allowed: Tensor, n: int | None = None) -> Tensor:
        """The latent gold [T] of a one-document batch whose labels lie in ``allowed`` [T, L]:
        of the ``n`` (default ``self.n``) best compatible labelings under Φ^l·α (the n-best of
        the restricted chain), the best under Φ^a·α, as ``argmax`` searches.  ValueError when
        none is allowed."""
        restricted = restriction(allowed.to(batch.lengths.device))
        features = batch.features
        within = replace(features, node_offset=combined(features.node_offset, restricted))
        paths, local = nbest(self.chain.potentials(within), within.lengths, n or self.n)
        if not bool(torch.isfinite(local[0, 0])):
            raise ValueError("no labeling satisfies the document's annotation")
        return self._rescore(batch.documents[0], paths[0], local[0]).best()

    def cost_augmented(self, batch: DocumentBatch, gold: Tensor, known: Tensor | None = None):
        """The batch with its chain's node scores cost-augmented (``ChainStructure``'s)."""
        features = self.chain.cost_augmented(batch.features, gold, known)
        return batch if features is batch.features else DocumentBatch(features, batch.documents)

    def argmax(self, batch: DocumentBatch) -> Tensor:
        """The best of the ``n`` best labelings of each document, label ids [N]."""
        paths, local = nbest_batched(self.potentials(batch), batch.lengths, self.n)  # [B, n, T]
        best = []
        for b, doc in enumerate(batch.documents):
            T = int(batch.lengths[b])
            best.append(self._rescore(doc, paths[b, :, :T], local[b]).best())
        return torch.cat(best)

    def score(self, batch: DocumentBatch, labels: Tensor) -> Tensor:
        """Φ^a(x, y)·α [B] of label ids [N] of the batch's tokens."""
        local = self.chain.score(batch.features, labels)  # [B]
        padded = batch.features.pad(labels)  # [B, T]
        g = []
        for b, doc in enumerate(batch.documents):
            ids, offsets = self.doc_features.vectorize(doc, padded[b : b + 1, : len(doc)])
            g.append(self.weights.global_scores(ids, offsets))
        return local + torch.cat(g)

    def delta(self, batch: DocumentBatch, gold: Tensor, pred: Tensor) -> SparseDelta:
        """Φ^a(x, y*) − Φ^a(x, y') of label ids [N] of a one-document batch."""
        if len(batch.documents) != 1:
            raise ValueError("DocumentRescoring.delta takes a one-document batch")
        ids, offsets = self.doc_features.vectorize(batch.documents[0], torch.stack([gold, pred]))
        local = self.chain.delta(batch.features, gold, pred)
        return local + self._global_difference(ids, offsets, 0, 1)

    def errors(self, gold: Tensor, pred: Tensor) -> int:
        return self.chain.errors(gold, pred)

    def loss(self, gold: Tensor, pred: Tensor) -> float:
        return self.chain.loss(gold, pred)

    @torch.no_grad()
    def predict(
        self, data: ChainData, batch_size: int = 16, device: Device = "cpu", progress: bool = False
    ) -> list[list[int]]:
        """The best of the ``n`` best labelings of every document of ``data``.

        The n-best lists are decoded in batches of documents of similar length, of at most
        ``BATCH_TOKENS`` padded tokens unless one document is longer (``nbest_batched`` bounds
        the back-pointers), with paths of the smallest integer type (``path_dtype``: a byte a
        label); the rescoring is per document.
        """
        if data.documents is None:
            raise ValueError("non-local features need the documents: ChainData(documents=...)")
        out: list[list[int]] = [[] for _ in range(len(data))]
        dtype = path_dtype(self.chain.num_labels)
        batches = length_batches(data.features, batch_size, device, progress, BATCH_TOKENS)
        for docs, batch in batches:
            if data.allowed is not None:  # constraints: -inf on the labels they rule out
                rows = torch.cat([data.allowed_rows(d) for d in docs]).to(batch.lengths.device)
                batch = replace(batch, node_offset=restriction(rows))
            potentials = self.chain.potentials(batch)  # [B, T, L, L]
            spans = [data.forbidden.get(d, []) for d in docs] if data.forbidden else None
            if spans and any(spans):  # the augmented lattice (decode/forbidden_spans.py)
                paths, local = nbest_forbidding(potentials, batch.lengths, spans, self.n)
                paths = paths.to(dtype)
            else:
                paths, local = nbest_batched(potentials, batch.lengths, self.n, dtype=dtype)
            for b, d in enumerate(docs):
                T = int(batch.lengths[b])
                out[d] = self._rescore(data.documents[d], paths[b, :, :T], local[b]).best().tolist()
        return out
