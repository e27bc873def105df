"""What a user met running ``structperc-tag`` and ``structperc-train`` (issue 36): text without
words, missing settings, an output that is the input, a model.json of the wrong shape, an
unwritable output, Ctrl-C, and the character offsets of text with a byte-order mark or CR line
ends.  Each ends in the output the input calls for, or in one line and a known exit status."""

from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra_runs import ROOT, console, one_line_failure, tag_cli, without_full_error

from structperc.data.conll import read_conll
from structperc.data.text import read_text
from structperc.inference.tagger import Tagger
from structperc.predict import tag_file

USAGE = "usage: structperc-tag model=RUN_DIR input=FILE|- output=FILE|- [key=value ...]"
TEXT = ["input_format=text", "output_format=jsonl"]


def synthetic_text(synthetic_dir: Path, newline: str = "\n") -> str:
    """Four paragraphs of the synthetic test set's tokens, ``newline`` ending the lines."""
    docs = read_conll(synthetic_dir / "conll2003" / "test.txt")
    return (2 * newline).join(" ".join(d.tokens) for d in docs[:4]) + newline


# -- text without words ---------------------------------------------------------------------
@pytest.mark.parametrize("text", ["", "\n\n", " \t\n", "\u200b"])
def test_text_without_words_has_no_entities(token_model, text):
    tagger = Tagger.load(token_model)
    assert tagger.entities(text) == []
    assert tagger.tag_documents([]) == [] and tagger.tag([]) == []


@pytest.mark.parametrize("text", ["in\r", "John lives in Paris\n", "a b"])
def test_a_text_ending_in_a_word_has_no_empty_token(token_model, text):
    """syntok ends such a text with an empty token: it was tagged, and could be an entity."""
    (paragraph,) = read_text(text)
    assert paragraph.document.tokens == text.split()
    assert all(e["text"] for e in Tagger.load(token_model).entities(text))


@pytest.mark.parametrize(
    ("name", "data"), [("empty", b""), ("blank", b"\n\n  \n\t\n"), ("zwsp", b"\xe2\x80\x8b")]
)
def test_a_text_file_without_words_gives_an_empty_output(token_model, tmp_path, name, data):
    (tmp_path / "in.txt").write_bytes(data)
    out = tmp_path / "out.jsonl"
    done = tag_cli(f"model={token_model}", f"input={tmp_path / 'in.txt'}", f"output={out}", *TEXT)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "" and "no words to tag" in done.stderr


def test_empty_standard_input_gives_empty_standard_output(token_model):
    done = tag_cli(f"model={token_model}", "input=-", "output=-", *TEXT, stdin="")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and "<stdin>: no words to tag" in done.stderr


# -- settings -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "missing"),
    [
        ((), "missing settings model=, input=, output="),
        (("input=in.txt", "output=out.txt"), "missing setting model="),
        (("model=RUN", "input=in.txt"), "missing setting output="),
    ],
)
def test_a_missing_setting_prints_the_usage_and_exits_2(args, missing):
    done = tag_cli(*args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        USAGE + "  (--help: every setting)",
        f"structperc-tag: error: {missing}",
    ]


@pytest.mark.parametrize(
    ("arg", "error"),
    [
        ("foo=1", "unknown setting foo= in 'foo=1'"),
        ("+foo=1", "unknown setting foo= in '+foo=1'"),
        ("~tagger", "'~tagger': settings are not deleted (key=null unsets one)"),
        ("columns=[token", "'columns=[token' is not a setting key=value (no viable alternative"),
        ("tagger", "'tagger' is not a setting key=value"),
    ],
)
def test_an_argument_that_is_no_setting_prints_the_usage_and_exits_2(arg, error):
    done = tag_cli("model=RUN", "input=in.txt", "output=out.txt", arg)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == USAGE + "  (--help: every setting)" and len(lines) == 2
    assert lines[1].startswith(f"structperc-tag: error: {error}"), lines


@pytest.mark.parametrize(
    ("arg", "error"),
    [
        ("batch_size=x", "batch_size='x': expected a whole number"),
        ("batch_size=true", "batch_size=True: expected a whole number"),
        ("n_test=1.5", "n_test=1.5: expected a whole number or null"),
        ("evaluate=3", "evaluate=3: expected true or false"),
        ("columns=5", "columns=5: expected a list of column names"),
        ("columns=[1]", "columns=[1]: expected a list of column names"),
        ("device=gpu9", "device=gpu9: "),  # torch's words
    ],
)
def test_a_setting_of_the_wrong_kind_is_one_line(token_model, tmp_path, arg, error):
    (tmp_path / "in.txt").write_text("John\n")
    out = tmp_path / "out.txt"
    done = tag_cli(f"model={token_model}", f"input={tmp_path / 'in.txt'}", f"output={out}", arg)
    one_line_failure(done, f"structperc-tag: error: {error}")
    assert not out.exists()


def test_training_with_a_setting_left_missing_prints_the_usage_and_exits_2(tmp_path):
    done = console(
        "structperc-train", "+experiment=conll03_local", "task.name=???",
        f"hydra.run.dir={tmp_path / 'run'}",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-2:] == [
        "usage: structperc-train +experiment=NAME [key=value ...]  (--help: the config groups "
        "and keys)",
        "structperc-train: error: missing setting task.name=",
    ]


# -- an output that is the input ------------------------------------------------------------
def test_an_output_that_is_the_input_is_refused_before_anything_is_written(token_model, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("John\nlives\n")
    (tmp_path / "link.txt").symlink_to(source)
    os.link(source, tmp_path / "hard.txt")
    for output in (
        source,
        tmp_path / "link.txt",  # a symlink to it
        tmp_path / "hard.txt",  # a hard link
        tmp_path / ".." / tmp_path.name / "in.txt",  # another spelling
    ):
        with pytest.raises(ValueError, match=f"output={output} is the input file {source}"):
            tag_file(token_model, source, output, columns=["token"])
    assert (tmp_path / "link.txt").is_symlink() and source.read_text() == "John\nlives\n"
    done = tag_cli(f"model={token_model}", f"input={source}", f"output={tmp_path / 'link.txt'}")
    one_line_failure(done, "structperc-tag: error:", "refusing to overwrite the input")
    assert (tmp_path / "link.txt").is_symlink() and source.read_text() == "John\nlives\n"


# -- model.json of the wrong shape ----------------------------------------------------------
def _without(meta: dict, *keys: str) -> dict:
    """``meta`` less ``keys`` ("tensors.sha256": a key inside "tensors")."""
    meta = json.loads(json.dumps(meta))
    for key in keys:
        inside, _, name = key.rpartition(".")
        del (meta[inside] if inside else meta)[name]
    return meta


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda m: [], "expected a JSON object (format, labels, features, tables, tensors), "
         "found an array"),
        (lambda m: "model", "found a string"),
        (lambda m: _without(m, "tables"), 'expected "tables" to be an object, it is missing'),
        (lambda m: _without(m, "tensors.sha256"), 'expected "tensors" to hold "file", "bytes" '
         'and "sha256"'),
        (lambda m: _without(m, "features"), 'expected "features" to be an object'),
        (lambda m: {**m, "features": []}, 'expected "features" to be an object, found an array'),
        (lambda m: {**m, "labels": 9}, 'expected "labels" to be an array, found a number'),
        (lambda m: {**m, "labels": [1]}, 'expected "labels" to be an array of strings'),
        (lambda m: {**m, "tables": {"node": "x"}}, 'expected "tables"."node" to be a shape'),
        (lambda m: {**m, "features": {}}, '"features" is not what structperc writes there'),
    ],
)  # fmt: skip
def test_a_model_json_of_the_wrong_shape_is_one_error_naming_the_file(
    token_model, tmp_path, change, expected
):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "model.safetensors").write_bytes((token_model / "model.safetensors").read_bytes())
    meta = json.loads((token_model / "model.json").read_text())
    (bad / "model.json").write_text(json.dumps(change(meta)))
    with pytest.raises(ValueError) as err:
        Tagger.load(bad)
    assert str(err.value).startswith(f"{bad / 'model.json'}: ") and expected in str(err.value)


def test_a_model_json_of_the_wrong_shape_fails_the_cli_in_one_line(token_model, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "model.safetensors").write_bytes((token_model / "model.safetensors").read_bytes())
    (bad / "model.json").write_text("[]\n")
    (tmp_path / "in.txt").write_text("John\n")
    done = tag_cli(
        f"model={bad}",
        f"input={tmp_path / 'in.txt'}",
        f"output={tmp_path / 'o'}",
        "columns=[token]",
    )
    one_line_failure(done, f"{bad / 'model.json'}: expected a JSON object")


# -- an output that cannot be written -------------------------------------------------------
def test_an_unwritable_output_is_named_not_its_temporary_file(tmp_path, monkeypatch):
    from structperc import io

    def refused(dir, prefix, suffix):  # a folder the user may not write: mkstemp's error
        raise PermissionError(13, "Permission denied", os.path.join(dir, f"{prefix}x{suffix}"))

    monkeypatch.setattr(io.tempfile, "mkstemp", refused)
    with pytest.raises(PermissionError) as err:
        io.atomic_write_text(tmp_path / "out.txt", "text")
    assert str(err.value) == f"[Errno 13] Permission denied: '{tmp_path / 'out.txt'}'"


def test_an_output_that_is_a_folder_is_named_by_the_cli(token_model, tmp_path):
    (tmp_path / "in.txt").write_text("John\n")
    (tmp_path / "folder").mkdir()
    done = tag_cli(
        f"model={token_model}", f"input={tmp_path / 'in.txt'}", f"output={tmp_path / 'folder'}",
        "columns=[token]",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last == f"structperc-tag: error: [Errno 21] Is a directory: '{tmp_path / 'folder'}'"
    assert sorted(os.listdir(tmp_path)) == ["folder", "in.txt"]  # no temporary file left


# -- Ctrl-C ---------------------------------------------------------------------------------
def _interrupted(setup: str, entry: str, *args: str) -> subprocess.CompletedProcess:
    """Run ``entry`` (a console script's function) with ``args`` after ``setup``, Python that
    arranges a real SIGINT somewhere."""
    # a test run started in the background inherits SIGINT ignored: the child takes Python's own
    code = (
        "import os, signal, sys, time\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
        f"{setup}\nsys.argv[1:] = {list(args)!r}\n{entry}()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
        env=without_full_error(),
    )  # fmt: skip


def assert_interrupted(done: subprocess.CompletedProcess, program: str) -> None:
    """Status 130 and ``PROGRAM: interrupted`` as the last line, after the log at most."""
    assert done.returncode == 130, done.stderr
    assert done.stderr.splitlines()[-1] == f"{program}: interrupted", done.stderr
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr


SIGINT_SELF = "os.kill(os.getpid(), signal.SIGINT); time.sleep(2)"
WHILE_TAGGING = f"""
from structperc.inference.tagger import Tagger
Tagger.tag_documents = lambda self, docs, progress=False: {SIGINT_SELF}
from structperc.predict import main
"""
WHILE_WRITING = f"""
import structperc.io
replace = os.replace
def interrupted(*args):
    {SIGINT_SELF}
    replace(*args)
structperc.io.os.replace = interrupted
from structperc.predict import main
"""
WHILE_IMPORTING = """
class Interrupt:  # Ctrl-C while torch loads, before any of structperc's code runs
    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            raise KeyboardInterrupt
sys.meta_path.insert(0, Interrupt())
from structperc.console import tag as main
"""


@pytest.mark.parametrize("when", ["tagging", "writing"])
def test_ctrl_c_ends_in_one_line_and_leaves_the_output_as_it_was(token_model, tmp_path, when):
    (tmp_path / "in.txt").write_text("John\nlives\n")
    out = tmp_path / "out.txt"
    if when == "writing":
        out.write_text("the previous output\n")
    setup = WHILE_TAGGING if when == "tagging" else WHILE_WRITING
    done = _interrupted(
        setup, "main", f"model={token_model}", f"input={tmp_path / 'in.txt'}", f"output={out}",
        "columns=[token]",
    )  # fmt: skip
    assert_interrupted(done, "structperc-tag")
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == (["in.txt"] if when == "tagging" else ["in.txt", "out.txt"])  # no .tmp
    assert when == "tagging" or out.read_text() == "the previous output\n"


@pytest.mark.parametrize("program", ["tag", "train"])
def test_ctrl_c_while_the_console_script_imports_torch_ends_in_one_line(program):
    setup = WHILE_IMPORTING.replace("tag as main", f"{program} as main")
    done = _interrupted(setup, "main", "model=RUN", "input=in.txt", "output=out.txt")
    assert_interrupted(done, f"structperc-{program}")


def test_ctrl_c_while_training_ends_in_one_line(tmp_path):
    setup = f"""
import structperc.run
structperc.run.main_from_config = lambda *args, **kwargs: {SIGINT_SELF}
from structperc.run import main
"""
    done = _interrupted(setup, "main", "+experiment=conll03_local", f"hydra.run.dir={tmp_path}")
    assert_interrupted(done, "structperc-train")


# -- character offsets ----------------------------------------------------------------------
@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_jsonl_offsets_index_the_decoded_text_with_its_line_ends(
    token_model, synthetic_dir, tmp_path, newline
):
    """With a byte-order mark and CRLF (or old Mac CR) line ends: the offsets index the text
    decoded without the mark, its line ends as in the file (docs/guide/tagging.md)."""
    text = synthetic_text(synthetic_dir, newline)
    path = tmp_path / "in.txt"
    path.write_bytes(codecs.BOM_UTF8 + text.encode())
    out = tmp_path / "out.jsonl"
    done = tag_cli(f"model={token_model}", f"input={path}", f"output={out}", *TEXT)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["source"] for line in lines] == [f"{path}:{n}" for n in (1, 3, 5, 7)]
    entities = [e for line in lines for e in line["entities"]]
    assert entities, "the synthetic model finds entities in synthetic text"
    with open(path, encoding="utf-8-sig", newline="") as f:
        decoded = f.read()
    assert decoded == text
    assert all(decoded[e["start"] : e["end"]] == e["text"] for e in entities)
    assert entities == Tagger.load(token_model).entities(text)
    lf = Tagger.load(token_model).entities(synthetic_text(synthetic_dir))
    assert [(e["text"], e["type"]) for e in entities] == [(e["text"], e["type"]) for e in lf]
