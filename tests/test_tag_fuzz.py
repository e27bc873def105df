"""``structperc-tag`` (in-process) and ``Tagger.entities`` driven with random texts, column files,
settings and damaged model folders: each run ends in its output, or in the documented failure:
status 2 and one line ``structperc-tag: error: ...`` (after the usage line, for a setting that is
missing or not one), never a traceback or another status."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hydra_runs import tag_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structperc.inference.tagger import Tagger

WORDS = ["John", "Smith", "lives", "in", "Paris", ".", "EU", "said", "1996", "Acme", "Corp", ","]
ODD = ["\u00a0", "\u200b", "\ufeff", "\x00", "\r", "\r\n", "\t", "é", "日本", "\U0001f600", "-"]
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-ORG", "B-MISC", "I-XX", "X-PER", "LOC\x00", ""]
FUZZ = settings(
    max_examples=8,
    deadline=None,
    derandomize=True,  # the same examples every run: a test, not a search
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

texts = st.lists(st.sampled_from(WORDS + ODD + [" ", "\n", "\n\n"]), max_size=40).map("".join)
column_lines = st.lists(
    st.lists(st.sampled_from(WORDS + TAGS + ["NNP", "B-NP", "-DOCSTART-"]), max_size=5).map(
        " ".join
    ),
    max_size=20,
)
column_files = st.tuples(column_lines, st.sampled_from(["\n", "\r\n", "\r"])).map(
    lambda t: (t[1].join(t[0]) + t[1]).encode()
) | st.binary(max_size=60)
# settings a user may give, good and bad values of each (none: the default)
SETTINGS = {
    "input_format": ["conll", "text", "xml", "3"],
    "output_format": ["conll", "jsonl", "csv"],
    "columns": ["[token]", "[token,ner]", "[token,_,_,ner]", "[ner]", "[token,token]", "5", "[1]"],
    "scheme": ["iob1", "iob2", "io", "bio", "null"],
    "documents": ["docstart", "sentence", "pages"],
    "layout": ["conll2003", "conll2000", "x"],
    "batch_size": ["1", "16", "0", "-2", "x", "true"],
    "n_test": ["null", "3", "0", "x"],
    "constraints": ["none", "iob2", "iob3"],
    "evaluate": ["true", "false", "3"],
    "device": ["cpu", "gpu9"],
    "tagger": ["/nowhere"],
    "bogus": ["1"],
}
choices = st.dictionaries(
    st.sampled_from(sorted(SETTINGS)), st.integers(min_value=0, max_value=6), max_size=3
).map(lambda d: [f"{k}={SETTINGS[k][i % len(SETTINGS[k])]}" for k, i in sorted(d.items())])


def damage(model: Path, folder: Path, how: int, seed: int) -> Path:
    """A copy of the model folder ``model`` in ``folder``, damaged in the way ``how`` says."""
    shutil.copytree(model, folder, dirs_exist_ok=True)
    blob, meta = folder / "model.safetensors", folder / "model.json"
    data = blob.read_bytes()
    if how == 1:  # truncated
        blob.write_bytes(data[: seed % len(data)])
    elif how == 2:  # a flipped byte
        i = seed % len(data)
        blob.write_bytes(data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1 :])
    elif how == 3:
        meta.unlink()
    elif how == 4:  # valid JSON of another shape
        shapes = [[], "model", 3, None, {}, {"format": "structperc.chain/2"}]
        meta.write_text(json.dumps(shapes[seed % len(shapes)]))
    elif how == 5:  # a key of model.json dropped or retyped
        content = json.loads(meta.read_text())
        key = sorted(content)[seed % len(content)]
        if seed % 2:
            del content[key]
        else:
            content[key] = [seed]
        meta.write_text(json.dumps(content))
    elif how == 6:  # not JSON
        meta.write_bytes(meta.read_bytes()[: seed % 50])
    return folder


def assert_output_or_one_line(done, output: Path) -> None:
    """Status 0 and the output written, or status 2 and the documented error line(s)."""
    if done.returncode == 0:
        assert output.is_file(), done.stderr
        return
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr, done.stderr
    assert lines[-1].startswith("structperc-tag: error: "), done.stderr
    if len(lines) > 1:  # the usage line first, and nothing else
        assert len(lines) == 2 and lines[0].startswith("usage: structperc-tag "), done.stderr
    assert not output.exists(), "a failure leaves no output"


@FUZZ
@given(text=texts, args=choices)
def test_text_files_and_settings(token_model, tmp_path_factory, text, args):
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "in.txt").write_text(text, encoding="utf-8", newline="")
    out = folder / "out"
    done = tag_cli(
        f"model={token_model}", f"input={folder / 'in.txt'}", f"output={out}",
        "input_format=text", "output_format=jsonl", *args,
    )  # fmt: skip
    assert_output_or_one_line(done, out)


@FUZZ
@given(data=column_files, args=choices)
def test_column_files_and_settings(token_model, tmp_path_factory, data, args):
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "in.txt").write_bytes(data)
    out = folder / "out"
    done = tag_cli(f"model={token_model}", f"input={folder / 'in.txt'}", f"output={out}", *args)
    assert_output_or_one_line(done, out)


@FUZZ
@given(how=st.integers(min_value=0, max_value=6), seed=st.integers(0, 10**6), text=texts)
def test_damaged_model_folders(token_model, tmp_path_factory, how, seed, text):
    folder = tmp_path_factory.mktemp("fuzz")
    model = damage(token_model, folder / "model", how, seed)
    (folder / "in.txt").write_text(text, encoding="utf-8")
    out = folder / "out"
    done = tag_cli(
        f"model={model}", f"input={folder / 'in.txt'}", f"output={out}",
        "input_format=text", "output_format=jsonl",
    )  # fmt: skip
    assert_output_or_one_line(done, out)


@pytest.fixture(scope="module")
def tagger(token_model) -> Tagger:
    return Tagger.load(token_model)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(text=texts | st.text(max_size=60))
def test_entities_of_any_text_index_the_text(tagger, text):
    for e in tagger.entities(text):
        assert text[e["start"] : e["end"]] == e["text"] and e["text"].strip()
        assert e["type"] in ("PER", "LOC", "ORG", "MISC")
