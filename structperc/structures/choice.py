"""A sequence labeler's structure for its weights: the chain, or the document rescoring.

``structure_for`` is the one constructor of both, for a model being trained
(``tasks/structure.py``'s ``labeler_structure``) and for a saved one (``inference/loading.py``).
"""

from __future__ import annotations

from structperc.features.document import NonLocalFeatures
from structperc.model.document_weights import DocumentWeights
from structperc.model.weights import ChainWeights
from structperc.structures.chain import ChainStructure
from structperc.structures.rescoring import DocumentRescoring


def structure_for(
    weights: ChainWeights | DocumentWeights,
    doc_features: NonLocalFeatures | None = None,
    *,
    n: int = 100,
    constraints: str = "none",
) -> ChainStructure | DocumentRescoring:
    """The chain over ``weights``, or with fitted ``doc_features`` the document rescoring of the
    ``n`` best; ``constraints`` is the decoder's (``none`` or ``iob2``)."""
    if doc_features is None:
        return ChainStructure(weights, constraints)
    return DocumentRescoring(weights, doc_features, n, constraints)
