"""What the CRF's likelihood is taken of: the gold labeling, the labelings compatible with a
partial annotation, and the softmax-margin of label costs.

With o [N, L] the cost offsets of the node scores (o[t, j] = c(y*_t) [j != y*_t] at the known
tokens, ``learn/costs.py``; 0 without costs) and A the labelings the annotation allows (the
gold alone where every token is known), a document's loss is

    nll = log sum_y exp(s(y) + o(y)) - log sum_{y in A} exp(s(y))

(Tsuboi et al. 2008 for A; Gimpel & Smith 2010's softmax-margin for o), and its gradient the
expected features under the first distribution minus those under the second (restricted to A).
Without costs and with a full annotation it is the plain nll, log Z - s(y*).

The torch scans take it as two passes over a bucket's node scores (``objective.bucket_loss``):
nll(S + o) - nll(S + o + m), with m the restriction (torch-struct's log-zero ``NEG`` on the
labels A rules out), both against the same compatible labeling y~, whose score cancels; the
compiled kernel makes the second pass itself (``native/crf_kernels.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from structperc.decode.node_offsets import cost_offsets
from structperc.decode.scaled_scan import NEG


@dataclass
class LikelihoodTargets:
    """The likelihood's targets over a training set's N tokens.

    labels:  [N] long, a compatible label of every token: the gold where known, else the first
             label its annotation allows (the y~ whose score cancels).
    gold:    [N] long, the gold labels with -1 at the open tokens (the compiled kernel's).
    offset:  [N, L] float64 cost offsets, or None (no costs).
    allowed: [N, L] bool, the labels each token allows, or None (no token is open).
    """

    labels: Tensor
    gold: Tensor
    offset: Tensor | None = None
    allowed: Tensor | None = None

    @property
    def known(self) -> Tensor:
        """[N] bool: the tokens whose label is known."""
        return self.gold >= 0

    def mask(self, tokens: Tensor) -> Tensor | None:
        """The restriction [n, L] (0 where allowed, ``NEG`` elsewhere) of ``tokens``, or None."""
        if self.allowed is None:
            return None
        rows = self.allowed[tokens.to(self.allowed.device)]
        return torch.zeros(rows.shape, dtype=torch.float64).masked_fill_(~rows, NEG)


def likelihood_targets(
    labels: Tensor, allowed: Tensor | None = None, costs: Tensor | None = None
) -> LikelihoodTargets:
    """The targets of gold ``labels`` [N] (-1: open), the annotation's ``allowed`` [N, L] (None:
    every label known) and per-label ``costs`` [L] (None: the plain likelihood)."""
    gold = labels.cpu().long()
    open_tokens = gold < 0
    if bool(open_tokens.any()) and allowed is None:
        raise ValueError("open tokens (label -1) need the labels they allow")
    filled = gold.clone()
    if allowed is not None:
        allowed = allowed.cpu()
        if not bool(allowed.any(1).all()):
            t = int((~allowed.any(1)).nonzero()[0])
            raise ValueError(f"token {t} allows no label")
        filled[open_tokens] = allowed[open_tokens].long().argmax(1)  # the first allowed
        if not bool(open_tokens.any()):
            allowed = None  # a full annotation: the plain likelihood
    offset = None
    if costs is not None:
        offset = cost_offsets(gold, costs.double()).double()  # (0 at the open tokens)
    return LikelihoodTargets(filled, gold, offset, allowed)
