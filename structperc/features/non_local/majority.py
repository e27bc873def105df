"""The majority families ``tokmaj``, ``entmaj``, ``supmaj``: token, entity and super-entity
majority (Krishnan & Manning 2006), the "majority" versions of phrase and sub-phrase consistency
in Kazama & Torisawa (2007, §5).  Notation in ``notation.py``.

**tokmaj** (token majority)
    every token i inside a mention m: V_i = the classes of the *other* labeled positions j != i
    with w_j = w_i (one vote each); if V_i is not empty, ``tokmaj=c(m)|maj(V_i)``.
    Example: "Clinton ... Clinton ... Clinton" as B-PER, B-PER, B-ORG -> tokmaj=PER|PER twice
    (each PER sees one PER and one ORG: a tie, kept by its own class), tokmaj=ORG|PER once.

**entmaj** (entity majority)
    every mention m: V = the classes of the other mentions m' != m with str(m') = str(m);
    if V is not empty, ``entmaj=c(m)|maj(V)``.
    Example: "Jordan ... Jordan ... Jordan" as B-LOC, B-LOC, B-PER -> entmaj=LOC|LOC twice
    (each LOC sees LOC and PER: a tie, kept by its own class), entmaj=PER|LOC.

**supmaj** (super-entity majority)
    every mention m: V = the classes of the mentions m' whose string properly contains str(m);
    if V is not empty, ``supmaj=c(m)|maj(V)``.
    Example: "Bank of England ... England" as B-ORG I-ORG I-ORG ... B-LOC -> supmaj=LOC|ORG.

maj(V) is the most frequent class of V; a tie goes to c(m) when c(m) is among the tied classes
(as if m voted for itself), otherwise to the alphabetically first.

Vectorised: the votes of every item (labeled token or mention) are a class-major vector
[K+1, M] (row 0, "O", ignored): token counts per (candidate, class, token id) minus the item
itself for ``tokmaj``, ``MentionBatch.same`` minus the mention itself for ``entmaj``,
``MentionBatch.sup`` for ``supmaj``; maj(V) is a running argmax over the K classes
(``count_majorities``), the own class scoring half a vote more to win its ties.

Reference: V. Krishnan, C. D. Manning (2006), An effective two-stage model for exploiting
non-local dependencies in named entity recognition, ACL-COLING.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from structperc.data.tags import OUTSIDE
from structperc.features.non_local.mention_batch import MentionBatch
from structperc.features.non_local.notation import Mention, contains, feature


def majority(votes: Counter, own: str) -> str:
    """The most frequent class of ``votes``; a tie goes to ``own``, else alphabetically first."""
    best = max(votes.values())
    tied = sorted(c for c, v in votes.items() if v == best)
    return own if own in tied else tied[0]


def token_majority(tokens: Sequence[str], mentions: Sequence[Mention]) -> Counter:
    """``tokmaj=c|maj`` per mention token: the majority class of the same token elsewhere."""
    out: Counter = Counter()
    cls = [OUTSIDE] * len(tokens)
    for s, e, c in mentions:
        cls[s:e] = [c] * (e - s)
    for s, e, c in mentions:
        for i in range(s, e):
            votes = Counter(cls[j] for j in range(len(tokens)) if j != i and tokens[j] == tokens[i])
            votes.pop(OUTSIDE, None)
            if votes:
                out[feature("tokmaj", c, majority(votes, c))] += 1
    return out


def entity_majority(tokens: Sequence[str], mentions: Sequence[Mention]) -> Counter:
    """``entmaj=c|maj`` per mention: the majority class of the other equal-string mentions."""
    out: Counter = Counter()
    for k, (s, e, c) in enumerate(mentions):
        votes = Counter(
            c2
            for k2, (s2, e2, c2) in enumerate(mentions)
            if k2 != k and tokens[s2:e2] == tokens[s:e]
        )
        if votes:
            out[feature("entmaj", c, majority(votes, c))] += 1
    return out


def superentity_majority(tokens: Sequence[str], mentions: Sequence[Mention]) -> Counter:
    """``supmaj=c|maj`` per mention: the majority class of the mentions containing its string."""
    out: Counter = Counter()
    for s, e, c in mentions:
        votes = Counter(c2 for s2, e2, c2 in mentions if contains(tokens[s2:e2], tokens[s:e]))
        if votes:
            out[feature("supmaj", c, majority(votes, c))] += 1
    return out


def count_majorities(b: MentionBatch, row: np.ndarray, own: np.ndarray, votes: np.ndarray):
    """[n, K1, K1]: count of (candidate, own class, majority class) over items with votes.

    ``votes`` [K1, M] are class counts per item (row 0, "O", is ignored); ties go to ``own``,
    then to the lowest class index (alphabetical).
    """
    best = np.full(len(own), 0.5)  # a class needs a vote to win
    arg = np.zeros(len(own), dtype=np.int64)
    for c in range(1, b.k1):
        score = votes[c] + 0.5 * (own == c)
        better = score > best
        best = np.where(better, score, best)
        arg[better] = c
    ok = arg > 0
    flat = (row[ok] * b.k1 + own[ok]) * b.k1 + arg[ok]
    return np.bincount(flat, minlength=b.n * b.k1 * b.k1).reshape(b.n, b.k1, b.k1)


def token_majority_counts(b: MentionBatch) -> np.ndarray:
    """[n, K1, K1]: out[r, c, d] = how often ``tokmaj=c|d`` fires in candidate r."""
    f = np.flatnonzero(b.ent)
    row = f // b.T
    own = b.cls_flat[f]
    V = b.index.num_types
    key = row * V + b.index.tok[f - row * b.T]
    counts = np.bincount(own * (b.n * V) + key, minlength=b.k1 * b.n * V).reshape(b.k1, -1)
    votes = counts[:, key] - (own == np.arange(b.k1)[:, None])
    return count_majorities(b, row, own, votes)


def entity_majority_counts(b: MentionBatch) -> np.ndarray:
    """[n, K1, K1]: out[r, c, d] = how often ``entmaj=c|d`` fires in candidate r."""
    votes = b.same() - (b.c == np.arange(b.k1)[:, None])
    return count_majorities(b, b.row, b.c, votes)


def superentity_majority_counts(b: MentionBatch) -> np.ndarray:
    """[n, K1, K1]: out[r, c, d] = how often ``supmaj=c|d`` fires in candidate r."""
    return count_majorities(b, b.row, b.c, b.sup())
