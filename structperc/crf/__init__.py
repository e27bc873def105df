"""The CRF baseline: torch-struct's linear chain on structperc's potentials.

``adapter``  potentials [B, T, L, L] (from, to) <-> torch-struct edges [B, T-1, L, L] (to, from);
             log Z, marginals, path scores and log-probabilities (n-best lists for reranking).
``semiring`` a log semiring whose matrix products go through BLAS (faster than torch-struct's).
``lookup``   differentiable sparse lookups into the weight tables, with a transposed backward.
``lbfgs``    L-BFGS over tensor lists; ``sgd``: mini-batch SGD with a lazily scaled prior.
``learner``  the ``CRF`` learner (``fit_batch``): the only code that runs autograd's backward.
"""

from structperc.crf.adapter import (
    log_partition,
    marginals,
    nll,
    node_marginals,
    path_log_probs,
    path_scores,
)

__all__ = ["log_partition", "marginals", "nll", "node_marginals", "path_log_probs", "path_scores"]
