"""``MentionBatch``: all mentions of n candidate labelings at once, and their class counts.

Φ^g of all n candidates of a document is computed by NumPy operations over all mentions of all
candidates at once, never a Python loop over candidates or mentions.  The family kernels share:

    mentions       start/end masks of the [n, T] labels, ends by ``searchsorted``;
    N[c, r, s]     mentions of class c with string s in candidate r (one ``bincount``,
                   stored string-major as [S, K1 * n]);
    same[d, i]     N[d, r_i, s_i], per mention i: the classes of its equal-string mentions;
    sup[d, i]      the same summed over the strings that properly contain s_i;
    pairs          out[r, c, d] = sum over the mentions i of (r, c) of same[d, i] (or sup[d, i]),
                   i.e. sum_s N_c N_d, minus the self-pairs on the diagonal, halved there.

Class counts per mention are class-major ([K+1, M]) because NumPy reduces five-wide rows slowly.
"""

from __future__ import annotations

import numpy as np

from structperc.features.non_local.document_index import DocumentIndex


def unordered_pairs(prod: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Unordered pair counts from prod[.., c, d] = sum N_c N_d and totals[.., c] = sum N_c."""
    k = prod.shape[-1]
    diag = prod[..., np.arange(k), np.arange(k)]
    out = np.triu(prod, 1)
    out[..., np.arange(k), np.arange(k)] = (diag - totals) / 2
    return out


class MentionBatch:
    """All mentions of all n candidates, and the class-count vectors the kernels share.

    Mentions are arrays [M] sorted by candidate, then start: ``row``, ``s``, ``e``, class ``c``,
    ``sid`` (index of the mention's string among the S strings of this batch).  Per-string
    tables are string-major, [S, K1, n], so that gathering or summing strings moves whole
    contiguous rows; per-mention vote vectors are class-major, [K1, M], so that a reduction over
    classes is a few element-wise operations on long vectors (NumPy reduces 5-wide rows slowly).
    """

    def __init__(self, cls: np.ndarray, begin: np.ndarray, index: DocumentIndex, k1: int):
        self.n, T = n, _ = cls.shape
        self.k1, self.index, self.T = k1, index, T
        self.ent = ent = cls > 0
        start = ent.copy()
        start[:, 1:] &= begin[:, 1:] | (cls[:, 1:] != cls[:, :-1])
        boundary = start | ~ent
        boundary[:, 0] = True  # the end of the previous row
        bflat = np.append(np.flatnonzero(boundary), n * T)
        self.cls_flat = cls.reshape(-1)
        f = np.flatnonzero(start)
        self.row = f // T
        self.s = f - self.row * T
        self.e = bflat[np.searchsorted(bflat, f, side="right")] - self.row * T
        self.c = self.cls_flat[f]
        sids = index.spans(self.s, self.e)
        mask = np.zeros(len(index.string_of), dtype=bool)
        mask[sids] = True
        self.present = np.flatnonzero(mask)
        self.S = S = len(self.present)
        self.sid = (np.cumsum(mask) - 1)[sids]
        self.rc = self.row * k1 + self.c  # (candidate, class) of every mention
        self.N = np.bincount((self.sid * k1 + self.c) * n + self.row, minlength=S * k1 * n)
        self.N = self.N.reshape(S, k1 * n)
        self._gather = (self.sid * k1 + np.arange(k1)[:, None]) * n + self.row  # [K1, M]
        self._same: np.ndarray | None = None
        self._sup: np.ndarray | None = None

    def per_class(self, weights: np.ndarray | None = None) -> np.ndarray:
        """[n, K1]: the sum of ``weights`` (or 1) over the mentions of each (candidate, class)."""
        out = np.bincount(self.rc, weights=weights, minlength=self.n * self.k1)
        return out.reshape(self.n, self.k1)

    def by_class(self, votes: np.ndarray) -> np.ndarray:
        """[n, K1, K1]: out[r, c, d] = sum of votes[d, i] over the mentions i of (r, c)."""
        k1 = self.k1
        flat = self.rc * k1 + np.arange(k1)[:, None]  # [K1, M]
        out = np.bincount(flat.reshape(-1), weights=votes.reshape(-1), minlength=self.n * k1 * k1)
        return out.reshape(self.n, k1, k1)

    def at_mentions(self, table: np.ndarray) -> np.ndarray:
        """A string-major table [S, K1 * n] read at every mention: [K1, M]."""
        return table.reshape(-1)[self._gather]

    def same(self) -> np.ndarray:
        """[K1, M]: per mention, the classes of the mentions with its string (itself included)."""
        if self._same is None:
            self._same = self.at_mentions(self.N)
        return self._same

    def sup(self) -> np.ndarray:
        """[K1, M]: per mention, the classes of the mentions whose string contains its own."""
        if self._sup is None:
            local = {s: i for i, s in enumerate(self.present.tolist())}
            pairs = sorted(
                (local[a], b)
                for b, sid in enumerate(self.present.tolist())
                for a in self.index.substrings(sid)
                if a in local
            )
            full = np.zeros(self.N.shape, dtype=self.N.dtype)
            if pairs:
                arr = np.array(pairs, dtype=np.int64)
                inner, first = np.unique(arr[:, 0], return_index=True)
                full[inner] = np.add.reduceat(self.N[arr[:, 1]], first, axis=0)
            self._sup = self.at_mentions(full)
        return self._sup
