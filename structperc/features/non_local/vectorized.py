"""Φ^g of n candidate labelings at once: code counts [n, 6 K1^2] (codes in ``codes.py``).

The candidates [n, T] (label ids) become entity classes (0 = "O") and B- flags [n, T]; a
``MentionBatch`` finds all their mentions and class counts at once, and every enabled family
fills its block out[:, family] [n, K1, K1] with one NumPy kernel over all mentions of all
candidates (never a Python loop over candidates or mentions).  A row with a label -1 (a missing
n-best entry) counts 0.  Equal to ``reference.document_features`` of every row, code for code.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from structperc.features.non_local.conjunction import conjunction_counts
from structperc.features.non_local.document_index import DocumentIndex
from structperc.features.non_local.majority import (
    entity_majority_counts,
    superentity_majority_counts,
    token_majority_counts,
)
from structperc.features.non_local.mention_batch import MentionBatch
from structperc.features.non_local.notation import FAMILIES
from structperc.features.non_local.phrase import phrase_counts
from structperc.features.non_local.subphrase import subphrase_counts

KERNELS = {
    "phrase": phrase_counts,
    "subphrase": subphrase_counts,
    "tokmaj": token_majority_counts,
    "entmaj": entity_majority_counts,
    "supmaj": superentity_majority_counts,
    "conj": conjunction_counts,
}


def candidate_codes(
    index: DocumentIndex,
    candidates: np.ndarray,
    label_class: np.ndarray,
    label_begin: np.ndarray,
    families: Sequence[str],
    num_classes: int,
) -> np.ndarray:
    """Code counts [n, 6 * K1^2] of candidates [n, T] (label ids; a row with -1 counts 0)."""
    n, k1 = len(candidates), num_classes + 1
    out = np.zeros((n, len(FAMILIES), k1, k1))
    if n == 0 or candidates.shape[1] == 0:
        return out.astype(np.int64).reshape(n, len(FAMILIES) * k1 * k1)
    bad = (candidates < 0).any(axis=1)
    cand = np.where(bad[:, None], 0, candidates)
    cls, begin = label_class[cand], label_begin[cand]
    cls[bad] = 0
    batch = MentionBatch(cls, begin, index, k1)
    for name in families:
        out[:, FAMILIES.index(name)] = KERNELS[name](batch)
    return np.rint(out).astype(np.int64).reshape(n, -1)
