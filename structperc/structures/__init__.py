"""Structures: what a learner and the training loop know of a model of labelings.

    base.py         the ``Structure`` interface and the capability check
    chain.py        the first-order chain (Viterbi, exact n-best; marginals: the CRF's model)
    label_chunk.py  the label-chunk structure of Shimizu & Haas (2006): the exact O(n^2) DP
    rescoring.py    Kazama & Torisawa's (2007) document rescoring: n-best of the chain,
                    Φ^a·α = Φ^l·α + Φ^g·α over the candidates with non-local features

A new model of labelings is a new module here; the learners (``structperc.learn``) and
``structperc.trainer.fit`` do not change.
"""

from structperc.structures.base import Structure, check_capabilities
from structperc.structures.candidates import CandidateList
from structperc.structures.chain import ChainData, ChainStructure
from structperc.structures.choice import structure_for
from structperc.structures.label_chunk import LabelChunkStructure, PartData
from structperc.structures.rescoring import DocumentRescoring

__all__ = [
    "CandidateList",
    "ChainData",
    "ChainStructure",
    "DocumentRescoring",
    "LabelChunkStructure",
    "PartData",
    "Structure",
    "check_capabilities",
    "structure_for",
]
