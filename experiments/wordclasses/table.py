"""Issue 34's first measurements: runs with and without word classes, from the runs' own files.

Each row is a run folder under ``runs/`` (or the main job's under ``../kazama2007/runs/``): its
dev and test conlleval F1, feature count, epochs and training time from ``results.json``, its
word-class settings from ``.hydra/config.yaml``, and its model size from ``model.safetensors`` +
``model.json`` (not committed: the sizes are kept in ``model_sizes.json`` the first time they are
seen, so the table renders again without the model files).  The clustering rows come from the
word-class cache (the ``seconds`` and words each family file records), kept in
``clusters.json`` likewise.  The seeds table gives mean ± standard error over the seeds run; the
ablation table every seed-0 run of the averaged perceptron with local features:

    python experiments/wordclasses/table.py --readme experiments/wordclasses/README.md
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

from omegaconf import OmegaConf

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tools"))
from summarize import overrides, replace_section  # noqa: E402

from structperc.wordclasses.table import WordClasses  # noqa: E402

RUNS = HERE / "runs"
ROWS = [  # (run folder, label)
    (RUNS / "local_seed0", "Averaged perceptron, local features"),
    (RUNS / "local_wc_seed0", "Averaged perceptron, local features + word classes"),
    (HERE.parent / "kazama2007" / "runs" / "main_job", "Proposed, non-local (main job)"),
    (RUNS / "nonlocal_wc_seed0", "Proposed, non-local + word classes"),
    (RUNS / "nonlocal_wc_cbow_seed0", "Proposed, non-local + word classes (CBOW)"),
    (RUNS / "crf_seed0", "CRF, local features"),
    (RUNS / "crf_wc_cbow_seed0", "CRF, local features + word classes (CBOW)"),
    (RUNS / "kt_auto_seed0", "Proposed, non-local, our tagger's columns"),
    (
        RUNS / "kt_auto_wc_cbow_seed0",
        "Proposed, non-local, our tagger's columns + word classes (CBOW)",
    ),
    (RUNS / "local_bc1000_seed0", "Averaged perceptron, local features + Brown clusters"),
    (
        RUNS / "local_wc_cbow_bigram100_bc1000_seed0",
        "Averaged perceptron, local features + word classes (CBOW) + wc100 bigrams + Brown",
    ),
    (
        RUNS / "nonlocal_wc_cbow_bc1000_seed0",
        "Proposed, non-local + word classes (CBOW) + Brown",
    ),
    (
        RUNS / "crf_wc_cbow_bigram100_bc1000_seed0",
        "CRF, local features + word classes (CBOW) + wc100 bigrams + Brown",
    ),
    (RUNS / "timing_local_seed0", "Timing: averaged perceptron, local features"),
    (
        RUNS / "timing_local_wc_cbow_bigram100_bc1000_seed0",
        "Timing: the same + word classes (CBOW) + wc100 bigrams + Brown, right after it",
    ),
]
SEED_GROUPS = {  # runs/<group>_seed<N>: label (the ablations over seeds)
    "local": "Averaged perceptron, local features",
    "local_wc": "Averaged perceptron, local features + word classes",
    "local_wc_cbow": "Averaged perceptron, local features + word classes (CBOW)",
    "margin": "Margin perceptron (C = 1414), local features",
    "margin_wc_cbow": "Margin perceptron (C = 1414), local features + word classes (CBOW)",
    "nonlocal_wc_cbow": "Proposed, non-local (the main job's setting) + word classes (CBOW)",
    "local_wc_k100": "Averaged perceptron, local + word classes, k = 100 only",
    "local_wc_bigram100": "Averaged perceptron, local + word classes + wc100 bigrams",
    "local_wc_cbow_bigram100": "Averaged perceptron, local + CBOW word classes + wc100 bigrams",
    "local_wc_reuters": "Averaged perceptron, local + word classes of Reuters alone",
    "local_wc_k1000": "Averaged perceptron, local + word classes, k = 1000 only",
    "local_bc1000": "Averaged perceptron, local + Brown clusters (m = 1000; prefixes 4,6,10,20)",
    "local_bc1000_p4-6": "Averaged perceptron, local + Brown clusters (m = 1000; prefixes 4,6)",
    "local_bc1000_p10-20": "Averaged perceptron, local + Brown clusters (m = 1000; prefixes 10,20)",
    "local_bc1000_p2-20": (
        "Averaged perceptron, local + Brown clusters (m = 1000; prefixes 2,4,...,20)"
    ),
    "local_wc_cbow_bigram100_bc1000": (
        "Averaged perceptron, local + CBOW word classes + wc100 bigrams + Brown (m = 1000)"
    ),
    "margin_wc_cbow_bigram100_bc1000": (
        "Margin perceptron (C = 1414), local + CBOW word classes + wc100 bigrams + Brown (m = 1000)"
    ),
    "kt_auto_wc_cbow_bc1000": (
        "Proposed, non-local, our tagger's columns + word classes (CBOW) + Brown (m = 1000)"
    ),
    "nonlocal_wc_cbow_bc1000": (
        "Proposed, non-local (the main job's setting) + word classes (CBOW) + Brown (m = 1000)"
    ),
    "local_wc_cbow_bigram100_d50": (
        "Averaged perceptron, local + CBOW word classes (50-dim. vectors) + wc100 bigrams"
    ),
    "local_wc_cbow_bigram100_d200": (
        "Averaged perceptron, local + CBOW word classes (200-dim. vectors) + wc100 bigrams"
    ),
}


KAZAMA = HERE.parent / "kazama2007" / "runs"
# The table: each learner without and with word classes, mean ± standard error over the
# seeds run, with the word classes chosen on dev where several were run over three seeds (the
# local averaged perceptron: ``LOCAL_CHOICES``, the highest mean dev F1; the others were run with
# CBOW, the seed-0 dev choice of the ablations).  (label, runs without, runs with): globs of run
# folders, or a list of globs to choose from.
LOCAL_CHOICES = [
    (RUNS, f"{group}_seed*")
    for group in ("local_wc", "local_wc_cbow", "local_wc_k100", "local_wc_k1000",
                  "local_wc_reuters", "local_wc_bigram100", "local_wc_cbow_bigram100",
                  "local_bc1000", "local_bc1000_p4-6", "local_bc1000_p10-20", "local_bc1000_p2-20",
                  "local_wc_cbow_bigram100_bc1000", "local_wc_cbow_bigram100_d50",
                  "local_wc_cbow_bigram100_d200")
]  # fmt: skip
SUMMARY = [
    ("Averaged perceptron, local features", (RUNS, "local_seed*"), LOCAL_CHOICES),
    ("Margin perceptron (C = 1414), local features", (RUNS, "margin_seed*"),
     [(RUNS, "margin_wc_cbow_seed*"), (RUNS, "margin_wc_cbow_bigram100_bc1000_seed*")]),
    ("CRF (L-BFGS, sigma2 = 13, to CRF++'s rule), local features; deterministic, one run",
     (RUNS, "crf_seed*"),
     [(RUNS, "crf_wc_cbow_seed*"), (RUNS, "crf_wc_cbow_bigram100_bc1000_seed*")]),
    ("Proposed (n = 20, n' = 100), the main job's setting (CoNLL's POS and chunk columns)",
     (KAZAMA / "external", "proposed_C1000_seed*"),
     [(RUNS, "nonlocal_wc_cbow_seed*"), (RUNS, "nonlocal_wc_cbow_bc1000_seed*")]),
    ("Proposed (n = 20, n' = 100), the main job's setting on our tagger's POS and chunk columns",
     (RUNS, "kt_auto_seed*"),
     [(RUNS, "kt_auto_wc_cbow_seed*"), (RUNS, "kt_auto_wc_cbow_bc1000_seed*")]),
]  # fmt: skip
PAPERS = [  # test F1 of the references the issue names
    ("Kazama & Torisawa 2007, proposed, CoNLL's columns (n' = 100)", "86.30"),
    ("Kazama & Torisawa 2007, best: TagChunk's columns, n' = 6400", "87.17"),
    ("Krishnan & Manning 2006, two-stage CRF with non-local features", "87.24"),
    ("Agerri & Rigau 2016 (IXA pipes), averaged perceptron, local + Brown clusters", "88.50"),
    ("Agerri & Rigau 2016, + Clark clusters", "88.97"),
    ("Turian et al. 2010, Brown clusters + embeddings", "90.36"),
    ("Ratinov & Roth 2009, non-local, Wikipedia gazetteers, Brown clusters", "90.80"),
]


def _group(spec: tuple[Path, str]) -> list[Path]:
    folder, pattern = spec
    return sorted(p for p in folder.glob(pattern) if (p / "results.json").is_file())


def dev_chosen(specs: list[tuple[Path, str]]) -> tuple[Path, str]:
    """Of the groups with the most runs (seeds), the one with the highest mean dev F1."""
    groups = [(spec, _group(spec)) for spec in specs]
    most = max(len(runs) for _, runs in groups)
    if not most:
        return specs[0]
    full = [(spec, runs) for spec, runs in groups if len(runs) == most]
    return max(full, key=lambda g: statistics.mean(_f1s(r)[0] for r in g[1]))[0]


def summary_table() -> str:
    """Without and with word classes, per learner (``SUMMARY``), then the papers' rows."""
    lines = [
        "| learner | word classes | runs | seeds | dev F1 | test F1 | Δ test |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for label, without, with_wc in SUMMARY:
        if isinstance(with_wc, list):
            with_wc = dev_chosen(with_wc)
        means = []
        for spec, has in ((without, "no"), (with_wc, "yes")):
            runs = _group(spec)
            where = spec[0].relative_to(HERE.parent)
            if not runs:
                lines.append(f"| {label} | {has} | `{where}/{spec[1]}` | – | (not run) | | |")
                continue
            dev, test = zip(*map(_f1s, runs), strict=True)
            means.append(statistics.mean(test))
            seeds = ",".join(r.name.rsplit("_seed", 1)[1] for r in runs)
            delta = f"{means[1] - means[0]:+.2f}" if len(means) == 2 else ""
            lines.append(
                f"| {label} | {has} | `{where}/{spec[1]}` | {seeds} | {_mean_se(list(dev))} | "
                f"{_mean_se(list(test))} | {delta} |"
            )
    for paper, f1 in PAPERS:
        lines.append(f"| {paper} (paper) | | | | | {f1} | |")
    return "\n".join(lines) + "\n"


def _json(path: Path, default):
    return json.loads(path.read_text()) if path.is_file() else default


def model_size(run: Path, sizes: dict) -> dict | None:
    """{"MB": the saved model (weights + metadata), "classes MB": the word classes' part of its
    metadata as written, "classes MB now": as ``WordClasses.state`` writes it now}, remembered
    in ``sizes`` by run name.  (The first runs wrote each family's words and classes as JSON
    lists, one item a line; the state is now the words once and each family as one string.)"""
    files = [run / "model.safetensors", run / "model.json"]
    if all(f.is_file() for f in files):
        entry = {"MB": round(sum(f.stat().st_size for f in files) / 1e6, 2)}
        state = json.loads(files[1].read_text())["features"].get("word_classes")
        if state is not None:
            entry["classes MB"] = round(len(json.dumps(state, indent=2)) / 1e6, 2)
            now = WordClasses.from_state(state).state()
            entry["classes MB now"] = round(len(json.dumps(now, indent=2)) / 1e6, 2)
        sizes[run.name] = entry
    return sizes.get(run.name)


def word_classes(run: Path) -> str:
    cfg = OmegaConf.load(run / ".hydra" / "config.yaml")
    wc = OmegaConf.select(cfg, "features.word_classes")
    if wc is None:
        return "–"
    corpora = wc.corpora if isinstance(wc.corpora, str) else ",".join(wc.corpora)
    parts = []
    if wc.get("kmeans"):
        kmeans = ",".join(str(k) for k in wc.kmeans)
        parts.append(f"wc{{{kmeans}}} {wc.architecture}")
    if wc.get("brown"):
        prefixes = ",".join(str(p) for p in wc.brown_prefixes)
        parts.append(f"bc{{{prefixes}}} m={wc.brown} min_count={wc.brown_min_count}")
    return f"{' + '.join(parts)} ({corpora})"


def runs_table(sizes: dict) -> str:
    lines = [
        "| run | word classes | dev F1 | test F1 | features | epochs | train s | model MB "
        "| of which classes MB (now) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run, label in ROWS:
        res = _json(run / "results.json", None)
        if res is None:
            continue
        size = model_size(run, sizes)
        lines.append(
            f"| {label} (`{run.relative_to(HERE.parent)}`) | {word_classes(run)} | "
            f"{res['dev']['f1']:.2f} | {res['test']['f1']:.2f} | {res['num_features']:,} | "
            f"{res['epochs']} | {res['train_seconds']:.0f} | {_mb(size, 'MB')} | "
            f"{_classes_mb(size)} |"
        )
    return "\n".join(lines) + "\n"


def _f1s(run: Path) -> tuple[float, float]:
    res = json.loads((run / "results.json").read_text())
    return res["dev"]["f1"], res["test"]["f1"]


def _mean_se(xs: list[float]) -> str:
    if len(xs) < 2:
        return f"{xs[0]:.2f}"
    return f"{statistics.mean(xs):.2f} ± {statistics.stdev(xs) / math.sqrt(len(xs)):.2f}"


def seeds_table(groups: dict[str, str]) -> str:
    """Mean ± standard error over the seeds of each group (``runs/<group>_seed<N>``)."""
    lines = ["| runs | seeds | dev F1 | test F1 |", "|---|---:|---:|---:|"]
    for group, label in groups.items():
        runs = sorted(p for p in RUNS.glob(f"{group}_seed*") if (p / "results.json").is_file())
        if not runs:
            continue
        dev, test = zip(*map(_f1s, runs), strict=True)
        seeds = ",".join(p.name.rsplit("_seed", 1)[1] for p in runs)
        lines.append(
            f"| {label} (`{group}_seed*`) | {seeds} | {_mean_se(list(dev))} | "
            f"{_mean_se(list(test))} |"
        )
    return "\n".join(lines) + "\n"


def ablation_table() -> str:
    """Every seed-0 run of the averaged perceptron with local features, by its overrides."""
    lines = ["| run | overrides | word classes | dev F1 | test F1 |", "|---|---|---|---:|---:|"]
    for run in sorted(RUNS.glob("local*_seed0")):
        if not (run / "results.json").is_file():
            continue
        dev, test = _f1s(run)
        lines.append(
            f"| `{run.name}` | `{overrides(run)}` | {word_classes(run)} | {dev:.2f} | {test:.2f} |"
        )
    return "\n".join(lines) + "\n"


def _mb(size: dict | None, key: str) -> str:
    return "–" if not size or key not in size else f"{size[key]:.1f}"


def _classes_mb(size: dict | None) -> str:
    if not size or "classes MB" not in size:
        return "–"
    return f"{_mb(size, 'classes MB')} ({_mb(size, 'classes MB now')})"


def cluster_files(cache: Path, known: dict) -> dict:
    """{file name: {seconds, words, classes}} of the family files in ``cache``, added to
    ``known``."""
    for path in sorted(cache.glob("*.json")):
        got = json.loads(path.read_text())
        if "seconds" not in got:
            continue
        entry = {"seconds": got["seconds"], "words": len(got["words"])}
        if "values" in got:
            entry["classes"] = len(set(got["values"]))
        entry["key"] = got["key"]
        known[path.name] = entry
    return known


def clusters_table(known: dict) -> str:
    lines = ["| file | what | words | classes | seconds |", "|---|---|---:|---:|---:|"]
    for name, e in known.items():
        key = e["key"]
        if name.startswith("vectors"):
            w = key["word2vec"]
            what = (
                f"word2vec {w['architecture']} d={w['vector_size']} window={w['window']} "
                f"epochs={w['epochs']} min_count={w['min_count']}, "
                f"{len(key['files'])} files, gensim {key['gensim']}"
            )
        else:
            what = (
                f"k-means k={key['k']} of vectors-{key['vectors']}"
                if "k" in key
                else f"Brown m={key['brown']} min_count={key['min_count']}, "
                f"{len(key['files'])} files, {key.get('merges', 'brown-clustering')}"
            )
        lines.append(
            f"| `{name}` | {what} | {e['words']:,} | {e.get('classes', '–')} | {e['seconds']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--readme", type=Path, help="README to update between the markers")
    ap.add_argument("--cache", type=Path, default=Path(".cache/wordclasses"))
    args = ap.parse_args()
    sizes = _json(HERE / "model_sizes.json", {})
    runs = runs_table(sizes)
    (HERE / "model_sizes.json").write_text(json.dumps(sizes, indent=2, sort_keys=True) + "\n")
    known = cluster_files(args.cache, _json(HERE / "clusters.json", {}))
    (HERE / "clusters.json").write_text(json.dumps(known, indent=2, sort_keys=True) + "\n")
    clusters = clusters_table(known)
    seeds = seeds_table(SEED_GROUPS)
    ablation = ablation_table()
    summary = summary_table()
    print(summary, runs, seeds, ablation, clusters, sep="\n")
    if args.readme:
        replace_section(args.readme, "summary", summary)
        replace_section(args.readme, "runs", runs)
        replace_section(args.readme, "seeds", seeds)
        replace_section(args.readme, "ablation", ablation)
        replace_section(args.readme, "clusters", clusters)


if __name__ == "__main__":
    main()
