"""Why a reranker (Collins 2002; Kazama & Torisawa 2007, 6.3) chose a candidate of its list.

A unit's candidates score F(x) = w_0 · β L(x) + Σ_s w_s h_s(x) [+ Φ^l(x)·α^l]
(``structures/candidates.py``).  The winner is the candidate of highest F; for every candidate
the explanation gives its F and its margin to the winner, and for the runner-up (the best other
candidate) the features between the two: the structure's ``row_delta`` read against the
weights, plus, where w_0 is a constant that is not learned (re-ranking 1: ``base_weight``), the
base term w_0 β (L(winner) − L(runner-up)) as a feature of its own.  They add up to the margin.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from structperc.explain.contributions import Contribution, Explained, Namer, Term, contributions
from structperc.explain.names import BASE
from structperc.structures.candidates import CandidateList, RankingBatch


@dataclass
class RankingExplanation(Explained):
    """A unit's list: the winner's and runner-up's rows, every candidate's F, the features."""

    winner: int
    runner_up: int | None
    scores: list[float]
    base: list[float]
    margin: float | None
    contributions: list[Contribution] = field(default_factory=list)

    def to_json(self, top: int | None = 10) -> dict:
        """A JSON object with every candidate's scores, the ``top`` contributions (None: all)
        and the rest's sum."""
        best = self.scores[self.winner]
        return {
            "winner": self.winner,
            "runner_up": self.runner_up,
            "margin": self.margin,
            "candidates": [
                {"row": k, "score": s, "first_model_score": b, "margin_to_winner": best - s}
                for k, (s, b) in enumerate(zip(self.scores, self.base, strict=True))
            ],
            **self.contributions_json(top),
        }


@torch.no_grad()
def explain_ranking(
    structure: CandidateList, batch: RankingBatch, namer: Namer
) -> RankingExplanation:
    """The explanation of one unit's list (rows counted from the first candidate)."""
    first = batch.first_candidate
    scores, _ = structure.row_scores(batch)
    cand = scores[first:]  # [m]
    winner = int(cand.argmax())
    base = batch.base[first:].tolist()
    if len(cand) < 2:
        return RankingExplanation(winner, None, cand.tolist(), base, None)
    others = cand.clone()
    others[winner] = float("-inf")
    runner_up = int(others.argmax())
    a, b = first + winner, first + runner_up
    items = contributions(structure.row_delta(batch, a, b), structure.weights.tables(), namer)
    if structure.base_weight is not None and structure.base_scale:  # a constant w_0
        value = structure.base_scale * float(batch.base[a] - batch.base[b])
        fixed = Term("", value, float(structure.base_weight))
        items.append(Contribution("base", 0, BASE, (fixed,), value * fixed.weight))
        items.sort(key=lambda c: -abs(c.contribution))
    margin = float(cand[winner] - cand[runner_up])
    return RankingExplanation(winner, runner_up, cand.tolist(), base, margin, items)
