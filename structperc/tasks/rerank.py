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
4. The ranker, any learner of the candidate-list structure, trained by ``trainer.fit``; dev F1 is
   reported per epoch (per ``report_every`` rounds for boosting) and, with ``select_on_dev``,
   the weights of the best dev epoch are kept (boosting's number of rounds).
5. results.json: dev/test P/R/F1, the first model's 1-best F1, the oracle F1 of the lists at
   several n, the share of units whose gold labeling is in the list, and seconds per stage.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch

from structperc.data.candidates import CandidateSet, candidates_exist, load_candidates
from structperc.data.conll import write_conll
from structperc.data.document import Document
from structperc.data.tags import encode_labels, label_set, valid_iob2
from structperc.distributed import SERIAL, Group
from structperc.eval.chunks import evaluate
from structperc.features.cache import extract_features
from structperc.features.collins import LowercaseLexicon
from structperc.features.document import NonLocalFeatures
from structperc.features.pipeline import LocalFeatures
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
from structperc.tasks.inputs import document_features, tagging_inputs
from structperc.tasks.jackknife import generate_fold
from structperc.tasks.registry import task
from structperc.tasks.report import chunk_curves, chunk_scores, finish
from structperc.tasks.training import Evaluation, FitSettings, TrainingRun, history_rows

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


@dataclass(frozen=True)
class RerankSettings:
    """What a rerank run needs.

    corpus, features: as for tagging (``features`` fitted in place), with the feature cache
    (``cache_dir``, ``cache_key``); first_learner, fit: the first models' learner and training
    loop; lists_dir, lists_key, lists: where the n-best lists are cached, what made them, and
    how (``ListSettings``: folds, unit, n, n'); ranker, ranker_fit, second: the second stage's
    learner, its training loop (``task.epochs``) and ``RankerSettings``; fold: a fold job
    (make that fold's lists and stop) or None; doc_features: the non-local features (None: the
    defaults); eval_every: dev F1 every so many epochs; write_predictions; hparams.
    """

    corpus: dict[str, list[Document]]
    features: LocalFeatures
    first_learner: object
    ranker: object
    fit: FitSettings
    ranker_fit: FitSettings
    lists: ListSettings
    second: RankerSettings
    lists_dir: str | Path
    lists_key: dict
    cache_dir: str | Path | None = None
    cache_key: dict = field(default_factory=dict)
    fold: int | str | None = None
    doc_features: NonLocalFeatures | None = None
    eval_every: int = 1
    write_predictions: bool = True
    hparams: dict = field(default_factory=dict)


def rerank_settings(config) -> RerankSettings:
    """The rerank run (or fold job) of the composed ``config`` (``run.ComposedConfig``)."""
    cfg = config.cfg
    corpus, features, key, _ = tagging_inputs(config)
    task = cfg.task
    settings = config.fit_settings()
    lists = ListSettings(folds=task.folds, unit=task.unit, n=task.n, n_test=task.n_test)
    trainer = {k: cfg.trainer[k] for k in ("max_epochs", "tol", "patience", "shuffle")}
    first = config.plain(cfg.learner)
    if first.get("support") == "all":  # (the CRF's default: its lists keep the key they had)
        del first["support"]
    lists_key = {
        "learner": first,
        "trainer": trainer | {"seed": cfg.seed},
        "features": key,
        "lists": {"folds": task.folds, "unit": task.unit},  # n and n_test name the files
    }
    if not features.edges:  # (keys of the default model stay as they were)
        lists_key["edges"] = False
    keys = ("features", "base_feature", "base_weight", "local_features", "target", "min_units")
    second = RankerSettings(**{k: task[k] for k in keys}, select_on_dev=task.select_on_dev)
    return RerankSettings(
        corpus=corpus,
        features=features,
        first_learner=config.make(cfg.learner),
        ranker=config.make(cfg.ranker),
        cache_dir=cfg.cache_dir,
        cache_key=key,
        lists_dir=task.lists_dir,
        lists_key=lists_key,
        fit=settings,
        ranker_fit=replace(settings, max_epochs=task.epochs),
        lists=lists,
        second=second,
        fold=task.fold,
        doc_features=document_features(config),
        eval_every=cfg.trainer.eval_every,
        write_predictions=cfg.write_predictions,
        hparams=config.hparams("ranker"),
    )


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


@task("rerank", build=rerank_settings, headline=("dev.f1", "test.f1"))
def run_rerank(settings: RerankSettings, out_dir: Path, group: Group = SERIAL) -> dict:
    """The stages of the module docstring; with ``settings.fold`` set, only that fold's lists."""
    st, corpus, lists, second = settings, settings.corpus, settings.lists, settings.second
    ranker = st.ranker
    t_job = time.perf_counter()
    torch.manual_seed(st.fit.seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    features, mats, feat_seconds, _ = extract_features(
        st.features, corpus, st.cache_dir, st.cache_key
    )
    labels = label_set(corpus["train"])
    data = {s: ChainData(mats[s], encode_labels(docs, labels), docs) for s, docs in corpus.items()}
    folder = lists_folder(st.lists_dir, st.lists_key)
    evaluated = {s: data[s] for s in ("dev", "test") if s in data}
    make = dict(
        learner=st.first_learner,
        train=data["train"],
        evaluate=evaluated,
        num_features=features.num_features,
        labels=labels,
        settings=st.fit,
        lists=lists,
        folder=folder,
        meta={"key": st.lists_key, "labels": labels},
        edges=features.edges,
        node_only=features.node_only_mask(),
    )
    folds = [*range(lists.folds), ALL]
    if st.fold is not None:  # a fold job of a multirun
        t0 = time.perf_counter()
        generate_fold(st.fold if st.fold == ALL else int(st.fold), **make)
        results = {"fold": str(st.fold), "lists": str(folder), "seconds": time.perf_counter() - t0}
        finish(out_dir, Monitor(None), results | {"hparams": st.hparams}, {})
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
    csr, num_global = global_features(second, rows, corpus, labels, st.doc_features)
    ranking = {s: ranking_data(rows[s], csr[s], units[s][0]) for s in rows}
    features_seconds = time.perf_counter() - t0

    chain = (
        ChainWeights(features.num_features, labels, features.edges).set_node_only(
            features.node_only_mask()
        )
        if second.local_features
        else None
    )
    weights = RankerWeights(num_global, chain).to(st.fit.device)
    base_scale = ranker.base_scale if second.base_feature else 0.0
    structure = CandidateList(weights, base_scale, second.base_weight)
    updater = Updater(weights, average=ranker.average, record=ranker.vote)
    run = TrainingRun(out_dir, group)
    eval_split = "dev" if "dev" in ranking else "test"
    best: dict = {"f1": -1.0}

    voters = {s: VoteState(structure, ranking[s]) for s in evaluated} if ranker.vote else {}
    batches: dict[str, dict] = {s: {} for s in evaluated}  # each unit's batch, built once

    def predict(split: str) -> list[int]:
        if ranker.vote:
            voters[split].advance(updater.history or [])
            return voters[split].best_rows(updater.seen)
        return structure.winners(ranking[split], st.fit.device, cache=batches[split])

    def split_f1(split: str, winners: list[int]) -> tuple:
        tags = [[labels[i] for i in ranking[split].row(r).tolist()] for r in winners]
        pred = unit_predictions(corpus[split], units[split][1], tags)
        docs = corpus[split]
        return evaluate([d.tags for d in docs], pred, [d.sentence_starts for d in docs]), pred

    def evaluate_during_training() -> dict[str, float]:
        s, pred = split_f1(eval_split, predict(eval_split))
        if s.f1 > best["f1"]:
            best.update(f1=s.f1, tables={n: t.clone() for n, t in weights.tables().items()})
            best.update(seen=updater.seen, updates=len(updater.history or []))
        docs = corpus[eval_split]
        curves = chunk_curves(s, [d.tags for d in docs], pred, [d.sentence_starts for d in docs])
        return {"f1": s.f1, "precision": s.precision, "recall": s.recall, **curves}

    t0 = time.perf_counter()
    # not forkable: the evaluation keeps the best epoch's weights
    evaluation = Evaluation(eval_split, evaluate_during_training, ("f1",), st.eval_every, False)
    result = run.fit(
        ranker, structure, updater, ranking["train"], st.ranker_fit, evaluation=evaluation
    )
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
        if st.write_predictions:
            written = [
                valid_iob2(p, d.sentence_spans()) for d, p in zip(corpus[split], pred, strict=True)
            ]
            write_conll(out_dir / f"{split}.pred.txt", corpus[split], written)
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
    results["hparams"] = st.hparams
    return run.finish(results, {f"{s}_f1": results[s]["f1"] for s in evaluated})


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
