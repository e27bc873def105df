"""Φ^g(x, y) of one candidate labeling as a Counter of feature strings: the reference definition.

Φ^g(x, y) = sum over the enabled families f of f(w, M(y)) (notation in ``notation.py``): the
mentions M(y) of the candidate and the compared token strings w go through the six family
functions, and their Counters are added.  Slow and obviously correct; the vectorised path
(``vectorized.candidate_codes``) is tested against it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from structperc.data.tags import spans
from structperc.features.non_local.conjunction import conjunction_consistency
from structperc.features.non_local.majority import (
    entity_majority,
    superentity_majority,
    token_majority,
)
from structperc.features.non_local.notation import FAMILIES, check_families, normalize
from structperc.features.non_local.phrase import phrase_consistency
from structperc.features.non_local.subphrase import subphrase_consistency

FAMILY_FUNCTIONS = {
    "phrase": phrase_consistency,
    "subphrase": subphrase_consistency,
    "tokmaj": token_majority,
    "entmaj": entity_majority,
    "supmaj": superentity_majority,
    "conj": conjunction_consistency,
}


def document_features(
    tokens: Sequence[str],
    labeling: Sequence[str] | Sequence[int],
    labels: Sequence[str] | None = None,
    families: Iterable[str] = FAMILIES,
    casefold: bool = False,
    sentence_starts: Sequence[int] = (0,),
) -> Counter:
    """Φ^g(x, y) of one candidate as a Counter of feature strings (the reference definition).

    ``labeling`` is IOB2 tag strings, or label ids when ``labels`` (the id -> tag list) is given.
    """
    tags = [labels[i] for i in labeling] if labels is not None else list(labeling)
    words = normalize(tokens, casefold)
    mentions = spans(tags)
    out: Counter = Counter()
    for name in check_families(families):
        if name == "conj":
            out.update(conjunction_consistency(words, mentions, sentence_starts))
        else:
            out.update(FAMILY_FUNCTIONS[name](words, mentions))
    return out
