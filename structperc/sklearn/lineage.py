"""The record a fitted model keeps of the trainings it went through: ``info["lineage"]``.

One entry per ``fit`` or ``partial_fit`` (``lineage_entry``), appended to the lineage of the
model it continued (``continuation.py``), so that a model tells which data sizes, algorithms,
settings and epochs made it, and what each training added to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only
    from structperc.sklearn.training import TrainingLog


def jsonable(params: dict) -> dict:
    """``params`` with every value a JSON scalar (others as their str)."""
    plain = (str, int, float, bool, type(None))
    return {k: v if isinstance(v, plain) else str(v) for k, v in params.items()}


def lineage_entry(
    call: str, params: dict, train, log: TrainingLog, previous, attributes, labels, start
) -> dict:
    """One training in a model's lineage (``info["lineage"]``): the call, whether it continued
    a model, the algorithm and its settings, the data's size, the epochs (iterations), what it
    added to the model, and what it started from ("zero", "continued": the model's training
    state, "the model's weights": its predicting weights, ``continuation.py``)."""
    before_attributes = len(previous.attributes) if previous is not None else 0
    before_labels = list(previous.labels) if previous is not None else []
    if start is None:
        began = "zero"
    elif start.updater or start.learner:
        began = "continued"  # the learner's state too: averaging sums, variances
    else:
        began = "the model's weights"
    return {
        "call": call,
        "continued": previous is not None,
        "algorithm": params["algorithm"],
        "settings": jsonable(params),
        "sequences": len(train.numbers),
        "tokens": train.num_tokens,
        "epochs": len(log.iterations),
        "stopped_by": log.stopped_by,
        "attributes": len(attributes),
        "new_attributes": len(attributes) - before_attributes,
        "new_labels": [label for label in labels if label not in before_labels],
        "start": began,
    }
