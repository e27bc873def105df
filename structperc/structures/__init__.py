"""Structures: what a learner and the training loop know of a model of labelings.

    base.py         the ``Structure`` interface and the capability check
    chain.py        the first-order chain (Viterbi, exact n-best; marginals: the CRF's model)
    label_chunk.py  the label-chunk structure of Shimizu & Haas (2006): the exact O(n^2) DP
    rescoring.py    Kazama & Torisawa's (2007) document rescoring: n-best of the chain,
                    Φ^a·α = Φ^l·α + Φ^g·α over the candidates with non-local features

A new model of labelings is a new module here; the learners (``structperc.learn``) and
``structperc.trainer.fit`` do not change.
"""
