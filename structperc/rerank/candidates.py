"""First models and their n-best lists, by a k-fold jackknife (Collins 2002, section 2.3).

A first model trained on data that it then decodes has nearly no errors there, which would teach
a reranker nothing: the training lists come from k first models, model f trained on every
training document not in fold f (document d is in fold d mod k) and decoding fold f.  The dev and
test lists come from one first model trained on all the training data ("fold" ``ALL``).  Each fold
is an independent job (``tasks/jackknife.py`` trains and decodes one), and the rerank task runs
the missing ones in turn, or a Hydra multirun (``task.fold=0,1,2,3,4,all``) runs them in
parallel (joblib locally, submitit on a cluster) into the same cache folder.

Units are documents (Kazama & Torisawa) or sentences (Collins): a sentence's n-best is decoded
from the document's token scores cut at the sentence (``ChainData.sentences``).  The first model
is any learner of the chain; a CRF's lists carry log p(y | x) = s(y) − log Z (Collins's L(x):
log Z from the chain structure's "marginals"), a perceptron's its score s(y).  A fold's file
holds the lists, the first model's training seconds and the decoding seconds
(``data/candidates.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from structperc.data.candidates import CandidateSet, entity_counts
from structperc.decode.nbest import nbest_batched
from structperc.decode.scores import path_scores
from structperc.features.cache import cache_key
from structperc.structures.chain import ChainData, ChainStructure, length_batches

ALL = "all"  # the fold of the first model trained on all the training data


@dataclass(frozen=True)
class ListSettings:
    """How the lists are made: ``folds`` of the jackknife, the ``unit`` ("document" or
    "sentence"), ``n`` candidates per training unit and ``n_test`` per dev/test unit."""

    folds: int = 5
    unit: str = "document"
    n: int = 20
    n_test: int = 100

    def file(self, fold: int | str, split: str = "train") -> str:
        """The file name of a fold's lists: ``fold{f}_n{n}``, or ``all_{split}_n{n_test}``."""
        if fold == ALL:
            return f"{ALL}_{split}_n{self.n_test}"
        return f"fold{fold}_n{self.n}"

    def __post_init__(self):
        if self.unit not in ("document", "sentence"):
            raise ValueError(f"task.unit must be 'document' or 'sentence', got {self.unit!r}")
        if self.folds < 2 or self.n < 1 or self.n_test < 1:
            raise ValueError(
                f"task.folds >= 2, task.n >= 1, task.n_test >= 1; got {self.folds}, {self.n}, "
                f"{self.n_test}"
            )


def fold_documents(num_docs: int, folds: int, fold: int) -> tuple[list[int], list[int]]:
    """(training documents of first model ``fold``, the documents it decodes): d mod folds."""
    held_out = [d for d in range(num_docs) if d % folds == fold]
    return [d for d in range(num_docs) if d % folds != fold], held_out


def as_units(data: ChainData, unit: str) -> tuple[ChainData, torch.Tensor]:
    """The instances to decode and their units [U, 3] (document, first token, end token)."""
    if unit == "sentence":
        return data.sentences()
    lengths = data.features.doc_offsets.diff()
    docs = torch.arange(len(data))
    return data, torch.stack([docs, torch.zeros_like(docs), lengths], dim=1)


@torch.no_grad()
def nbest_lists(
    structure: ChainStructure,
    units: ChainData,
    unit_index: torch.Tensor,
    n: int,
    *,
    log_probs: bool,
    fold: int,
    batch_size: int = 16,
    device="cpu",
) -> CandidateSet:
    """The n best labelings of every unit (with gold labels), scored by the first model."""
    labels = structure.weights.labels
    out: list[CandidateSet | None] = [None] * len(units)
    for docs, batch in length_batches(units.features, batch_size, device, False):
        potentials = structure.potentials(batch)  # [B, T, L, L]
        paths, scores = nbest_batched(potentials, batch.lengths, n)  # [B, n, T], [B, n]
        gold = batch.pad(torch.cat([units.gold(d) for d in docs]).to(device))  # [B, T]
        gold_scores = path_scores(potentials, batch.lengths, gold.unsqueeze(1))[:, 0]  # [B]
        scores, gold_scores = scores.double(), gold_scores.double()
        if log_probs:
            logz = structure.log_partition(batch, potentials=potentials.double())  # [B]
            scores, gold_scores = scores - logz.unsqueeze(1), gold_scores - logz
        for b, d in enumerate(docs):
            T = int(batch.lengths[b])
            valid = torch.isfinite(scores[b])
            rows = paths[b, valid, :T].cpu()  # [m, T]
            gold_tags = [labels[i] for i in gold[b, :T].tolist()]
            counts = [entity_counts(gold_tags, [labels[i] for i in r]) for r in rows.tolist()]
            tp, fp, fn = (torch.tensor(c, dtype=torch.long) for c in zip(*counts, strict=True))
            out[d] = CandidateSet(
                units=unit_index[d : d + 1],
                offsets=torch.tensor([0, len(rows)]),
                labels=rows.reshape(-1),
                label_offsets=torch.arange(len(rows) + 1) * T,
                base=scores[b, valid].cpu(),
                gold_base=gold_scores[b : b + 1].cpu(),
                errors=(rows != gold[b, :T].cpu()).sum(dim=1),
                tp=tp,
                fp=fp,
                fn=fn,
                fold=torch.tensor([fold]),
            )
    return CandidateSet.cat(out)  # type: ignore[arg-type]


def lists_folder(root: str | Path, key: dict) -> Path:
    """The cache folder of the lists made with the settings ``key``."""
    return Path(root) / cache_key(key)
