"""Every speed benchmark of structperc, in one run and one generated README.

    make bench            # = .venv/bin/python experiments/bench/bench.py
    make bench-quick      # = .venv/bin/python experiments/bench/bench.py --quick
    .venv/bin/python experiments/bench/bench.py --only nbest,proposed   # some sections
    .venv/bin/python experiments/bench/bench.py --set nbest.repeats=1   # change a setting
    .venv/bin/python experiments/bench/bench.py --render-only           # README.md again

Sections, in order (each a module beside this file, its workers in fresh processes):

1. ``perceptron`` (``perceptron_bench.py``): averaged perceptron vs CRFsuite — feature
   extraction, seconds per epoch, Viterbi decoding, memory.  Its first structperc worker also
   saves the *shared model* (k averaged-perceptron epochs, with the feature matrices) into a
   temporary folder for sections 2-4 and 6; without section 1 the shared model is trained alone.
2. ``crf`` (``crf_bench.py``): seconds per L-BFGS iteration vs CRFsuite's L-BFGS, and the
   final F1 of the full run in ``experiments/kazama2007/runs/`` (read from its file).
3. ``nbest`` (``nbest_bench.py``): 20-best in a training loop; 100-, 1,600- and 6,400-best of
   the test set — seconds and peak memory.
4. ``proposed`` (``proposed_bench.py``): an epoch of Kazama & Torisawa's proposed algorithm
   (n = 20, non-local features) and n' = 100 rescoring of the test set.
5. ``dp`` (``dp_bench.py``): the label-chunk DP on the CoNLL-2000 test set, batch 1 and 32.
6. ``rerank`` (``rerank_bench.py``): reranking (Collins 2002; Kazama & Torisawa 2007) — n-best
   lists of the test set by documents (n = 20, 100) and sentences (n = 20), Kazama's non-local
   and Collins's global features of them, seconds per epoch of the candidate algorithm
   (re-ranking 1) and of the voted perceptron, the voted prediction, boosting rounds per second.
7. ``pos`` (``pos_bench.py``): section 1 for the tagchunk task's POS tagger (Penn Treebank
   tags, 44 of them in CoNLL-2000's training sentences; node features + a transition matrix as
   in CRFsuite) against CRFsuite's averaged perceptron — section 1's workers with
   ``task: pos``; test accuracy instead of F1.  Saves no model.
8. ``scoring`` (``scoring_bench.py``): conlleval F1 of CoNLL-2003 train (and four copies of it)
   by our scorer, in memory and from the written file, against seqeval (and conlleval.pl where
   ``STRUCTPERC_CONLLEVAL`` names it).
9. ``templates`` (``templates_bench.py``): feature extraction of Table 1 written as feature
   templates against the named attributes (the same features): fit + transform of CoNLL-2003
   train and dev, median of 3.
10. ``sklearn`` (``sklearn_bench.py``): sklearn-crfsuite's tutorial pipeline through
    ``sklearn_crfsuite.CRF`` and ``structperc.sklearn.CRF`` (lbfgs, l2sgd, ap, and pa, arow
   where structperc has them): fit seconds with 1 and 2 processes, entity F1, predict and
   predict_marginals throughput, non-zero weights.
11. ``tagging`` (``tagging_bench.py``): ``structperc-tag`` end to end with the main job's model
    on Reuters text, lines of repeated names and CoNLL-2003 test, the code before the compiled
    tagging path against this checkout's: tokens/s and peak memory.

Every timing is set beside a peer measured in the same script where one exists (CRFsuite), as
a ratio of medians over repeats.  The settings (``DEFAULTS`` of each section) are sized for about
25-30 minutes on a 2-core machine from the parts' known timings.  ``--quick`` (about a minute)
runs everything on small slices, to check the plumbing; its numbers mean nothing.

Writes ``results.json`` (every raw number, the settings, the machine) and ``README.md`` (rendered
from the JSON by ``render``: ``templates/readme.md.j2`` and a Jinja2 template per section) next
to this file, or under ``quick/`` with ``--quick``.  ``--only`` replaces only the sections it
names in the results.json already there (``merge``: the others are kept, and each section run
later notes its own command, machine and commit), unless that file is of other data (another
``--quick`` slice): then it writes a results.json of those sections alone.
A ``profile.json`` beside results.json (``profile_bench.py``, ``make profile``) is rendered as the
README's last section (``write_readme``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import crf_bench
import dp_bench
import nbest_bench
import perceptron_bench
import pos_bench
import proposed_bench
import rerank_bench
import scoring_bench
import sklearn_bench
import tagging_bench
import templates_bench
from common import HERE, base_config, chosen, corpus_info, load_corpus, log, public_config
from common import machine_info as _machine_info
from render import page

SECTIONS = {
    "perceptron": perceptron_bench,
    "crf": crf_bench,
    "nbest": nbest_bench,
    "proposed": proposed_bench,
    "dp": dp_bench,
    "rerank": rerank_bench,
    "pos": pos_bench,
    "scoring": scoring_bench,
    "templates": templates_bench,
    "sklearn": sklearn_bench,
    "tagging": tagging_bench,
}
NEEDS_SHARED_MODEL = ("crf", "nbest", "proposed", "rerank")
SCHEMA = 2


def section_config(name: str, base: dict, quick: bool, overrides: dict) -> dict:
    module = SECTIONS[name]
    return {**base, **(module.QUICK if quick else module.DEFAULTS), **overrides.get(name, {})}


def parse_sets(items: list[str]) -> dict[str, dict]:
    """``--set section.key=value`` (value as JSON, else a string) -> {section: {key: value}}."""
    out: dict[str, dict] = {}
    for item in items:
        key, _, value = item.partition("=")
        section, _, name = key.partition(".")
        if section not in SECTIONS or not name or not _:
            sys.exit(f"--set {item!r}: expected SECTION.KEY=VALUE, SECTION one of {list(SECTIONS)}")
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        out.setdefault(section, {})[name] = parsed
    return out


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="small slices: checks the plumbing")
    ap.add_argument("--only", help=f"comma-separated sections of {','.join(SECTIONS)}")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    ap.add_argument("--threads", type=int, default=1, help="torch threads in every worker")
    ap.add_argument("--out", type=Path, help="output folder (default: here; --quick: quick/)")
    ap.add_argument("--render-only", action="store_true", help="README.md from results.json")
    args = ap.parse_args(argv)
    out_dir = args.out or (HERE / "quick" if args.quick else HERE)
    if args.render_only:
        results = json.loads((out_dir / "results.json").read_text())
        write_readme(out_dir, results)
        log(f"wrote {out_dir / 'README.md'}")
        return

    names = chosen(args.only, SECTIONS, "section")  # always in the order above
    overrides = parse_sets(args.set)
    base = base_config(args.quick, args.threads)
    info = _machine_info(args.threads)
    t_start = time.perf_counter()
    sections: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="structperc-bench-model-") as model_dir:
        base["model_dir"] = model_dir
        for name in names:
            cfg = section_config(name, base, args.quick, overrides)
            if name in NEEDS_SHARED_MODEL and not (Path(model_dir) / "model.json").is_file():
                log("training the shared model (section perceptron not run)")
                perceptron_bench.train_shared_model(
                    section_config("perceptron", base, args.quick, overrides)
                )
            log(f"section {name}")
            load0 = list(os.getloadavg())
            result = SECTIONS[name].run(cfg)
            result["config"] = public_config(result["config"])
            result["loadavg_start"], result["loadavg_end"] = load0, list(os.getloadavg())
            sections[name] = result
    info["loadavg_end"] = list(os.getloadavg())
    shared = None
    if any(n in NEEDS_SHARED_MODEL for n in names):
        shared = perceptron_bench.shared_info(
            section_config("perceptron", base, args.quick, overrides)
        )
    corpus = load_corpus(base)
    results = {
        "schema": SCHEMA,
        "command": " ".join([".venv/bin/python", "experiments/bench/bench.py", *argv]),
        "config": public_config({**base, "sections": names, "overrides": overrides}),
        "machine": info,
        "data": corpus_info(corpus),
        "wall_seconds": time.perf_counter() - t_start,
        "shared_model": shared,
        "sections": sections,
    }
    if args.only:
        results = merge(out_dir / "results.json", results)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    print(write_readme(out_dir, results))
    log(f"wrote {out_dir / 'results.json'} and README.md in {time.perf_counter() - t_start:.0f}s")


def write_readme(out_dir: Path, results: dict) -> str:
    """README.md of ``out_dir``: ``render(results)``, then the section of ``profile_bench.py``
    rendered from the ``profile.json`` beside it, if there is one.  Returns the text."""
    text = render(results)
    profile = out_dir / "profile.json"
    if profile.is_file():
        text += "\n" + page("profile.md.j2", profile=json.loads(profile.read_text()), h="##")
    (out_dir / "README.md").write_text(text)
    return text


def merge(path: Path, results: dict) -> dict:
    """``--only``: the sections of ``results`` put into the results.json at ``path``, its other
    sections kept.  The header (command, machine, wall time, shared model) stays that of the
    earlier run; each section put in keeps this run's under ``run``.  ``results`` alone when
    there is no such file, it is of other data (``--quick`` or not, another slice), or this run
    has every section it has."""
    if not path.is_file():
        return results
    old = json.loads(path.read_text())
    new_names = results["config"]["sections"]
    if old.get("schema", 1) < SCHEMA or old["data"] != results["data"]:
        log(f"{path} is of another run's data or schema: written anew with {new_names} only")
        return results
    if set(old["sections"]) <= set(new_names):
        return results
    run = {k: results[k] for k in ("command", "machine", "wall_seconds", "shared_model")}
    sections = {**old["sections"]}
    for name in new_names:
        sections[name] = {**results["sections"][name], "run": run}
    sections = {name: sections[name] for name in SECTIONS if name in sections}
    kept = [name for name in sections if name not in new_names]
    log(f"{path}: sections {new_names} replaced, {kept} kept")
    return {
        **old,
        "config": {**old["config"], "sections": list(sections)},
        "shared_model": old.get("shared_model") or results["shared_model"],
        "sections": sections,
    }


def render(results: dict) -> str:
    """The README (markdown) of one results.json: ``templates/readme.md.j2``, each section's
    rows at a glance and its own part from its template (``templates/<section>.md.j2``)."""
    return page(
        "readme.md.j2",
        results=results,
        order=list(SECTIONS),
        algorithms=nbest_bench.ALGORITHMS,
        rerank_n=rerank_bench.N,
        perceptron_rows=perceptron_bench.table_rows,
    )


if __name__ == "__main__":
    main()
