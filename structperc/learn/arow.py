"""AROW, adaptive regularization of weight vectors (Crammer, Kulesza & Dredze 2009, NIPS), for
sequences as Mejer & Crammer (2010, "Confidence in Structured-Prediction using
Confidence-Weighted Models", EMNLP) and CRFsuite's ``train_arow.c`` train it.

Every weight k has a mean mu_k (the weight tables themselves) and a variance sigma_k (a second
table of the same layout, ``variances``, first ``variance`` everywhere: the diagonal of
Sigma).  For each instance (x, y*) with y' = argmax_y mu . Phi(x, y): when y' != y*, with
d = Phi(x, y*) - Phi(x, y') (duplicate entries summed) and the loss
l = s(y') - s(y*) + l(y*, y') (l the structure's loss: the tokens labeled wrong, for a chain;
CRFsuite's cost, without the square root that its PA takes),

    beta  = 1 / (d^T Sigma d + gamma) = 1 / (sum_k sigma_k d_k^2 + gamma)
    alpha = max(0, l) beta
    mu_k    += alpha sigma_k d_k
    sigma_k <- 1 / (1 / sigma_k + d_k^2 / gamma)        variance_rule="crfsuite"
    sigma_k <- sigma_k - beta sigma_k^2 d_k^2           variance_rule="diagonal"

The full-matrix update is Sigma^-1 <- Sigma^-1 + d d^T / gamma, i.e.
Sigma <- Sigma - beta Sigma d d^T Sigma.  CRFsuite keeps a diagonal by adding the diagonal of
d d^T / gamma to the precision ("crfsuite", the default, as CRFsuite trains); the diagonal of
the full update itself (Crammer et al. 2009, section 4) is "diagonal".  The two coincide when
one weight moves; otherwise "diagonal" shrinks each variance less (its denominator sums every
moving weight's sigma_k d_k^2).  CRFsuite predicts with the means (no averaging): ``average``
defaults to False.

The variances are the learner's state (``start``, ``state``, ``load_state``): the per-epoch
checkpoint keeps them, so a killed run resumes exactly.  With parameter mixing over several
ranks (``model/mixing.py``) the means are mixed and every rank keeps its own variances.
"""

from __future__ import annotations

import torch
from torch import Tensor

from structperc.learn.base import Learner, StepStats
from structperc.model.updates import SparseDelta, Updater

VARIANCE_RULES = ("crfsuite", "diagonal")


class AROW(Learner):
    """AROW with initial variance ``variance`` and regularization ``gamma`` (r in the paper).

    Args:
        variance: every weight's variance before training (CRFsuite's default 1).
        gamma: the trade-off r > 0 (CRFsuite's default 1): larger, slower shrinking variances.
        average: predict with the averaged means (CRFsuite: no).
        variance_rule: "crfsuite" (the precision gains d_k^2 / gamma) or "diagonal" (the
            diagonal of the full update); see the module docstring.
    """

    def __init__(
        self,
        variance: float = 1.0,
        gamma: float = 1.0,
        average: bool = False,
        variance_rule: str = "crfsuite",
        label_costs=None,
    ):
        self.label_costs = label_costs  # loss-augmented decoding (learn/costs.py)
        if not variance > 0:
            raise ValueError(f"learner.variance must be > 0, got {variance}")
        if not gamma > 0:
            raise ValueError(f"learner.gamma must be > 0, got {gamma}")
        if variance_rule not in VARIANCE_RULES:
            raise ValueError(
                f"learner.variance_rule must be one of {list(VARIANCE_RULES)}, "
                f"got {variance_rule!r}"
            )
        self.variance = float(variance)
        self.gamma = float(gamma)
        self.average = bool(average)
        self.variance_rule = variance_rule
        self.variances: dict[str, Tensor] | None = None  # per table, its layout: sigma_k

    def start(self, updater: Updater) -> None:
        """Every weight's variance back to ``variance`` (contiguous tables of the weights'
        shapes, dtype and device: flat indices address them as ``row * width + column``)."""
        self.variances = {
            n: torch.full(t.shape, self.variance, dtype=t.dtype, device=t.device)
            for n, t in updater.weights.tables().items()
        }

    def state(self) -> dict[str, Tensor]:
        return {f"variance.{n}": t for n, t in (self.variances or {}).items()}

    def load_state(self, state: dict[str, Tensor]) -> None:
        if self.variances is None:
            raise RuntimeError("AROW.load_state before start")
        for n, t in self.variances.items():
            key = f"variance.{n}"
            if key not in state or tuple(state[key].shape) != tuple(t.shape):
                raise ValueError(f"the checkpoint holds no AROW variances {key} of shape {t.shape}")
            t.copy_(state[key])

    @torch.no_grad()
    def step(self, structure, updater: Updater, batch, gold) -> StepStats:
        """Decode one instance and, if it is wrong, move the means and shrink the variances of
        the weights that d touches."""
        if self.variances is None:
            self.start(updater)
        pred = structure.argmax(batch)
        errors = structure.errors(gold, pred)
        if not errors:
            return StepStats(tokens=len(gold))
        delta = structure.delta(batch, gold, pred)
        loss = structure.loss(gold, pred) - delta.dot(updater.weights.tables())
        parts = {}  # name -> (flat indices [K], d_k [K], sigma_k [K]) on the variances' device
        confidence = self.gamma  # d^T Sigma d + gamma
        for name, (index, d) in delta.coalesced().items():
            sigma = self.variances[name]
            index, d = index.to(sigma.device), d.to(sigma.device, sigma.dtype)
            s = sigma.view(-1)[index]
            parts[name] = (index, d, s)
            confidence += float((s * d * d).sum())
        beta = 1.0 / confidence
        alpha = max(0.0, loss) * beta
        if alpha > 0:
            updater.apply(SparseDelta({n: (i, s * d) for n, (i, d, s) in parts.items()}), alpha)
        for name, (index, d, s) in parts.items():
            if self.variance_rule == "crfsuite":
                shrunk = 1.0 / (1.0 / s + d * d / self.gamma)
            else:
                shrunk = s - beta * s * s * d * d
            self.variances[name].view(-1)[index] = shrunk
        stats = StepStats(tokens=len(gold), errors=errors, updates=int(alpha > 0))
        stats.extra["loss"] = loss  # CRFsuite's per-epoch "Loss"
        return stats
