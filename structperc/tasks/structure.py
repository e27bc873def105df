"""A new sequence labeler's structure and weights, as its learner needs them.

``labeler_structure`` makes the weights (the chain's, or with non-local features the document
weights) and the structure through ``structures.choice.structure_for``, the constructor a saved
model is loaded with too (``inference/loading.py``): the first-order chain, or Kazama &
Torisawa's document rescoring with non-local features (Alg. 4.1/4.2) that rescores the ``n``
best of the chain.
"""

from __future__ import annotations

from structperc.data.document import Document
from structperc.features.document import NonLocalFeatures
from structperc.model.document_weights import DocumentWeights
from structperc.model.weights import ChainWeights
from structperc.structures.chain import ChainStructure
from structperc.structures.choice import structure_for
from structperc.structures.rescoring import DocumentRescoring


def labeler_structure(
    learner,
    num_features: int,
    labels: list[str],
    train: list[Document],
    doc_features: NonLocalFeatures | None = None,
    *,
    n_test: int = 100,
    constraints: str = "none",
    edges: bool = True,
    node_only=None,
) -> tuple[ChainStructure | DocumentRescoring, ChainStructure | DocumentRescoring]:
    """(the structure, the one that evaluates during training) of a new model for ``learner``.

    A learner that requires "rescoring" gets the document rescoring structure (``doc_features``
    fitted on ``train``, default ``NonLocalFeatures()``), rescoring the ``n_test`` best at
    prediction and the learner's own n-best size during training; any other the chain.
    ``node_only`` ([F] bool or None): the features without edge weights
    (``LocalFeatures.node_only_mask``).
    """
    if "rescoring" not in learner.requires:
        weights = ChainWeights(num_features, labels, edges).set_node_only(node_only)
        structure = structure_for(weights, constraints=constraints)
        return structure, structure
    doc_features = doc_features if doc_features is not None else NonLocalFeatures()
    doc_features.fit(train, labels)
    weights = DocumentWeights(num_features, labels, doc_features.num_features, edges)
    weights.set_node_only(node_only)
    structure = structure_for(weights, doc_features, n=n_test, constraints=constraints)
    return structure, structure.with_n(learner.nbest)
