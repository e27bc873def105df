"""Section 4 of ``make bench``: Kazama & Torisawa's proposed algorithm (Alg. 4.2, non-local
features) — seconds per training epoch with n = 20, and seconds for n' = 100 rescoring of the
CoNLL-2003 test set.

The learner and the non-local features are built from the project's configuration, as
``make run`` builds them: ``conf/learner/proposed.yaml`` (n = 20, C = C^a = C^l) and the
``document_features`` of ``conf/experiment/conll03_nonlocal.yaml``.  The local weights start from
the shared model (``common.load_shared_model``: the averaged perceptron of section 1) and the
non-local ones from zero — a trained starting point like the BPM initialisation of the real run
(which averages 10 local epochs), not its exact weights; BPM itself is not run (the learner's
``bpm_runs`` is set to 0, so ``structperc.trainer.fit`` skips it).  Then ``epochs`` epochs of
``structperc.trainer.fit`` on the ``DocumentRescoring`` structure (shuffled, as the real run), each
timed: per document the 20-best under Φ^l, Φ^g of the candidates, rescoring, and (A) or (B)
updates.

Rescoring: ``DocumentRescoring(..., n=100).predict`` over the test set (n'-best lists in batches
of similar-length documents, Φ^g of every candidate, argmax of Φ^a), ``repeats`` passes, each with
a fresh copy of the non-local feature extractor (``NonLocalFeatures.from_state``), so each pass
builds its document indexes as a real prediction does.  CRFsuite has no non-local features: no
peer, no ratio.  Run through ``bench.py`` (``--only proposed``).
"""

from __future__ import annotations

import time
from pathlib import Path

from common import (
    REPO,
    load_corpus,
    load_shared_model,
    log,
    max_rss_mb,
    median,
    run_worker,
    setup_threads,
    test_f1,
    timed_passes,
    worker_main,
)

SCRIPT = Path(__file__).resolve()
LEARNER_CONF = REPO / "conf" / "learner" / "proposed.yaml"
EXPERIMENT_CONF = REPO / "conf" / "experiment" / "conll03_nonlocal.yaml"
DEFAULTS = {"epochs": 2, "n_test": 100, "repeats": 3, "rescore_budget_s": 90.0}
QUICK = {"epochs": 2, "n_test": 100, "repeats": 2, "rescore_budget_s": 20.0}


def shared_document_weights(local, doc_features, labels):
    """``DocumentWeights`` for ``doc_features`` whose local tables are the shared model's
    (``local``, a ``ChainWeights``) and whose non-local table is zero."""
    import torch

    from structperc.model.document_weights import DocumentWeights

    weights = DocumentWeights(local.num_features, labels, doc_features.num_features)
    with torch.no_grad():
        for name, table in local.tables().items():
            weights.tables()[name].copy_(table)
    return weights


def configured():
    """(learner, document features) from the configuration files ``make run`` uses."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    learner = instantiate(OmegaConf.load(LEARNER_CONF))
    doc_features = instantiate(OmegaConf.load(EXPERIMENT_CONF).document_features)
    return learner, doc_features


def worker_proposed(cfg: dict) -> dict:
    from structperc.data.tags import encode_labels
    from structperc.features.document import NonLocalFeatures
    from structperc.learn.fitting import FitSettings
    from structperc.model.updates import Updater
    from structperc.structures.chain import ChainData
    from structperc.structures.rescoring import DocumentRescoring
    from structperc.trainer import fit

    setup_threads(cfg["threads"])
    corpus = load_corpus(cfg, ("train", "test"))
    local, _, _, mats = load_shared_model(Path(cfg["model_dir"]))
    labels = local.labels
    y = encode_labels(corpus["train"], labels)
    learner, doc_features = configured()
    learner.bpm_runs = 0  # no BPM initialisation: the local weights start from the shared model
    doc_features.fit(corpus["train"], labels)
    weights = shared_document_weights(local, doc_features, labels)
    del local
    structure = DocumentRescoring(weights, doc_features, n=cfg["n_test"])
    train = ChainData(mats["train"], y, documents=corpus["train"])
    updater = Updater(weights, average=learner.average)
    rss_ready = max_rss_mb()
    cpu_marks = [time.process_time()]
    result = fit(
        learner,
        structure,
        updater,
        train,
        # tol=0: exactly the given number of epochs
        FitSettings(max_epochs=cfg["epochs"], tol=0.0, shuffle=True, seed=0, progress=False),
        on_epoch=lambda _log: cpu_marks.append(time.process_time()),
    )
    updater.finalize()
    epochs = [h.seconds for h in result.history]
    log(f"proposed: epochs {', '.join(f'{s:.1f}' for s in epochs)} s")
    out: dict = {
        "learner": {k: getattr(learner, k) for k in ("n", "C", "C_local", "local_update")},
        "families": list(doc_features.families),
        "global_features": doc_features.num_features,
        "train_documents": mats["train"].num_docs,
        "train_tokens": mats["train"].num_tokens,
        "epoch_s_all": epochs,
        "epoch_cpu_s_all": [b - a for a, b in zip(cpu_marks, cpu_marks[1:], strict=False)],
        "epoch_word_error": [h.word_error for h in result.history],
        "epoch_extra": [dict(h.extra) for h in result.history],
        "rss_before_training_mb": rss_ready,
        "rss_after_training_mb": max_rss_mb(),
    }
    out["epoch_s"] = median(epochs)
    out["epoch_cpu_s"] = median(out["epoch_cpu_s_all"])

    state = doc_features.state()[0]
    test, docs = mats["test"], corpus["test"]
    test_data = ChainData(test, documents=docs)
    preds: list = []

    def rescore() -> None:
        fresh = NonLocalFeatures.from_state(state)  # no cached document indexes
        preds.append(DocumentRescoring(weights, fresh, n=cfg["n_test"]).predict(test_data))

    passes = timed_passes(rescore, cfg["repeats"], cfg["rescore_budget_s"])
    out.update(
        {
            "n_test": cfg["n_test"],
            "test_documents": test.num_docs,
            "test_tokens": test.num_tokens,
            "rescore_s_all": passes["s_all"],
            "rescore_cpu_s_all": passes["cpu_s_all"],
            "rescore_s": passes["s"],
            "rescore_cpu_s": passes["cpu_s"],
            "test_f1": test_f1(docs, [[labels[i] for i in p] for p in preds[0]]),
            "peak_rss_mb": max_rss_mb(),
        }
    )
    log(f"proposed: rescoring n'={cfg['n_test']}: {out['rescore_s']:.1f} s")
    return out


WORKERS = {"proposed": worker_proposed}


def run(cfg: dict) -> dict:
    t_start = time.perf_counter()
    log("proposed: training epochs and rescoring")
    out = run_worker(SCRIPT, "proposed", cfg)
    return {"config": cfg, "wall_seconds": time.perf_counter() - t_start, "result": out}


if __name__ == "__main__":
    worker_main(WORKERS)
