"""What an online step trains towards: the gold labeling, the latent gold of a partially
annotated instance, and the cost-augmented batch the learner decodes.

**Partial annotation** (``data/partial.py``): an instance whose tokens allow several labels has
no one gold labeling.  The perceptron family then moves towards the best labeling the
annotation allows under the current weights, y^ = argmax over compatible y of s(x, y): the
latent structured perceptron (Sun et al. 2009; Fernandes & Brefeld 2011 for partial labels).
``structure.complete`` decodes it exactly (the chain: Viterbi under -inf restrictions; the
document rescoring: the best under Φ^a of the compatible n-best under Φ^l, the same search its
argmax makes), and the learner's step sees y^ as the gold.  When the model already predicts a
compatible labeling, y^ is that labeling and no update is made.

**Costs** (``learn/costs.py``): with ``learner.label_costs`` the batch the learner decodes has
its node scores raised by the costs of missing the gold labels at the known tokens (an open
token costs nothing), so every decoder the learner calls (argmax, n-best, candidates) is
loss-augmented, and ``structure.loss`` weighs each missed label by its cost.
"""

from __future__ import annotations

import logging

from structperc.learn.costs import cost_vector

log = logging.getLogger(__name__)


class StepTargets:
    """The (batch, gold) each ``learner.step`` of an epoch gets, for ``structure`` and ``data``.

    ``active`` is False when neither partial annotation nor costs apply: then ``__call__``
    returns what it is given."""

    def __init__(self, learner, structure, data):
        self.structure, self.data = structure, data
        self.nbest = learner.nbest
        allowed = getattr(data, "allowed", None)
        self.open = None
        if allowed is not None and getattr(data, "labels", None) is not None:
            open_docs = data.open_documents()
            if bool(open_docs.any()):
                self.open = open_docs.tolist()
                if "partial" not in structure.capabilities:
                    raise ValueError(
                        f"the training data leave tokens open (partial annotation), which the "
                        f"{type(structure).__name__} structure does not train from"
                    )
        labels = getattr(structure.weights, "labels", None)
        costs = None
        if getattr(learner, "label_costs", None) is not None:
            if labels is None or not hasattr(structure, "cost_augmented"):
                raise ValueError(
                    f"learner.label_costs: the {type(structure).__name__} structure has no "
                    "per-label costs"
                )
            costs = cost_vector(learner.label_costs, labels)
        if hasattr(structure, "label_costs"):
            structure.label_costs = costs
        self.costs = costs
        self.active = self.open is not None or costs is not None

    def __call__(self, i: int, batch, gold):
        """(batch, gold) of instance i: the latent gold of an open instance, the batch
        cost-augmented when there are costs."""
        known = None
        if self.open is not None and self.open[i]:
            allowed = self.data.allowed_rows(i).to(gold.device)
            gold = self.structure.complete(batch, allowed, self.nbest)
            known = allowed.sum(1) == 1
        if self.costs is not None:
            batch = self.structure.cost_augmented(batch, gold, known)
        return batch, gold

    def describe(self) -> str:
        parts = []
        if self.open is not None:
            parts.append(f"{sum(self.open)} partially annotated instances (latent gold)")
        if self.costs is not None:
            parts.append("label costs (cost-augmented decoding)")
        return " and ".join(parts)
