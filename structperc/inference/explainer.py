"""Explanations of a saved tagging model (a run folder's ``model.json`` + ``model.safetensors``).

``TaggingExplainer.load(run_dir)`` reads the model with its full weight tables (a model loaded for
tagging keeps a compact read-only table, ``model/compact_table.py``, whose entries cannot be
read one by one) and its structure, the chain or the n'-best rescored with non-local features
(``inference.loading.structure_from_model``); loading reads tensors and JSON only.  It explains
documents token by token (``explain/tokens.py``) and the model's weights (``explain/weights.py``),
as JSON.
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch

from structperc.data.document import Document
from structperc.explain.names import local_features_namer
from structperc.explain.tokens import DocumentExplanation, explain_chain, explain_rescoring
from structperc.explain.weights import bias_row, chain_weights, non_local_weights
from structperc.inference.loading import structure_from_model
from structperc.model.batch import make_batch
from structperc.model.files import load_model
from structperc.structures.rescoring import DocumentBatch, DocumentRescoring


class TaggingExplainer:
    """A tagging model with its full tables, its structure, features and namer."""

    def __init__(self, weights, features, info: dict, n=None, constraints=None):
        self.weights, self.features, self.info = weights, features, info
        self.doc_features = info.get("document_features")
        self.structure = structure_from_model(weights, info, n=n, constraints=constraints)
        # margins and contributions in float64: a document's score sums some 10^4 weights
        exact = copy.deepcopy(weights).double()
        self.scorer = structure_from_model(exact, info, n=n, constraints=constraints)
        self.namer = local_features_namer(weights, features, self.doc_features)

    @classmethod
    def load(cls, run_dir: str | Path, *, n: int | None = None, constraints: str | None = None):
        """The model of ``run_dir`` (``n``, ``constraints``: as ``Tagger.load``'s)."""
        weights, features, info = load_model(run_dir, compact=False)
        return cls(weights, features, info, n=n, constraints=constraints)

    @property
    def labels(self) -> list[str]:
        return self.weights.labels

    @torch.no_grad()
    def explain(
        self, docs: list[Document], positions: list[list[int] | None] | None = None
    ) -> list[DocumentExplanation]:
        """The explanations of ``docs`` (with the columns the features read): every token, or
        the tokens ``positions[d]`` of document d (None: all of it)."""
        matrix = self.features.transform(docs)
        out = []
        for d, doc in enumerate(docs):
            if not len(doc):
                out.append(DocumentExplanation(doc.source, [], [], []))
                continue
            batch = make_batch(matrix, [d])
            where = None if positions is None else positions[d]
            if isinstance(self.structure, DocumentRescoring):
                batch = DocumentBatch(batch, [doc])
                pred, items = explain_rescoring(
                    self.structure, batch, self.namer, where, self.scorer
                )
            else:
                pred, items = explain_chain(
                    self.structure, batch, doc.tokens, self.namer, where, self.scorer
                )
            labels = [self.labels[i] for i in pred]
            out.append(DocumentExplanation(doc.source, list(doc.tokens), labels, items))
        return out

    def explain_weights(self, top: int = 20, pairs: bool = False) -> dict:
        """The model's top features per label (``pairs``: per label pair too), its transition
        matrix and its non-local features' weights by family."""
        out = chain_weights(self.weights, self.namer, top, pairs, bias_row(self.features.vocab))
        if self.doc_features is not None:
            names = self.doc_features.feature_names()
            out["non_local"] = non_local_weights(self.weights, names)
        return out
