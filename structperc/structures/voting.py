"""Freund & Schapire's voted prediction over fixed candidate lists (Collins 2002, Figure 4).

Training a perceptron from zero weights over n instances produces the weight vectors w^1 ... w^n
(w^i after instance i).  At prediction every w^i votes for its best candidate of a unit, and the
candidate with the most votes wins (ties: the first model's rank).  w^i changes only at updates:
with update j made while processing an instance after ``t_j`` completed ones, the vector after
update j lasts t_{j+1} − t_j instances (the zero vector t_1, the last one n − t_J).

``VoteState`` replays the updates in chunks of c: the score changes of every row under the c
updates are X' D, with D [G', c] the changes of the G' features the chunk touches and X' [R, G']
the rows where those features fire (from X^T of the global features, each feature once per
chunk); their running sum gives every row's score under the c vectors, and a per-unit argmax of
each column the c winners.  Cost per chunk: O(R c) plus the incidences of the touched
features.  The state advances with the training, so evaluating after every epoch replays each
update once.
"""

from __future__ import annotations

import torch
from torch import Tensor

from structperc.model.updates import SparseDelta
from structperc.structures.candidates import CandidateList, RankingData


class VoteState:
    """The votes of the weight vectors seen so far, on the units of ``data``."""

    def __init__(self, structure: CandidateList, data: RankingData, max_block: int = 2**24):
        if structure.weights.chain is not None:
            raise ValueError("voting is implemented for the base score and global features")
        self.data = data
        U, first = len(data), data.first_candidate
        R = len(data.base)
        self.unit_of = torch.repeat_interleave(torch.arange(U), data.offsets.diff())  # [R]
        self.slot = torch.arange(R) - data.offsets[self.unit_of] - first  # [R]
        self.is_cand = self.slot >= 0
        self.m = max(int((data.offsets.diff() - first).max()) if U else 1, 1)
        self.base = structure.base_scale * data.base.double()  # [R] the feature β L(x)
        w0 = 0.0 if structure.base_weight is None else structure.base_weight
        self.scores = w0 * self.base  # [R] under the zero weights (a fixed w_0 counts)
        self.learned_base = structure.base_weight is None
        # X^T: the rows of every global feature
        ids = data.ids.long()
        self.order = torch.argsort(ids, stable=True)
        self.sorted_ids = ids[self.order]
        self.row_of_id = torch.repeat_interleave(torch.arange(R), data.id_offsets.diff())
        self.votes = torch.zeros((U, self.m), dtype=torch.float64)
        self.winners = self._winners(self.scores.unsqueeze(1))[:, 0]  # [U] of the last vector
        self.since = 0  # when the last vector started
        self.done = 0  # updates replayed
        self.block = max(1, max_block // max(R, 1))

    def _winners(self, scores: Tensor) -> Tensor:
        """Per unit, the best candidate slot under each column of scores [R, c] -> [U, c]."""
        c = scores.shape[1]
        padded = torch.full((len(self.data), self.m, c), float("-inf"), dtype=torch.float64)
        padded[self.unit_of[self.is_cand], self.slot[self.is_cand]] = scores[self.is_cand]
        return padded.argmax(dim=1)

    def _changes(self, deltas: list[SparseDelta]) -> Tensor:
        """The score change of every row under each delta, [R, c]."""
        c = len(deltas)
        base_coef = torch.zeros(c, dtype=torch.float64)
        index, values, column = [], [], []
        for j, delta in enumerate(deltas):
            for name, (idx, vals) in delta.parts.items():
                if name == "base":
                    base_coef[j] += float(vals.double().sum()) if self.learned_base else 0.0
                elif name == "global":
                    index.append(idx.cpu())
                    values.append(vals.double().cpu())
                    column.append(torch.full((len(idx),), j, dtype=torch.long))
                else:
                    raise ValueError(f"voting does not handle table {name!r}")
        out = self.base.unsqueeze(1) * base_coef.unsqueeze(0)  # [R, c]
        if index:
            # the features the chunk changes (each once), their changes per update [G', c] ...
            feats, inverse = torch.unique(torch.cat(index), return_inverse=True)
            change = torch.zeros((len(feats), c), dtype=torch.float64)
            change.index_put_((inverse, torch.cat(column)), torch.cat(values), accumulate=True)
            # ... and the rows where they fire: X restricted to those features, [R, G']
            lo = torch.searchsorted(self.sorted_ids, feats)
            n = torch.searchsorted(self.sorted_ids, feats, right=True) - lo
            pos = torch.repeat_interleave(lo - (n.cumsum(0) - n), n) + torch.arange(int(n.sum()))
            rows = self.row_of_id[self.order[pos]]
            cols = torch.repeat_interleave(torch.arange(len(feats)), n)
            x = torch.sparse_coo_tensor(
                torch.stack([rows, cols]),
                torch.ones(len(rows), dtype=torch.float64),
                (len(self.data.base), len(feats)),
                check_invariants=True,
            ).coalesce()  # a feature firing twice in a row counts twice
            out += torch.sparse.mm(x, change)
        return out

    def advance(self, history: list[tuple[int, SparseDelta]]) -> None:
        """Replay the updates of ``history`` not replayed yet."""
        while self.done < len(history):
            chunk = history[self.done : self.done + self.block]
            running = self.scores.unsqueeze(1) + self._changes([d for _, d in chunk]).cumsum(1)
            winners = self._winners(running)  # [U, c]: after each update of the chunk
            times = [t for t, _ in chunk]
            # the previous last vector lasted until the chunk's first update
            self._add(self.winners, times[0] - self.since)
            for k in range(len(chunk) - 1):
                self._add(winners[:, k], times[k + 1] - times[k])
            self.winners, self.since = winners[:, -1], times[-1]
            self.scores = running[:, -1]
            self.done += len(chunk)

    def _add(self, winners: Tensor, count: int) -> None:
        if count:
            self.votes[torch.arange(len(winners)), winners] += count

    def best_rows(self, seen: int) -> list[int]:
        """The row of every unit's most voted candidate, the last vector lasting until ``seen``."""
        votes = self.votes.clone()
        votes[torch.arange(len(votes)), self.winners] += seen - self.since
        best = votes.argmax(dim=1)  # ties: the first candidate (the first model's rank)
        return (self.data.offsets[:-1] + self.data.first_candidate + best).tolist()
