"""Section 6 of ``make bench``: reranking (Collins 2002; Kazama & Torisawa 2007, section 6.3) —
the n-best lists, their global features, and the rankers, on CoNLL-2003.

The first model is the shared model (``common.load_shared_model``: the averaged perceptron of
section 1), so its scores L(x) are a perceptron's Φ·w, not a CRF's log-probabilities as in
Collins's setting (the time does not depend on it).  The rankers and the task settings come from
the configuration ``make run`` uses: ``conf/ranker/margin.yaml`` (Kazama & Torisawa's re-ranker:
the candidate algorithm, Alg. 4.1, over the lists) with ``task.base_weight`` and the
``document_features`` of ``conf/experiment/conll03_rerank1.yaml`` (re-ranking 1: L(x) added with
the fixed weight 1, non-local features), ``conf/ranker/voted.yaml`` and ``conf/ranker/boost.yaml``
with ``task.target`` and ``task.min_units`` of ``conf/experiment/conll03_collins_vp.yaml``
(Collins's features of sentence lists, references = the oracle candidates).

Rows, each worker in a fresh process:

* ``lists``: ``nbest_lists`` of every test unit with the shared model for ``LISTS`` (documents,
  n = 20 and 100; sentences, n = 20): up to ``repeats`` passes (none past ``budget_s``), medians.
* ``kazama``: the non-local features (``NonLocalFeatures.vectorize``) of the test documents'
  20-best lists, each pass with a fresh extractor (``from_state``: document indexes built
  again); then ``candidate_epochs`` epochs of the candidate algorithm on ``CandidateList`` over
  the training documents' 20-best lists.
* ``collins``: Collins's features (``collins_sets`` + ``StringVocabulary.transform``) of the test
  sentences' 20-best lists; ``voted_epochs`` epochs of the voted perceptron over the training
  sentences' lists, the voted prediction of the test lists (``VoteState`` + ``advance`` +
  ``best_rows``, at most ``vote_repeats`` passes within ``vote_budget_s``); ``boost_rounds``
  rounds of boosting over the same training lists.

The training lists are not made by a jackknife: the shared model decodes the training data it
was trained on, so its lists have few errors and the rankers make fewer updates than in a real
run (``structperc/tasks/rerank.py``); only speed is measured.  CRFsuite has no reranker: no peer,
absolute figures only.  Run through ``bench.py`` (``--only rerank``).
"""

from __future__ import annotations

import time
from pathlib import Path
from statistics import median

from common import REPO, Stopwatch, log, max_rss_mb, run_worker, timed_passes, worker_main
from render import fmt

SCRIPT = Path(__file__).resolve()
CONF = REPO / "conf"
KAZAMA_CONF = CONF / "experiment" / "conll03_rerank1.yaml"
COLLINS_CONF = CONF / "experiment" / "conll03_collins_vp.yaml"
LISTS = [("document", 20), ("document", 100), ("sentence", 20)]  # (unit, n) of the test lists
N = 20  # candidates per unit of the feature and ranking rows
DEFAULTS = {
    "repeats": 3,
    "budget_s": 60.0,
    "batch_size": 16,
    "candidate_epochs": 5,
    "voted_epochs": 3,
    "vote_repeats": 2,
    "vote_budget_s": 60.0,
    "boost_rounds": 2000,
    "boost_report_every": 500,
}
QUICK = {
    "repeats": 2,
    "budget_s": 10.0,
    "batch_size": 16,
    "candidate_epochs": 3,
    "voted_epochs": 2,
    "vote_repeats": 2,
    "vote_budget_s": 10.0,
    "boost_rounds": 200,
    "boost_report_every": 50,
}


def ranker(name: str, **overrides):
    """The ranker of ``conf/ranker/{name}.yaml`` (as ``make run`` builds it), ``overrides`` set."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    return instantiate(OmegaConf.merge(OmegaConf.load(CONF / "ranker" / f"{name}.yaml"), overrides))


def experiment(path: Path):
    """An experiment's configuration (``task`` settings, ``document_features``)."""
    from omegaconf import OmegaConf

    return OmegaConf.load(path)


def setup(cfg: dict, splits: tuple[str, ...] = ("train", "test")):
    """(corpus, shared model as a ``ChainStructure``, labels, ``ChainData`` by split)."""
    from common import load_corpus, load_shared_model, setup_threads

    from structperc.data.tags import encode_labels
    from structperc.structures.chain import ChainData, ChainStructure

    setup_threads(cfg["threads"])
    corpus = load_corpus(cfg, splits)
    weights, _, _, mats = load_shared_model(Path(cfg["model_dir"]))
    labels = weights.labels
    data = {s: ChainData(mats[s], encode_labels(corpus[s], labels), corpus[s]) for s in splits}
    return corpus, ChainStructure(weights), labels, data


def make_lists(structure, data, unit: str, n: int, batch_size: int):
    """(units as ``ChainData``, unit index [U, 3], their n-best ``CandidateSet``)."""
    from structperc.rerank.candidates import as_units, nbest_lists

    units, index = as_units(data, unit)
    found = nbest_lists(structure, units, index, n, log_probs=False, fold=-1, batch_size=batch_size)
    return units, index, found


def gold_listed(lists) -> int:
    """Units whose gold labeling is among their candidates."""
    ends = lists.offsets.tolist()
    return sum(bool((lists.errors[a:b] == 0).any()) for a, b in zip(ends, ends[1:], strict=False))


def ranker_f1(corpus, labels, index, data, rows: list[int]) -> float:
    """Test F1 of the winning rows (one per unit, ``RankingData`` of every test unit)."""
    from common import test_f1

    from structperc.tasks.rerank import unit_predictions

    tags = [[labels[i] for i in data.row(r).tolist()] for r in rows]
    return test_f1(corpus["test"], unit_predictions(corpus["test"], index, tags))


def first_rows(data) -> list[int]:
    """The first model's 1-best of every unit: the first row of each list (no reference)."""
    return data.offsets[:-1].tolist()


def sizes(train, test_rows, lists_s: float, features_s: float, passes: dict) -> dict:
    """The training lists' sizes and setup seconds, the test candidates, and the passes of the
    features row (``timed_passes``) as ``features_*``."""
    candidates = sum(len(p) for p in test_rows.paths)
    return {
        "train_units": len(train),
        "train_rows": len(train.base),
        "train_lists_s": lists_s,
        "train_features_s": features_s,
        "test_candidates": candidates,
        **{f"features_{k}": v for k, v in passes.items()},
        "features_per_s": candidates / passes["s"],
    }


def epochs_out(result, cpu_marks: list[float], prefix: str) -> dict:
    """Seconds of every epoch of a ``FitResult``, the first apart (it builds each unit's batch,
    which ``fit`` keeps) and the median of the others."""
    wall = [h.seconds for h in result.history]
    cpu = [b - a for a, b in zip(cpu_marks, cpu_marks[1:], strict=False)]
    later = wall[1:] or wall
    return {
        f"{prefix}_epoch_s_all": wall,
        f"{prefix}_epoch_cpu_s_all": cpu,
        f"{prefix}_epoch_s": median(later),
        f"{prefix}_epoch_cpu_s": median(cpu[1:] or cpu),
        f"{prefix}_updates": [h.updates for h in result.history],
        f"{prefix}_word_error": [h.word_error for h in result.history],
    }


def timed_fit(learner, structure, updater, data, epochs: int):
    """``structperc.trainer.fit`` for ``epochs`` epochs (shuffled, seed 0), and the CPU time at
    its start and after every epoch."""
    from structperc.learn.fitting import FitSettings
    from structperc.trainer import fit

    marks = [time.process_time()]
    result = fit(
        learner,
        structure,
        updater,
        data,
        FitSettings(max_epochs=epochs, tol=0.0, shuffle=True, seed=0, progress=False),
        on_epoch=lambda _log: marks.append(time.process_time()),
    )
    return result, marks


# ---------------------------------------------------------------------------------------------
# workers
# ---------------------------------------------------------------------------------------------
def worker_lists(cfg: dict) -> dict:
    """The n-best lists of the test set for every (unit, n) of ``LISTS``."""
    corpus, structure, _, data = setup(cfg, ("test",))
    rows = []
    for unit, n in LISTS:
        found: list = []

        def one_pass(unit=unit, n=n, found=found) -> None:
            found[:] = make_lists(structure, data["test"], unit, n, cfg["batch_size"])

        passes = timed_passes(one_pass, cfg["repeats"], cfg["budget_s"])
        units, _, lists = found
        row = {
            "unit": unit,
            "n": n,
            "units": lists.num_units,
            "tokens": units.num_tokens,
            "candidates": lists.num_rows,
            "candidates_per_unit": lists.num_rows / max(lists.num_units, 1),
            "gold_in_list": gold_listed(lists),
            **passes,
        }
        row["units_per_s"] = row["units"] / passes["s"]
        rows.append(row)
        log(f"rerank lists: {unit}s, n={n}: {passes['s']:.2f} s")
    return {"documents": len(corpus["test"]), "rows": rows, "peak_rss_mb": max_rss_mb()}


def worker_kazama(cfg: dict) -> dict:
    """Non-local features of the test documents' lists; candidate-algorithm epochs."""
    from hydra.utils import instantiate

    from structperc.features.document import NonLocalFeatures
    from structperc.model.ranker_weights import RankerWeights
    from structperc.model.updates import Updater
    from structperc.rerank.features import list_rows, ranking_data
    from structperc.structures.candidates import CandidateList

    corpus, structure, labels, data = setup(cfg)
    bs = cfg["batch_size"]
    conf = experiment(KAZAMA_CONF)
    learner = ranker("margin")
    sw = Stopwatch()
    train_units, _, train_lists = make_lists(structure, data["train"], "document", N, bs)
    train_rows = list_rows(train_lists, train_units, n=N, target=conf.task.get("target", "gold"))
    lists_s = sw.lap()[0]
    test_units, test_index, test_lists = make_lists(structure, data["test"], "document", N, bs)
    test_rows = list_rows(test_lists, test_units, n=N, target=None)

    nonlocal_ = instantiate(conf.document_features)
    nonlocal_.fit(corpus["train"], labels)
    state = nonlocal_.state()[0]
    csr: list = []

    def vectorize() -> None:
        fresh = NonLocalFeatures.from_state(state)  # no cached document indexes
        pairs = zip(test_rows.documents, test_rows.paths, strict=True)
        csr[:] = [fresh.vectorize(doc, paths) for doc, paths in pairs]

    passes = timed_passes(vectorize, cfg["repeats"], cfg["budget_s"])
    log(f"rerank: non-local features of the test lists: {passes['s']:.2f} s")
    test = ranking_data(test_rows, csr, test_units)
    sw = Stopwatch()
    pairs = zip(train_rows.documents, train_rows.paths, strict=True)
    train = ranking_data(train_rows, [nonlocal_.vectorize(d, p) for d, p in pairs], train_units)
    train_features_s = sw.lap()[0]

    weights = RankerWeights(nonlocal_.num_features)
    base_weight = conf.task.get("base_weight", 1.0)
    structure = CandidateList(weights, learner.base_scale, base_weight)
    updater = Updater(weights, average=learner.average)
    result, marks = timed_fit(learner, structure, updater, train, cfg["candidate_epochs"])
    updater.finalize()
    out = {
        "learner": {k: getattr(learner, k) for k in ("n", "C", "local_update", "average")},
        "base_weight": base_weight,
        "families": list(nonlocal_.families),
        "global_features": nonlocal_.num_features,
        "train_documents": len(corpus["train"]),
        "test_documents": len(corpus["test"]),
        **sizes(train, test_rows, lists_s, train_features_s, passes),
        **epochs_out(result, marks, "candidate"),
        "candidate_extra": [dict(h.extra) for h in result.history],
        "first_model_test_f1": ranker_f1(corpus, labels, test_index, test, first_rows(test)),
        "candidate_test_f1": ranker_f1(corpus, labels, test_index, test, structure.winners(test)),
        "peak_rss_mb": max_rss_mb(),
    }
    epochs = ", ".join(map(fmt, out["candidate_epoch_s_all"]))
    log(f"rerank: candidate algorithm, epochs {epochs} s")
    return out


def worker_collins(cfg: dict) -> dict:
    """Collins's features of the test sentences' lists; voted perceptron; boosting."""
    from structperc.features.collins import LowercaseLexicon
    from structperc.rerank.features import StringVocabulary, collins_sets, list_rows, ranking_data

    corpus, structure, labels, data = setup(cfg)
    bs = cfg["batch_size"]
    task = experiment(COLLINS_CONF).task
    target, min_units = task.get("target", "oracle"), task.get("min_units", 5)
    sw = Stopwatch()
    train_units, _, train_lists = make_lists(structure, data["train"], "sentence", N, bs)
    train_rows = list_rows(train_lists, train_units, n=N, target=target)
    lists_s = sw.lap()[0]
    sw = Stopwatch()
    lexicon = LowercaseLexicon.from_tokens(t for d in corpus["train"] for t in d.tokens)
    train_sets = collins_sets(train_rows, labels, lexicon)
    vocab = StringVocabulary(min_units).fit(train_sets)
    train = ranking_data(train_rows, [vocab.transform(u) for u in train_sets], train_units)
    del train_sets
    train_features_s = sw.lap()[0]
    test_units, test_index, test_lists = make_lists(structure, data["test"], "sentence", N, bs)
    test_rows = list_rows(test_lists, test_units, n=N, target=None)
    csr: list = []

    def features() -> None:
        csr[:] = [vocab.transform(u) for u in collins_sets(test_rows, labels, lexicon)]

    passes = timed_passes(features, cfg["repeats"], cfg["budget_s"])
    log(f"rerank: Collins's features of the test lists: {passes['s']:.2f} s")
    test = ranking_data(test_rows, csr, test_units)
    out: dict = {
        "target": target,
        "min_units": min_units,
        "global_features": len(vocab),
        "train_sentences": len(train_units),
        "test_sentences": len(test),
        **sizes(train, test_rows, lists_s, train_features_s, passes),
    }

    def f1(rows: list[int]) -> float:
        return ranker_f1(corpus, labels, test_index, test, rows)

    out["first_model_test_f1"] = f1(first_rows(test))
    out.update(voted_perceptron(cfg, len(vocab), train, test, f1))
    out.update(boosting(cfg, len(vocab), train, test, f1))
    out["peak_rss_mb"] = max_rss_mb()
    return out


def voted_perceptron(cfg: dict, num_global: int, train, test, f1) -> dict:
    """Epochs of Collins's voted perceptron (Figure 3), then its voted prediction (Figure 4) of
    the test lists and, for comparison, the prediction with its last weights."""
    from structperc.model.ranker_weights import RankerWeights
    from structperc.model.updates import Updater
    from structperc.structures.candidates import CandidateList
    from structperc.structures.voting import VoteState

    learner = ranker("voted")
    weights = RankerWeights(num_global)
    structure = CandidateList(weights, learner.base_scale, None)
    updater = Updater(weights, average=learner.average, record=True)
    result, marks = timed_fit(learner, structure, updater, train, cfg["voted_epochs"])
    log(f"rerank: voted perceptron, epochs {', '.join(fmt(h.seconds) for h in result.history)} s")
    winners: list = []

    def vote() -> None:
        state = VoteState(structure, test)
        state.advance(updater.history)
        winners[:] = state.best_rows(updater.seen)

    votes = timed_passes(vote, cfg["vote_repeats"], cfg["vote_budget_s"])
    last = timed_passes(lambda: structure.winners(test), cfg["repeats"], cfg["budget_s"])
    log(f"rerank: voted prediction of the test lists: {votes['s']:.1f} s")
    return {
        "voted": {"beta": learner.base_scale, "vote": learner.vote},
        **epochs_out(result, marks, "voted"),
        "vote_updates": len(updater.history),
        "vote_vectors": updater.seen,
        "vote_s_all": votes["s_all"],
        "vote_cpu_s_all": votes["cpu_s_all"],
        "vote_s": votes["s"],
        "vote_cpu_s": votes["cpu_s"],
        "last_weights_s": last["s"],
        "last_weights_cpu_s": last["cpu_s"],
        "voted_test_f1": f1(winners),
    }


def boosting(cfg: dict, num_global: int, train, test, f1) -> dict:
    """``boost_rounds`` rounds of Collins's boosting (Figure 2): the rounds' seconds (from its
    reports) apart from its setup (pairs, index arrays, w_0)."""
    from structperc.learn.fitting import FitSettings
    from structperc.model.ranker_weights import RankerWeights
    from structperc.model.updates import Updater
    from structperc.structures.candidates import CandidateList
    from structperc.trainer import fit

    learner = ranker("boost", rounds=cfg["boost_rounds"], report_every=cfg["boost_report_every"])
    weights = RankerWeights(num_global)
    structure = CandidateList(weights, learner.base_scale, None)
    sw = Stopwatch()
    result = fit(learner, structure, Updater(weights), train, FitSettings(progress=False))
    fit_s, fit_cpu_s = sw.lap()
    reports = [h.seconds for h in result.history]
    rounds = result.history[-1].extra["rounds"] if result.history else 0
    rounds_s = sum(reports)
    log(f"rerank: boosting, {rounds:,} rounds in {rounds_s:.1f} s (setup {fit_s - rounds_s:.1f} s)")
    return {
        "boost": {"epsilon": learner.epsilon, "report_every": learner.report_every},
        "boost_rounds": rounds,
        "boost_rounds_s": rounds_s,
        "boost_rounds_per_s": rounds / rounds_s if rounds_s else None,
        "boost_report_s_all": reports,
        "boost_setup_s": fit_s - rounds_s,
        "boost_fit_s": fit_s,
        "boost_fit_cpu_s": fit_cpu_s,
        "boost_pairs": result.history[-1].tokens if result.history else 0,
        "boost_test_f1": f1(structure.winners(test)),
    }


WORKERS = {"lists": worker_lists, "kazama": worker_kazama, "collins": worker_collins}


def run(cfg: dict) -> dict:
    t_start = time.perf_counter()
    out = {}
    for name in WORKERS:
        log(f"rerank: {name}")
        out[name] = run_worker(SCRIPT, name, cfg)
    return {"config": cfg, "wall_seconds": time.perf_counter() - t_start, **out}


if __name__ == "__main__":
    worker_main(WORKERS)
