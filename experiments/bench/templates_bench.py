"""Section 9 of ``make bench``: feature extraction from feature templates against Table 1's
named attributes, the same features.

Kazama & Torisawa's Table 1 as templates (``features.template_file=kazama``,
``structperc/features/presets/kazama.tpl``) and as named attributes (``conf/features/kazama.yaml``)
give the same feature ids (``tests/test_templates.py``; checked here again on every pass).  Each
pass builds a fresh ``LocalFeatures`` with the ``eng.list`` jackknife, fits it on CoNLL-2003 train
and transforms train (jackknifed) and dev, as ``features.cache.extract_features`` does on a cache
miss; the two ways alternate which goes first, and each time is the median of ``repeats`` passes,
wall clock and CPU time.  The ratio is named / templates: above 1, templates are faster.  Run
through ``bench.py`` (``--only templates``).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import torch
from common import log

from structperc.data.conll import read_conll
from structperc.features.pipeline import LocalFeatures

DEFAULTS = {"repeats": 3, "max_docs": None}
QUICK = {"repeats": 1, "max_docs": 40}
WAYS = {"named": {}, "templates": {"template_file": "kazama"}}


def extract(corpus: dict, gazetteer: str, way: str) -> tuple[float, float, list]:
    """(wall s, CPU s, the matrices) of one fit + transform of every split."""
    t0, c0 = time.perf_counter(), time.process_time()
    features = LocalFeatures(gazetteer_path=gazetteer, **WAYS[way]).fit(corpus["train"])
    mats = [features.transform(docs, training=s == "train") for s, docs in corpus.items()]
    return time.perf_counter() - t0, time.process_time() - c0, mats


def run(cfg: dict) -> dict:
    folder = Path(cfg["data_dir"]) / "conll2003"
    corpus = {
        s: read_conll(folder / f"{s}.txt", max_docs=cfg["max_docs"]) for s in ("train", "dev")
    }
    gazetteer = str(folder / "eng.list")
    times: dict[str, dict[str, list[float]]] = {w: {"wall": [], "cpu": []} for w in WAYS}
    for r in range(cfg["repeats"]):
        order = list(WAYS) if r % 2 == 0 else list(WAYS)[::-1]
        got = {}
        for way in order:
            wall, cpu, got[way] = extract(corpus, gazetteer, way)
            times[way]["wall"].append(wall)
            times[way]["cpu"].append(cpu)
        for a, b in zip(got["named"], got["templates"], strict=True):
            if not (torch.equal(a.ids, b.ids) and torch.equal(a.offsets, b.offsets)):
                raise RuntimeError("templates and named attributes gave different features")
        log(
            f"templates pass {r + 1}: "
            + ", ".join(f"{w} {times[w]['wall'][-1]:.2f}s" for w in WAYS)
        )
    med = {w: {k: statistics.median(v) for k, v in t.items()} for w, t in times.items()}
    return {
        "config": cfg,
        "tokens": {s: sum(len(d) for d in docs) for s, docs in corpus.items()},
        "times": times,
        "named_s": med["named"]["wall"],
        "templates_s": med["templates"]["wall"],
        "named_cpu_s": med["named"]["cpu"],
        "templates_cpu_s": med["templates"]["cpu"],
    }
