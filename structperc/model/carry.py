"""A saved model's weights written into a new model's tables: rows paired by feature, columns
by label name (continuing a model on new data: ``tasks/warm_start.py``).

The new model's features include the old one's at other row numbers (``extract.Vocabulary.
carried_rows`` pairs them: old row r_k with new row r'_k), and its labels include the old ones
at other positions (a new label takes its place in the sorted set).  With m(i) the new position
of old label i:

    node   [F, L]            node'[r'_k, m(j)]               = node[r_k, j]
    edge   [F, L * L]        edge'[r'_k, m(i) L' + m(j)]     = edge[r_k, i L + j]
    edge   [1, L * L]        (a transition matrix, ``edges=False``: its one row, the same way)
    global [G, 1]            global'[g'_k, 0]                = global[g_k, 0]   (non-local
                                                              features paired by name)

and every other entry is 0: new features and new labels start untrained.  A new row that
receives several old rows (feature hashing folds keys of different old rows into one) holds
their mean.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from structperc.model.weights import ChainWeights

BLOCK = 1 << 16  # rows copied at a time: a [BLOCK, L + L*L] temporary


def label_positions(old: list[str], new: list[str]) -> np.ndarray:
    """[L_old] int64: the position in ``new`` of each label of ``old``; ValueError naming the
    labels ``new`` lacks."""
    where = {label: j for j, label in enumerate(new)}
    missing = [label for label in old if label not in where]
    if missing:
        raise ValueError(f"the new model lacks the labels {missing} of the model it continues")
    return np.array([where[label] for label in old], dtype=np.int64)


def pair_positions(moved: np.ndarray, num_new: int) -> np.ndarray:
    """[L_old^2]: the new column i' L' + j' of each old label pair column i L + j."""
    return (moved[:, None] * num_new + moved[None, :]).reshape(-1)


@torch.no_grad()
def carry_rows(
    old: Tensor,
    new: Tensor,
    rows: tuple[np.ndarray, np.ndarray],
    columns: tuple[np.ndarray, np.ndarray],
) -> None:
    """new[r', c'] = old[r, c] for the paired rows (old [M], new [M]) and columns (old [C],
    new [C]); ``new`` starts at zero, and a new row paired with several old rows gets their
    mean.  ``old`` [R, C_old] and ``new`` [R', C_new] may be strided views (``ChainWeights.
    tables``)."""
    old_rows, new_rows = _distinct_pairs(*rows)
    if not len(old_rows):
        return
    old_cols = torch.from_numpy(columns[0])
    new_cols = torch.from_numpy(columns[1]).to(new.device)
    for a in range(0, len(old_rows), BLOCK):
        source = torch.from_numpy(old_rows[a : a + BLOCK]).to(old.device)
        block = old[source][:, old_cols.to(old.device)].to(new.device, new.dtype)  # [b, C]
        part = new.new_zeros(len(block), new.shape[1])
        part[:, new_cols] = block
        new.index_add_(0, torch.from_numpy(new_rows[a : a + BLOCK]).to(new.device), part)
    count = np.bincount(new_rows, minlength=new.shape[0])
    shared = np.flatnonzero(count > 1)
    if len(shared):
        where = torch.from_numpy(shared).to(new.device)
        new[where] /= torch.from_numpy(count[shared]).to(new.device, new.dtype).unsqueeze(1)


def _distinct_pairs(old_rows: np.ndarray, new_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (old row, new row) pairs (keys of one old row that stay together count
    once)."""
    pairs = np.unique(
        np.stack([np.asarray(old_rows), np.asarray(new_rows)]).astype(np.int64), axis=1
    )
    return pairs[0], pairs[1]


def carry_chain(
    old: ChainWeights, new: ChainWeights, rows: tuple[np.ndarray, np.ndarray]
) -> dict[str, int]:
    """Write ``old``'s node and edge weights into ``new`` (zero, labels a superset of old's,
    the same layout: edge features or a transition matrix) at the paired feature ``rows``
    (old [M], new [M]); returns what was carried, in numbers."""
    if old.edges != new.edges:
        raise ValueError(
            f"a model with edges={old.edges} cannot continue as one with edges={new.edges}"
        )
    moved = label_positions(old.labels, new.labels)
    pairs = pair_positions(moved, new.num_labels)
    every = (np.arange(old.num_labels), moved)
    every_pair = (np.arange(old.num_labels**2), pairs)
    there, here = old.tables(), new.tables()
    carry_rows(there["node"], here["node"], rows, every)
    edge_rows = rows if old.edges else (np.zeros(1, np.int64), np.zeros(1, np.int64))
    carry_rows(there["edge"], here["edge"], edge_rows, every_pair)
    return {
        "rows": int(len(np.unique(rows[1]))),
        "new_rows": new.num_features - int(len(np.unique(rows[1]))),
        "new_labels": new.num_labels - old.num_labels,
    }


def carry_global(old: Tensor, new: Tensor, rows: tuple[np.ndarray, np.ndarray]) -> int:
    """Write the non-local weights ``old`` [G, 1] into ``new`` [G', 1] at the paired rows (old
    [M], new [M]); returns the rows written."""
    one = np.zeros(1, np.int64)
    carry_rows(old, new, rows, (one, one))
    return int(len(np.unique(rows[1])))
