"""Compiled CPU loops (numba) for the work whose cost is per-instance Python overhead.

An online learner's epoch over short sequences (sentences of ~14 tokens) spends its time in the
fixed cost of a few dozen NumPy/torch calls per instance, not in arithmetic
(``experiments/sklearn_online/``).  Here one compiled function runs a whole epoch of the
perceptron, PA or AROW on a chain with a transition matrix (CRFsuite's model), or of the
perceptron on a chain with edge features (Kazama & Torisawa's Table 1), writing the
``EmbeddingBag`` tables in place through NumPy views of their storage, with the same updates,
averaging sums and statistics as the learners' ``step`` (``learn/``), which stay the
reference and the path on other devices and structures (``online.compiled_epochs`` says which).

``chain_kernels``  token scores, Viterbi (the torch recursion's ties), an online epoch of the
                   perceptron / PA / AROW
``edge_chain_kernels``  token scores, Viterbi and the perceptron's epoch with edge features
``crf_kernels``    the scaled forward-backward: the CRF's nll and gradient, its SGD epochs,
                   token marginals
``online``         the compiled epoch ``trainer.run_epochs`` takes where it applies
``chain_predict``  Viterbi labels and marginals of CRFsuite's model (the scikit-learn face)

``crf/compiled.py`` runs the CRF's objective and SGD through ``crf_kernels`` and
``sklearn/warm.py`` loads the kernels before ``n_jobs`` ranks fork.  numba is optional
(``pip install 'structperc[sklearn]'`` installs it): without it every epoch runs the Python loop
of ``trainer.run_epochs``, the CRF its torch scans.
"""

from __future__ import annotations

import importlib.util


def available() -> bool:
    """Whether numba can be imported (the compiled loops exist)."""
    return importlib.util.find_spec("numba") is not None


__all__ = ["available"]
