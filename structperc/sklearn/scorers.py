"""Scorers for scikit-learn's model selection (``cross_val_score``, ``GridSearchCV``), as
``sklearn_crfsuite.scorers`` names them."""

from sklearn.metrics import make_scorer

from structperc.sklearn.metrics import flat_accuracy_score, sequence_accuracy_score

flat_accuracy = make_scorer(flat_accuracy_score)
sequence_accuracy = make_scorer(sequence_accuracy_score)
