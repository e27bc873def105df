"""A model's labels as arrays: valid IOB2 and the chunks of label ids, a batch at a time.

``LabelSet`` does for label ids [N] what ``data.tags.valid_iob2`` and ``data.tags.spans`` do for
tag strings, without a Python step per token: an ``I-X`` that begins a chunk (after ``O``, after
another type, or at a sentence start) becomes ``B-X``, the chunk conlleval reads there; then
every chunk starts at a ``B-X`` and runs over the ``I-X`` that follow.  A label set that is not
a chunk labeling (POS tags: ``plain``) is left as it is and has no chunks.
"""

from __future__ import annotations

import numpy as np

from structperc.data.tags import OUTSIDE


class LabelSet:
    """The labels of a model (id -> tag) and, for chunk tags, their type and B-/I- arrays."""

    def __init__(self, labels: list[str]):
        self.labels = list(labels)
        self.plain = not all(t == OUTSIDE or t[:2] in ("B-", "I-") for t in self.labels)
        self.types = sorted({t[2:] for t in self.labels if t != OUTSIDE}) if not self.plain else []
        index = {t: i for i, t in enumerate(self.labels)}
        # a label's type (0: O, 1 + the type's index), whether it is I-, and its B- (itself)
        self.kind = np.array(
            [0 if self.plain or t == OUTSIDE else 1 + self.types.index(t[2:]) for t in labels],
            dtype=np.int64,
        )
        self.inside = np.array([t.startswith("I-") and not self.plain for t in labels], bool)
        self.begin = np.array([index.get("B-" + t[2:], i) for i, t in enumerate(labels)])
        self.repairable = self.plain or all(
            "B-" + t[2:] in index for t in self.labels if t.startswith("I-")
        )

    def valid(self, ids: np.ndarray, sentence_starts: np.ndarray) -> np.ndarray:
        """[N] label ids as valid IOB2 (module docstring); ``sentence_starts`` [N] bool marks
        the first token of each sentence (and of each document)."""
        if self.plain or not len(ids):
            return ids
        previous = np.r_[0, self.kind[ids[:-1]]]
        opens = self.inside[ids] & (sentence_starts | (previous != self.kind[ids]))
        return np.where(opens, self.begin[ids], ids)

    def chunks(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(starts, ends, type indexes) [C] of the chunks of valid IOB2 label ids [N]: a chunk
        starts at a B- label and ends before the first token that is not an I- label."""
        if self.plain or not len(ids):
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        kind = self.kind[ids]
        starts = np.flatnonzero((kind > 0) & ~self.inside[ids])
        breaks = np.r_[np.flatnonzero(~self.inside[ids]), len(ids)]
        ends = breaks[np.searchsorted(breaks, starts, side="right")]
        return starts, ends, kind[starts] - 1

    def tags(self, ids: np.ndarray) -> list[str]:
        """The tags of label ids [N]."""
        labels = self.labels
        return [labels[i] for i in ids.tolist()]
