"""Max-marginals of a first-order chain: the best path through each (position, label).

With forward scores alpha and backward scores beta (``viterbi.forward_scores``,
``viterbi.backward_scores``) of one sequence's potentials M_t,

    mu[t, j] = alpha_t[j] + beta_t[j] = max { s(y) : y_t = j },

the score of the best labeling that puts label j at position t (the tropical analogue of the
node marginals; Weiss & Freeman 2001 call them max-marginals).  The best labeling itself is the
back-pointer trace of the prefix ending in j at t followed by the forward-pointer trace of the
best suffix from j (``nbest.forward_pointers``), as ``nbest.two_best`` builds its second path.
An explanation's runner-up at a token is such a path (``explain/chain.py``): the best labeling
with another label there.  A label the constraints forbid at t has mu = -inf.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from structperc.decode.nbest import forward_pointers
from structperc.decode.viterbi import backpointers, backward_scores, forward_scores


@dataclass(frozen=True)
class MaxMarginals:
    """One sequence's max-marginals and the pointers that trace their paths.

    scores:   [T, L] mu[t, j], the best score of a labeling with label j at t.
    back:     [T, L] back-pointers: the label at t - 1 of the best prefix ending in j at t.
    forward:  [T, L] forward pointers: the label at t + 1 of the best suffix from j at t.
    """

    scores: Tensor
    back: Tensor
    forward: Tensor

    def path_through(self, t: int, label: int) -> list[int]:
        """The best labeling [T] (label ids) with ``label`` at position ``t``."""
        T = len(self.scores)
        back, forward = self.back.tolist(), self.forward.tolist()
        path = [0] * T
        path[t] = label
        for u in range(t, 0, -1):
            path[u - 1] = back[u][path[u]]
        for u in range(t, T - 1):
            path[u + 1] = forward[u][path[u]]
        return path


def max_marginals(potentials: Tensor) -> MaxMarginals:
    """The max-marginals of one sequence's potentials [1, T, L, L] (from, to; all T real)."""
    lengths = torch.tensor([potentials.shape[1]], device=potentials.device)
    alpha = forward_scores(potentials, lengths)  # [1, T, L]
    beta = backward_scores(potentials, lengths)  # [1, T, L]
    back = backpointers(potentials, alpha)[0]  # [T, L]
    forward = forward_pointers(potentials, beta)[0]  # [T, L]
    return MaxMarginals((alpha + beta)[0].cpu(), back.cpu(), forward.cpu())
