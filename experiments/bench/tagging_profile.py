"""Where ``structperc-tag`` spends its time on raw text, before and after the compiled tagging
path: cProfile of one run over the first 0.7 MB of Reuters-21578, grouped into the path's stages.

    .venv/bin/python experiments/bench/tagging_profile.py --label after --model runs/main
    .venv/bin/python experiments/bench/tagging_profile.py --label before --model runs/main
    .venv/bin/python experiments/bench/tagging_profile.py --render

``before`` runs the code of ``tagging_bench.BASE_COMMIT`` (``git archive`` into a temporary
folder), ``after`` this checkout's, each in a fresh process under ``cProfile`` from before its
first import, with one thread (``threads=1``: cProfile sees the main thread only).  A stage is
the cumulative time of the functions that do it, less the stages they call (``STAGES``); the
rest of the run is start-up (imports, Hydra) or the glue between stages.  Writes
``tagging/profile_LABEL.json`` (the stages and the 25 functions of most own time) and
``tagging/PROFILE.md`` from every such file.  cProfile slows Python code more than compiled
code: read the shares, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import subprocess
import sys
import tempfile
from pathlib import Path

from common import REPO
from tagging_bench import BASE_COMMIT, export_commit, reuters_text

OUT = Path(__file__).resolve().parent / "tagging"
CHARS = 700_000
# stage -> [(sign, file suffix, function)], summed cumulative times
STAGES = {
    "before": {
        "load the model and its column tagger": [
            (1, "structperc/tagger.py", "load"),
            (1, "tasks/loading.py", "load"),
        ],
        "read the text, tokenise and split sentences (syntok)": [(1, "data/text.py", "read_text")],
        "column tagger: POS and chunk tags": [(1, "tasks/loading.py", "fill")],
        "NER local features": [
            (1, "structperc/tagger.py", "tag_documents"),
            (-1, "tasks/loading.py", "fill"),
            (-1, "tasks/loading.py", "load"),
            (-1, "structures/rescoring.py", "predict"),
        ],
        "NER n-best (n' = 100) and non-local rescoring": [
            (1, "structures/rescoring.py", "predict")
        ],
        "entity JSON and writing": [
            (1, "structperc/predict.py", "tag_file"),
            (-1, "structperc/tagger.py", "tag_documents"),
            (-1, "data/text.py", "read_text"),
            (-1, "structperc/tagger.py", "load"),
        ],
    },
    "after": {
        "load the model and its column tagger": [
            (1, "inference/files.py", "load"),
            (1, "inference/column_tagger.py", "load"),
        ],
        "compile: template tables, gazetteer lists, kernels from numba's cache": [
            (1, "inference/tagger.py", "compiled"),
            (1, "inference/compiled_tagger.py", "columns"),
            (-1, "inference/column_tagger.py", "load"),
            (1, "numba/core/dispatcher.py", "_compile_for_args"),
        ],
        "read the text, tokenise and split sentences": [
            (1, "inference/formats.py", "text_batches")
        ],
        "column tagger: POS and chunk tags": [(1, "inference/compiled_tagger.py", "tag")],
        "NER: features, n-best (n' = 100), non-local rescoring": [
            (1, "inference/compiled_tagger.py", "label"),
            (-1, "inference/compiled_tagger.py", "tag"),
        ],
        "entity JSON and writing": [
            (1, "structperc/io.py", "write_output_pieces"),
            (-1, "inference/files.py", "text_output"),
            (1, "inference/formats.py", "piece"),
        ],
    },
}
ENTRY = (  # (the last argument: where the stats go)
    "import cProfile, sys; out = sys.argv.pop(); profile = cProfile.Profile(); profile.enable()\n"
    "from structperc.predict import main\n"
    "sys.argv[0] = 'structperc-tag'\n"
    "try:\n    main()\nexcept SystemExit:\n    pass\n"
    "profile.disable(); profile.dump_stats(out)\n"
)


def cumulative(stats: pstats.Stats, suffix: str, function: str) -> float:
    """The cumulative seconds of the functions ``function`` of the files ending in ``suffix``."""
    return sum(
        row[3]
        for (path, _, name), row in stats.stats.items()
        if name == function and path.endswith(suffix)
    )


def profile(label: str, model: str) -> dict:
    """One profiled run of ``label``'s code: its stages and top functions."""
    with tempfile.TemporaryDirectory(prefix="structperc-profile-") as tmp:
        tmp = Path(tmp)
        code = export_commit(BASE_COMMIT, tmp / "code") if label == "before" else REPO
        data = Path(os.environ.get("STRUCTPERC_DATA", REPO.parent / "shared" / "data"))
        text = tmp / "reuters.txt"
        text.write_text(reuters_text(data, CHARS), encoding="utf-8")
        args = [f"model={model}", f"input={text}", f"output={tmp / 'out.jsonl'}",
                "input_format=text", "output_format=jsonl"]  # fmt: skip
        if label == "after":
            args.append("threads=1")
        stats_file = tmp / "stats.prof"
        env = {**os.environ, "PYTHONPATH": str(code)}
        done = subprocess.run([sys.executable, "-c", ENTRY, *args, str(stats_file)], cwd=code,
                              env=env, capture_output=True, text=True)  # fmt: skip
        if done.returncode != 0 or not stats_file.is_file():
            raise RuntimeError(f"the profiled run failed: {done.stderr[-2000:]}")
        stats = pstats.Stats(str(stats_file))
        tagged = [line for line in done.stderr.splitlines() if "tagged" in line]
    total = stats.total_tt
    stages = {
        name: sum(sign * cumulative(stats, f, fn) for sign, f, fn in terms)
        for name, terms in STAGES[label].items()
    }
    top = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:25]
    return {
        "label": label,
        "commit": BASE_COMMIT if label == "before" else git_commit(),
        "chars": CHARS,
        "log": tagged[-1] if tagged else None,
        "total_seconds": total,
        "stages": stages,
        "other_seconds": total - sum(stages.values()),
        "top": [
            {
                "function": f"{Path(path).name}:{line}({name})",
                "calls": row[1],
                "own_seconds": row[2],
                "cumulative_seconds": row[3],
            }  # fmt: skip
            for (path, line, name), row in top
        ],
        "loadavg": os.getloadavg()[0],
    }


def git_commit() -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return done.stdout.strip()


def render() -> str:
    """``PROFILE.md`` from every ``profile_*.json``."""
    runs = sorted((json.loads(p.read_text()) for p in OUT.glob("profile_*.json")),
                  key=lambda r: r["label"] != "before")  # fmt: skip
    lines = [
        "# Where `structperc-tag` spends its time: before and after",
        "",
        "Generated by `experiments/bench/tagging_profile.py` from the JSON files beside this "
        "page: one run of `structperc-tag model=runs/main input_format=text output_format=jsonl`"
        f" on the first {CHARS:,} characters of Reuters-21578 under cProfile (from before the "
        "first import; one thread), its time grouped by stage.  cProfile slows Python code more "
        "than compiled code: read the shares.",
        "",
    ]
    for r in runs:
        head = f"## {r['label']} (commit `{r['commit'][:12]}`, load average {r['loadavg']:.1f})"
        lines += [f"{head}: {r['total_seconds']:.1f} s profiled", "", f"Log: `{r['log']}`", ""]
        lines += ["| stage | seconds | share |", "|---|---:|---:|"]
        rest = ("start-up (imports, Hydra) and the rest", r["other_seconds"])
        for name, seconds in [*r["stages"].items(), rest]:
            share = 100 * seconds / r["total_seconds"]
            lines.append(f"| {name} | {seconds:.2f} | {share:.1f}% |")
        lines += ["", "The functions of most own time:", ""]
        lines += ["| function | calls | own s | cumulative s |", "|---|---:|---:|---:|"]
        for t in r["top"][:15]:
            cells = f"{t['calls']:,} | {t['own_seconds']:.2f} | {t['cumulative_seconds']:.2f}"
            lines.append(f"| `{t['function']}` | {cells} |")
        lines.append("")
    text = "\n".join(lines)
    (OUT / "PROFILE.md").write_text(text)
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", choices=("before", "after"))
    ap.add_argument("--model", default=str(REPO / "runs" / "main"))
    ap.add_argument("--render", action="store_true", help="only write PROFILE.md")
    args = ap.parse_args()
    if not args.render:
        if not args.label:
            ap.error("--label is required unless --render")
        result = profile(args.label, str(Path(args.model).resolve()))
        OUT.mkdir(exist_ok=True)
        (OUT / f"profile_{args.label}.json").write_text(json.dumps(result, indent=1) + "\n")
    print(render())


if __name__ == "__main__":
    main()
