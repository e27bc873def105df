"""Sparse feature differences and in-place weight updates, without autograd.

A perceptron-family update is  w += tau * (Phi(x, y*) - Phi(x, y')).  Positions where the two
labelings agree cancel, so ``path_delta`` lists only the node features of tokens whose labels
differ and the edge features of tokens whose (previous, current) label pairs differ, each as
(row, column, +-1) entries of a table.  Entries may repeat (a feature firing at several tokens);
``index_add_`` on the flattened table sums them, and ``SparseDelta.norm_sq`` coalesces them first so
that ||Phi(y*) - Phi(y')||^2 is right (CRFsuite's passive-aggressive trainer does the same).

Averaging (Collins 2002a; Freund & Schapire 1999) uses the lazy trick: with n instances seen and
an update d made while processing instance k (k - 1 seen before it), keep w += d and
u += (k - 1) d; the average of the n weight vectors w_1..w_n is then exactly  w - u / n.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from structperc.model.batch import FeatureBatch, csr_positions
from structperc.model.huge_pages import zeros_like as huge_page_zeros_like
from structperc.model.weights import ChainWeights, flat_at


@dataclass
class SparseDelta:
    """Entries of a weight difference, per table: name -> (flat index [K], value [K]).

    A flat index addresses ``row * table.shape[1] + column`` (``table.view(-1)`` of a contiguous
    table; ``model.weights.flat_at`` maps it into a table with strided rows).
    """

    parts: dict[str, tuple[Tensor, Tensor]] = field(default_factory=dict)

    def coalesced(self) -> dict[str, tuple[Tensor, Tensor]]:
        """Per table: (unique flat indices [K'], summed values [K'])."""
        out = {}
        for name, (index, vals) in self.parts.items():
            uniq, inverse = torch.unique(index, return_inverse=True)
            summed = torch.zeros(len(uniq), dtype=vals.dtype, device=vals.device)
            summed.index_add_(0, inverse, vals)
            out[name] = (uniq, summed)
        return out

    def norm_sq(self) -> float:
        """||delta||^2 after summing duplicate entries."""
        return float(sum((v * v).sum() for _, v in self.coalesced().values()))

    def dot(self, tables: dict[str, Tensor]) -> float:
        """delta . w, i.e. s(y*) - s(y') under the weights ``tables``."""
        total = 0.0
        for name, (index, vals) in self.parts.items():
            flat, pos = flat_at(tables[name], index)
            total += (flat[pos] * vals).sum()
        return float(total)

    def __add__(self, other: SparseDelta) -> SparseDelta:
        parts = dict(self.parts)
        for name, (i, v) in other.parts.items():
            if name in parts:
                parts[name] = (torch.cat([parts[name][0], i]), torch.cat([parts[name][1], v]))
            else:
                parts[name] = (i, v)
        return SparseDelta(parts)

    def scaled(self, factor: float) -> SparseDelta:
        return SparseDelta({n: (i, v * factor) for n, (i, v) in self.parts.items()})


def path_delta(
    batch: FeatureBatch,
    gold: Tensor,
    pred: Tensor,
    num_labels: int,
    edges: bool = True,
    node_only: Tensor | None = None,
) -> SparseDelta:
    """Phi(x, gold) - Phi(x, pred) for token label sequences gold, pred [N] of the batch.

    Node entries: feature f of token t, +1 at (f, gold_t) and -1 at (f, pred_t), where they
    differ.  Edge entries: +1 at (f, gold_{t-1} * L + gold_t) and -1 at the predicted pair, for
    tokens after a document's first whose label pairs differ; with ``edges=False`` (a transition
    matrix, ``ChainWeights``) the one row 0 stands for f.  Features in ``node_only`` ([F] bool)
    have no edge entries.  A feature with a value v (``batch.values``) enters as +-v
    instead of +-1 (the transition row stays +-1).
    """
    L = num_labels
    g, p = gold.cpu().numpy(), pred.cpu().numpy()  # [N] each (numpy: see ``csr_rows``)
    node_diff = g != p  # [N]
    g_pair, p_pair = label_pairs(g, L), label_pairs(p, L)  # [N] (meaningless at token 0)
    edge_diff = g_pair != p_pair  # [N]
    edge_diff[batch.first_token.cpu().numpy()] = False  # no previous label there
    tokens = np.flatnonzero(node_diff | edge_diff)  # [K]
    pos, owner = csr_positions(batch.offsets.cpu().numpy(), tokens)  # [M] each
    feats = batch.ids.cpu().numpy()[pos].astype(np.int64)
    values = None if batch.values is None else batch.values.cpu().numpy()[pos]  # [M]
    node_on = node_diff[owner]
    nf, no = feats[node_on] * L, owner[node_on]
    if edges:
        edge_on = edge_diff[owner]
        if node_only is not None:
            edge_on &= ~node_only.cpu().numpy()[feats]
        ef, eo = feats[edge_on] * (L * L), owner[edge_on]
    else:  # one transition row, once per token
        eo = np.flatnonzero(edge_diff)
        ef = np.zeros_like(eo)
    node = np.concatenate([nf + g[no], nf + p[no]])
    edge = np.concatenate([ef + g_pair[eo], ef + p_pair[eo]])
    signs_n = np.ones(len(node), dtype=np.float32)
    signs_n[len(nf) :] = -1
    signs_e = np.ones(len(edge), dtype=np.float32)
    signs_e[len(ef) :] = -1
    if values is not None:
        signs_n *= np.tile(values[node_on], 2)
        if edges:
            signs_e *= np.tile(values[edge_on], 2)
    device, dtype = gold.device, torch.get_default_dtype()  # the tables' dtype

    def part(index: np.ndarray, signs: np.ndarray) -> tuple[Tensor, Tensor]:
        return torch.from_numpy(index).to(device), torch.from_numpy(signs).to(device, dtype)

    return SparseDelta({"node": part(node, signs_n), "edge": part(edge, signs_e)})


def label_pairs(labels: np.ndarray, num_labels: int) -> np.ndarray:
    """[N]: labels[t - 1] * L + labels[t] at t >= 1 (the edge column of the label pair), and
    labels[0] at t = 0, where no label precedes (a document's first token: never read)."""
    pairs = labels.copy()
    pairs[1:] += labels[:-1] * num_labels
    return pairs


class Updater:
    """Writes sparse deltas into a model's tables and keeps the sums for exact averaging.

    ``record=True`` also keeps every update as (instances completed before it, scaled delta):
    the voted perceptron's prediction replays them (``structures.voting.VoteState``).
    """

    def __init__(self, weights: ChainWeights, average: bool = False, record: bool = False):
        self.weights = weights
        self.average = average
        self.seen = 0  # instances completed
        tables = weights.tables().items()  # (sums in memory that may take huge pages)
        self.sums = {n: huge_page_zeros_like(t) for n, t in tables} if average else {}
        self.history: list[tuple[int, SparseDelta]] | None = [] if record else None
        # (table, flat indices) of every update while a list: parameter mixing reads it
        self.journal: list[tuple[str, Tensor]] | None = None

    @torch.no_grad()
    def apply(self, delta: SparseDelta, scale: float = 1.0) -> None:
        """w += scale * delta (and u += seen * scale * delta when averaging)."""
        tables = self.weights.tables()
        if self.history is not None:
            self.history.append((self.seen, delta if scale == 1.0 else delta.scaled(scale)))
        for name, (index, vals) in delta.parts.items():
            device = tables[name].device  # deltas made on the CPU (Φ^g counts) reach GPU tables
            index, vals = index.to(device), vals.to(device)
            flat, pos = flat_at(tables[name], index)
            flat.index_add_(0, pos, vals, alpha=scale)
            if self.journal is not None:
                self.journal.append((name, index))
            if self.average and self.seen:
                self.sums[name].view(-1).index_add_(0, index, vals, alpha=scale * self.seen)

    def table_bytes(self) -> int:
        """Bytes of the model's tables in memory while it trains: the weights, the averaging
        sums, and the copy ``averaged`` makes for an evaluation."""
        weights = sum(t.numel() * t.element_size() for t in self.weights.tables().values())
        return weights * (3 if self.average else 1)

    def tick(self, n: int = 1) -> None:
        """Mark ``n`` instances as completed."""
        self.seen += n

    @torch.no_grad()
    def averaged_tables(self) -> dict[str, Tensor]:
        """w - u / seen per table (the current weights when not averaging)."""
        tables = self.weights.tables()
        if not self.average or not self.seen:
            return {n: t.clone() for n, t in tables.items()}
        return {n: t - self.sums[n] / self.seen for n, t in tables.items()}

    @contextmanager
    def averaged(self):
        """Temporarily install the averaged weights (for evaluation), then restore: a copy of
        the tables meanwhile (the averaging itself is in place, ``_average_in_place``)."""
        if not self.average:
            yield
            return
        tables = self.weights.tables()
        backup = {n: t.clone() for n, t in tables.items()}
        self._average_in_place()
        try:
            yield
        finally:
            with torch.no_grad():
                for n, t in tables.items():
                    t.copy_(backup[n])

    @torch.no_grad()
    def finalize(self) -> None:
        """Install the averaged weights for good."""
        if self.average and self.seen:
            self._average_in_place()

    @torch.no_grad()
    def _average_in_place(self, rows: int = 1 << 16) -> None:
        """w <- w - u / seen, ``rows`` rows at a time: the values of ``averaged_tables``
        without a table-sized temporary."""
        if not self.seen:
            return
        for n, t in self.weights.tables().items():
            for a in range(0, t.shape[0], rows):
                t[a : a + rows] -= self.sums[n][a : a + rows] / self.seen

    def state(self) -> dict[str, Tensor]:
        out = {f"sums.{n}": t for n, t in self.sums.items()}
        out["seen"] = torch.tensor(self.seen)
        return out

    def load_state(self, state: dict[str, Tensor]) -> None:
        self.seen = int(state["seen"])
        for n in self.sums:
            self.sums[n].copy_(state[f"sums.{n}"])
