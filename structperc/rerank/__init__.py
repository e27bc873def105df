"""Reranking (Collins 2002; Kazama & Torisawa 2007, section 6.3): first models, n-best lists by a
k-fold jackknife, global features, and the rankers that need the whole lists.

    candidates.py  first models trained on the other folds, the n-best lists of every unit
                   (document or sentence), their cache on disk
    features.py    global features of the candidates (Collins's, or the non-local ones) as
                   CSR rows, and the ``RankingData`` the candidate-list structure reads
    boosting.py    boosting with the exponential loss (Collins, Figure 2)

The structure is ``structures/candidates.py``; the perceptron rankers are in ``learn/``
(``ranking.py``: Collins's voted perceptron; ``proposed.py`` with ``local_update=False``: Kazama &
Torisawa's re-rankers); the task is ``tasks/rerank.py``.
"""
