"""Perceptrons with non-local features: Kazama & Torisawa (2007), Algorithms 4.1 and 4.2.

With Φ^l the local (chain) features, Φ^g the non-local document features and Φ^a = Φ^l + Φ^g,
for each document (x, y*):

    {y^n} <- the n-best labelings under Φ^l·α (exact, ``decode/nbest.py``); y^1, y^2 its first two
    y'  <- argmax over {y^n} of Φ^a·α;  y'' <- the best candidate other than y* under Φ^a·α
    (A) if y' != y* and Φ^a(y*)·α - Φ^a(y')·α <= C^a:   α += Φ^a(y*) - Φ^a(y')
        elif Φ^a(y*)·α - Φ^a(y'')·α <= C^a:             α += Φ^a(y*) - Φ^a(y'')
    (B) else (Alg. 4.2 only: make the local model good enough too):
        if y^1 != y*:                                   α += Φ^l(y*) - Φ^l(y^1)
        elif Φ^l(y*)·α - Φ^l(y^2)·α <= C^l:             α += Φ^l(y*) - Φ^l(y^2)

Alg. 4.1 (the candidate algorithm) is (A) alone: ``local_update=False``.  The per-word
training error counts the tokens y' gets wrong.  Each step reports in ``StepStats.extra``:
``updates_a``, ``updates_b`` and ``gold_in_nbest`` (y* among the n candidates).

The n-best lists, Φ^a·α of the candidates and the differences come from the document rescoring
structure (``structures/rescoring.py``), which holds the non-local feature extractor; the learner
only chooses the rival.  BPM initialisation (Herbrich & Graepel 2000, as the paper uses it:
``bpm_runs`` single epochs from α = 0 over differently shuffled data, averaged, as the starting
point) is run by ``trainer.fit``; the learner only says how many runs it wants.
"""

from __future__ import annotations

import torch

from structperc.learn.base import Learner, StepStats, check_bpm_runs
from structperc.model.updates import Updater


class ProposedPerceptron(Learner):
    """Alg. 4.2 (``local_update=True``) or Alg. 4.1 (``False``) with n-best size ``n``."""

    requires = frozenset({"rescoring"})

    def __init__(
        self,
        n: int = 20,
        C: float = 5657.0,
        C_local: float | None = None,
        local_update: bool = True,
        average: bool = False,
        bpm_runs: int = 10,
        label_costs=None,
    ):
        self.label_costs = label_costs  # loss-augmented candidates (learn/costs.py)
        if n < 2:
            raise ValueError(f"learner.n must be >= 2 (a best and a second best), got {n}")
        self.n, self.C = n, C
        self.C_local = C if C_local is None else C_local
        self.local_update = local_update
        self.average = average
        self.bpm_runs = check_bpm_runs(bpm_runs)

    @property
    def nbest(self) -> int:
        return self.n

    def step(self, structure, updater: Updater, batch, gold) -> StepStats:
        """One update on one document (``structures.rescoring.DocumentBatch``), gold [T]."""
        cands = structure.candidates(batch, self.n, gold=gold)
        cand_total, is_gold = cands.total, cands.is_gold  # [m], [m]
        best = int(cand_total.argmax())
        wrong = cand_total.masked_fill(is_gold, float("-inf"))
        second = int(wrong.argmax())
        stats = StepStats(tokens=len(gold), errors=int((cands.paths[best] != gold).sum()))
        stats.extra["gold_in_nbest"] = int(is_gold.any())
        rival, kind = None, None
        if not is_gold[best] and float(cands.gold_total - cand_total[best]) <= self.C:
            rival, kind = best, "a"
        elif (
            bool(torch.isfinite(wrong[second]))
            and float(cands.gold_total - wrong[second]) <= self.C
        ):
            rival, kind = second, "a"
        elif self.local_update:
            if not is_gold[0]:
                rival, kind = 0, "b"
            elif len(cand_total) > 1 and float(cands.gold_local - cands.local[1]) <= self.C_local:
                rival, kind = 1, "b"
        if rival is not None:
            updater.apply(structure.candidate_delta(batch, gold, cands, rival, total=kind == "a"))
            stats.updates = 1
            stats.extra[f"updates_{kind}"] = 1
        return stats
