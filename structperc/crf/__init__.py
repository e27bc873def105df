"""The CRF baseline: torch-struct's linear chain on structperc's potentials.

``adapter``  potentials [B, T, L, L] (from, to) <-> torch-struct edges [B, T-1, L, L] (to, from);
             log Z, marginals, path scores and log-probabilities (n-best lists for reranking).
``semiring`` a log semiring whose matrix products go through BLAS (faster than torch-struct's).
``chain``    torch-struct's linear-chain scan over that product, without its chart's logaddexp.
``sequential`` torch-struct's linear chain scanned position by position (scaled forward-backward).
``row_edges`` edge features: torch-struct's edges of packed rows straight from the token scores.
``packing``  documents end to end in rows that fill the scan's chart (no padding).
``transition`` ``features.edges=false``: torch-struct's edges from node scores and one matrix.
``support``  ``learner.support=observed``: the (feature, label) pairs seen in training (CRFsuite's).
``lookup``   differentiable sparse lookups into the weight tables, with a transposed backward.
``objective`` the penalised likelihood and its gradient over length-sorted document buckets.
``optimization`` the iteration loop and stopping rules both optimizers share.
``lbfgs``    L-BFGS over tensor lists and full-batch training; ``sgd``: mini-batch SGD with a
             lazily scaled prior and mini-batch training.
``learner``  the ``CRF`` learner of the chain structure (``fit``).
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
