"""Iterative parameter mixing (McDonald, Hall & Mann 2010, "Distributed Training Strategies for
the Structured Perceptron", NAACL, Fig. 2): every rank trains one epoch on its shard from the
same weights w_0, then the weights are mixed,

    w' = sum_r mu_r w_r = w_0 + sum_r mu_r D_r,      D_r = w_r - w_0,

uniformly (mu_r = 1 / R) or weighted by the ranks' update counts (mu_r = k_r / sum_s k_s, the
paper's other mixing), and the next epoch starts from w' everywhere.

Averaged weights.  The averaged perceptron predicts with the mean of every weight vector visited;
here the vectors of all ranks, every epoch.  Each rank keeps ``Updater``'s lazy sums (seen N, sums
u with N w - u = S, the sum of the N vectors so far).  After an epoch in which rank r saw m_r
instances (M = sum_r m_r) and moved u by U_r, the sum of all vectors is
S' = S + sum_r [m_r w_0 + (N + m_r) D_r - U_r], and the state that represents it is

    seen' = N + M,     u' = u_0 + (N + M)(w' - w_0) + sum_r [U_r - (N + m_r) D_r],

so that seen' w' - u' = S'.  On one rank this is the serial state unchanged (and no mixing
runs at all), so one rank equals serial averaging exactly.

Only entries that some rank changed move, so a rank sends the entries it touched during the
epoch (``Updater.journal``): their flat indices, mu_r D_r and U_r - (N + m_r) D_r, gathered by
every rank.  Every rank then adds the same gathered numbers to the same w_0 (a copy taken at the
epoch's start), so the ranks' tables stay bit-identical.
"""

from __future__ import annotations

import torch
from torch import Tensor

from structperc.distributed import Group, Stopwatch
from structperc.model.updates import Updater
from structperc.model.weights import flat_at

WEIGHTINGS = ("uniform", "updates")


class ParameterMixing:
    """Mix an ``Updater``'s tables (and averaging sums) over ``group`` after each epoch.

    Call ``begin`` before an epoch and ``end(updates)`` after it; ``seconds`` sums the time
    spent communicating and mixing.
    """

    def __init__(self, group: Group, updater: Updater, weighting: str = "uniform"):
        if weighting not in WEIGHTINGS:
            raise ValueError(f"trainer.mixing must be one of {WEIGHTINGS}, got {weighting!r}")
        if updater.history is not None:
            raise ValueError(
                "the voted perceptron's votes cannot be mixed across ranks; "
                "train it with distributed=none"
            )
        self.group, self.updater, self.weighting = group, updater, weighting
        self.watch = Stopwatch()

    @property
    def seconds(self) -> float:
        return self.watch.seconds

    @torch.no_grad()
    def begin(self) -> None:
        """Remember w_0 (and u_0, N) and start the journal of touched entries."""
        up = self.updater
        self.start = {n: t.detach().clone() for n, t in up.weights.tables().items()}
        self.start_sums = {n: t.clone() for n, t in up.sums.items()}
        self.start_seen = up.seen
        up.journal = []

    @torch.no_grad()
    def end(self, updates: int) -> None:
        """Mix after an epoch in which this rank made ``updates`` updates."""
        up, group = self.updater, self.group
        journal, up.journal = up.journal or [], None
        with self.watch:
            seen0 = self.start_seen
            m_r = up.seen - seen0
            counts = group.all_gather(m_r, updates)
            M = int(sum(c[0] for c in counts))
            total_updates = sum(c[1] for c in counts)
            if self.weighting == "updates" and total_updates > 0:
                mu = updates / total_updates
            else:
                mu = 1.0 / group.world
            for name, table in up.weights.tables().items():
                touched = [i for n, i in journal if n == name]
                self._mix_table(name, table, touched, mu, seen0, m_r, M)
            up.seen = seen0 + M
        self.start = self.start_sums = {}

    def _mix_table(
        self, name: str, table: Tensor, touched: list[Tensor], mu, seen0, m_r, M
    ) -> None:
        up, group = self.updater, self.group
        w0 = self.start[name].view(-1)  # flat indices address the table row-major (flat_at)
        idx = torch.unique(torch.cat(touched)) if touched else w0.new_zeros(0, dtype=torch.long)
        w, pos = flat_at(table.data, idx)
        d = w[pos] - w0[idx]  # D_r at the touched entries
        parts = [d * mu]
        if up.average:
            u, u0 = up.sums[name].view(-1), self.start_sums[name].view(-1)
            parts.append((u[idx] - u0[idx]) - (seen0 + m_r) * d)
        idx_by_rank = group.all_gather_varlen(idx)
        vals_by_rank = group.all_gather_varlen(torch.cat(parts))
        # rank s sent mu_s D_s at its k_s entries, then (averaging) U_s - (N + m_s) D_s
        ks = [len(i) for i in idx_by_rank]
        all_idx = torch.cat(idx_by_rank)
        union, inverse = torch.unique(all_idx, return_inverse=True)
        mixed_d = w0.new_zeros(len(union))
        mixed_d.index_add_(
            0, inverse, torch.cat([v[:k] for v, k in zip(vals_by_rank, ks, strict=True)])
        )
        w, pos = flat_at(table.data, union)
        w[pos] = w0[union] + mixed_d
        if up.average:
            correction = w0.new_zeros(len(union))
            correction.index_add_(
                0, inverse, torch.cat([v[k:] for v, k in zip(vals_by_rank, ks, strict=True)])
            )
            u, u0 = up.sums[name].view(-1), self.start_sums[name].view(-1)
            u[union] = u0[union] + (seen0 + M) * mixed_d + correction
