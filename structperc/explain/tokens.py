"""Why a chain labeled each token as it did: the runner-up and the features between them.

For the predicted labeling y' of a document and a token t, the runner-up is the best labeling z
with another label at t.  For a first-order chain (Viterbi, the CRF, the scikit-learn face) that
is the max-marginal path (``decode/max_marginals.py``):

    z = argmax { s(x, y) : y_t ≠ y'_t },   margin = s(x, y') − s(x, z) >= 0,

which may differ from y' at neighbouring tokens too (a two-token entity changes as a whole).
For Kazama & Torisawa's rescoring (the proposed and candidate algorithms) the prediction is the
best of the n' candidates under Φ^a·α = Φ^l·α^l + Φ^g·α^g; the runner-up is the best candidate
under Φ^a with another label at t, and where all n' candidates agree at t, the chain's local
runner-up scored under Φ^a (``in_candidates`` is then False: the model could not have chosen it).
The margin is s(y') − s(z) by the structure's own ``score``, and the features' contributions
(``contributions.py``: the structure's ``delta`` read against the weights, local, transition and
non-local alike) add up to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from structperc.decode.max_marginals import max_marginals
from structperc.explain.contributions import Contribution, Namer, contributions, total
from structperc.structures.chain import ChainStructure
from structperc.structures.rescoring import DocumentBatch, DocumentRescoring


@dataclass
class TokenExplanation:
    """One token's label against its runner-up.

    position: the token's index in its document; token: its text.
    predicted, runner_up: the labels at the token (runner_up None: no other labeling exists).
    margin: s(y') − s(z).  changed: the positions where z differs from y', and z's labels there.
    contributions: every feature of Φ(y') − Φ(z), largest |contribution| first.
    in_candidates: whether z is among the candidates the model chose from (rescoring).
    """

    position: int
    token: str
    predicted: str
    runner_up: str | None
    margin: float | None
    changed: dict[int, str] = field(default_factory=dict)
    contributions: list[Contribution] = field(default_factory=list)
    in_candidates: bool = True

    @property
    def explained(self) -> float:
        """Σ of the contributions: the margin, to rounding."""
        return total(self.contributions)

    def to_json(self, top: int | None = 10) -> dict:
        """A JSON object with the ``top`` contributions (None: all) and the rest's sum."""
        shown = self.contributions if top is None else self.contributions[:top]
        rest = self.contributions[len(shown) :]
        return {
            "position": self.position,
            "token": self.token,
            "predicted": self.predicted,
            "runner_up": self.runner_up,
            "margin": self.margin,
            "runner_up_changes": {str(p): label for p, label in self.changed.items()},
            "in_candidates": self.in_candidates,
            "contributions": [c.to_json() for c in shown],
            "other_contributions": {"count": len(rest), "sum": total(rest)},
        }


def _paths_explanation(
    structure, batch, predicted: Tensor, runner_up: Tensor, namer: Namer
) -> tuple[float, list[Contribution]]:
    """(s(y') − s(z) by the structure's ``score``, the contributions of its ``delta``)."""
    best = float(structure.score(batch, predicted)[0])
    other = float(structure.score(batch, runner_up)[0])
    delta = structure.delta(batch, predicted, runner_up)
    return best - other, contributions(delta, structure.weights.tables(), namer)


def _token_explanation(t, tokens, labels, predicted, runner_up, margin_items, in_candidates=True):
    changed = {
        u: labels[z] for u, (y, z) in enumerate(zip(predicted, runner_up, strict=True)) if y != z
    }
    margin, items = margin_items
    return TokenExplanation(
        t,
        tokens[t],
        labels[predicted[t]],
        labels[runner_up[t]],
        margin,
        changed,
        items,
        in_candidates,
    )


@torch.no_grad()
def explain_chain(
    structure: ChainStructure,
    batch,
    tokens: list[str],
    namer: Namer,
    positions: list[int] | None = None,
) -> tuple[list[int], list[TokenExplanation]]:
    """(the predicted label ids [T], the explanation of each token at ``positions``, default
    all) of a one-document ``FeatureBatch``."""
    labels = structure.weights.labels
    predicted = structure.argmax(batch)  # [T]
    mm = max_marginals(structure.potentials(batch))
    pred = predicted.tolist()
    out = []
    for t in range(len(pred)) if positions is None else positions:
        scores = mm.scores[t].clone()
        scores[pred[t]] = float("-inf")
        r = int(scores.argmax())
        if scores[r] == float("-inf"):  # one label, or the constraints allow no other
            out.append(TokenExplanation(t, tokens[t], labels[pred[t]], None, None))
            continue
        z = mm.path_through(t, r)
        runner_up = torch.tensor(z, device=predicted.device)
        explained = _paths_explanation(structure, batch, predicted, runner_up, namer)
        out.append(_token_explanation(t, tokens, labels, pred, z, explained))
    return pred, out


@torch.no_grad()
def explain_rescoring(
    structure: DocumentRescoring,
    batch: DocumentBatch,
    namer: Namer,
    positions: list[int] | None = None,
) -> tuple[list[int], list[TokenExplanation]]:
    """``explain_chain`` for the n'-best rescored with non-local features (module docstring)."""
    labels = structure.weights.labels
    tokens = batch.documents[0].tokens
    cands = structure.candidates(batch, structure.n)  # paths [m, T], total [m]
    predicted = cands.best()  # [T]
    pred = predicted.tolist()
    mm = max_marginals(structure.potentials(batch))  # the local model's
    out = []
    for t in range(len(pred)) if positions is None else positions:
        other = cands.paths[:, t] != predicted[t]  # [m]
        if bool(other.any()):
            scores = torch.where(other, cands.total, torch.full_like(cands.total, float("-inf")))
            runner_up, in_candidates = cands.paths[int(scores.argmax())], True
        else:  # every candidate agrees here: the best local labeling with another label
            local = mm.scores[t].clone()
            local[pred[t]] = float("-inf")
            r = int(local.argmax())
            if local[r] == float("-inf"):
                out.append(TokenExplanation(t, tokens[t], labels[pred[t]], None, None))
                continue
            runner_up = torch.tensor(mm.path_through(t, r), device=predicted.device)
            in_candidates = False
        explained = _paths_explanation(structure, batch, predicted, runner_up, namer)
        z = runner_up.tolist()
        out.append(_token_explanation(t, tokens, labels, pred, z, explained, in_candidates))
    return pred, out
