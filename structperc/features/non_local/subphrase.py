"""The ``subphrase`` family: sub-phrase consistency (after Finkel et al. 2005), as used by
Kazama & Torisawa (2007, §5).  Notation in ``notation.py``.

**subphrase**
    every ordered pair of mentions (m, m') with str(m) a proper contiguous sub-sequence of
    str(m'): ``subphrase=c(m)|c(m')`` (the class of the shorter one first).
    Example: "Bill Clinton said Clinton" as B-PER I-PER O B-PER -> subphrase=PER|PER.

Vectorised (``subphrase_counts``): out[r, c, d] = sum over the mentions i of class c in
candidate r of sup[d, i], the class-d mentions of r whose string properly contains str(i)
(``MentionBatch.sup``).

Reference: J. R. Finkel, T. Grenager, C. Manning (2005), Incorporating non-local information
into information extraction systems by Gibbs sampling, ACL.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from structperc.features.non_local.mention_batch import MentionBatch
from structperc.features.non_local.notation import Mention, contains, feature


def subphrase_consistency(tokens: Sequence[str], mentions: Sequence[Mention]) -> Counter:
    """``subphrase=c|c'`` per mention whose string lies properly inside another mention's."""
    out: Counter = Counter()
    for s, e, c in mentions:
        for s2, e2, c2 in mentions:
            if contains(tokens[s2:e2], tokens[s:e]):
                out[feature("subphrase", c, c2)] += 1
    return out


def subphrase_counts(b: MentionBatch) -> np.ndarray:
    """[n, K1, K1]: out[r, c, d] = how often ``subphrase=c|d`` fires in candidate r."""
    return b.by_class(b.sup())
