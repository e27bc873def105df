"""The scikit-learn face of structperc: ``CRF``, a drop-in for ``sklearn_crfsuite.CRF``.

    from structperc.sklearn import CRF, metrics

``estimator.py`` (the estimator), ``attributes.py`` (python-crfsuite's feature format),
``algorithms.py`` (CRFsuite's algorithm names as structperc's learners), ``model.py`` (the fitted
tables as safetensors and JSON), ``training.py`` and ``parallel.py`` (one process or several),
``metrics.py`` (sklearn-crfsuite's metrics).
"""

from structperc.sklearn import metrics, scorers
from structperc.sklearn.estimator import CRF

__all__ = ["CRF", "metrics", "scorers"]
