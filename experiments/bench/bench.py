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

Every timing is set beside a peer measured in the same script where one exists (CRFsuite), as
a ratio of medians over repeats.  The settings (``DEFAULTS`` of each section) are sized for about
25-30 minutes on a 2-core machine from the parts' known timings.  ``--quick`` (about a minute)
runs everything on small slices, to check the plumbing; its numbers mean nothing.

Writes ``results.json`` (every raw number, the settings, the machine) and ``README.md`` (rendered
from the JSON by ``render``) next to this file, or under ``quick/`` with ``--quick``.  ``--only``
replaces only the sections it names in the results.json already there (``merge``: the others are
kept, and each section run later notes its own command, machine and commit), unless that file is
of other data (another ``--quick`` slice): then it writes a results.json of those sections alone.
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
import profile_render
import proposed_bench
import rerank_bench
import scoring_bench
from common import HERE, QUICK_DOCS, REPO, corpus_info, find_data_dir, load_corpus, log
from common import machine_info as _machine_info

SECTIONS = {
    "perceptron": perceptron_bench,
    "crf": crf_bench,
    "nbest": nbest_bench,
    "proposed": proposed_bench,
    "dp": dp_bench,
    "rerank": rerank_bench,
    "pos": pos_bench,
    "scoring": scoring_bench,
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


def shown_path(path: Path) -> str:
    """The data folder as the README shows it: relative to the repository when beside it."""
    return os.path.relpath(path, REPO) if path.is_relative_to(REPO.parent) else str(path)


def public_config(cfg: dict) -> dict:
    """A section's settings without this run's temporary paths."""
    out = {k: v for k, v in cfg.items() if k != "model_dir"}
    out["data_dir"] = shown_path(Path(cfg["data_dir"]))
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
        results = upgrade(json.loads((out_dir / "results.json").read_text()))
        write_readme(out_dir, results)
        log(f"wrote {out_dir / 'README.md'}")
        return

    names = list(SECTIONS) if not args.only else [s.strip() for s in args.only.split(",")]
    unknown = [s for s in names if s not in SECTIONS]
    if unknown:
        sys.exit(f"--only: unknown section(s) {unknown}; known: {list(SECTIONS)}")
    names = [s for s in SECTIONS if s in names]  # always in the order above
    overrides = parse_sets(args.set)
    data_dir = find_data_dir()
    base = {
        "data_dir": str(data_dir),
        "max_docs": QUICK_DOCS if args.quick else None,
        "quick": args.quick,
        "threads": args.threads,
    }
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
        text += "\n" + "\n".join(profile_render.render(json.loads(profile.read_text())))
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


def upgrade(results: dict) -> dict:
    """A results.json of the perceptron-only bench (schema 1) as a schema-2 one."""
    if results.get("schema", 1) >= SCHEMA:
        return results
    cfg = results["config"]
    return {
        "schema": SCHEMA,
        "command": results["command"],
        "config": {
            "data_dir": results["data_dir"],
            "quick": cfg["quick"],
            "threads": cfg["threads"],
            "sections": ["perceptron"],
            "overrides": {},
            "schema_1": True,
        },
        "machine": results["machine"],
        "data": results["data"],
        "wall_seconds": results["wall_seconds"],
        "sections": {
            "perceptron": {
                "config": {**cfg, "rounds_done": cfg.get("rounds_done", cfg["repeats"])},
                "wall_seconds": results["wall_seconds"],
                "summary": results["summary"],
                "rounds": results["rounds"],
            }
        },
    }


# ---------------------------------------------------------------------------------------------
# README
# ---------------------------------------------------------------------------------------------
def render(results: dict) -> str:
    """The README (markdown) of one results.json (schema 2)."""
    cfg, m, data = results["config"], results["machine"], results["data"]
    sections = results["sections"]
    threads = m.get("torch_threads", 1)
    load = max(m["loadavg_start"][0], m.get("loadavg_end", m["loadavg_start"])[0])
    busy = load > threads + 0.5
    make = "make bench-quick" if cfg.get("quick") else "make bench"
    lines = [
        "# structperc benchmarks",
        "",
        "Generated by `experiments/bench/bench.py` from `results.json`; do not edit by hand "
        "(re-render with `--render-only`).",
        "",
    ]
    if cfg.get("quick"):
        lines += [
            "**Quick run on small slices of the data, to check the plumbing: the numbers are "
            "not representative.**",
            "",
        ]
    if busy:
        lines += [
            f"**The machine was busy with other work (load average up to {load:.1f} on "
            f"{m['cpu_count']} CPUs, the bench itself using {threads} torch thread(s)): "
            "absolute times are inflated (CPU time too: vCPUs share a core's resources) and "
            "noisy; read the ratios, taken within one script.**",
            "",
        ]
    if cfg.get("schema_1"):
        lines += [
            "This results.json was written by the earlier perceptron-only bench (schema 1); "
            f"the other sections were not part of it. `{make}` runs them all.",
            "",
        ]
    lines += [
        "## Every row at a glance",
        "",
        "structperc against a peer measured in the same script where one exists (CRFsuite "
        "through python-crfsuite, on the same data and surface features): for times and "
        "rates, how many times faster structperc is; for memory and counts, structperc / "
        "peer. Each number's section below says what it includes.",
        "",
        "| § | measure | structperc | peer (same script) | structperc vs peer | in CPU time |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for i, name in enumerate(SECTIONS, 1):
        if name not in sections:
            continue
        for row in SECTIONS[name].headline(sections[name]):
            lines.append(
                f"| {i} | {row['measure']} | {row['structperc']} | {row['peer'] or '–'} | "
                f"{row['ratio']} | {row['ratio_cpu']} |"
            )
    missing = [name for name in SECTIONS if name not in sections]
    if missing:
        lines += [
            "",
            f"Not in this results.json: section(s) {', '.join(missing)} (`{make}` runs all).",
        ]
    git = m.get("git") or {}
    how = (
        "Run from the repository root with the earlier perceptron-only "
        "`experiments/bench/bench.py` (now section 1, `perceptron_bench.py`) at the commit "
        "below:"
        if cfg.get("schema_1")
        else f"Run from the repository root (`{make}` runs "
        f"`.venv/bin/python experiments/bench/bench.py{' --quick' if cfg.get('quick') else ''}`):"
    )
    lines += [
        "",
        "Two pages beside this one, each written by its own script: [`GPU.md`](gpu/GPU.md) "
        "(`gpu_bench.py`: the same code on a CUDA device against that machine's CPU and "
        "CRFsuite) and [`MAIN_JOB.md`](MAIN_JOB.md) (`main_job.py`: `make run`'s wall time with "
        "one process and with `trainer.processes=2`).",
        "",
        "## Command",
        "",
        how,
        "",
        "```",
        f"STRUCTPERC_DATA={cfg['data_dir']} {results['command']}",
        "```",
        "",
        f"Data (CoNLL-2003, documents = `-DOCSTART-` documents, sentences concatenated): train "
        f"{data['train']['documents']:,} documents / {data['train']['tokens']:,} tokens, dev "
        f"{data['dev']['documents']:,} / {data['dev']['tokens']:,}, test "
        f"{data['test']['documents']:,} / {data['test']['tokens']:,}.",
        "",
    ]
    shared = results.get("shared_model")
    if shared:
        lines += [
            f"Shared model of sections 2-4 and 6: structperc's {shared['learner']}, k = "
            f"{shared['epochs']} epochs over the training documents above (shuffled, seed "
            f"{shared['shuffle_seed']}), trained by this run (section 1's first structperc "
            "worker, or the same training alone) and kept in a temporary folder for the run.",
            "",
        ]
    lines += [
        f"Machine: {m['cpu_count']} CPUs ({m['cpu_model']}), {m['platform']}, Python "
        f"{m['python']}, torch {m['torch']}, numpy {m['numpy']}, python-crfsuite "
        f"{m['python_crfsuite']}; {threads} torch thread(s) per worker; {m['date']}; load "
        f"average {m['loadavg_start'][0]:.2f} at the start, "
        f"{m.get('loadavg_end', m['loadavg_start'])[0]:.2f} at the end; whole benchmark "
        f"{results['wall_seconds']:.0f} s. structperc at commit {git.get('commit') or '?'} "
        f"with {git.get('structperc_files_changed', '?')} uncommitted changed file(s) under "
        "`structperc/`.",
        "",
    ]
    for name in SECTIONS:
        if name in sections:
            lines += SECTIONS[name].render(sections[name])
            s = sections[name]
            if "loadavg_start" in s:
                lines += [
                    f"Load average during this section: {s['loadavg_start'][0]:.2f} at its "
                    f"start, {s['loadavg_end'][0]:.2f} at its end.",
                    "",
                ]
            if "run" in s:
                lines += separate_run(s["run"])
    lines += [
        "Raw numbers of every worker (every epoch, pass and iteration) are in `results.json`.",
        "",
    ]
    return "\n".join(lines)


def separate_run(run: dict) -> list[str]:
    """The note of a section measured by a later ``--only`` run than the header's."""
    m = run["machine"]
    git = m.get("git") or {}
    return [
        f"This section was measured by a later run of its own, `{run['command']}` "
        f"({run['wall_seconds']:.0f} s), on {m['date']}: {m['cpu_count']} CPUs "
        f"({m['cpu_model']}), torch {m['torch']}, {m.get('torch_threads', 1)} torch thread(s), "
        f"load average {m['loadavg_start'][0]:.2f} at its start and "
        f"{m.get('loadavg_end', m['loadavg_start'])[0]:.2f} at its end; structperc at commit "
        f"{git.get('commit') or '?'} with {git.get('structperc_files_changed', '?')} "
        "uncommitted changed file(s) under `structperc/`. The machine line above is that of "
        "the other sections' run.",
        "",
    ]


if __name__ == "__main__":
    main()
