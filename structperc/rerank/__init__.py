"""Reranking (Collins 2002; Kazama & Torisawa 2007, section 6.3): the n-best lists of first models
by a k-fold jackknife, and the global features of their candidates.

    candidates.py  the folds of the jackknife, the n-best lists of every unit (document or
                   sentence) scored by a first model, their cache on disk
    features.py    global features of the candidates (Collins's, or the non-local ones) as
                   CSR rows, and the ``RankingData`` the candidate-list structure reads

The structure is ``structures/candidates.py``; the rankers are learners (``learn/``:
``ranking.py``, Collins's voted perceptron; ``boosting.py``, his boosting with the exponential
loss; ``proposed.py`` with ``local_update=False``, Kazama & Torisawa's re-rankers); the first
models are trained fold by fold in ``tasks/jackknife.py``, and the task is ``tasks/rerank.py``.
"""

from structperc.rerank.candidates import ListSettings, nbest_lists
from structperc.rerank.features import list_rows, ranking_data

__all__ = ["ListSettings", "list_rows", "nbest_lists", "ranking_data"]
