"""Peak memory of ``structperc-tag`` on long input: single-paragraph texts and a CoNLL file.

    python experiments/bench/tag_memory.py --label after --model runs/main --tagger runs/tagchunk
    python experiments/bench/tag_memory.py --label before --code ../main-at-base \\
        --model runs/main --tagger runs/tagchunk
    python experiments/bench/tag_memory.py --render      # the table of every label's JSON

Each case runs ``structperc-tag`` in a fresh process, with the ``structperc`` of ``--code`` on
its ``PYTHONPATH`` (this checkout by default), and records the process's peak resident memory
(``ru_maxrss`` of ``os.wait4``), its wall time, exit status, the tokens it tagged (its log) and
the sha256 of its output, so that two labels' outputs can be compared.  A process that passes
``--limit-mb`` is stopped and recorded as such.  The cases:

    text20k, text100k, text1m   one line of up to 20,000 / 100,000 / 1,000,000 characters: the
                                Reuters-21578 newswire of ``$STRUCTPERC_DATA/unlabeled`` (its
                                paragraphs joined by spaces, cut at a full stop), plain text in,
                                entities out (``input_format=text output_format=jsonl``), the
                                POS and chunk columns from ``--tagger``
    conll_test                  CoNLL-2003 ``test.txt`` (46,435 tokens in 231 documents), CoNLL
                                columns in and out, scored

Writes ``experiments/bench/tag_memory/LABEL.json``; ``--render`` (also after every run) writes
``experiments/bench/tag_memory/README.md`` from the JSON files there, one column per label.
The script imports nothing from ``structperc``: it measures whichever code it is given.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "experiments" / "bench" / "tag_memory"
TEXT_CASES = {"text20k": 20_000, "text100k": 100_000, "text1m": 1_000_000}
CASES = [*TEXT_CASES, "conll_test"]
TARGET_MB = 1024
TAGGED = re.compile(r"tagged (\d+) documents, (\d+) tokens")
ENTRY = "import sys; from structperc.predict import main; sys.argv[0] = 'structperc-tag'; main()"


def data_dir() -> Path:
    """``$STRUCTPERC_DATA``, else ``../shared/data`` beside the checkout."""
    return Path(os.environ.get("STRUCTPERC_DATA") or ROOT.parent / "shared" / "data")


def long_text(chars: int) -> str:
    """One line of at most ``chars`` characters of Reuters newswire, cut after a sentence's
    full stop (a text ending in a bare word would end, for the code before, in syntok's empty
    token, which ``data/text.py`` now drops: the outputs would differ for that alone)."""
    path = data_dir() / "unlabeled" / "reuters21578.txt.gz"
    text, size = [], 0
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                text.append(line.strip())
                size += len(text[-1]) + 1
                if size > chars:
                    break
    joined = " ".join(text)[:chars]
    return joined[: joined.rfind(". ") + 1] if size > chars else joined


def case_args(case: str, folder: Path, model: str, tagger: str) -> list[str]:
    """The ``structperc-tag`` settings of a case (its input written into ``folder``)."""
    if case in TEXT_CASES:
        path = folder / f"{case}.txt"
        path.write_text(long_text(TEXT_CASES[case]) + "\n", encoding="utf-8")
        out = folder / f"{case}.jsonl"
        return [f"model={model}", f"input={path}", f"output={out}", f"tagger={tagger}",
                "input_format=text", "output_format=jsonl"]  # fmt: skip
    test = data_dir() / "conll2003" / "test.txt"
    return [f"model={model}", f"input={test}", f"output={folder / 'conll_test.txt'}"]


def watch(pid: int, limit_kb: int, stopped: list[bool], done: threading.Event) -> None:
    """Kill ``pid`` once its resident memory passes ``limit_kb`` (``stopped[0]`` then True)."""
    while not done.wait(0.2):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        rss = re.search(r"VmRSS:\s+(\d+)", status)
        if rss and int(rss.group(1)) > limit_kb:
            stopped[0] = True
            os.kill(pid, 9)
            return


def run_case(args: list[str], code: Path, limit_mb: int) -> dict:
    """Run ``structperc-tag ARGS`` with ``code`` first on the path: peak memory and the rest."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    env.pop("HYDRA_FULL_ERROR", None)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", ENTRY, *args], cwd=code, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    stopped, done = [False], threading.Event()
    watcher = threading.Thread(target=watch, args=(proc.pid, limit_mb * 1024, stopped, done))
    watcher.start()
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    done.set()
    watcher.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    output = Path(next(a for a in args if a.startswith("output="))[7:])
    tagged = TAGGED.search(stderr)
    return {
        "peak_mb": round(usage.ru_maxrss / 1024, 1),
        "seconds": round(time.perf_counter() - t0, 1),
        "status": proc.returncode,
        "stopped_over_mb": limit_mb if stopped[0] else None,
        "documents": int(tagged.group(1)) if tagged else None,
        "tokens": int(tagged.group(2)) if tagged else None,
        "output_sha256": hashlib.sha256(output.read_bytes()).hexdigest()
        if proc.returncode == 0 and output.is_file()
        else None,
        "error": None if proc.returncode == 0 else (stderr.strip().splitlines() or [""])[-1],
    }


def git_commit(code: Path) -> str:
    done = subprocess.run(["git", "-C", str(code), "rev-parse", "HEAD"], capture_output=True,
                          text=True)  # fmt: skip
    return done.stdout.strip()


def measure(args: argparse.Namespace) -> dict:
    """Every case of ``args.cases`` for ``args.label``, into ``OUT/LABEL.json``."""
    code = Path(args.code).resolve()
    result = {
        "label": args.label,
        "code": str(code),
        "commit": git_commit(code),
        "model": str(args.model),
        "tagger": str(args.tagger),
        "machine": f"{os.cpu_count()} CPUs, {platform.platform()}",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "limit_mb": args.limit_mb,
        "cases": {},
    }
    path = OUT / f"{args.label}.json"
    if path.is_file():  # the cases not run again keep their rows
        result["cases"] = json.loads(path.read_text())["cases"]
    # one folder for every label's inputs and outputs: the jsonl output names its input file
    folder = Path(tempfile.gettempdir()) / "structperc_tag_memory"
    folder.mkdir(exist_ok=True)
    for case in args.cases:
        row = run_case(case_args(case, folder, args.model, args.tagger), code, args.limit_mb)
        result["cases"][case] = row
        print(case, json.dumps(row), flush=True)
        OUT.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1) + "\n")
    return result


def cell(row: dict | None) -> str:
    if row is None:
        return "–"
    if row["stopped_over_mb"]:
        return f"> {row['stopped_over_mb']:,} MB (stopped)"
    if row["status"] != 0:
        return f"exit {row['status']}: {row['error']}"
    return f"{row['peak_mb']:,.0f} MB ({row['seconds']:.0f} s)"


def render() -> str:
    """The markdown table of every ``OUT/*.json``, "before" first; writes ``OUT/README.md``."""
    runs = [json.loads(p.read_text()) for p in sorted(OUT.glob("*.json"))]
    runs.sort(key=lambda r: (r["label"] != "before", r["label"]))
    lines = [
        "# Peak memory of `structperc-tag` on long input",
        "",
        "Generated by `experiments/bench/tag_memory.py` from the JSON files beside this page: "
        "each case runs `structperc-tag` in a fresh process and reports its peak resident "
        f"memory (`ru_maxrss`) and wall time. Target: at most {TARGET_MB:,} MB for every case. "
        "The texts are single lines of Reuters newswire tagged with the main job's model and the "
        "column tagger for the POS and chunk columns (`input_format=text output_format=jsonl`); "
        "`conll_test` is CoNLL-2003 `test.txt` in CoNLL columns. The seconds are wall time on "
        "a machine shared with other jobs (2 CPUs, load average about 5): they show no speed "
        'difference either way. "same output": the sha256 of the outputs are equal.',
        "",
        "| case | tokens | " + " | ".join(r["label"] for r in runs) + " | same output |",
        "|---|---:|" + "---:|" * len(runs) + "---|",
    ]
    for case in CASES:
        rows = [r["cases"].get(case) for r in runs]
        tokens = next((row["tokens"] for row in rows if row and row["tokens"]), None)
        digests = {row["output_sha256"] for row in rows if row and row["output_sha256"]}
        complete = sum(1 for row in rows if row and row["output_sha256"])
        same = "–" if complete < 2 else ("yes" if len(digests) == 1 else "**no**")
        tok = f"{tokens:,}" if tokens else "–"
        lines.append(f"| {case} | {tok} | " + " | ".join(cell(r) for r in rows) + f" | {same} |")
    lines += ["", "Runs:", ""]
    for r in runs:
        lines.append(
            f"- `{r['label']}`: structperc at commit `{r['commit'][:12]}`, model `{r['model']}`, "
            f"tagger `{r['tagger']}`; {r['machine']}; {r['date']}."
        )
    text = "\n".join(lines) + "\n"
    (OUT / "README.md").write_text(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", help="the name of this run's column (before, after, ...)")
    parser.add_argument("--code", default=str(ROOT), help="the checkout whose structperc runs")
    parser.add_argument("--model", default="runs/main", help="the main job's run folder")
    parser.add_argument("--tagger", default="runs/tagchunk", help="the column tagger's folder")
    parser.add_argument("--cases", nargs="+", default=CASES, choices=CASES)
    parser.add_argument("--limit-mb", type=int, default=8000, help="stop a case above this")
    parser.add_argument("--render", action="store_true", help="only write the table")
    args = parser.parse_args()
    if not args.render:
        if not args.label:
            parser.error("--label is required unless --render")
        args.model, args.tagger = (str(Path(p).resolve()) for p in (args.model, args.tagger))
        measure(args)
    print(render())


if __name__ == "__main__":
    main()
