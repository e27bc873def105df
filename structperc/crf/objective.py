"""The CRF's training objective and its gradient, over buckets of documents.

A linear-chain CRF (Lafferty et al. 2001) on ``ChainWeights`` (token scores S = X W, potentials
as in ``model.weights.chain_potentials``) is trained by minimising the negative log-likelihood
with a Gaussian prior (Chen & Rosenfeld 2000), as in Kazama & Torisawa's (2007) CRF baseline:

    f(w) = sum_d [log Z(x_d) - s(x_d, y*_d)] + ||w||^2 / (2 sigma^2),
    grad f = sum_d [E_{p(y|x_d)} Phi(x_d, y) - Phi(x_d, y*_d)] + w / sigma^2.

The expectation is the marginals: the gradient of the chain's log-partition
(``ChainStructure.nll``, by one of ``decode/marginals.py``'s scans; ``edges.py`` where the edges
are written straight from the token scores), taken by autograd into the token scores; the
transposed lookup (``sparse.py``; ``factored.py`` through the feature sets that recur across
tokens, where the features say which those are) turns the per-token gradients into table
gradients.  The
documents go through the DP in buckets (``buckets.py``).
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import Tensor

from structperc.crf.buckets import Bucket
from structperc.crf.edges import RowLayout, row_nll, transition_nll
from structperc.crf.factored import FactoredIndex
from structperc.crf.sparse import TransposedIndex
from structperc.decode.sequential_scan import Workspace
from structperc.distributed import SERIAL, Group
from structperc.features.extract import FeatureMatrix
from structperc.model.weights import chain_potentials
from structperc.structures.chain import ChainStructure


class CRFSettings(Protocol):
    """The settings of ``learner.CRF`` that the objective and the optimizers read."""

    sigma2: float  # variance of the Gaussian prior
    c1: float  # L1 coefficient (L-BFGS: OWL-QN when > 0)
    scan: str  # "log" | "scaled" | "sequential" (``CRF.resolved``: never "auto" here)
    dtype: str  # "float32" | "float64": the DP's floating type
    tol: float  # convergence: relative change of the objective ...
    patience: int  # ... below tol for this many iterations
    history: int  # L-BFGS memory
    lr: float  # SGD: initial learning rate
    batch_tokens: int  # SGD: mini-batch size in padded tokens
    dp_batch_tokens: int  # L-BFGS: DP bucket size in padded tokens
    pack: bool  # L-BFGS: documents end to end in rows of 2^k + 1 tokens (buckets.py)
    support: str  # L-BFGS: "all" | "observed" (sparse.py)


def dtype_of(name: str) -> torch.dtype:
    return torch.float64 if name == "float64" else torch.float32


def bucket_loss(
    learner: CRFSettings,
    structure: ChainStructure,
    scores: Tensor,
    bucket: Bucket,
    transition: Tensor | None = None,
) -> Tensor:
    """Sum of -log p(y* | x) over the bucket's documents, from their token scores, by
    ``learner.scan``.

    scores: [N_b, L + L*L] token scores (node, then edge flattened (from, to)), requires grad;
        with ``transition`` (``features.edges=false``) the node scores [N_b, L] alone, and
        ``transition`` [1, L*L] the one transition matrix every token shares.

    The structure's likelihood (``ChainStructure.nll``) of the potentials of those scores; the
    same written straight into torch-struct's layout (``edges.py``) for one transition matrix,
    and for edge features on the sequential scan.  With the bucket's cost offsets and partial
    annotation the two passes of ``crf/targets.py``: nll(S + o) - nll(S + o + m).
    """
    L = structure.num_labels

    def gold_nll(scores: Tensor) -> Tensor:
        """Sum of log Z - s(y) over the bucket's documents, y their ``labels``."""
        if transition is not None:  # straight into torch-struct's layout
            return transition_nll(scores, transition, bucket.batch, bucket.labels, learner.scan)
        if learner.scan == "sequential":  # edges from the token scores
            if bucket.layout is None:
                bucket.layout = RowLayout.of(bucket.batch, bucket.labels, L)
            return row_nll(scores, bucket.layout)
        edge = scores[:, L:].reshape(-1, L, L)
        potentials = chain_potentials(scores[:, :L], edge, bucket.batch)  # [B, T, L, L]
        return structure.nll(
            bucket.batch, bucket.labels, scan=learner.scan, potentials=potentials
        ).sum()

    if bucket.offset is None and bucket.mask is None:
        return gold_nll(scores)
    shifted = shift_nodes(scores, bucket.offset, L)
    loss = gold_nll(shifted)
    if bucket.mask is not None:
        loss = loss - gold_nll(shift_nodes(shifted, bucket.mask, L))
    return loss


def shift_nodes(scores: Tensor, offset: Tensor | None, L: int) -> Tensor:
    """Token scores [N_b, L (+ L*L)] with ``offset`` [N_b, L] added to the node part."""
    if offset is None:
        return scores
    node = scores[:, :L] + offset.to(scores.dtype)
    return node if scores.shape[1] == L else torch.cat([node, scores[:, L:]], dim=1)


def reads_in_place(learner: CRFSettings, edges: bool, bucket: Bucket, num_tokens: int) -> bool:
    """The sequential scan with edge features over a bucket of every token: it reads the
    lookup's token scores as they are (``whole_set_loss``); not with costs or open tokens."""
    plain = bucket.offset is None and bucket.mask is None
    return plain and learner.scan == "sequential" and edges and len(bucket.tokens) == num_tokens


def whole_set_loss(
    scores: Tensor, bucket: Bucket, num_labels: int, dtype: torch.dtype
) -> tuple[float, Tensor, int]:
    """sum_d nll_d of a bucket holding every token, its gradient [N, L + L*L] with respect to
    ``scores`` [N, L + L*L] (the lookup's, in their own order and type: no gathered copy, the DP
    in ``dtype``), and the posterior errors."""
    if bucket.layout is None or len(bucket.layout.labels) != len(scores):
        bucket.layout = RowLayout.of(
            bucket.batch, bucket.labels, num_labels, bucket.tokens, len(scores)
        )
        bucket.layout.workspace = Workspace()  # the same buffers at every evaluation
    s = scores.detach().requires_grad_(True)
    with torch.enable_grad():
        loss = row_nll(s, bucket.layout, dtype)
        # the workspace's buffer itself (``.grad`` through backward() would be a copy of it)
        (grad,) = torch.autograd.grad(loss, s)
    return float(loss.detach()), grad, posterior_errors(grad[:, :num_labels], bucket.layout.labels)


def posterior_errors(node_grad: Tensor, labels: Tensor, known: Tensor | None = None) -> int:
    """Tokens whose most probable label (marginal = node gradient + gold one-hot) is wrong; of
    a partial annotation only the ``known`` tokens (there the restricted marginal is the
    one-hot, so the formula holds)."""
    if known is not None:
        node_grad, labels = node_grad[known], labels[known]
    marg = node_grad.detach().clone()
    marg[torch.arange(len(labels), device=labels.device), labels] += 1.0
    return int((marg.argmax(dim=1) != labels).sum())


def full_objective(
    learner: CRFSettings,
    structure: ChainStructure,
    features: FeatureMatrix,
    index: TransposedIndex | FactoredIndex,
    buckets: list[Bucket],
    group: Group = SERIAL,
) -> tuple[float, float, list[Tensor], int]:
    """f(w), sum_d nll_d, the gradients of ``structure.weights.dense_tables`` ([F, L + L*L], or
    [F, L] and [1, L*L] without edge features), posterior token errors.

    One lookup over all training tokens; per bucket, the DP and its backward pass into the
    token scores; one transposed lookup for the table gradients; the prior added in closed form.
    On several ranks (``group``) ``features`` are this rank's shard: the sums over documents
    (nll, gradient, errors) are all-reduced before the prior is added, once.
    """
    weights = structure.weights
    L = weights.num_labels
    dtype = dtype_of(learner.dtype)
    tables = weights.dense_tables
    leaves = [t.detach().requires_grad_(True) for t in tables]
    ids, offsets = features.ids, features.offsets
    with torch.enable_grad():  # [N, L + L*L] (node | edge, the joint table), or [N, L]
        token_scores = index.scores(leaves[0], ids, offsets, features.values)
    scores = token_scores.detach()
    transition, grad_transition = None, None
    if not weights.edges:  # one transition matrix: its gradient is summed per bucket
        transition = leaves[1].detach().to(dtype)  # [1, L*L]
        grad_transition = torch.zeros_like(transition)
    grad_scores = None  # made on the first bucket that does not read the scores in place
    total, errors = 0.0, 0
    for bucket in buckets:
        if reads_in_place(learner, weights.edges, bucket, len(scores)):
            loss, grad_scores, err = whole_set_loss(scores, bucket, L, dtype)
            total, errors = total + loss, errors + err
            continue
        s = scores[bucket.tokens].to(dtype).requires_grad_(True)  # [N_b, L (+ L*L)]
        t = None if transition is None else transition.clone().requires_grad_(True)
        with torch.enable_grad():
            loss = bucket_loss(learner, structure, s, bucket, t)
            loss.backward()
        if grad_scores is None:
            grad_scores = torch.zeros_like(scores)
        grad_scores[bucket.tokens] = s.grad.to(grad_scores.dtype)
        if t is not None:
            grad_transition += t.grad
        total += float(loss.detach())
        errors += posterior_errors(s.grad[:, :L], bucket.labels, bucket.known)
    torch.autograd.backward(
        token_scores, torch.zeros_like(scores) if grad_scores is None else grad_scores
    )
    if not weights.edges:
        leaves[1].grad = grad_transition.to(leaves[1].dtype)
    grads = [leaf.grad.to_dense() if leaf.grad.is_sparse else leaf.grad for leaf in leaves]
    if weights.edges and weights.node_only is not None:  # node features only: no edge gradient
        grads[0][weights.node_only.to(grads[0].device), L:] = 0
    return with_prior(learner, tables, grads, total, errors, group)


def with_prior(
    learner: CRFSettings,
    tables: list[Tensor],
    grads: list[Tensor],
    total: float,
    errors: int,
    group: Group = SERIAL,
) -> tuple[float, float, list[Tensor], int]:
    """``full_objective``'s result from this rank's sum_d nll_d (``total``), its gradients of
    ``tables`` and posterior errors: the sums all-reduced over ``group``, then the Gaussian
    prior ||w||^2 / (2 sigma2) and its gradient w / sigma2 added, once."""
    group.all_sum_(*grads)
    total, errors = group.all_sum(total, errors)
    errors = int(errors)
    sq = 0.0
    for w, g in zip(tables, grads, strict=True):
        g.add_(w, alpha=1.0 / learner.sigma2)
        sq += float(torch.dot(w.view(-1), w.view(-1)))
    return total + sq / (2.0 * learner.sigma2), total, grads, errors


def features_cpu(features: FeatureMatrix) -> FeatureMatrix:
    return FeatureMatrix(*(t.cpu() for t in features.tensors().values()))
