"""Perceptrons with non-local features: Kazama & Torisawa (2007), Algorithms 4.1 and 4.2.

With Φ^l the local (chain) features, Φ^g the non-local document features and Φ^a = Φ^l + Φ^g,
for each document (x, y*):

    {y^n} <- the n-best labelings under Φ^l·α (exact, ``decode/nbest.py``); y^1, y^2 its first two
    y'  <- argmax over {y^n} of Φ^a·α;  y'' <- the best candidate other than y* under Φ^a·α
    (A) if y' != y* and Φ^a(y*)·α - Φ^a(y')·α <= C^a:   α += Φ^a(y*) - Φ^a(y')
        elif Φ^a(y*)·α - Φ^a(y'')·α <= C^a:             α += Φ^a(y*) - Φ^a(y'')
    (B) else (Alg. 4.2 only: make the local model good enough too):
        if y^1 != y*:                                   α += Φ^l(y*) - Φ^l(y^1)
        elif Φ^l(y*)·α - Φ^l(y^2)·α <= C^l:             α += Φ^l(y*) - Φ^l(y^2)

Alg. 4.1 (the candidate algorithm) is (A) alone: ``local_update=False``.  The per-word
training error counts the tokens y' gets wrong.  Each step reports in ``StepStats.extra``:
``updates_a``, ``updates_b`` and ``gold_in_nbest`` (y* among the n candidates).

BPM initialisation (Herbrich & Graepel 2000, as the paper uses it: ``bpm_runs`` single epochs
from α = 0 over differently shuffled data, averaged, as the starting point) is run by the
trainer; the learner only says how many runs it wants.
"""

from __future__ import annotations

import torch
from torch import Tensor

from structperc.data.document import Document
from structperc.decode.nbest import nbest
from structperc.learn.base import StepStats
from structperc.model.batch import FeatureBatch
from structperc.model.updates import SparseDelta, Updater, path_delta


def gold_path_score(potentials: Tensor, gold: Tensor) -> Tensor:
    """Φ^l(y*)·α of one sequence: potentials [T, L, L], gold [T] -> scalar."""
    T = len(gold)
    first = potentials[0, 0, gold[0]]
    if T == 1:
        return first
    return first + potentials[torch.arange(1, T), gold[:-1], gold[1:]].sum()


class ProposedPerceptron:
    """Alg. 4.2 (``local_update=True``) or Alg. 4.1 (``False``) with n-best size ``n``."""

    def __init__(
        self,
        n: int = 20,
        C: float = 5657.0,
        C_local: float | None = None,
        local_update: bool = True,
        average: bool = False,
        bpm_runs: int = 10,
    ):
        if n < 2:
            raise ValueError(f"learner.n must be >= 2 (a best and a second best), got {n}")
        self.n, self.C = n, C
        self.C_local = C if C_local is None else C_local
        self.local_update = local_update
        self.average = average
        self.bpm_runs = bpm_runs
        self.documents: list[Document] | None = None
        self.doc_features = None

    uses_document_features = True

    def bind(self, documents: list[Document], doc_features) -> ProposedPerceptron:
        """The training documents (indexed like the feature matrix) and the Φ^g extractor."""
        self.documents, self.doc_features = documents, doc_features
        return self

    def step(self, updater: Updater, batch: FeatureBatch, gold: Tensor) -> StepStats:
        if self.documents is None or batch.doc_ids is None:
            raise RuntimeError("ProposedPerceptron.bind(documents, doc_features) first")
        weights = updater.weights
        L = weights.num_labels
        doc = self.documents[int(batch.doc_ids[0])]
        pot = weights.potentials(batch)  # [1, T, L, L]
        paths, local = nbest(pot, batch.lengths, self.n)  # [1, n, T], [1, n]
        valid = torch.isfinite(local[0])
        cands, local = paths[0, valid], local[0, valid]  # [m, T], [m]
        gold_local = gold_path_score(pot[0], gold)
        rows = torch.cat([gold.unsqueeze(0), cands])  # [m + 1, T]: the gold first
        ids, offsets = self.doc_features.vectorize(doc, rows)
        g_score = weights.global_scores(ids, offsets)  # [m + 1]
        total = torch.cat([gold_local.view(1), local]) + g_score  # Φ^a·α, gold first
        is_gold = (cands == gold.unsqueeze(0)).all(dim=1)  # [m]
        cand_total = total[1:]
        best = int(cand_total.argmax())
        wrong = cand_total.masked_fill(is_gold, float("-inf"))
        second = int(wrong.argmax())
        stats = StepStats(tokens=len(gold), errors=int((cands[best] != gold).sum()))
        stats.extra["gold_in_nbest"] = int(is_gold.any())
        rival, kind = None, None
        if not is_gold[best] and float(total[0] - cand_total[best]) <= self.C:
            rival, kind = best, "a"
        elif bool(torch.isfinite(wrong[second])) and float(total[0] - wrong[second]) <= self.C:
            rival, kind = second, "a"
        elif self.local_update:
            if not is_gold[0]:
                rival, kind = 0, "b"
            elif len(cands) > 1 and float(gold_local - local[1]) <= self.C_local:
                rival, kind = 1, "b"
        if rival is not None:
            delta = path_delta(batch, gold, cands[rival], L)
            if kind == "a":
                counts = weights.global_counts(ids, offsets, weights.global_.num_embeddings)
                diff = counts[0] - counts[rival + 1]  # [G]
                nz = torch.nonzero(diff).squeeze(1)
                delta = delta + SparseDelta({"global": (nz, diff[nz])})
            updater.apply(delta)
            stats.updates = 1
            stats.extra[f"updates_{kind}"] = 1
        return stats


def rescore_argmax(local_paths: Tensor, local_scores: Tensor, global_scores: Tensor) -> Tensor:
    """The candidate [T] maximising Φ^l·α + Φ^g·α among n candidates [n, T] (first on ties)."""
    return local_paths[int((local_scores + global_scores).argmax())]
