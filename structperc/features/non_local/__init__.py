"""Non-local (document-level) features Φ^g(x, y) of a candidate labeling (Kazama & Torisawa 2007).

Kazama & Torisawa (2007, §5) use non-local features "based on Finkel et al. (2005)": phrase
and sub-phrase consistency, their "majority" versions "as used in Krishnan and Manning (2006)",
and their own conjunction consistency.  The paper names the families and does not define them;
the definitions in the family modules are ours, written to follow the cited work in spirit.
Every feature is a function of the tokens and of ONE candidate labeling y only, never of the
gold labels, so it can score any candidate.

Each family is a slow reference function on strings (tokens, mentions) -> Counter, and a
vectorised counterpart on a ``MentionBatch`` of n candidates -> counts [n, K+1, K+1]:

    notation.py        tokens, mentions, occurrences, feature strings, sentences, connectors
    phrase.py          ``phrase``: equal-string mentions of two classes, or a class and "O"
    subphrase.py       ``subphrase``: a mention inside the string of another mention
    majority.py        ``tokmaj``, ``entmaj``, ``supmaj``: token, entity, super-entity majority
    conjunction.py     ``conj``: the conjuncts of "A , B and C" / "A or B"
    (``tests/oracles/non_local.py``: ``document_features``, Φ^g of one candidate, the families
    summed: the reference the vectorised path is tested against)
    codes.py           the closed code space (family, c, c') and the feature string of a code
    document_index.py  ``DocumentIndex``: what all candidates of a document share
    mention_batch.py   ``MentionBatch``: all mentions of n candidates and their class counts
    vectorized.py      ``candidate_codes``: code counts [n, codes] of n candidates

``structperc.features.document.NonLocalFeatures`` holds the settings and the vocabulary (code ->
feature id) and returns Φ^g of n candidates in CSR form for ``EmbeddingBag(G, 1, mode="sum")``.

References: J. R. Finkel, T. Grenager, C. Manning (2005), Incorporating non-local information
into information extraction systems by Gibbs sampling, ACL.  V. Krishnan, C. D. Manning (2006),
An effective two-stage model for exploiting non-local dependencies in named entity recognition,
ACL-COLING.  J. Kazama, K. Torisawa (2007), A new perceptron algorithm for sequence labeling
with non-local features, EMNLP-CoNLL.
"""

from structperc.features.non_local.conjunction import conjunction_consistency
from structperc.features.non_local.document_index import DocumentIndex
from structperc.features.non_local.majority import (
    entity_majority,
    superentity_majority,
    token_majority,
)
from structperc.features.non_local.mention_batch import MentionBatch
from structperc.features.non_local.phrase import phrase_consistency
from structperc.features.non_local.subphrase import subphrase_consistency
from structperc.features.non_local.vectorized import candidate_codes

__all__ = [
    "DocumentIndex",
    "MentionBatch",
    "candidate_codes",
    "conjunction_consistency",
    "entity_majority",
    "phrase_consistency",
    "subphrase_consistency",
    "superentity_majority",
    "token_majority",
]
