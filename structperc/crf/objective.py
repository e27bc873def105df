"""The CRF's training objective and its gradient, over length-sorted buckets of documents.

A linear-chain CRF (Lafferty et al. 2001) on ``ChainWeights`` (token scores S = X W, potentials
as in ``model.weights.chain_potentials``) is trained by minimising the negative log-likelihood
with a Gaussian prior (Chen & Rosenfeld 2000), as in Kazama & Torisawa's (2007) CRF baseline:

    f(w) = sum_d [log Z(x_d) - s(x_d, y*_d)] + ||w||^2 / (2 sigma^2),
    grad f = sum_d [E_{p(y|x_d)} Phi(x_d, y) - Phi(x_d, y*_d)] + w / sigma^2.

The expectation is the marginals, obtained as the gradient of torch-struct's log-partition by
autograd (``adapter.py``); the chain rule through the sparse lookups (``lookup.py``) turns the
per-token gradients into table gradients.  Documents go through the DP in buckets of similar
length, or packed end to end into rows of 2^k + 1 tokens (``make_buckets``, ``packing.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import torch
from torch import Tensor

from structperc.crf.adapter import nll
from structperc.crf.lookup import TransposedIndex, lookup
from structperc.crf.packing import pack_documents, packed_batch, row_tokens
from structperc.crf.row_edges import RowLayout, row_nll
from structperc.crf.semiring import get_semiring
from structperc.crf.sequential import Workspace
from structperc.crf.transition import transition_nll
from structperc.distributed import SERIAL, Group
from structperc.features.extract import FeatureMatrix
from structperc.model.batch import FeatureBatch, make_batch
from structperc.model.weights import ChainWeights, chain_potentials


class CRFSettings(Protocol):
    """The settings of ``learner.CRF`` that the objective and the optimizers read."""

    sigma2: float  # variance of the Gaussian prior
    semiring: str  # "scaled" | "log"
    dtype: str  # "float32" | "float64": the DP's floating type
    tol: float  # convergence: relative change of the objective ...
    patience: int  # ... below tol for this many iterations
    history: int  # L-BFGS memory
    lr: float  # SGD: initial learning rate
    batch_tokens: int  # SGD: mini-batch size in padded tokens
    dp_batch_tokens: int  # L-BFGS: DP bucket size in padded tokens
    pack: bool  # L-BFGS: documents end to end in rows of 2^k + 1 tokens (packing.py)
    support: str  # L-BFGS: "all" | "observed" (support.py)


@dataclass
class Bucket:
    """Documents decoded together: their batch layout, gold labels and global token positions.

    batch:  FeatureBatch of the documents (lengths, layout maps; the CSR features only where a
            bucket has its own ``index``: full-batch L-BFGS looks up all tokens at once).
    gold:   [B, T] long gold labels, -1 past each length.
    labels: [N_b] long gold labels of the bucket's tokens (batch token order).
    tokens: [N_b] long positions of the bucket's tokens in the whole training set.
    index:  X^T of the bucket's tokens (mini-batch training only).
    layout: where its tokens go in the sequential scan's edges (``row_edges.RowLayout``), made
            by ``bucket_loss`` on first use and kept (it depends on the layout alone).
    """

    batch: FeatureBatch
    gold: Tensor
    labels: Tensor
    tokens: Tensor
    index: TransposedIndex | None = None
    layout: RowLayout | None = None


def length_buckets(lengths: list[int], budget: int) -> list[list[int]]:
    """Documents sorted by length, grouped so that B * (longest length) <= ``budget``.

    A document longer than the budget gets a bucket of its own.
    """
    order = sorted(range(len(lengths)), key=lambda d: (lengths[d], d))
    buckets: list[list[int]] = []
    current: list[int] = []
    for d in order:
        if current and (len(current) + 1) * lengths[d] > budget:
            buckets.append(current)
            current = []
        current.append(d)
    if current:
        buckets.append(current)
    return buckets


def packed_groups(
    lengths: list[int], budget: int, sequential: bool = False
) -> list[list[list[int]]]:
    """Rows of documents end to end (``packing.pack_documents``), ``budget // row length``
    rows (at least one) to a bucket.

    ``sequential``: the DP scans position by position (``sequential.py``), so its steps are the
    row length whatever the number of rows: rows as long as the longest document, all in one
    bucket (``budget`` is not read).
    """
    if not lengths:  # an empty shard (more ranks than documents)
        return []
    if sequential:
        rows = pack_documents(lengths, max(max(lengths), 2))
        return [rows]
    capacity = row_tokens(lengths)
    rows = pack_documents(lengths, capacity)
    per = max(1, budget // capacity)
    return [rows[i : i + per] for i in range(0, len(rows), per)]


def make_buckets(
    features: FeatureMatrix,
    labels: Tensor,
    budget: int,
    *,
    with_index: bool,
    num_features: int,
    device: str | torch.device,
    packed: bool = False,
    sequential: bool = False,
) -> list[Bucket]:
    """``Bucket``s of all documents of ``features`` (gold ``labels`` [N] over all tokens).

    ``packed``: the bucket's sequences are rows of several documents end to end (``packing.py``:
    the same objective and gradient with a third less DP work on CoNLL-2003); else documents of
    similar length, one a sequence.  ``sequential``: packed rows for the sequential scan
    (``packed_groups``).
    """
    doc_offsets = features.doc_offsets
    lengths = (doc_offsets[1:] - doc_offsets[:-1]).tolist()
    if packed:
        layouts = [
            (packed_batch(features, rows), [d for row in rows for d in row])
            for rows in packed_groups(lengths, budget, sequential)
        ]
    else:
        layouts = [(make_batch(features, docs), docs) for docs in length_buckets(lengths, budget)]
    out = []
    for batch, docs in layouts:
        tokens = torch.cat(
            [torch.arange(int(doc_offsets[d]), int(doc_offsets[d + 1])) for d in docs]
        )
        gold_tokens = labels[tokens]  # [N_b]
        if with_index:
            index = TransposedIndex.build(batch.ids, batch.offsets, num_features).to(device)
        else:  # full batch: one lookup over all tokens, so keep the layout, not a copy of X
            index, batch = None, layout_only(batch)
        out.append(
            Bucket(
                batch=batch.to(device),
                gold=batch.pad(gold_tokens).to(device),
                labels=gold_tokens.to(device),
                tokens=tokens.to(device),
                index=index,
            )
        )
    return out


def layout_only(batch: FeatureBatch) -> FeatureBatch:
    """``batch`` without its feature ids (every token's CSR row empty): what the DP reads
    (lengths, first tokens, padded positions), without a second copy of X [nnz]."""
    return replace(batch, ids=batch.ids[:0], offsets=torch.zeros_like(batch.offsets))


def dtype_of(name: str) -> torch.dtype:
    return torch.float64 if name == "float64" else torch.float32


def resolve_semiring(
    name: str, edges: bool, optimizer: str = "lbfgs", device: str | torch.device = "cpu"
) -> str:
    """``learner.semiring``, with ``"auto"`` made concrete: ``"sequential"`` for L-BFGS with
    edge features on a CPU (one bucket of every row: its steps are the row length), else
    ``"scaled"``: buckets of ``dp_batch_tokens`` (the lower peak memory of
    ``features.edges=false``), and on an accelerator the tree scan's log-depth steps (measured
    on an H100, ``experiments/bench/gpu/``) where the sequential scan's steps are launches."""
    if name != "auto":
        return name
    cpu = torch.device(device).type == "cpu"
    return "sequential" if edges and optimizer == "lbfgs" and cpu else "scaled"


def bucket_loss(
    learner: CRFSettings,
    scores: Tensor,
    bucket: Bucket,
    num_labels: int,
    transition: Tensor | None = None,
) -> Tensor:
    """Sum of -log p(y* | x) over the bucket's documents, from their token scores.

    scores: [N_b, L + L*L] token scores (node, then edge flattened (from, to)), requires grad;
        with ``transition`` (``features.edges=false``) the node scores [N_b, L] alone, and
        ``transition`` [1, L*L] the one transition matrix every token shares.
    """
    L = num_labels
    name = resolve_semiring(learner.semiring, edges=transition is None, device=scores.device)
    semiring = get_semiring(name)
    if transition is not None:  # straight into torch-struct's layout (crf/transition.py)
        return transition_nll(scores, transition, bucket.batch, bucket.labels, semiring)
    if name == "sequential":  # edges from the token scores (crf/row_edges.py)
        if bucket.layout is None:
            bucket.layout = RowLayout.of(bucket.batch, bucket.labels, L)
        return row_nll(scores, bucket.layout)
    edge = scores[:, L:].reshape(-1, L, L)
    potentials = chain_potentials(scores[:, :L], edge, bucket.batch)  # [B, T, L, L]
    return nll(potentials, bucket.batch.lengths, bucket.gold, semiring).sum()


def reads_in_place(
    learner: CRFSettings, weights: ChainWeights, bucket: Bucket, num_tokens: int
) -> bool:
    """The sequential scan with edge features over a bucket of every token: it reads the
    lookup's token scores as they are (``whole_set_loss``)."""
    device = bucket.tokens.device
    sequential = resolve_semiring(learner.semiring, weights.edges, device=device) == "sequential"
    return sequential and weights.edges and len(bucket.tokens) == num_tokens


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


def posterior_errors(node_grad: Tensor, labels: Tensor) -> int:
    """Tokens whose most probable label (marginal = node gradient + gold one-hot) is wrong."""
    marg = node_grad.detach().clone()
    marg[torch.arange(len(labels), device=labels.device), labels] += 1.0
    return int((marg.argmax(dim=1) != labels).sum())


def full_objective(
    learner: CRFSettings,
    weights: ChainWeights,
    features: FeatureMatrix,
    index: TransposedIndex,
    buckets: list[Bucket],
    group: Group = SERIAL,
) -> tuple[float, float, list[Tensor], int]:
    """f(w), sum_d nll_d, the gradients of ``weights.dense_tables`` ([F, L + L*L], or [F, L] and
    [1, L*L] without edge features), posterior token errors.

    One lookup over all training tokens; per bucket, the DP and its backward pass into the
    token scores; one transposed lookup for the table gradients; the prior added in closed form.
    On several ranks (``group``) ``features`` are this rank's shard: the sums over documents
    (nll, gradient, errors) are all-reduced before the prior is added, once.
    """
    L = weights.num_labels
    dtype = dtype_of(learner.dtype)
    tables = weights.dense_tables
    leaves = [t.detach().requires_grad_(True) for t in tables]
    ids, offsets = features.ids, features.offsets
    with torch.enable_grad():  # [N, L + L*L] (node | edge, the joint table), or [N, L]
        token_scores = lookup(leaves[0], ids, offsets, index)
    scores = token_scores.detach()
    transition, grad_transition = None, None
    if not weights.edges:  # one transition matrix: its gradient is summed per bucket
        transition = leaves[1].detach().to(dtype)  # [1, L*L]
        grad_transition = torch.zeros_like(transition)
    grad_scores = None  # made on the first bucket that does not read the scores in place
    total, errors = 0.0, 0
    for bucket in buckets:
        if reads_in_place(learner, weights, bucket, len(scores)):
            loss, grad_scores, err = whole_set_loss(scores, bucket, L, dtype)
            total, errors = total + loss, errors + err
            continue
        s = scores[bucket.tokens].to(dtype).requires_grad_(True)  # [N_b, L (+ L*L)]
        t = None if transition is None else transition.clone().requires_grad_(True)
        with torch.enable_grad():
            loss = bucket_loss(learner, s, bucket, L, t)
            loss.backward()
        if grad_scores is None:
            grad_scores = torch.zeros_like(scores)
        grad_scores[bucket.tokens] = s.grad.to(grad_scores.dtype)
        if t is not None:
            grad_transition += t.grad
        total += float(loss.detach())
        errors += posterior_errors(s.grad[:, :L], bucket.labels)
    torch.autograd.backward(
        token_scores, torch.zeros_like(scores) if grad_scores is None else grad_scores
    )
    if not weights.edges:
        leaves[1].grad = grad_transition.to(leaves[1].dtype)
    grads = [leaf.grad.to_dense() if leaf.grad.is_sparse else leaf.grad for leaf in leaves]
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
