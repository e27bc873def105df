"""The first models of reranking, one job a fold of the jackknife (Collins 2002, section 2.3).

``generate_fold(f)`` trains first model f on every training document outside fold f (any learner
of the chain, the CRF included: ``trainer.fit``) and writes the n-best lists of the held-out units
(``rerank/candidates.py``: ``nbest_lists``, the file names of ``ListSettings``); ``ALL`` trains
on all the training data and writes the lists of the dev and test units.  The rerank task runs
the folds whose lists are missing, or a Hydra multirun runs one fold a job.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch

from structperc.data.candidates import save_candidates
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.rerank.candidates import ALL, ListSettings, as_units, fold_documents, nbest_lists
from structperc.structures.chain import ChainData, ChainStructure
from structperc.tasks.training import FitSettings, fit

log = logging.getLogger(__name__)


def train_first_model(
    learner,
    train: ChainData,
    num_features: int,
    labels: list[str],
    settings: FitSettings,
    edges: bool = True,
    node_only=None,
) -> tuple[ChainStructure, float]:
    """A chain trained on ``train`` (any chain learner, the CRF included); (structure, seconds).
    ``node_only``: the features without edge weights (``ChainWeights.set_node_only``)."""
    t0 = time.perf_counter()
    weights = ChainWeights(num_features, labels, edges).set_node_only(node_only)
    weights = weights.to(settings.device)
    structure = ChainStructure(weights)
    updater = Updater(weights, average=learner.average)
    fit(learner, structure, updater, train, settings)
    updater.finalize()
    return structure, time.perf_counter() - t0


def generate_fold(
    fold: int | str,
    *,
    learner,
    train: ChainData,
    evaluate: dict[str, ChainData],
    num_features: int,
    labels: list[str],
    settings: FitSettings,
    lists: ListSettings,
    folder: Path,
    meta: dict,
    edges: bool = True,
    node_only=None,
) -> None:
    """Train first model ``fold`` and write its lists into ``folder`` (``ListSettings.file``):
    the held-out training units' n best, or, for ``ALL``, the n_test best of each split of
    ``evaluate``.  The folder is keyed by the first model, the data and the unit; the file
    names by n, so lists of another n reuse nothing but the folder."""
    log_probs = "marginals" in learner.requires  # a CRF: L(x) = log p(y | x)
    if fold == ALL:
        model, seconds = train_first_model(
            learner, train, num_features, labels, settings, edges, node_only
        )
        for split, data in evaluate.items():
            t0 = time.perf_counter()
            units, index = as_units(data, lists.unit)
            found = nbest_lists(model, units, index, lists.n_test, log_probs=log_probs, fold=-1)
            info = {"train_seconds": seconds, "decode_seconds": time.perf_counter() - t0}
            save_candidates(folder / lists.file(ALL, split), found, {**meta, **info, "fold": ALL})
            log.info("first model %s: %d %s units, %.0fs", ALL, found.num_units, split, seconds)
        return
    docs, held_out = fold_documents(len(train), lists.folds, int(fold))
    fold_train = train.subset(docs)
    model, seconds = train_first_model(
        learner, fold_train, num_features, labels, settings, edges, node_only
    )
    t0 = time.perf_counter()
    units, index = as_units(train.subset(held_out), lists.unit)
    index[:, 0] = torch.tensor(held_out)[index[:, 0]]  # documents of the whole training set
    found = nbest_lists(model, units, index, lists.n, log_probs=log_probs, fold=int(fold))
    info = {"train_seconds": seconds, "decode_seconds": time.perf_counter() - t0}
    save_candidates(folder / lists.file(fold), found, {**meta, **info, "fold": int(fold)})
    log.info("first model %s: %d held-out units, %.0fs", fold, found.num_units, seconds)
