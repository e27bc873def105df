"""The rerank task: a first model's n-best lists, global features, a ranker (Collins 2002;
Kazama & Torisawa 2007, section 6.3), end to end from plain objects.

1. Local features as for tagging (``features/cache.py``).
2. The lists (``rerank/candidates.py``): a first model per jackknife fold decodes its held-out
   training units, one trained on all the training data decodes dev and test.  They are cached
   under ``lists_dir`` with a key of everything that made them; missing folds are made here in
   turn, or beforehand in parallel by fold jobs (``fold`` set: make that fold and stop).
3. Global features of every row (``rerank/features.py``): Collins's (``collins``) or the
   non-local ones (``nonlocal``), optionally the first model's score L(x) (``base_feature``) and
   the chain's local features re-trained (``local_features``: re-ranking 2).
4. The ranker, any learner of the candidate-list structure, trained by ``train.fit``; dev F1 is
   reported per epoch (per ``report_every`` rounds for boosting) and, with ``select_on_dev``,
   the weights of the best dev epoch are kept (boosting's number of rounds).
5. results.json: dev/test P/R/F1, the first model's 1-best F1, the oracle F1 of the lists at
   several n, the share of units whose gold labeling is in the list, and seconds per stage.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from structperc.data.candidates import CandidateSet, candidates_exist, load_candidates
from structperc.data.conll import write_conll
from structperc.data.document import Document
from structperc.data.tags import encode_labels, label_set
from structperc.eval.chunks import evaluate
from structperc.features.cache import extract_features
from structperc.features.collins import LowercaseLexicon
from structperc.features.document import NonLocalFeatures
from structperc.features.pipeline import LocalFeatures
from structperc.learn.fitting import FitSettings
from structperc.model.ranker_weights import RankerWeights
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.monitor import Monitor
from structperc.rerank.candidates import ALL, ListSettings, as_units, lists_folder
from structperc.rerank.features import (
    ListRows,
    StringVocabulary,
    collins_sets,
    list_rows,
    ranking_data,
)
from structperc.structures.candidates import CandidateList
from structperc.structures.chain import ChainData
from structperc.structures.voting import VoteState
from structperc.tasks.jackknife import generate_fold
from structperc.tasks.report import EpochReporter, chunk_scores, finish, history_rows
from structperc.train import fit

log = logging.getLogger(__name__)

FEATURE_MAPS = ("nonlocal", "collins")


@dataclass(frozen=True)
class RankerSettings:
    """What the second stage uses: ``features`` ("nonlocal" or "collins"), the first model's score
    as a feature (``base_feature``) with a learned weight or a fixed one (``base_weight``), the
    chain's local features re-trained (``local_features``),
    the reference (``target``), Collins's cutoff (``min_units``), keep the best dev epoch
    (``select_on_dev``), and the n of the oracle figures (``oracle_n``)."""

    features: str = "nonlocal"
    base_feature: bool = True
    base_weight: float | None = None
    local_features: bool = False
    target: str = "gold"
    min_units: int = 1
    select_on_dev: bool = True
    oracle_n: tuple[int, ...] = (1, 10, 20, 100)

    def __post_init__(self):
        if self.features not in FEATURE_MAPS:
            raise ValueError(f"task.features must be one of {FEATURE_MAPS}, got {self.features!r}")


def unit_predictions(docs: list[Document], units: torch.Tensor, rows: list[list[str]]):
    """Per-document tags from per-unit tags (units [U, 3]: document, start, end)."""
    out = [["O"] * len(d) for d in docs]
    for (d, s, e), tags in zip(units.tolist(), rows, strict=True):
        out[d][s:e] = tags
    return out


def oracle_rows(lists: CandidateSet, n: int) -> list[int]:
    """Per unit, among its first n candidates, the one with the fewest wrong entities
    (spurious + missed), the first model's rank on ties."""
    out = []
    for u in range(lists.num_units):
        rows = lists.rows(u)[:n]
        wrong = lists.fp[rows.start : rows.stop] + lists.fn[rows.start : rows.stop]
        out.append(rows.start + int(wrong.argmin()))
    return out


def list_figures(lists: CandidateSet, docs: list[Document], labels: list[str], ns) -> dict:
    """The first model's 1-best F1, the oracle F1 at each n, and how often the gold is listed."""
    gold = [d.tags for d in docs]

    def f1_of(rows: list[int]) -> float:
        tags = [[labels[i] for i in lists.labeling(r).tolist()] for r in rows]
        pred = unit_predictions(docs, lists.units, tags)
        return evaluate(gold, pred, [d.sentence_starts for d in docs]).f1

    first = [int(lists.offsets[u]) for u in range(lists.num_units)]
    listed = [
        bool((lists.errors[lists.rows(u).start : lists.rows(u).stop] == 0).any())
        for u in range(lists.num_units)
    ]
    return {
        "base_f1": f1_of(first),
        "oracle_f1": {str(n): f1_of(oracle_rows(lists, n)) for n in ns},
        "gold_in_list": 100.0 * sum(listed) / max(len(listed), 1),
        "mean_candidates": lists.num_rows / max(lists.num_units, 1),
    }


def run_rerank(
    *,
    corpus: dict[str, list[Document]],
    features: LocalFeatures,
    first_learner,
    ranker,
    out_dir: Path,
    cache_dir: str | Path | None,
    cache_key: dict,
    lists_dir: str | Path,
    lists_key: dict,
    settings: FitSettings,
    ranker_settings: FitSettings,
    lists: ListSettings,
    second: RankerSettings,
    fold: int | str | None = None,
    doc_features: NonLocalFeatures | None = None,
    eval_every: int = 1,
    write_predictions: bool = True,
    hparams: dict | None = None,
) -> dict:
    """The stages of the module docstring; with ``fold`` set, only that fold's lists."""
    t_job = time.perf_counter()
    torch.manual_seed(settings.seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    features, mats, feat_seconds, _ = extract_features(features, corpus, cache_dir, cache_key)
    labels = label_set(corpus["train"])
    data = {s: ChainData(mats[s], encode_labels(docs, labels), docs) for s, docs in corpus.items()}
    folder = lists_folder(lists_dir, lists_key)
    evaluated = {s: data[s] for s in ("dev", "test") if s in data}
    make = dict(
        learner=first_learner,
        train=data["train"],
        evaluate=evaluated,
        num_features=features.num_features,
        labels=labels,
        settings=settings,
        lists=lists,
        folder=folder,
        meta={"key": lists_key, "labels": labels},
        edges=features.edges,
    )
    folds = [*range(lists.folds), ALL]
    if fold is not None:  # a fold job of a multirun
        t0 = time.perf_counter()
        generate_fold(fold if fold == ALL else int(fold), **make)
        results = {"fold": str(fold), "lists": str(folder), "seconds": time.perf_counter() - t0}
        finish(out_dir, Monitor(None), results | {"hparams": hparams or {}}, {})
        return results
    t0 = time.perf_counter()
    for f in folds:
        if not candidates_exist(folder / lists.file(f, next(iter(evaluated)))):
            log.info("making the lists of first model %s (%s)", f, folder)
            generate_fold(f, **make)
    lists_seconds = time.perf_counter() - t0
    train_parts = [load_candidates(folder / lists.file(f)) for f in range(lists.folds)]
    train_lists = CandidateSet.cat([c for c, _ in train_parts]).sorted_by_unit()
    split_lists = {s: load_candidates(folder / lists.file(ALL, s)) for s in evaluated}
    first_seconds = [m["train_seconds"] for _, m in train_parts]
    all_meta = next(iter(split_lists.values()))[1]

    t0 = time.perf_counter()
    units = {s: as_units(d, lists.unit) for s, d in data.items()}
    rows = {"train": list_rows(train_lists, units["train"][0], n=lists.n, target=second.target)}
    for s, (cands, _) in split_lists.items():
        rows[s] = list_rows(cands, units[s][0], n=lists.n_test, target=None)
    csr, num_global = global_features(second, rows, corpus, labels, doc_features)
    ranking = {s: ranking_data(rows[s], csr[s], units[s][0]) for s in rows}
    features_seconds = time.perf_counter() - t0

    chain = (
        ChainWeights(features.num_features, labels, features.edges)
        if second.local_features
        else None
    )
    weights = RankerWeights(num_global, chain).to(settings.device)
    base_scale = ranker.base_scale if second.base_feature else 0.0
    structure = CandidateList(weights, base_scale, second.base_weight)
    updater = Updater(weights, average=ranker.average, record=ranker.vote)
    monitor = Monitor(out_dir / "tb")
    eval_split = "dev" if "dev" in ranking else "test"
    best: dict = {"f1": -1.0}

    voters = {s: VoteState(structure, ranking[s]) for s in evaluated} if ranker.vote else {}
    batches: dict[str, dict] = {s: {} for s in evaluated}  # each unit's batch, built once

    def predict(split: str) -> list[int]:
        if ranker.vote:
            voters[split].advance(updater.history or [])
            return voters[split].best_rows(updater.seen)
        return structure.winners(ranking[split], settings.device, cache=batches[split])

    def split_f1(split: str, winners: list[int]) -> tuple:
        tags = [[labels[i] for i in ranking[split].row(r).tolist()] for r in winners]
        pred = unit_predictions(corpus[split], units[split][1], tags)
        docs = corpus[split]
        return evaluate([d.tags for d in docs], pred, [d.sentence_starts for d in docs]), pred

    def evaluate_during_training() -> dict[str, float]:
        s, _ = split_f1(eval_split, predict(eval_split))
        if s.f1 > best["f1"]:
            best.update(f1=s.f1, tables={n: t.clone() for n, t in weights.tables().items()})
            best.update(seen=updater.seen, updates=len(updater.history or []))
        return {"f1": s.f1, "precision": s.precision, "recall": s.recall}

    t0 = time.perf_counter()
    # not forkable: the evaluation keeps the best epoch's weights
    report = EpochReporter(
        monitor, updater, eval_every, eval_split, evaluate_during_training, ("f1",), False
    )
    result = fit(ranker, structure, updater, ranking["train"], ranker_settings, on_epoch=report)
    updater.finalize()
    ranking_seconds = time.perf_counter() - t0
    chosen_epoch = None
    if second.select_on_dev and "tables" in best:
        chosen_epoch = next(
            h.epoch for h in result.history if h.extra.get(f"{eval_split}_f1") == best["f1"]
        )
        with torch.no_grad():
            for n, t in weights.tables().items():
                t.copy_(best["tables"][n])
        if updater.history is not None:  # the votes of the vectors up to the best epoch
            updater.history = updater.history[: best["updates"]]
            updater.seen = best["seen"]
            voters = {s: VoteState(structure, ranking[s]) for s in evaluated}

    results: dict = {
        "task": "rerank",
        "ranker": ranker.name,
        "epochs": result.epochs,
        "chosen_epoch": chosen_epoch,
        "stopped_by": result.stopped_by,
        "num_global_features": num_global,
        "train_units": len(ranking["train"]),
        "lists": str(folder),
    }
    for split in evaluated:
        s, pred = split_f1(split, predict(split))
        cands = split_lists[split][0]
        ns = sorted(n for n in {*second.oracle_n, lists.n, lists.n_test} if n <= lists.n_test)
        results[split] = chunk_scores(s) | list_figures(cands, corpus[split], labels, ns)
        log.info("%s: F1 %.2f (first model %.2f)", split, s.f1, results[split]["base_f1"])
        if write_predictions:
            write_conll(out_dir / f"{split}.pred.txt", corpus[split], pred)
    results["seconds"] = {
        "features": feat_seconds,
        "first_models": sum(first_seconds) + all_meta["train_seconds"],
        "first_model_all": all_meta["train_seconds"],
        "first_models_folds": first_seconds,
        "candidates": sum(m["decode_seconds"] for _, m in [*train_parts, *split_lists.values()]),
        "lists_made_here": lists_seconds,
        "global_features": features_seconds,
        "ranking": ranking_seconds,
        "job": time.perf_counter() - t_job,
    }
    results["lists_settings"] = asdict(lists)
    results["history"] = history_rows(result.history)
    results["hparams"] = hparams or {}
    finish(out_dir, monitor, results, {f"{s}_f1": results[s]["f1"] for s in evaluated})
    return results


def global_features(
    second: RankerSettings,
    rows: dict[str, ListRows],
    corpus: dict[str, list[Document]],
    labels: list[str],
    doc_features: NonLocalFeatures | None,
) -> tuple[dict[str, list], int]:
    """CSR global features of every unit's rows per split, and the size of the feature table."""
    if second.features == "collins":
        lexicon = LowercaseLexicon.from_tokens(t for d in corpus["train"] for t in d.tokens)
        sets = {s: collins_sets(r, labels, lexicon) for s, r in rows.items()}
        vocab = StringVocabulary(second.min_units).fit(sets["train"])
        return {s: [vocab.transform(u) for u in sets[s]] for s in sets}, len(vocab)
    nl = doc_features if doc_features is not None else NonLocalFeatures()
    nl.fit(corpus["train"], labels)
    out = {
        s: [nl.vectorize(doc, paths) for doc, paths in zip(r.documents, r.paths, strict=True)]
        for s, r in rows.items()
    }
    return out, nl.num_features
