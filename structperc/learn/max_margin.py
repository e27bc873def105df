"""The max-margin update of Shimizu & Haas (2006, Alg. 4.3), for any structure.

Algorithm 4.1: for each instance (x_i, y_i), y' = argmax_y s(x_i, y) under the current weights;
if y' != y_i the weights move along d = Phi(x_i, y_i) - Phi(x_i, y') by a step

    MMVP  (Alg. 4.3, max-margin update)  tau = max(0, min((l(y') - s(y_i) + s(y')) / ||d||^2, C))

with l the structure's loss (``structure.loss``: Hamming over POS tags + NP tags for the
label-chunk structure, over labels for a chain).  The paper's SMO step with alpha_i(y_i) = 1,
alpha_i(y') = 0 reduces to MMVP with C = 1, and so does single-best MIRA (McDonald et al. 2005;
Crammer & Singer 2003): after an unclipped step, s(y_i) - s(y') = l(y').  With tau = 1 the rule
is the voted perceptron (VP), ``perceptron.Perceptron(average=True)``.  MMVP predicts with the
averaged weights (Collins 2002), which ``model.updates.Updater`` keeps.
"""

from __future__ import annotations

from structperc.learn.base import SizedStep, check_bpm_runs


def max_margin_tau(loss: float, margin: float, norm_sq: float, C: float) -> float:
    """The step of Alg. 4.3: clip((loss - margin) / norm_sq, 0, C); 0 when norm_sq is 0.

    margin = s(y*) - s(y') under the current weights, norm_sq = ||Phi(y*) - Phi(y')||^2.
    """
    if norm_sq <= 0:
        return 0.0
    return max(0.0, min((loss - margin) / norm_sq, C))


class MaxMarginPerceptron(SizedStep):
    """Alg. 4.1 with Alg. 4.3, the max-margin (SMO / single-best MIRA) step clipped at ``C``."""

    def __init__(self, C: float = 1.0, average: bool = True, bpm_runs: int = 0, label_costs=None):
        if C <= 0:
            raise ValueError(f"learner.C must be > 0, got {C}")
        self.C = C
        self.average = average
        self.bpm_runs = check_bpm_runs(bpm_runs)
        self.label_costs = label_costs  # loss-augmented y' and a weighted loss (learn/costs.py)

    def tau(self, loss: float, margin: float, norm_sq: float) -> tuple[float, dict]:
        """Alg. 4.3's step (``max_margin_tau``), clipped at ``C``."""
        return max_margin_tau(loss, margin, norm_sq, self.C), {}
