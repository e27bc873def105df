"""The passive-aggressive updates PA, PA-I and PA-II (Crammer, Dekel, Keshet, Shalev-Shwartz &
Singer 2006, "Online Passive-Aggressive Algorithms", JMLR 7), for structured prediction as
CRFsuite's ``train_passive_aggressive.c`` trains a chain (Okazaki 2007).

For each instance (x, y*) with y' = argmax_y s(x, y) under the current weights w: when y' != y*,
with d = Phi(x, y*) - Phi(x, y') (duplicate entries summed) and

    loss = s(y') - s(y*) + sqrt(l(y*, y'))     error_sensitive (CRFsuite's default)
    loss = s(y') - s(y*) + 1                   otherwise

(l the structure's loss: the tokens labeled wrong, for a chain), the weights move to
w + tau d with

    PA     (pa_type=0)  tau = loss / ||d||^2
    PA-I   (pa_type=1)  tau = min(C, loss / ||d||^2)
    PA-II  (pa_type=2)  tau = loss / (||d||^2 + 1 / (2 C)),

the closed-form solutions of  min ||w' - w||^2 / 2 (+ C xi, + C xi^2)  subject to
w' . d >= l-margin - xi (Crammer et al. 2006, eqs. 6-8, with the cost-sensitive margin of their
section 8).  After an unclipped PA step, s(y*) - s(y') = sqrt(l) (resp. 1) exactly.  Nothing
moves when y' = y*, as in CRFsuite (the loss there can still be positive, but the rival would be
the gold labeling itself).  ``average`` predicts with the averaged weights (CRFsuite's
``averaging``, on by default; ``model.updates.Updater`` keeps the sums).
"""

from __future__ import annotations

import math

from structperc.learn.base import SizedStep, check_bpm_runs

PA_TYPES = {0: "PA", 1: "PA-I", 2: "PA-II"}


def pa_loss(margin: float, wrong: float, error_sensitive: bool) -> float:
    """The cost-sensitive hinge of CRFsuite: -margin + sqrt(wrong) (or + 1), where
    margin = s(y*) - s(y') and ``wrong`` = l(y*, y')."""
    return -margin + (math.sqrt(wrong) if error_sensitive else 1.0)


def pa_tau(loss: float, norm_sq: float, C: float, pa_type: int) -> float:
    """The step of PA (0), PA-I (1) or PA-II (2) for ``loss`` and ||d||^2 = ``norm_sq``;
    0 when the loss is not positive or d is 0 (labelings whose features coincide)."""
    if loss <= 0 or norm_sq <= 0:
        return 0.0
    if pa_type == 0:
        return loss / norm_sq
    if pa_type == 1:
        return min(C, loss / norm_sq)
    return loss / (norm_sq + 0.5 / C)


class PassiveAggressive(SizedStep):
    """PA / PA-I / PA-II (``pa_type``) with aggressiveness ``C`` (CRFsuite's ``c``).

    Args:
        C: aggressiveness (PA-I's clip, PA-II's 1 / (2 C) term; unused by PA).
        pa_type: 0 = PA, 1 = PA-I, 2 = PA-II (CRFsuite's ``type``, default 1).
        error_sensitive: the margin to reach is sqrt(tokens wrong) rather than 1.
        average: predict with the averaged weights (CRFsuite's ``averaging``).
        bpm_runs: Kazama & Torisawa's BPM initialisation (0: off).
    """

    def __init__(
        self,
        C: float = 1.0,
        pa_type: int = 1,
        error_sensitive: bool = True,
        average: bool = True,
        bpm_runs: int = 0,
        label_costs=None,
    ):
        self.label_costs = label_costs  # loss-augmented decoding (learn/costs.py)
        if pa_type not in PA_TYPES:
            raise ValueError(
                f"learner.pa_type must be 0 (PA), 1 (PA-I) or 2 (PA-II), got {pa_type}"
            )
        if not C > 0:
            raise ValueError(f"learner.C must be > 0, got {C}")
        self.C = float(C)
        self.pa_type = int(pa_type)
        self.error_sensitive = bool(error_sensitive)
        self.average = bool(average)
        self.bpm_runs = check_bpm_runs(bpm_runs)

    @property
    def name(self) -> str:
        return PA_TYPES[self.pa_type]

    def tau(self, loss: float, margin: float, norm_sq: float) -> tuple[float, dict]:
        """The PA step of the hinge ``pa_loss``; the hinge is reported (CRFsuite's per-epoch
        "Loss")."""
        hinge = pa_loss(margin, loss, self.error_sensitive)
        return pa_tau(hinge, norm_sq, self.C, self.pa_type), {"loss": hinge}
