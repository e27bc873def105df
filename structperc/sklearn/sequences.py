"""The user's sequences as the face reads them: items ``X`` with labels ``y``, any iterables.

``LabelledSequences`` checks each pair as it is read and keeps, of the labels, their ids only
(``gold``: 8 bytes a token, in a typed buffer handed to torch without a copy), numbered in the
order the labels first appear after those it starts with (a warm start's model's); of the
items it keeps nothing (the attribute reading turns them into the matrix,
``attributes.py``).  A token whose label is ``None`` (unknown) or a set of labels (one of
them: ``partial.py``) has gold id -1 and its allowed labels kept beside (``open``).
"""

from __future__ import annotations

import itertools
from array import array
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import torch

from structperc.sklearn.partial import is_label, named_labels


class LabelledSequences:
    """Sequences of items ``X`` and their labels ``y`` (any iterables), checked as they are
    read: ``sequences()`` yields the items of each sequence that has tokens, and meanwhile
    records its number in ``numbers`` and its label ids in ``gold``.

    labels: the labels known before reading, ids in order; ``grow``: a new label takes the next
    id (else it is -1, a label no prediction can match: held-out data).
    """

    def __init__(
        self,
        X,
        y,
        x_name: str,
        y_name: str,
        labels: Sequence[str] = (),
        grow: bool = True,
    ):
        self.X, self.y = X, y
        self.x_name, self.y_name = x_name, y_name
        self.numbers = array("q")  # [D] the position in X of each sequence read
        self.gold = array("q")  # [N] label ids (-1: left open, or unknown to the model)
        self.open: dict[int, list[int] | None] = {}  # token -> its allowed label ids (None: any)
        known = zip(labels, range(len(labels)), strict=True)
        if grow:
            self.index: dict[str, int] = defaultdict(itertools.count(len(labels)).__next__, known)
            self._ids = self.index.__getitem__
        else:
            self.index = dict(known)
            get = self.index.get
            self._ids = lambda label: get(label, -1)

    @property
    def labels(self) -> list[str]:
        """The labels, ids in order: those it started with, then the new ones as they first
        appeared."""
        return list(self.index)

    @property
    def num_tokens(self) -> int:
        return len(self.gold)

    def gold_tensor(self) -> torch.Tensor:
        """The label ids [N] (int64) over the buffer itself (read nothing after)."""
        return torch.from_numpy(np.frombuffer(self.gold, dtype=np.int64))

    def allowed_tensor(self) -> torch.Tensor | None:
        """[N, L] bool: the labels each token allows (its gold alone where known), or None when
        ``y`` left no token open."""
        if not self.open:
            return None
        gold = self.gold_tensor()
        allowed = torch.zeros(len(gold), len(self.index), dtype=torch.bool)
        known = (gold >= 0).nonzero().squeeze(1)
        allowed[known, gold[known]] = True
        free = [t for t, ids in self.open.items() if ids is None]  # (one indexing for them all)
        allowed[free] = True
        for t, ids in self.open.items():
            if ids is not None:
                allowed[t, ids] = True
        return allowed

    def label_counts(self) -> dict[str, int]:
        """How many tokens have each label as their known label."""
        gold = self.gold_tensor()
        counts = torch.bincount(gold[gold >= 0], minlength=len(self.index)).tolist()
        return dict(zip(self.index, counts, strict=True))

    def sequences(self, as_list: bool = False):
        """The non-empty sequences of X (a generator; a list when ``as_list``, for reading in
        forked blocks), with ValueError naming the first sequence whose items and labels
        differ in number, or a label that is not a str."""
        read = self._read()
        return list(read) if as_list else read

    def _read(self):
        xs, ys = iter(self.X), iter(self.y)
        end = object()
        ids = self._ids
        s = 0
        while True:
            xseq, yseq = next(xs, end), next(ys, end)
            if xseq is end or yseq is end:
                if xseq is not yseq:  # one ran out first
                    longer = self.x_name if yseq is end else self.y_name
                    raise ValueError(
                        f"{self.x_name} and {self.y_name} differ in length: {longer} has more "
                        f"than {s} sequences"
                    )
                return
            plain = check_sequence(xseq, yseq, s, self.x_name, self.y_name)
            if len(xseq):  # an empty sequence has nothing to learn from
                self.numbers.append(s)
                if plain:
                    self.gold.extend(map(ids, yseq))
                else:
                    self._read_partial(yseq, ids)
                yield xseq
            s += 1

    def _read_partial(self, yseq, ids) -> None:
        """A sequence with open tokens: a set of one label is that label."""
        for label in yseq:
            if isinstance(label, str):
                self.gold.append(ids(label))
                continue
            names = named_labels(label)
            if len(names) == 1:
                self.gold.append(ids(names[0]))
                continue
            self.open[len(self.gold)] = (
                None if label is None else [i for i in map(ids, names) if i >= 0]
            )
            self.gold.append(-1)


def check_sequence(xseq, yseq, s: int, x_name: str, y_name: str) -> bool:
    """Whether sequence ``s``'s labels are all str (else some are left open: None or a set);
    ValueError when its items and labels differ in number, or a label is none of these."""
    if len(xseq) != len(yseq):
        raise ValueError(
            f"{x_name}[{s}] has {len(xseq)} items but {y_name}[{s}] has {len(yseq)} labels"
        )
    plain = True
    for t, label in enumerate(yseq):
        if isinstance(label, str):
            continue
        if not is_label(label):
            raise ValueError(
                f"{y_name}[{s}][{t}]: a label must be a str, None (unknown) or a set of str "
                f"(one of them), got {type(label).__name__}"
            )
        plain = False
    return plain


def blocks_of(X, size: int):
    """Consecutive lists of up to ``size`` items of the iterable ``X``."""
    it = iter(X)
    while block := list(itertools.islice(it, size)):
        yield block
