"""The perceptron for ranking of Collins (2002, Figures 3 and 4), over fixed candidate lists.

Training (Figure 3) is the structured perceptron with the candidate list as the decoder: for each
unit, j = argmax_j F(x_j, w); if x_j is not the reference x_1 (the gold labeling, or the
candidate with the fewest tag errors), w += h(x_1) − h(x_j), with h(x) = {β L(x), h_1(x) ...
h_m(x)}: the first model's score scaled by β (``beta``; Collins picks 0.5 on dev) and the global
features.  Prediction (Figure 4) lets every intermediate weight vector vote for its best
candidate (``vote=True``; Freund & Schapire's voted perceptron, ``structures.candidates
.CandidateList.vote``), or uses the averaged weights (``average=True``), or the last ones.
"""

from __future__ import annotations

from structperc.learn.base import check_bpm_runs
from structperc.learn.perceptron import Perceptron


class RankingPerceptron(Perceptron):
    """Figure 3's training; ``vote`` (Figure 4) or ``average`` at prediction."""

    requires = frozenset({"argmax", "ranking"})

    def __init__(
        self, beta: float = 0.5, vote: bool = True, average: bool = False, bpm_runs: int = 0
    ):
        if vote and average:
            raise ValueError("learner: choose vote=true or average=true, not both")
        super().__init__(average=average, bpm_runs=check_bpm_runs(bpm_runs))
        self.base_scale = beta
        self.vote = vote
