"""The scikit-learn face of structperc: ``CRF``, a drop-in for ``sklearn_crfsuite.CRF``.

    from structperc.sklearn import CRF, metrics

``estimator.py`` (the estimator), ``items.py`` (python-crfsuite's feature format),
``attributes.py`` (the attribute dictionary and the feature matrix), ``reading.py`` and
``occurrences.py`` (reading items into compact buffers), ``hashing.py`` (hashed attributes),
``sequences.py`` (the user's sequences and labels as they are read), ``algorithms.py``
(CRFsuite's algorithm names as structperc's learners), ``model.py`` (the fitted tables as
safetensors and JSON), ``continuation.py`` and ``lineage.py`` (warm starts, ``partial_fit``,
and the record of a model's trainings), ``training.py`` and ``parallel.py`` (one process or
several), ``metrics.py`` (sklearn-crfsuite's metrics).
"""

from structperc.sklearn import metrics, scorers
from structperc.sklearn.estimator import CRF

__all__ = ["CRF", "metrics", "scorers"]
