"""What a new user meets running ``structperc-tag`` after ``make run``, case by case, on any
checkout: the exit status, the lines on standard error, and what became of the output.

    python experiments/tag_cli/cases.py --label before --code ../checkout-before --model runs/main
    python experiments/tag_cli/cases.py --label after --model runs/main
    python experiments/tag_cli/cases.py --render

Each case runs ``structperc-tag`` (the function ``pyproject.toml`` names as its console script)
or ``Tagger.entities`` in a fresh process with the ``structperc`` of ``--code`` on its path, on
small files written for it, with ``--model`` (the main job's run folder; ``runs/main`` after
``make run``, which carries its column tagger) and, for text beyond the first two cases, the
column tagger ``--tagger`` named (``tagger=``), as the code before needs it.  Ctrl-C is a
SIGINT sent 8 seconds into tagging 100,000 characters.  Writes ``experiments/tag_cli/LABEL.json``;
``--render`` (also after every run) writes ``experiments/tag_cli/README.md``: the cases side by
side, one column per label, and the peak memory rows of ``experiments/bench/tag_memory/*.json``
(``experiments/bench/tag_memory.py``).  The script imports nothing from ``structperc``.
"""

from __future__ import annotations

import argparse
import codecs
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "experiments" / "tag_cli"
MEMORY = ROOT / "experiments" / "bench" / "tag_memory"
TEXT = ["input_format=text", "output_format=jsonl"]
NOTES = "John Smith lives in Paris and works for Acme Corp.\n\nThe EU said on Monday.\n"
CONLL = "EU NNP B-NP B-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP B-MISC\ncall NN I-NP O\n"

# name -> (what the issue reports, what the case runs: see ``run_case``)
CASES: dict[str, str] = {
    "text_after_make_run": "plain text with model=runs/main and no tagger=",
    "text_no_tagger": "plain text, a model that reads POS/chunk columns, no column tagger",
    "readme_tagger": "tagger= the folder the README named (no model files in a checkout)",
    "empty_text": "an empty text file",
    "blank_text": "a text file of blank lines",
    "zwsp_text": "a text file holding a zero-width space",
    "empty_stdin": "empty standard input (input=- output=-)",
    "entities_empty": 'Tagger.entities("")',
    "bare": "structperc-tag with no settings",
    "no_output": "no output=",
    "output_is_input": "output= the input file (CoNLL)",
    "output_is_input_link": "output= a symlink to the input (text)",
    "model_json_array": "model.json holding []",
    "model_json_no_tables": 'model.json without "tables"',
    "model_json_no_sha256": 'model.json without "tensors"."sha256"',
    "model_truncated": "model.safetensors cut short",
    "unwritable_output": "an output that cannot be written (output=/proc/self/out.txt)",
    "ctrl_c": "Ctrl-C while tagging",
    "nbsp_token": "a no-break space inside a token (CoNLL columns)",
    "cr_only": "a CoNLL file with CR line ends only",
    "nul_after_tag": "a NUL byte after a tag",
    "bom_crlf_offsets": "jsonl offsets of text with a BOM and CRLF lines: documented",
    "unknown_setting": "a setting that does not exist (foo=1)",
    "bad_batch_size": "batch_size=x",
    "text_ending_in_a_word": "text of 5 words without a full stop (syntok adds an empty token)",
}


def write(folder: Path, name: str, data: str | bytes) -> Path:
    path = folder / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def damaged_model(model: Path, folder: Path, change) -> Path:
    """A copy of ``model``'s two files in ``folder``, model.json changed by ``change``."""
    folder.mkdir()
    for name in ("model.json", "model.safetensors"):
        os.symlink(model / name, folder / name)  # (the 20 MB tensors are only read)
    meta = json.loads((model / "model.json").read_text())
    (folder / "model.json").unlink()
    (folder / "model.json").write_text(json.dumps(change(meta)))
    return folder


def case_command(case: str, tmp: Path, model: Path, tagger: Path, code: Path):
    """(arguments of structperc-tag or Python code, standard input, the output path)."""
    out = tmp / "out"
    m, t = f"model={model}", f"tagger={tagger}"  # (t: the column tagger, named)
    notes = write(tmp, "notes.txt", NOTES)
    conll = write(tmp, "in.conll", CONLL)
    if case == "text_after_make_run":
        return [m, f"input={notes}", f"output={out}", *TEXT], None, out
    if case == "text_no_tagger":
        plain = damaged_model(model, tmp / "plain", lambda meta: meta)  # no tagger/ beside it
        return [f"model={plain}", f"input={notes}", f"output={out}", *TEXT], None, out
    if case == "readme_tagger":
        readme = code / "experiments/tagchunk/runs/conll00_tagchunk_compact_final"
        return [m, f"input={notes}", f"output={out}", f"tagger={readme}", *TEXT], None, out
    if case in ("empty_text", "blank_text", "zwsp_text"):
        data = {"empty_text": b"", "blank_text": b"\n\n  \n", "zwsp_text": "\u200b".encode()}
        path = write(tmp, "in.txt", data[case])
        return [m, f"input={path}", f"output={out}", t, *TEXT], None, out
    if case == "empty_stdin":
        return [m, "input=-", "output=-", t, *TEXT], "", None
    if case == "text_ending_in_a_word":  # 5 words, no full stop
        path = write(tmp, "in.txt", "John Smith lives in Paris\n")
        args = [m, f"input={path}", f"output={out}", t, "input_format=text", "output_format=conll"]
        return args, None, out
    if case == "entities_empty":
        text = ""
        code_ = (
            "from structperc.inference.tagger import Tagger; "
            "from structperc.inference.loading import ColumnTagger; "
            f"columns = ColumnTagger.load({str(tagger)!r}); "
            f"tagger = Tagger.load({str(model)!r}, column_tagger=columns); "
            f"print(tagger.entities({text!r}))"
        )
        return code_, None, None
    if case == "bare":
        return [], None, None
    if case == "no_output":
        return [m, f"input={notes}"], None, None
    if case == "output_is_input":
        return [m, f"input={conll}", f"output={conll}"], None, conll
    if case == "output_is_input_link":
        os.symlink(notes, tmp / "link.txt")
        return [m, f"input={notes}", f"output={tmp / 'link.txt'}", t, *TEXT], None, notes
    if case.startswith("model_json"):
        change = {
            "model_json_array": lambda meta: [],
            "model_json_no_tables": lambda meta: {k: v for k, v in meta.items() if k != "tables"},
            "model_json_no_sha256": lambda meta: {
                **meta,
                "tensors": {k: v for k, v in meta["tensors"].items() if k != "sha256"},
            },
        }[case]
        bad = damaged_model(model, tmp / "bad", change)
        return [f"model={bad}", f"input={conll}", f"output={out}"], None, out
    if case == "model_truncated":
        bad = tmp / "cut"
        bad.mkdir()
        shutil.copyfile(model / "model.json", bad / "model.json")
        blob = (model / "model.safetensors").read_bytes()
        (bad / "model.safetensors").write_bytes(blob[: len(blob) // 2])
        return [f"model={bad}", f"input={conll}", f"output={out}"], None, out
    if case == "unwritable_output":  # a folder no file can be made in, even by root
        return [m, f"input={conll}", "output=/proc/self/out.txt"], None, None
    if case == "ctrl_c":
        words = (NOTES.replace("\n", " ") * 1300)[:100_000]
        path = write(tmp, "long.txt", words + "\n")
        return [m, f"input={path}", f"output={out}", t, *TEXT], None, out
    if case == "nbsp_token":
        path = write(tmp, "in.txt", "New\u00a0York NNP B-NP B-LOC\nsaid VBD B-VP O\n")
        return [m, f"input={path}", f"output={out}"], None, out
    if case == "cr_only":
        path = write(tmp, "in.txt", CONLL.replace("\n", "\r"))
        return [m, f"input={path}", f"output={out}"], None, out
    if case == "nul_after_tag":
        path = write(tmp, "in.txt", CONLL.replace("B-ORG\n", "B-ORG\x00\n"))
        return [m, f"input={path}", f"output={out}"], None, out
    if case == "bom_crlf_offsets":
        path = write(tmp, "in.txt", codecs.BOM_UTF8 + NOTES.replace("\n", "\r\n").encode())
        return [m, f"input={path}", f"output={out}", t, *TEXT], None, out
    if case == "unknown_setting":
        return [m, f"input={conll}", f"output={out}", "foo=1"], None, out
    if case == "bad_batch_size":
        return [m, f"input={conll}", f"output={out}", "batch_size=x"], None, out
    raise KeyError(case)


def console_script(code: Path) -> str:
    """Python that runs ``structperc-tag`` as the checkout's ``pyproject.toml`` installs it."""
    found = re.search(
        r'^structperc-tag = "(.+):(.+)"$', (code / "pyproject.toml").read_text(), re.M
    )
    module, function = found.groups()
    return (
        f"import sys; sys.argv[0] = 'structperc-tag'; from {module} import {function}; {function}()"
    )


def run_case(case: str, code: Path, model: Path, tagger: Path) -> dict:
    """Run one case in a fresh process: its status, stderr lines and output."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    env.pop("HYDRA_FULL_ERROR", None)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        args, stdin, out = case_command(case, tmp, model, tagger, code)
        command = [sys.executable, "-c", args if isinstance(args, str) else console_script(code)]
        command += [] if isinstance(args, str) else args
        before = out.read_bytes() if out is not None and out.is_file() else None
        proc = subprocess.Popen(
            command, cwd=tmp, env=env, text=True, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            # Ctrl-C as a terminal delivers it, also when this script runs in the background
            # (where the shell has SIGINT ignored, and a child would inherit that)
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
        if case == "ctrl_c":
            time.sleep(8)
            proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(stdin)
        lines = stderr.strip().splitlines()
        tagged = re.search(r"tagged \d+ documents, (\d+) tokens", stderr)
        log = [line for line in lines if not line.startswith(("tagged ", "wrote ", "[20"))]
        if out is None:
            output = "stdout: " + (repr(stdout.strip())[:120] if stdout.strip() else "empty")
        elif before is not None:
            output = "unchanged" if out.read_bytes() == before else "overwritten"
        elif out.is_file():
            output = f"written ({out.stat().st_size} bytes)"
        else:
            output = "none"
        leftovers = sorted(p.name for p in tmp.iterdir() if p.name.endswith(".tmp"))
        readme = (code / "README.md").read_text()
        return {
            "status": proc.returncode,
            "stderr_lines": len(log),
            "traceback": "Traceback" in stderr,
            "message": (log[-1] if log else "")[:300],
            "output": output + (f", {leftovers} left" if leftovers else ""),
            "tokens": int(tagged.group(1)) if tagged else None,
            "documented": case != "bom_crlf_offsets" or 'newline=""' in readme,
        }


def measure(args: argparse.Namespace) -> None:
    code = Path(args.code).resolve()
    commit = subprocess.run(["git", "-C", str(code), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()  # fmt: skip
    result = {
        "label": args.label,
        "commit": commit,
        "model": str(args.model),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cases": {},
    }
    path = OUT / f"{args.label}.json"
    if path.is_file():  # the cases not run again keep their rows
        result["cases"] = json.loads(path.read_text())["cases"]
    for case in args.cases:
        result["cases"][case] = run_case(case, code, args.model, args.tagger)
        print(case, json.dumps(result["cases"][case]), flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")


def cell(row: dict | None) -> str:
    if row is None:
        return "–"
    parts = [f"exit {row['status']}"]
    if row["traceback"]:
        parts.append(f"**traceback** ({row['stderr_lines']} lines)")
    elif row["stderr_lines"] > 1:
        parts.append(f"{row['stderr_lines']} lines")
    if row["message"]:
        parts.append("`" + row["message"].replace("|", "\\|").replace("`", "'") + "`")
    tokens = f", {row['tokens']} tokens tagged" if row.get("tokens") is not None else ""
    parts.append(f"output: {row['output']}{tokens}")
    if not row["documented"]:
        parts.append("**not documented**")
    return "; ".join(parts)


def memory_rows(labels: list[str]) -> list[str]:
    """The peak memory rows of ``experiments/bench/tag_memory``'s JSON files, per label."""
    runs = {p.stem: json.loads(p.read_text()) for p in MEMORY.glob("*.json")}
    rows = []
    for case in ("text20k", "text100k", "text1m", "conll_test"):
        cells = []
        for label in labels:
            row = runs.get(label, {}).get("cases", {}).get(case)
            commit = runs.get(label, {}).get("commit", "")[:7]
            cells.append(f"{row['peak_mb']:,.0f} MB peak (at `{commit}`)" if row else "–")
        rows.append(
            f"| memory_{case} | peak memory, {case} (main job's model) | "
            + " | ".join(cells)
            + " |"
        )
    return rows


def render() -> str:
    runs = [json.loads(p.read_text()) for p in sorted(OUT.glob("*.json"))]
    runs.sort(key=lambda r: (r["label"] != "before", r["label"]))
    labels = [r["label"] for r in runs]
    lines = [
        "# `structperc-tag` as a new user meets it: before and after",
        "",
        "Generated by `experiments/tag_cli/cases.py` from the JSON files beside this page: each "
        "case runs in a fresh process on the checkout of its label, with the main job's run "
        "folder (`make run`'s `runs/main`). A cell gives the exit status, the number of lines "
        "on standard error when more than one (log lines left out), the last of them, and what "
        "became of the output. The memory rows come from `experiments/bench/tag_memory.py` "
        "(`experiments/bench/tag_memory/README.md`).",
        "",
        "| case | what | " + " | ".join(labels) + " |",
        "|---|---|" + "---|" * len(labels),
    ]
    for case, what in CASES.items():
        cells = [cell(r["cases"].get(case)) for r in runs]
        lines.append(f"| {case} | {what} | " + " | ".join(cells) + " |")
    lines += memory_rows(labels)
    lines += ["", "Checkouts:", ""]
    lines += [f"- `{r['label']}`: commit `{r['commit'][:12]}`, {r['date']}." for r in runs]
    text = "\n".join(lines) + "\n"
    (OUT / "README.md").write_text(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label")
    parser.add_argument("--code", default=str(ROOT), help="the checkout whose structperc runs")
    parser.add_argument("--model", default="runs/main", help="the main job's run folder")
    parser.add_argument("--tagger", default="runs/tagchunk", help="the column tagger's folder")
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--render", action="store_true", help="only write the table")
    args = parser.parse_args()
    if not args.render:
        if not args.label:
            parser.error("--label is required unless --render")
        args.model, args.tagger = Path(args.model).resolve(), Path(args.tagger).resolve()
        measure(args)
    print(render())


if __name__ == "__main__":
    main()
