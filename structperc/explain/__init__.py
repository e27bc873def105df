"""Explanations of every model kind: why a labeling, and what the weights say.

    contributions.py  a delta Φ(y') − Φ(z) read against the weights: each feature's share
    names.py          names of the tables' rows (features) and columns (labels, pairs, tags)
    tokens.py         a chain's or the rescoring's runner-up per token, and the margin's split
    label_chunk.py    the label-chunk model's runner-ups per token (POS) and per chunk
    ranking.py        a reranker's winner against its runner-up candidate
    weights.py        top features per label and label pair, transitions, non-local families

A saved tagging model is explained by ``structperc.inference.explainer`` (``Tagger.explain``), the
scikit-learn face by ``CRF.explain_weights`` and ``CRF.explain_prediction``.
"""

from structperc.explain.contributions import Contribution
from structperc.explain.label_chunk import explain_label_chunk
from structperc.explain.ranking import RankingExplanation, explain_ranking
from structperc.explain.tokens import (
    DocumentExplanation,
    TokenExplanation,
    explain_chain,
    explain_rescoring,
)
from structperc.explain.weights import chain_weights

__all__ = [
    "Contribution",
    "DocumentExplanation",
    "RankingExplanation",
    "TokenExplanation",
    "chain_weights",
    "explain_chain",
    "explain_label_chunk",
    "explain_ranking",
    "explain_rescoring",
]
