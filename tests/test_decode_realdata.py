"""Decoders on real CoNLL-2003 documents: every batched and n-best route agrees with Viterbi.

A small averaged perceptron (60 training documents, 2 epochs) gives realistic potentials: long
documents (hundreds of tokens), scores with many near-ties, IOB2 structure.
"""

from __future__ import annotations

import pytest
import torch

from structperc.data.loading import load_corpus
from structperc.decode.nbest import BEAM_FROM_N, nbest
from structperc.decode.viterbi import viterbi
from structperc.features.pipeline import LocalFeatures
from structperc.learn.fitting import FitSettings
from structperc.learn.perceptron import Perceptron
from structperc.model.batch import make_batch
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.structures.chain import ChainData, ChainStructure
from structperc.trainer import fit


@pytest.fixture(scope="module")
def trained(data_dir):
    corpus = load_corpus("conll2003", data_dir, max_docs=60, splits=("train", "dev"))
    train, dev = corpus["train"], corpus["dev"][:24]
    features = LocalFeatures(gazetteer="none").fit(train)
    labels = sorted({t for d in train for t in d.tags})
    index = {t: i for i, t in enumerate(labels)}
    y = torch.tensor([index[t] for d in train for t in d.tags])
    weights = ChainWeights(features.num_features, labels)
    updater = Updater(weights, average=True)
    fit(
        Perceptron(average=True),
        ChainStructure(weights),
        updater,
        ChainData(features.transform(train, training=True), y),
        FitSettings(max_epochs=2, progress=False),
    )
    updater.finalize()
    return weights, features.transform(dev)


@pytest.mark.realdata
def test_batched_prediction_equals_one_document_at_a_time(trained, monkeypatch):
    import structperc.structures.chain as chain_mod

    weights, dev = trained
    chain = ChainStructure(weights)
    singles = chain.predict(ChainData(dev), batch_size=1)  # the blocked scan, document by document
    assert max(len(p) for p in singles) > 200  # long documents are in the sample
    assert chain.predict(ChainData(dev), batch_size=7) == singles  # small: one by one on a CPU
    monkeypatch.setattr(chain_mod, "PACKED_FROM", 2)
    for batch_size in (2, 7, 256):  # packed time-major decoding
        assert chain.predict(ChainData(dev), batch_size=batch_size) == singles


@pytest.mark.realdata
@pytest.mark.parametrize("n", [1, 2, 20, BEAM_FROM_N, 400])
def test_first_of_the_nbest_is_viterbi(trained, n):
    weights, dev = trained
    docs = list(range(dev.num_docs))
    batch = make_batch(dev, docs)
    pot = weights.potentials(batch)
    paths, scores = nbest(pot, batch.lengths, n)  # [B, n, T], [B, n]
    best, best_scores = viterbi(pot, batch.lengths)
    # the first path's score is the Viterbi score; on ties the path may differ, never the score
    assert torch.allclose(scores[:, 0], best_scores, rtol=1e-6)
    same = (paths[:, 0] == best).all(dim=1)
    assert same.float().mean() > 0.9
    if n > 1:
        finite = torch.isfinite(scores)
        assert (scores[:, 1:][finite[:, 1:]] <= scores[:, :-1][finite[:, 1:]] + 1e-4).all()
