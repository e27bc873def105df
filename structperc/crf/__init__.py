"""The CRF: a learner of the chain structure that optimises the penalised likelihood at once.

``learner``      the ``CRF`` learner (``fit``): its settings, the scan chosen once (``resolved``)
``optimization`` the loop both optimisers share and its stopping rules; L-BFGS over tensor lists
                 and full-batch training; mini-batch SGD with a lazily scaled prior
``objective``    the penalised likelihood and its gradient over the buckets
``buckets``      documents in DP buckets: by length, or end to end in rows that fill the chart
``edges``        torch-struct's edges of a bucket straight from its token scores: edge features
                 (for the sequential scan), or one transition matrix (``features.edges=false``)
``sparse``       differentiable lookups X W with a transposed backward; the observed support
                 (``learner.support=observed``: the (feature, label) pairs seen in training)
``factored``     the lookup as A (B W): each feature set that recurs across tokens summed once
``compiled``     ``learner.scan=compiled``: the objective, gradient and SGD epochs of a chain
                 with one transition matrix by ``native/crf_kernels.py`` (numba, CPU)

The chain's log Z and marginals (the three scans: torch-struct's own, the scaled tree, the
sequential forward-backward) are ``decode/marginals.py``'s, which the chain structure offers as
its "marginals" capability.
"""

from structperc.crf.learner import CRF
from structperc.crf.objective import CRFSettings

__all__ = ["CRF", "CRFSettings"]
