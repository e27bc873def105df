"""Smoke runs of every experiment family on a few documents, to show that a change of structure
changes no number.

Each run is ``python -m structperc.run +experiment=NAME`` on the first documents of each split
with a few epochs; the summary keeps every split's figures from the run's ``results.json`` and
the sha256 of every safetensors file it wrote.  Run it before and after a change and compare:

    python tools/smoke.py run --out /tmp/smoke_before     # on the old commit
    python tools/smoke.py run --out /tmp/smoke_after      # on the new one
    python tools/smoke.py compare /tmp/smoke_before /tmp/smoke_after

``compare`` exits 1 when any figure or model differs and names each difference.  ``--override``
adds Hydra overrides to every run, to compare two settings that must agree:

    python tools/smoke.py run --out /tmp/smoke_tpl --only local nonlocal \
        --override features=kazama_templates       # Table 1 as templates, against the named
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CONLL03 = ["data.max_docs=40"]
CONLL00 = ["data.max_docs=300"]
EPOCHS = ["trainer.max_epochs=2", "trainer.progress=false"]

# name -> overrides after +experiment=...; every family of conf/experiment and the learners,
# rankers and CRF scans that take a different code path
RUNS: dict[str, list[str]] = {
    "local": ["+experiment=conll03_local", *CONLL03, *EPOCHS],
    "nonlocal": ["+experiment=conll03_nonlocal", *CONLL03, *EPOCHS],
    "perceptron": ["+experiment=conll03_local", "learner=perceptron", *CONLL03, *EPOCHS],
    "margin": ["+experiment=conll03_local", "learner=margin", *CONLL03, *EPOCHS],
    "mmvp": ["+experiment=conll03_local", "learner=mmvp", *CONLL03, *EPOCHS],
    "vp": ["+experiment=conll03_local", "learner=vp", *CONLL03, *EPOCHS],
    "candidate": ["+experiment=conll03_nonlocal", "learner=candidate", *CONLL03, *EPOCHS],
    "proposed": ["+experiment=conll03_nonlocal", "learner=proposed", *CONLL03, *EPOCHS],
    "crf": ["+experiment=conll03_crf", *CONLL03, "trainer.max_epochs=5", "trainer.progress=false"],
    "crf_scaled": [
        "+experiment=conll03_crf",
        "learner.scan=scaled",
        *CONLL03,
        "trainer.max_epochs=5",
        "trainer.progress=false",
    ],
    "crf_sgd": [
        "+experiment=conll03_crf",
        "learner.optimizer=sgd",
        *CONLL03,
        "trainer.max_epochs=2",
        "trainer.progress=false",
    ],
    "rerank1": [
        "+experiment=conll03_rerank1",
        *CONLL03,
        *EPOCHS,
        "task.n=5",
        "task.n_test=10",
        "task.epochs=2",
        "ranker.n=5",
    ],
    "rerank2": [
        "+experiment=conll03_rerank2",
        *CONLL03,
        *EPOCHS,
        "task.n=5",
        "task.n_test=10",
        "task.epochs=2",
        "ranker.n=5",
    ],
    "collins_boost": [
        "+experiment=conll03_collins_boost",
        *CONLL03,
        "trainer.max_epochs=5",
        "trainer.progress=false",
        "task.n=5",
        "task.n_test=10",
        "task.epochs=5",
        "task.min_units=1",
    ],
    "collins_vp": [
        "+experiment=conll03_collins_vp",
        *CONLL03,
        "trainer.max_epochs=5",
        "trainer.progress=false",
        "task.n=5",
        "task.n_test=10",
        "task.epochs=2",
        "task.min_units=1",
    ],
    "joint": ["+experiment=conll00_joint", *CONLL00, *EPOCHS],
    "cascade": ["+experiment=conll00_cascade", *CONLL00, *EPOCHS],
    "tagchunk": ["+experiment=conll00_tagchunk", *CONLL00, *EPOCHS, "task.dev_sentences=50"],
}


def model_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every safetensors file the run wrote (its checkpoints left out)."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*.safetensors"))
        if "checkpoint" not in path.parts
    }


def is_timing(key: str) -> bool:
    """A results.json key that holds a time or a rate (``seconds``, ``train_seconds``,
    ``tokens_per_second``): machine noise, not a figure."""
    return key == "seconds" or key.endswith(("_seconds", "per_second"))


def figures(results: dict) -> dict:
    """The numbers of a results.json that a change of structure must not move: every number
    except timings."""
    out = {}

    def walk(prefix: str, node):
        if isinstance(node, dict):
            for key, value in node.items():
                walk(f"{prefix}.{key}" if prefix else key, value)
        elif isinstance(node, (int, float)) and not isinstance(node, bool):
            if not any(is_timing(part) for part in prefix.split(".")):
                out[prefix] = node

    walk("", results)
    return out


def run(args: argparse.Namespace) -> int:
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    names = args.only or list(RUNS)
    previous = out / "summary.json"  # --only adds to (or replaces in) an earlier summary
    summary = json.loads(previous.read_text()) if args.only and previous.exists() else {}
    for name in names:
        folder = out / name
        command = [
            sys.executable,
            "-m",
            "structperc.run",
            *RUNS[name],
            *args.override,
            f"hydra.run.dir={folder}",
            f"cache_dir={out / 'cache'}",
        ]
        if "rerank" in name or "collins" in name:
            command.append(f"task.lists_dir={out / 'lists'}")
        start = time.perf_counter()
        done = subprocess.run(
            command, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"}
        )
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            print(f"{name}: failed ({done.returncode})\n{done.stderr[-3000:]}", file=sys.stderr)
            summary[name] = {"failed": done.returncode}
            continue
        results = json.loads((folder / "results.json").read_text())
        summary[name] = {"figures": figures(results), "models": model_hashes(folder)}
        print(f"{name}: {seconds:.0f} s", file=sys.stderr)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return 0 if all("failed" not in s for s in summary.values()) else 1


def compare(args: argparse.Namespace) -> int:
    before = json.loads((Path(args.before) / "summary.json").read_text())
    after = json.loads((Path(args.after) / "summary.json").read_text())
    differences = 0
    for name in sorted(set(before) | set(after)):
        found = differences
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            print(f"{name}: only in {'after' if a is None else 'before'}")
            differences += 1
            continue
        ma, mb = a.get("models", {}), b.get("models", {})
        for key in sorted(set(ma) | set(mb)):
            if ma.get(key) != mb.get(key):
                print(f"{name}: {key} differs")
                differences += 1
        fa, fb = a.get("figures", {}), b.get("figures", {})
        for key in sorted(set(fa) | set(fb)):
            if fa.get(key) != fb.get(key):
                print(f"{name}: {key} {fa.get(key)} -> {fb.get(key)}")
                differences += 1
        if differences == found:
            print(f"{name}: identical ({len(fa)} figures, {len(ma)} model files)")
    print(f"{differences} differences")
    return 1 if differences else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run the smoke runs into --out")
    p.add_argument("--out", required=True)
    p.add_argument("--only", nargs="*", choices=list(RUNS), help="a subset of the runs")
    p.add_argument("--override", nargs="*", default=[], help="Hydra overrides for every run")
    p.set_defaults(func=run)
    p = sub.add_parser("compare", help="compare two --out folders")
    p.add_argument("before")
    p.add_argument("after")
    p.set_defaults(func=compare)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
