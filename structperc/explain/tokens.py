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

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

import torch
from torch import Tensor

from structperc.decode.max_marginals import max_marginals
from structperc.decode.scores import path_scores
from structperc.explain.contributions import Contribution, Explained, Namer, contributions
from structperc.structures.chain import ChainStructure
from structperc.structures.rescoring import DocumentBatch, DocumentRescoring


@dataclass
class TokenExplanation(Explained):
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

    def to_json(self, top: int | None = 10) -> dict:
        """A JSON object with the ``top`` contributions (None: all) and the rest's sum."""
        return {
            "position": self.position,
            "token": self.token,
            "predicted": self.predicted,
            "runner_up": self.runner_up,
            "margin": self.margin,
            "runner_up_changes": {str(p): label for p, label in self.changed.items()},
            "in_candidates": self.in_candidates,
            **self.contributions_json(top),
        }


@dataclass
class DocumentExplanation:
    """A document's tokens, predicted labels and the explanation of the tokens asked for."""

    source: str | None
    tokens: list[str]
    predicted: list[str]
    explanations: list[TokenExplanation]

    def to_json(self, top: int | None = 10) -> dict:
        return {
            "source": self.source,
            "tokens": self.tokens,
            "predicted": self.predicted,
            "explanations": [e.to_json(top) for e in self.explanations],
        }


def score_paths(structure, batch, paths: list[Tensor]) -> list[float]:
    """s(x, y) of each labeling [T] in ``paths`` of a one-document batch, as the structure's
    ``score`` computes it (``decode.scores.path_scores`` of its potentials, plus Φ^g·α^g for the
    rescoring), the potentials computed once for all of them."""
    rescoring = isinstance(batch, DocumentBatch)
    chain = structure.chain if rescoring else structure
    fb = batch.features if rescoring else batch
    stacked = torch.stack(paths)  # [K, T]
    local = path_scores(chain.potentials(fb), fb.lengths, stacked.unsqueeze(0))[0]  # [K]
    if not rescoring:
        return local.tolist()
    ids, offsets = structure.doc_features.vectorize(batch.documents[0], stacked)
    return (local + structure.weights.global_scores(ids, offsets)).tolist()


def explained_paths(
    scorer, batch, predicted: Tensor, runners: dict[int, Tensor], namer: Namer
) -> dict[int, tuple[float, list[Contribution]]]:
    """position -> (s(y') − s(z), the contributions of Φ(y') − Φ(z)) for the runner-up z of
    each position, under the weights of ``scorer`` (the structure, or its float64 twin)."""
    distinct: dict[tuple, int] = {}
    for z in runners.values():
        distinct.setdefault(tuple(z.tolist()), len(distinct))
    paths = [predicted] + [torch.tensor(k, device=predicted.device) for k in distinct]
    scores = score_paths(scorer, batch, paths)
    tables = scorer.weights.tables()
    out = {}
    for t, z in runners.items():
        k = 1 + distinct[tuple(z.tolist())]
        delta = scorer.delta(batch, predicted, paths[k])
        out[t] = (scores[0] - scores[k], contributions(delta, tables, namer))
    return out


def _local_runner_up(mm, t: int, label: int, device) -> Tensor | None:
    """The chain's best labeling [T] with another label than ``label`` at ``t`` (the
    max-marginal path through the best other one), or None where there is none (one label, or
    the constraints allow no other)."""
    scores = mm.scores[t].clone()  # [L]
    scores[label] = float("-inf")
    r = int(scores.argmax())
    if scores[r] > float("-inf"):
        return torch.tensor(mm.path_through(t, r), device=device)
    return None


def _explanations(
    scorer,
    batch,
    predicted: Tensor,
    runners: dict[int, Tensor],
    namer: Namer,
    tokens: list[str],
    labels: list[str],
    where: Iterable[int],
    outside: Collection[int] = (),
) -> list[TokenExplanation]:
    """The explanation of each token at ``where`` of the one document of ``batch`` (its
    ``tokens``, the model's ``labels``): against its runner-up in ``runners``
    (``explained_paths``), or without one where it has none; ``outside``: the positions whose
    runner-up is not among the candidates the model chose from."""
    explained = explained_paths(scorer, batch, predicted, runners, namer)
    pred = predicted.tolist()
    out = []
    for t in where:
        if t not in runners:
            out.append(TokenExplanation(t, tokens[t], labels[pred[t]], None, None))
            continue
        z = runners[t].tolist()
        changed = {u: labels[b] for u, (a, b) in enumerate(zip(pred, z, strict=True)) if a != b}
        margin, items = explained[t]
        out.append(
            TokenExplanation(
                t,
                tokens[t],
                labels[pred[t]],
                labels[z[t]],
                margin,
                changed,
                items,
                t not in outside,
            )
        )
    return out


@torch.no_grad()
def explain_chain(
    structure: ChainStructure,
    batch,
    tokens: list[str],
    namer: Namer,
    positions: list[int] | None = None,
    scorer: ChainStructure | None = None,
) -> tuple[list[int], list[TokenExplanation]]:
    """(the predicted label ids [T], the explanation of each token at ``positions``, default
    all) of a one-document ``FeatureBatch``.  ``scorer``: the structure whose weights give the
    margins and contributions (a float64 twin of ``structure``: sums of many float32 weights
    round), default ``structure``."""
    labels = structure.weights.labels
    predicted = structure.argmax(batch)  # [T]
    mm = max_marginals(structure.potentials(batch))
    pred = predicted.tolist()
    where = range(len(pred)) if positions is None else positions
    runners = {}
    for t in where:
        z = _local_runner_up(mm, t, pred[t], predicted.device)
        if z is not None:
            runners[t] = z
    scorer = scorer or structure
    return pred, _explanations(scorer, batch, predicted, runners, namer, tokens, labels, where)


@torch.no_grad()
def explain_rescoring(
    structure: DocumentRescoring,
    batch: DocumentBatch,
    namer: Namer,
    positions: list[int] | None = None,
    scorer: DocumentRescoring | None = None,
) -> tuple[list[int], list[TokenExplanation]]:
    """``explain_chain`` for the n'-best rescored with non-local features (module docstring)."""
    labels = structure.weights.labels
    tokens = batch.documents[0].tokens
    cands = structure.candidates(batch, structure.n)  # paths [m, T], total [m]
    predicted = cands.best()  # [T]
    pred = predicted.tolist()
    mm = max_marginals(structure.potentials(batch))  # the local model's
    where = range(len(pred)) if positions is None else positions
    runners, outside = {}, set()
    for t in where:
        other = cands.paths[:, t] != predicted[t]  # [m]
        if bool(other.any()):
            scores = torch.where(other, cands.total, torch.full_like(cands.total, float("-inf")))
            runners[t] = cands.paths[int(scores.argmax())]
            continue
        # every candidate agrees here: the best local labeling with another label
        z = _local_runner_up(mm, t, pred[t], predicted.device)
        if z is not None:
            runners[t] = z
            outside.add(t)
    scorer = scorer or structure
    out = _explanations(scorer, batch, predicted, runners, namer, tokens, labels, where, outside)
    return pred, out
