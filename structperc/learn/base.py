"""What every learner shares: the per-instance statistics it reports."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class StepStats:
    """What one training instance did.

    tokens:  tokens of the instance.
    errors:  tokens the model mislabeled before the update (Kazama's per-word training error).
    updates: weight updates made (0 or 1 for the plain perceptron).
    """

    tokens: int = 0
    errors: int = 0
    updates: int = 0

    def __iadd__(self, other: StepStats) -> StepStats:
        self.tokens += other.tokens
        self.errors += other.errors
        self.updates += other.updates
        return self
