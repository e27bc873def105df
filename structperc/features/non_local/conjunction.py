"""The ``conj`` family: conjunction consistency (Kazama & Torisawa 2007, §5).  Notation and
``CONNECTORS`` in ``notation.py``.

**conj**
    two mentions consecutive in y (no mention between them) are *linked* when the tokens
    between them are exactly ",", "and", "or", ", and" or ", or" ("and"/"or" in any case) and
    both lie in one sentence; a *conjunction* is a maximal chain of linked mentions with at
    least one "and"/"or" link ("Paris , France" alone is not one).  Every unordered pair of
    mentions of a conjunction: ``conj=a|b``.
    Example: "in U.S. , EU , and Japan" as O B-LOC O B-ORG O O B-LOC -> conj=LOC|LOC,
    conj=LOC|ORG twice.

Vectorised (``conjunction_counts``): the link kind between consecutive mentions of a candidate
is the connector kind of the one or two tokens between them (``DocumentIndex.conn1``/``conn2``;
longer gaps never link), 0 across candidates or sentences; a cumulative count of the non-links
numbers the chains; the chains with an "and"/"or" link get their class counts C [chains, K1],
and out[r] sums their unordered pairs (C_c C_d, self-pairs removed from the diagonal and halved
there, ``unordered_pairs``).

Reference: J. Kazama, K. Torisawa (2007), A new perceptron algorithm for sequence labeling with
non-local features, EMNLP-CoNLL.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations

import numpy as np

from structperc.features.non_local.mention_batch import MentionBatch, unordered_pairs
from structperc.features.non_local.notation import (
    AND_OR,
    CONNECTORS,
    Mention,
    pair,
    sentence_ids,
)


def link(tokens: Sequence[str], end: int, start: int, sentence: Sequence[int]) -> int:
    """The connector between a mention ending at ``end`` and one starting at ``start``.

    ``COMMA``, ``AND_OR`` or 0 (no link); ``sentence`` is the sentence id of every token.
    """
    gap = tuple(t.lower() for t in tokens[end:start])
    if sentence[end - 1] != sentence[start]:
        return 0
    return CONNECTORS.get(gap, 0)


def conjunction_consistency(
    tokens: Sequence[str], mentions: Sequence[Mention], sentence_starts: Sequence[int] = (0,)
) -> Counter:
    """``conj=a|b`` per pair of mentions of one "A , B and C" / "A or B" conjunction."""
    sentence = sentence_ids(len(tokens), sentence_starts)
    ordered = sorted(mentions)
    chains: list[tuple[list[str], bool]] = []
    for k, (s, _, c) in enumerate(ordered):
        kind = link(tokens, ordered[k - 1][1], s, sentence) if k else 0
        if kind:
            chains[-1][0].append(c)
            chains[-1] = (chains[-1][0], chains[-1][1] or kind == AND_OR)
        else:
            chains.append(([c], False))
    out: Counter = Counter()
    for classes, has_and_or in chains:
        if has_and_or:
            for a, b in combinations(classes, 2):
                out[pair("conj", a, b)] += 1
    return out


def conjunction_counts(b: MentionBatch) -> np.ndarray:
    """[n, K1, K1]: out[r, c, d] = how often ``conj=c|d`` fires in candidate r (c <= d)."""
    idx, k1 = b.index, b.k1
    out = np.zeros((b.n, k1, k1))
    if len(b.c) < 2:
        return out
    e, s2 = b.e[:-1], b.s[1:]
    gap = s2 - e
    kind = np.where(gap == 1, idx.conn1[e], np.where(gap == 2, idx.conn2[e], 0))
    kind[(b.row[:-1] != b.row[1:]) | (idx.sentence[e - 1] != idx.sentence[s2])] = 0
    chain = np.concatenate([[0], np.cumsum(kind == 0)])  # chain id of every mention
    valid = np.bincount(chain[:-1], weights=kind == AND_OR, minlength=chain[-1] + 1) > 0
    keep = valid[chain]
    if not keep.any():
        return out
    ids, first, local = np.unique(chain[keep], return_index=True, return_inverse=True)
    C = np.bincount(local.reshape(-1) * k1 + b.c[keep], minlength=len(ids) * k1)
    C = C.reshape(len(ids), k1).astype(np.float64)
    pairs = unordered_pairs(C[:, :, None] * C[:, None, :], C)
    np.add.at(out, b.row[keep][first], pairs)
    return out
