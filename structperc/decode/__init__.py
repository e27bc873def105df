"""Decoding: the dynamic programs of first-order chains and of the label-chunk structure, on
potentials alone (no features, no weights), batched as tensor operations.

Potentials are ``[B, T, L, L]``, indexed ``(t, from, to)``; a length tensor ``[B]`` says where
each sequence ends.

    viterbi.py                 the best labeling (blocked max-plus scans, exact ties)
    nbest.py, sidetracks.py    the exact n best labelings
    marginals.py               log Z, marginals, nll, log p(y) (torch-struct's ``LinearChain``)
    scaled_scan.py, sequential_scan.py, transition_scan.py, underflow.py
                               the scans behind them (BLAS products, position by position,
                               one shared transition matrix, exact rows after an underflow)
    max_marginals.py           the best path through each (position, label)
    scores.py                  the score of given labelings
    constraints.py             tag-scheme constraints as -inf transitions
    node_offsets.py            restrictions and costs as offsets of the node scores
    forbidden_spans.py         forbidden entity spans, on an augmented label set
    label_chunk.py             Shimizu & Haas's (2006) exact label-chunk DP
    label_chunk_constraints.py its constrained decoding
    maxplus.py                 max-plus matrix algebra

Each DP has a slow, obviously correct counterpart the tests hold it against (``tests/oracles/``).
"""

# The package's public names are its modules: several hold a function of their own name
# (``viterbi.viterbi``, ``nbest.nbest``, ``marginals.marginals``), which a re-export here would
# hide the module behind.
from structperc.decode import (
    constraints,
    label_chunk,
    marginals,
    max_marginals,
    nbest,
    scores,
    viterbi,
)

__all__ = ["constraints", "label_chunk", "marginals", "max_marginals", "nbest", "scores", "viterbi"]
