"""The first-order chain: sequence labeling with node and edge features (Collins 2002a).

A labeling of a document x_0..x_{n-1} is one label per token; with the ``ChainWeights`` tables
its score is

    s(x, y) = sum_t sum_{f in x_t} node[f, y_t] + edge[f, y_{t-1} * L + y_t]   (no edge at t = 0)

read off the potentials [B, T, L, L] (``model.weights.chain_potentials``).  The decoders are
batched Viterbi and exact n-best (``decode/viterbi.py``, ``decode/nbest.py``); the feature
difference of two labelings is ``model.updates.path_delta``; the loss is the Hamming distance.
``constraints="iob2"`` puts -inf on the moves IOB2 forbids before any decoding
(``decode/constraints.py``).

Side information about a labeling enters as offsets of the node scores (``decode/node_offsets.py``):
a batch's ``node_offset`` (cost augmentation during training, -inf restrictions), and a data
set's ``allowed`` rows, the labels each token may carry (constraints at prediction, partial
annotation in training: an open token allows several).  ``complete`` decodes the best labeling
an annotation allows: the latent gold of a partially labeled document.

It offers "marginals": the distribution p(y | x) = exp(s(x, y)) / Z(x) of a linear-chain CRF
(Lafferty et al. 2001) over the same potentials, with

    log Z(x) = logsumexp_y s(x, y),     nll = log Z(x) - s(x, y*),
    mu[t, i, j] = p(y_{t-1} = i, y_t = j | x) = d log Z / d pot[t, i, j]

by one of torch-struct's scans (``decode/marginals.py``: its own tree, the scaled tree, the
sequential forward-backward).  A move the constraints forbid has probability 0: its -inf becomes
torch-struct's log-zero (-1e5), which every scan takes.  The CRF (``structperc.crf``) is the
learner that trains them.

Prediction over a data set (``predict``) scores ``batch_size`` consecutive documents in one
lookup and decodes them with ``viterbi_packed``: sorted by length and packed time-major, without
padding.  Memory: ~100 floats per token of a batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from structperc.data.document import Document, sub_document
from structperc.decode import marginals as scans
from structperc.decode.constraints import allowed_transitions, constrain, constrain_tokens
from structperc.decode.forbidden_spans import viterbi_forbidding
from structperc.decode.nbest import nbest
from structperc.decode.node_offsets import combined, cost_offsets, offset_potentials, restriction
from structperc.decode.scaled_scan import NEG
from structperc.decode.scores import path_scores
from structperc.decode.viterbi import token_path, viterbi, viterbi_packed
from structperc.features.extract import FeatureMatrix
from structperc.features.store import RELEASE_EVERY, release_pages
from structperc.model.batch import (
    Device,
    FeatureBatch,
    length_sorted_batches,
    make_batch,
    packed_order,
)
from structperc.model.updates import SparseDelta, path_delta
from structperc.model.weights import ChainWeights
from structperc.progress import bar


@dataclass
class ChainData:
    """D documents as a chain reads them.

    features:  CSR features of every token (``FeatureMatrix``: D documents, N tokens).
    labels:    [N] gold label ids of every token (-1: an open token), or None (prediction).
    documents: the ``Document``s themselves (the rescoring structure reads their tokens).
    allowed:   [N, L] bool, the labels each token may carry, or None (any): the partial
               annotation of training documents (``data/partial.py``), the constraints of
               prediction (``data/constraints.py``).
    forbidden: document -> the entity spans (start, end, label ids of their first and inside
               tokens) its labeling must not contain (``decode/forbidden_spans.py``), or None.
    """

    features: FeatureMatrix
    labels: Tensor | None = None
    documents: list[Document] | None = None
    allowed: Tensor | None = None
    forbidden: dict | None = None

    unit = "doc"  # what an instance is, for progress bars

    def __len__(self) -> int:
        return self.features.num_docs

    @property
    def num_tokens(self) -> int:
        return self.features.num_tokens

    def gold(self, d: int) -> Tensor:
        """The gold label ids [T] of document d."""
        if self.labels is None:
            raise ValueError("these documents carry no gold labels")
        offsets = self.features.doc_offsets
        if offsets.device.type == "cpu":  # (a scalar through NumPy: a microsecond, not five)
            offsets = offsets.numpy()
        return self.labels[int(offsets[d]) : int(offsets[d + 1])]

    def allowed_rows(self, d: int) -> Tensor | None:
        """The allowed labels [T, L] of document d, or None (any)."""
        if self.allowed is None:
            return None
        offsets = self.features.doc_offsets
        if offsets.device.type == "cpu":
            offsets = offsets.numpy()
        return self.allowed[int(offsets[d]) : int(offsets[d + 1])]

    def open_documents(self) -> Tensor:
        """[D] bool: the documents with a token that allows more than one label (their gold
        labeling is not known: partial annotation)."""
        D = self.features.num_docs
        if self.allowed is None:
            return torch.zeros(D, dtype=torch.bool)
        many = self.allowed.sum(1) > 1  # [N]
        doc_of = torch.repeat_interleave(
            torch.arange(D), self.features.doc_offsets[1:] - self.features.doc_offsets[:-1]
        )
        out = torch.zeros(D, dtype=torch.bool)
        return out.index_put_((doc_of,), many, accumulate=True)

    def subset(self, docs: list[int]) -> ChainData:
        """The documents ``docs``, in that order, as a data set of their own (copied)."""
        batch = make_batch(self.features, docs)
        doc_offsets = torch.zeros(len(docs) + 1, dtype=torch.long)
        torch.cumsum(batch.lengths, 0, out=doc_offsets[1:])
        labels = None if self.labels is None else torch.cat([self.gold(d) for d in docs])
        documents = None if self.documents is None else [self.documents[d] for d in docs]
        allowed = None
        if self.allowed is not None:
            allowed = torch.cat([self.allowed_rows(d) for d in docs])
        forbidden = None
        if self.forbidden is not None:
            forbidden = {k: self.forbidden[d] for k, d in enumerate(docs) if d in self.forbidden}
        groups = self.features.groups
        features = FeatureMatrix(batch.ids, batch.offsets, doc_offsets, batch.values, groups=groups)
        return ChainData(features, labels, documents, allowed, forbidden)

    def sentences(self) -> tuple[ChainData, Tensor]:
        """Every sentence of every document as an instance of its own, and the units [S, 3]
        (document, first token, end token).  The tokens keep their document-level features."""
        if self.documents is None:
            raise ValueError("splitting into sentences needs the documents")
        units, docs = [], []
        for d, doc in enumerate(self.documents):
            for s, e in doc.sentence_spans():
                units.append((d, s, e))
                docs.append(sub_document(doc, s, e))
        starts = self.features.doc_offsets[[u[0] for u in units]]
        bounds = torch.tensor([[s, e] for _, s, e in units], dtype=torch.long).view(-1, 2)
        doc_offsets = torch.cat([starts + bounds[:, 0], (starts + bounds[:, 1])[-1:]])
        f = self.features
        features = FeatureMatrix(f.ids, f.offsets, doc_offsets, f.values, groups=f.groups)
        if self.forbidden:
            raise ValueError("forbidden spans are given per document: decode whole documents")
        split = ChainData(features, self.labels, docs, self.allowed)
        return split, torch.tensor(units, dtype=torch.long)


# On a CPU, batches of fewer documents than this decode faster one document at a time: the
# packed recursion's steps are the longest document's positions, the blocked scan's ~2 sqrt(T)
# (CoNLL-2003 test, tokens/s: one at a time 330 k; packed batches of 4 102 k, 16 216 k, 32 298 k,
# 64 387 k, 256 495 k).  On an accelerator the packed batch is always the faster.
PACKED_FROM = 32


class ChainStructure:
    """A first-order chain over ``weights`` (``ChainWeights`` or a subclass).

    Args:
        weights: the node and edge tables.
        constraints: ``"none"`` or ``"iob2"`` (labels must be IOB2 tags).
    """

    capabilities = frozenset({"argmax", "nbest", "marginals", "partial"})

    def __init__(self, weights: ChainWeights, constraints: str = "none"):
        self.weights = weights
        self.constraints = constraints
        self.allowed: tuple[Tensor, Tensor] | None = None
        if constraints != "none":
            self.allowed = allowed_transitions(weights.labels, constraints)
        self.label_costs: Tensor | None = None  # [L]: the cost of missing each gold label

    @property
    def num_labels(self) -> int:
        return self.weights.num_labels

    def instance(self, data: ChainData, d: int, device) -> tuple[FeatureBatch, Tensor]:
        """Document d as a one-document batch, and its gold label ids [T]."""
        batch, gold = make_batch(data.features, [d]), data.gold(d)
        if torch.device(device).type == "cpu" and batch.ids.device.type == "cpu":
            return batch, gold
        return batch.to(device), gold.to(device)

    def potentials(self, batch: FeatureBatch) -> Tensor:
        """Potentials [B, T, L, L] (from, to), with the batch's node offsets, constrained when
        the structure has constraints."""
        potentials = self.weights.potentials(batch)
        if batch.node_offset is not None:
            offset = batch.pad(batch.node_offset.to(potentials.dtype), fill=0)  # [B, T, L]
            potentials = offset_potentials(potentials, offset)
        if self.allowed is None:
            return potentials
        return constrain(potentials, *self.allowed)

    def argmax(self, batch: FeatureBatch) -> Tensor:
        """Viterbi label ids [N] of the batch's tokens."""
        if batch.num_docs == 1:
            return self.best_path(batch)
        paths, _ = viterbi(self.potentials(batch), batch.lengths)  # [B, T]
        return batch.unpad(paths)  # [N]

    def best_path(self, batch: FeatureBatch) -> Tensor:
        """Viterbi label ids [T] of a one-document batch (``decode_tokens``)."""
        node, edge = self.weights.token_scores(batch)
        if batch.node_offset is not None:
            node = node + batch.node_offset.to(node.dtype)
        return self.decode_tokens(node, edge)

    def complete(self, batch: FeatureBatch, allowed: Tensor, n: int = 1) -> Tensor:
        """The best labeling [T] of a one-document batch whose labels lie in ``allowed`` [T, L]
        (its partial annotation: the latent gold a perceptron moves towards; ``n`` is not read:
        the argmax is exact).  ValueError when no labeling is allowed (the tag-scheme
        constraints may exclude every one)."""
        restricted = restriction(allowed.to(batch.lengths.device))
        within = replace(batch, node_offset=combined(batch.node_offset, restricted))
        paths, scores = viterbi(self.potentials(within), within.lengths)  # [1, T], [1]
        if not bool(torch.isfinite(scores).all()):
            raise ValueError(
                "no labeling satisfies the document's annotation"
                + (f" under the {self.constraints} constraints" if self.allowed else "")
            )
        return paths[0]

    def cost_augmented(self, batch: FeatureBatch, gold: Tensor, known: Tensor | None = None):
        """The batch with its node scores raised by the costs of missing ``gold`` [N] (at the
        ``known`` tokens), ``label_costs`` (``decode/node_offsets.py``); the batch itself when
        the structure has no costs."""
        if self.label_costs is None:
            return batch
        costs = cost_offsets(gold, self.label_costs, known)
        return replace(batch, node_offset=combined(batch.node_offset, costs))

    def decode_tokens(self, node: Tensor, edge: Tensor) -> Tensor:
        """Viterbi label ids [T] of one document from its token scores node [T, L] and
        edge [T, L, L] (``token_path``: no potentials tensor; the path ``viterbi`` finds)."""
        if self.allowed is not None:
            first = torch.zeros(len(node), dtype=torch.bool, device=node.device)
            first[0] = True
            node, edge = constrain_tokens(node, edge, first, *self.allowed)
        return token_path(node, edge)

    def nbest(self, batch: FeatureBatch, n: int) -> tuple[Tensor, Tensor]:
        """The n best labelings [n, T] (-1 rows past the existing ones) and scores [n] of a
        one-document batch, best first (``decode.nbest.nbest``)."""
        paths, scores = nbest(self.potentials(batch), batch.lengths, n)  # [1, n, T], [1, n]
        return paths[0], scores[0]

    def score(self, batch: FeatureBatch, labels: Tensor) -> Tensor:
        """s(x, y) [B] of label ids [N] of the batch's tokens."""
        padded = batch.pad(labels).unsqueeze(1)  # [B, 1, T]
        return path_scores(self.potentials(batch), batch.lengths, padded)[:, 0]

    def log_partition(
        self, batch: FeatureBatch, *, scan: str = "log", potentials: Tensor | None = None
    ) -> Tensor:
        """log Z(x) [B] of the batch's documents by ``scan`` ("log", "scaled", "sequential";
        differentiable in the potentials).  ``potentials``: the batch's [B, T, L, L] where the
        caller has them (in another floating type, or differentiable in its own lookups: the
        CRF), else ``potentials(batch)``."""
        return scans.log_partition(self.log_potentials(batch, potentials), batch.lengths, scan)

    def marginals(
        self, batch: FeatureBatch, *, scan: str = "log", potentials: Tensor | None = None
    ) -> Tensor:
        """Edge marginals [B, T, L, L] (from, to): p(y_{t-1} = i, y_t = j | x) at t >= 1, the
        start p(y_0 = j | x) in row 0 of t = 0, 0 past each length (``log_partition``'s
        arguments)."""
        return scans.marginals(self.log_potentials(batch, potentials), batch.lengths, scan)

    def nll(
        self,
        batch: FeatureBatch,
        gold: Tensor,
        *,
        scan: str = "log",
        potentials: Tensor | None = None,
    ) -> Tensor:
        """-log p(y* | x) = log Z(x) - s(x, y*) [B] of gold label ids [N] of the batch's tokens
        (``log_partition``'s arguments)."""
        pot = self.log_potentials(batch, potentials)
        return scans.nll(pot, batch.lengths, batch.pad(gold), scan)

    def log_potentials(self, batch: FeatureBatch, potentials: Tensor | None = None) -> Tensor:
        """The potentials [B, T, L, L] the scans read: ``potentials`` (else the batch's), with
        the constraints' -inf as torch-struct's log-zero (the module docstring)."""
        pot = self.potentials(batch) if potentials is None else potentials
        return pot if self.allowed is None else pot.clamp_min(NEG)

    def delta(self, batch: FeatureBatch, gold: Tensor, pred: Tensor) -> SparseDelta:
        """Φ(x, gold) − Φ(x, pred) of label ids [N] (``path_delta``)."""
        weights = self.weights
        return path_delta(batch, gold, pred, self.num_labels, weights.edges, weights.node_only)

    def errors(self, gold: Tensor, pred: Tensor) -> int:
        return int((gold != pred).sum())

    def loss(self, gold: Tensor, pred: Tensor) -> float:
        """Hamming loss: labels that differ, each weighted by its gold label's cost when the
        structure has ``label_costs``."""
        if self.label_costs is None:
            return float((gold != pred).sum())
        return float((self.label_costs.to(gold.device)[gold] * (gold != pred)).sum())

    def token_range_scores(
        self, features: FeatureMatrix, start: int, end: int, device: Device
    ) -> tuple[Tensor, Tensor]:
        """Node [N, L] and edge [N, L, L] scores of tokens start..end-1 of ``features`` (one
        slice of their CSR rows: consecutive documents), on ``device``."""
        offsets = features.offsets
        lo, hi = int(offsets[start]), int(offsets[end])
        ids = features.ids[lo:hi].to(device)
        values = None if features.values is None else features.values[lo:hi].to(device)
        return self.weights.csr_scores(ids, (offsets[start : end + 1] - lo).to(device), values)

    @torch.no_grad()
    def predict(
        self, data: ChainData, batch_size: int = 256, device: Device = "cpu", progress: bool = False
    ) -> list[list[int]]:
        """Viterbi label ids of every document of ``data``.

        ``batch_size`` documents at a time (consecutive ones, so their CSR rows are one slice)
        are scored in one lookup and decoded together by ``viterbi_packed``, whose steps are the
        longest document's positions.  ``batch_size=1`` decodes each document alone with the
        blocked scan instead (``decode_tokens``), and so do batches of fewer than
        ``PACKED_FROM`` documents on a CPU, where that is the faster of the two.  The labels are
        the same either way.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        features = data.features
        out: list[list[int]] = [[] for _ in range(features.num_docs)]
        doc_offsets = features.doc_offsets
        one_by_one = batch_size == 1 or (
            batch_size < PACKED_FROM and torch.device(device).type == "cpu"
        )
        if one_by_one:  # each document's CSR rows are one slice: no batch to build
            bounds = doc_offsets.tolist()
            for d in bar(range(features.num_docs), enabled=progress, desc="decode", unit="doc"):
                s, e = bounds[d], bounds[d + 1]
                if features.mapped and d % RELEASE_EVERY == 0:
                    release_pages()  # (features/store.py)
                if e > s:
                    node, edge = self.token_range_scores(features, s, e, device)  # [T, L(, L)]
                    node = restricted_nodes(node, data.allowed, s, e)
                    out[d] = self.decode_document(data, d, node, edge).tolist()
            return out
        starts = range(0, features.num_docs, batch_size)
        for d0 in bar(starts, enabled=progress, desc="decode", unit="batch"):
            d1 = min(d0 + batch_size, features.num_docs)
            if features.mapped and d0 // batch_size % max(RELEASE_EVERY // batch_size, 1) == 0:
                release_pages()  # (features/store.py)
            s, e = int(doc_offsets[d0]), int(doc_offsets[d1])
            node, edge = self.token_range_scores(features, s, e, device)  # [N, L], [N, L, L]
            node = restricted_nodes(node, data.allowed, s, e)
            if self.allowed is not None:
                first = torch.zeros(e - s, dtype=torch.bool, device=node.device)
                first[(doc_offsets[d0:d1] - s).to(node.device)] = True
                node, edge = constrain_tokens(node, edge, first, *self.allowed)
            perm, sizes = packed_order(doc_offsets[d0 : d1 + 1] - s)  # [N], [T]
            perm = perm.to(device)
            labels = torch.empty(e - s, dtype=torch.long, device=device)
            # a transition matrix shared by every token (edges=False) is an expanded view:
            # permuting it would copy it once per token
            shared = edge.stride(0) == 0
            labels[perm] = viterbi_packed(node[perm], edge if shared else edge[perm], sizes)
            flat = labels.tolist()
            for d in range(d0, d1):
                a, b = int(doc_offsets[d]) - s, int(doc_offsets[d + 1]) - s
                if data.forbidden and data.forbidden.get(d):  # its own lattice
                    out[d] = self.decode_document(data, d, node[a:b], edge[a:b]).tolist()
                else:
                    out[d] = flat[a:b]
        return out

    def decode_document(self, data: ChainData, d: int, node: Tensor, edge: Tensor) -> Tensor:
        """Viterbi label ids [T] of document d of ``data`` from its (restricted) token scores;
        a document with forbidden spans through their augmented lattice
        (``decode/forbidden_spans.py``)."""
        spans = data.forbidden.get(d) if data.forbidden else None
        if not spans:
            return self.decode_tokens(node, edge)
        potentials = document_potentials(node, edge)  # [1, T, L, L]
        if self.allowed is not None:
            potentials = constrain(potentials, *self.allowed)
        lengths = torch.tensor([len(node)], device=node.device)
        paths, _ = viterbi_forbidding(potentials, lengths, [spans])
        return paths[0]


def document_potentials(node: Tensor, edge: Tensor) -> Tensor:
    """Potentials [1, T, L, L] (from, to) of one document's token scores node [T, L] and
    edge [T, L, L] (or one matrix expanded over the tokens)."""
    potentials = edge + node.unsqueeze(1)  # [T, L, L], fresh
    potentials[0] = node[0].unsqueeze(0).expand_as(potentials[0])
    return potentials.unsqueeze(0)


def restricted_nodes(node: Tensor, allowed: Tensor | None, start: int, end: int) -> Tensor:
    """Node scores [N, L] of tokens start..end-1 with -inf where ``allowed`` [*, L] (rows of
    every token of the data set, or None) forbids a label."""
    if allowed is None:
        return node
    return node.masked_fill(~allowed[start:end].to(node.device), float("-inf"))


def length_batches(
    features: FeatureMatrix,
    batch_size: int,
    device,
    progress: bool,
    max_tokens: int | None = None,
) -> Iterator[tuple[list[int], FeatureBatch]]:
    """(document indices, FeatureBatch) for batches of documents of similar length
    (``length_sorted_batches``)."""
    lengths = (features.doc_offsets[1:] - features.doc_offsets[:-1]).tolist()
    batches = length_sorted_batches(lengths, batch_size, max_tokens)
    for docs in bar(batches, enabled=progress, desc="decode", unit="batch"):
        yield docs, make_batch(features, docs).to(device)
