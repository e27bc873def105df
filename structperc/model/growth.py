"""Tables grown for new features and new labels, the entries they held kept in place.

Continuing a model on new data (a warm start) may meet features and labels it has not seen.
The new features are new rows after the old ones; the new labels come after the old labels,
which keep their ids, so a label table of L columns becomes one of L' >= L:

    node  [F, L]       -> [F', L']        node'[f, j] = node[f, j]              (j < L)
    pairs [R, L * L]   -> [R, L' * L']    pairs'[r, i L' + j] = pairs[r, i L + j] (i, j < L)

and every other entry is ``fill`` (0 for weights and averaging sums; a learner's initial value
for its own per-weight state, such as AROW's variances).  ``grown_chain_weights`` does this to
both layouts of ``ChainWeights`` (a transition matrix, or edge features in one joint table).
"""

from __future__ import annotations

import torch
from torch import Tensor

from structperc.model.weights import ChainWeights


def grown_label_columns(table: Tensor, rows: int, labels: int, fill: float = 0.0) -> Tensor:
    """``table`` [R, L] as [rows, labels] (rows >= R, labels >= L), new entries ``fill``."""
    R, L = table.shape
    _check(R, L, rows, labels)
    out = table.new_full((rows, labels), fill)
    out[:R, :L] = table
    return out


def grown_label_pairs(table: Tensor, rows: int, labels: int, fill: float = 0.0) -> Tensor:
    """``table`` [R, L * L] (column i L + j: label i then label j) as [rows, labels^2] over the
    grown label set (rows >= R, labels >= L), new entries ``fill``."""
    R, LL = table.shape
    L = round(LL**0.5)
    if L * L != LL:
        raise ValueError(f"a label-pair table has L * L columns, got {LL}")
    _check(R, L, rows, labels)
    out = table.new_full((rows, labels, labels), fill)
    out[:R, :L, :L] = table.reshape(R, L, L)
    return out.reshape(rows, labels * labels)


def grown_chain_weights(
    weights: ChainWeights, num_features: int, labels: list[str]
) -> ChainWeights:
    """New ``ChainWeights`` over ``num_features`` rows and ``labels`` (``weights.labels``
    first, in their order, then the new ones) holding ``weights``' entries, zeros elsewhere
    (the same layout; ``node_only`` rows kept, new rows with edge weights)."""
    old = list(weights.labels)
    if list(labels[: len(old)]) != old:
        raise ValueError(f"the grown labels must begin with {old}, got {list(labels)}")
    F, L = num_features, len(labels)
    out = ChainWeights(F, labels, edges=weights.edges)
    tables = weights.tables()
    with torch.no_grad():
        node = grown_label_columns(tables["node"], F, L)
        rows = F if weights.edges else 1
        edge = grown_label_pairs(tables["edge"], rows, L)
        grown = out.tables()
        grown["node"].copy_(node)
        grown["edge"].copy_(edge)
    if weights.node_only is not None:
        mask = torch.zeros(F, dtype=torch.bool)
        mask[: len(weights.node_only)] = weights.node_only
        out.set_node_only(mask)
    return out.to(tables["node"].device)


def _check(R: int, L: int, rows: int, labels: int) -> None:
    if rows < R or labels < L:
        raise ValueError(f"a table [{R}, {L} labels] cannot shrink to [{rows}, {labels} labels]")
