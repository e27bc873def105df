"""Compiled CPU loops (numba) for the work whose cost is per-instance Python overhead.

An online learner's epoch over short sequences (sentences of ~14 tokens) spends its time in the
fixed cost of a few dozen NumPy/torch calls per instance, not in arithmetic
(``experiments/sklearn_online/``).  Here one compiled function runs a whole epoch of the
perceptron, PA or AROW on a chain with a transition matrix (CRFsuite's model), writing the
``EmbeddingBag`` tables in place through NumPy views of their storage, with the same updates,
averaging sums and statistics as the learners' ``step`` (``learn/``), which stay the
reference and the path on other devices and structures (``online.compiled_epochs`` says which).

numba is optional (``pip install 'structperc[sklearn]'`` installs it): without it every epoch
runs the Python loop of ``train.run_epochs``.
"""

from __future__ import annotations

import importlib.util


def available() -> bool:
    """Whether numba can be imported (the compiled loops exist)."""
    return importlib.util.find_spec("numba") is not None
