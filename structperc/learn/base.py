"""What every learner shares: the per-instance statistics it reports."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class StepStats:
    """What one training instance did.

    tokens:  tokens of the instance.
    errors:  tokens the model mislabeled before the update (Kazama's per-word training error).
    updates: weight updates made (0 or 1 for the plain perceptron).
    extra:   learner-specific counts (e.g. updates of kind A and B), summed over an epoch.
    """

    tokens: int = 0
    errors: int = 0
    updates: int = 0
    extra: Counter = field(default_factory=Counter)

    def __iadd__(self, other: StepStats) -> StepStats:
        self.tokens += other.tokens
        self.errors += other.errors
        self.updates += other.updates
        self.extra.update(other.extra)
        return self
