"""The ``phrase`` family: phrase consistency (Finkel et al. 2005's label consistency of equal
strings), as used by Kazama & Torisawa (2007, §5).  Notation in ``notation.py``.

**phrase**
    (a) every unordered pair of distinct mentions {m, m'} with str(m) = str(m'):
        ``phrase=a|b`` with {a, b} = {c(m), c(m')};
    (b) every pair (mention m, occurrence p of str(m) all of whose tokens are labeled O):
        ``phrase=c(m)|O``.  Occurrences that are partly labeled are left to ``subphrase``.
    Example: "Jordan beat Jordan in Jordan" as B-PER O B-LOC O O -> phrase=LOC|PER,
    phrase=PER|O, phrase=LOC|O (the third "Jordan" is unlabeled).

Vectorised (``phrase_counts``): (a) is out[r, c, d] = sum_s N_c N_d over the strings s of
candidate r, minus the self-pairs on the diagonal, halved there (``unordered_pairs``); (b) counts,
per string and candidate, the occurrences with no labeled token (those at whose two ends the
cumulative count of labeled tokens, [T + 1, n], is equal), and adds that count once per mention
of the string to out[r, c, 0].

Reference: J. R. Finkel, T. Grenager, C. Manning (2005), Incorporating non-local information
into information extraction systems by Gibbs sampling, ACL.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from itertools import combinations

import numpy as np

from structperc.data.tags import OUTSIDE
from structperc.features.non_local.mention_batch import MentionBatch, unordered_pairs
from structperc.features.non_local.notation import Mention, feature, occurrences, pair


def _by_string(tokens: Sequence[str], mentions: Sequence[Mention]) -> dict[tuple, list[str]]:
    groups: dict[tuple, list[str]] = defaultdict(list)
    for s, e, c in mentions:
        groups[tuple(tokens[s:e])].append(c)
    return groups


def phrase_consistency(tokens: Sequence[str], mentions: Sequence[Mention]) -> Counter:
    """``phrase=a|b`` per pair of equal-string mentions, ``phrase=c|O`` per unlabeled copy."""
    out: Counter = Counter()
    labeled = np.zeros(len(tokens) + 1, dtype=bool)
    for s, e, _ in mentions:
        labeled[s:e] = True
    for string, classes in _by_string(tokens, mentions).items():
        for a, b in combinations(classes, 2):
            out[pair("phrase", a, b)] += 1
        free = sum(1 for p in occurrences(tokens, string) if not labeled[p : p + len(string)].any())
        for c in classes:
            if free:
                out[feature("phrase", c, OUTSIDE)] += free
    return out


def phrase_counts(b: MentionBatch) -> np.ndarray:
    """[n, K1, K1]: out[r, c, d] = how often ``phrase=c|d`` fires in candidate r (d = 0: "O")."""
    out = unordered_pairs(b.by_class(b.same()), b.per_class())
    if b.S:
        occ = [b.index.occurrences(s) for s in b.present.tolist()]
        sizes = [len(o) for o in occ]
        lens = np.array([len(b.index.string_of[s]) for s in b.present.tolist()])
        starts = np.concatenate(occ)
        cum = np.zeros((b.T + 1, b.n), dtype=np.int32)  # labeled tokens before t, [T + 1, n]
        np.cumsum(b.ent.T, axis=0, out=cum[1:])
        free = cum[starts + np.repeat(lens, sizes)] == cum[starts]  # [Q, n]: all O
        groups = np.cumsum([0, *sizes[:-1]])
        J = np.add.reduceat(free, groups, axis=0, dtype=np.int64)  # [S, n]
        out[:, :, 0] += b.per_class(J.reshape(-1)[b.sid * b.n + b.row])
    return out
