"""A new structure: tokens labeled one by one, without transitions (a zero-order model).

A structure couples weight tables with a decoder and a feature map.  The learners and the
training loop (``structperc.trainer.fit``) call only its interface
(``structperc.structures.Structure``): the best labeling of a batch, the score of a labeling,
and the sparse difference Φ(x, y*) − Φ(x, y′) that an update writes into the tables.  So every
learner that requires no more than ``argmax`` trains this one unchanged.

Run it with ``python docs/examples/new_structure.py``: the averaged perceptron trains it on
synthetic documents, and the chain on the same features does better (it has transitions).
"""

from __future__ import annotations

import torch
from torch import Tensor

from structperc.model import FeatureBatch, SparseDelta, make_batch
from structperc.model.weights import bag_sums


class TokenWeights(torch.nn.Module):
    """One table, node [F, L]: a weight per (feature, label), zeros at the start."""

    def __init__(self, num_features: int, labels: list[str]):
        super().__init__()
        self.labels = list(labels)
        self.num_labels = len(labels)
        self.node = torch.nn.Parameter(torch.zeros(num_features, len(labels)), requires_grad=False)

    def tables(self) -> dict[str, Tensor]:
        """The tables by name: what the ``Updater`` writes into and averages."""
        return {"node": self.node}


class TokenStructure:
    """Each token's label is the best of its own scores; a labeling is label ids [N]."""

    capabilities = frozenset({"argmax"})

    def __init__(self, weights: TokenWeights):
        self.weights = weights

    def instance(self, data, d: int, device) -> tuple[FeatureBatch, Tensor]:
        """Document ``d`` of ``data`` (a ``ChainData``) as a batch, and its gold label ids."""
        return make_batch(data.features, [d]).to(device), data.gold(d).to(device)

    def potentials(self, batch: FeatureBatch) -> Tensor:
        """Scores [N, L] of the batch's tokens."""
        return bag_sums(self.weights.node, batch.ids, batch.offsets, batch.values)

    def argmax(self, batch: FeatureBatch) -> Tensor:
        """The best label of every token, [N]."""
        return self.potentials(batch).argmax(dim=1)

    def score(self, batch: FeatureBatch, labels: Tensor) -> Tensor:
        """s(x, y) of every document of the batch, [B]."""
        token = self.potentials(batch).gather(1, labels.view(-1, 1)).squeeze(1)  # [N]
        return torch.zeros(batch.num_docs).index_add_(0, self.document_of(batch), token)

    def delta(self, batch: FeatureBatch, gold: Tensor, pred: Tensor) -> SparseDelta:
        """Φ(x, gold) − Φ(x, pred): +1 at (f, gold_t), −1 at (f, pred_t) for each feature f of
        each token t labeled wrongly (flat indices ``f * L + label`` of the node table)."""
        L = self.weights.num_labels
        wrong = torch.nonzero(gold != pred).squeeze(1)  # [K]
        feats, token = batch.token_features(wrong)  # [M] each: feature ids, their tokens
        index = torch.cat([feats * L + gold[token], feats * L + pred[token]])
        values = torch.cat([torch.ones(len(feats)), -torch.ones(len(feats))])
        return SparseDelta({"node": (index, values)})

    def errors(self, gold: Tensor, pred: Tensor) -> int:
        """Tokens ``pred`` gets wrong."""
        return int((gold != pred).sum())

    def loss(self, gold: Tensor, pred: Tensor) -> float:
        """The Hamming loss (the max-margin learners' step size reads it)."""
        return float(self.errors(gold, pred))

    @torch.no_grad()
    def predict(self, data, batch_size: int = 256, device="cpu", progress=False) -> list:
        """The best labels of every document of ``data``."""
        out = []
        for start in range(0, len(data), batch_size):
            docs = list(range(start, min(start + batch_size, len(data))))
            batch = make_batch(data.features, docs).to(device)
            labels = self.argmax(batch)
            out += [labels[a:b].tolist() for a, b in self.spans(batch)]
        return out

    @staticmethod
    def document_of(batch: FeatureBatch) -> Tensor:
        """The document of each of the batch's tokens, [N]."""
        return torch.repeat_interleave(torch.arange(batch.num_docs), batch.lengths.cpu())

    @staticmethod
    def spans(batch: FeatureBatch) -> list[tuple[int, int]]:
        """(first token, end) of each document in the batch's token order."""
        ends = torch.cumsum(batch.lengths.cpu(), 0).tolist()
        return list(zip([0, *ends[:-1]], ends, strict=True))


def accuracy(structure, features, test, labels) -> float:
    """Token accuracy of ``structure`` on the documents ``test``."""
    from structperc.structures import ChainData

    predicted = structure.predict(ChainData(features.transform(test)))
    pairs = [
        (gold, labels[p])
        for doc, path in zip(test, predicted, strict=True)
        for gold, p in zip(doc.tags, path, strict=True)
    ]
    return 100.0 * sum(g == p for g, p in pairs) / len(pairs)


def main() -> dict[str, float]:
    """The averaged perceptron on this structure and on the chain: token accuracies."""
    from structperc.data.synthetic import make_corpus
    from structperc.data.tags import encode_labels, label_set
    from structperc.features import LocalFeatures
    from structperc.learn import FitSettings, Perceptron
    from structperc.model import ChainWeights, Updater
    from structperc.structures import ChainData, ChainStructure
    from structperc.trainer import fit

    train, test = make_corpus(30, seed=1), make_corpus(10, seed=2)
    features = LocalFeatures(gazetteer="none").fit(train)
    labels = label_set(train)
    data = ChainData(features.transform(train, training=True), encode_labels(train, labels))
    out = {}
    for name, weights, make in (
        ("tokens", TokenWeights(features.num_features, labels), TokenStructure),
        ("chain", ChainWeights(features.num_features, labels), ChainStructure),
    ):
        structure, updater = make(weights), Updater(weights, average=True)
        settings = FitSettings(max_epochs=3, progress=False)
        fit(Perceptron(average=True), structure, updater, data, settings)
        updater.finalize()
        out[name] = accuracy(structure, features, test, labels)
    return out


if __name__ == "__main__":
    for name, value in main().items():
        print(f"{name}: token accuracy {value:.1f}")
