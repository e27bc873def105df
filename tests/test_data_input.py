"""Reading any tokenized input: column maps, IO/IOB1/IOB2 tags, one-column files, and a fuzz
test that any bytes and any column map give documents or the reader's own format error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structperc.data.conll import COLUMN_NAMES, ConllFormatError, read_conll


def write(tmp_path: Path, text: str | bytes, name: str = "in.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_one_column_token_files_are_unlabeled(tmp_path):
    path = write(tmp_path, "John\nlives\nin\nParis\n\nHe\nsmiles\n")
    docs = read_conll(path, columns=["token"], documents="sentence")
    assert [d.tokens for d in docs] == [["John", "lives", "in", "Paris"], ["He", "smiles"]]
    assert all(d.tags is None and d.columns == {} for d in docs)


@pytest.mark.parametrize(
    ("scheme", "tags"),
    [
        ("io", "PER PER O LOC"),
        ("io", "I-PER I-PER O I-LOC"),
        ("iob1", "I-PER I-PER O I-LOC"),
        ("iob2", "B-PER I-PER O B-LOC"),
    ],
)
def test_token_and_ner_columns_in_any_scheme_read_as_iob2(tmp_path, scheme, tags):
    words = "John Smith in Paris".split()
    text = "\n".join(f"{w} {t}" for w, t in zip(words, tags.split(), strict=True)) + "\n"
    (doc,) = read_conll(write(tmp_path, text), columns=["token", "ner"], scheme=scheme)
    assert doc.tags == ["B-PER", "I-PER", "O", "B-LOC"]


def test_skipped_columns_may_hold_anything(tmp_path):
    text = "John 0 - B-PER\nSmith 5 - I-PER\nsmiles 11 - O\n"
    (doc,) = read_conll(write(tmp_path, text), columns=["token", "_", "_", "ner"])
    assert doc.tokens == ["John", "Smith", "smiles"] and doc.columns == {}
    assert doc.tags == ["B-PER", "I-PER", "O"]


def test_a_column_map_fixes_the_width(tmp_path):
    path = write(tmp_path, "John B-PER\nSmith\n")
    with pytest.raises(ConllFormatError, match=r"in\.txt:1: expected 1 columns \(token\)"):
        read_conll(path, columns=["token"])
    with pytest.raises(ConllFormatError, match=r"in\.txt:2: expected 2 columns"):
        read_conll(path, columns=["token", "ner"])


def test_bad_column_maps_and_schemes_are_clear_errors(tmp_path):
    path = write(tmp_path, "John\n")
    for columns in (["word"], ["_", "ner"], ["token", "token"]):
        with pytest.raises(ValueError, match="expected one 'token'"):
            read_conll(path, columns=columns)
    with pytest.raises(ValueError, match="tag scheme must be one of"):
        read_conll(path, columns=["token"], scheme="bieo")


def test_only_ascii_spaces_and_tabs_separate_columns(tmp_path):
    """A no-break space (or any other Unicode space) inside a token is part of it."""
    text = "New\xa0York B-LOC\nis\tO\nbig\u2009city O\n"
    (doc,) = read_conll(write(tmp_path, text), columns=["token", "ner"])
    assert doc.tokens == ["New\xa0York", "is", "big\u2009city"]
    assert doc.tags == ["B-LOC", "O", "O"]


def test_the_fast_splitter_is_taken_only_where_it_splits_the_same():
    """``str.split`` serves a text without other whitespace than the space, tab and line end:
    the characters it also splits on are exactly ``_OTHER_SPACE``'s (and the CR, a line end)."""
    from structperc.data.conll import _OTHER_SPACE, split_columns

    splits = {chr(i) for i in range(0x110000) if chr(i).isspace()} - set(" \t\n\r")
    assert {c for c in map(chr, range(0x110000)) if _OTHER_SPACE.fullmatch(c)} == splits
    assert split_columns("a b\tc\n") is str.split
    assert split_columns("a\xa0b c")("a\xa0b c") == ["a\xa0b", "c"]


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_crlf_and_old_mac_line_ends_read_as_lf(tmp_path, newline):
    text = "-DOCSTART- -X- -X- O\n\nJohn NNP B-NP B-PER\nlives VBZ B-VP O\n\nParis NNP B-NP B-LOC\n"
    expected = read_conll(write(tmp_path, text, "lf.txt"))
    docs = read_conll(write(tmp_path, text.replace("\n", newline), "other.txt"))
    assert [(d.tokens, d.columns, d.tags, d.sentence_starts) for d in docs] == [
        (d.tokens, d.columns, d.tags, d.sentence_starts) for d in expected
    ]
    bad = write(tmp_path, text.replace("\n", newline) + "Rome NNP" + newline, "bad.txt")
    with pytest.raises(ConllFormatError, match=r"bad\.txt:7: expected 4 columns like line 3"):
        read_conll(bad)


@pytest.mark.parametrize(
    ("line", "column", "char"),
    [
        ("Paris NNP B-NP B-LOC\x00", 4, "U+0000"),
        ("Pa\x07ris NNP B-NP B-LOC", 1, "U+0007"),
        ("Paris NNP \x1fB-NP B-LOC", 3, "U+001F"),
        ("Paris NNP B-NP\x85 B-LOC", 3, "U+0085"),
    ],
)
def test_a_control_character_in_a_column_is_a_format_error(tmp_path, line, column, char):
    path = write(tmp_path, f"John NNP B-NP B-PER\n{line}\n")
    with pytest.raises(
        ConllFormatError, match=rf"in\.txt:2: column {column}: control character {re.escape(char)}"
    ):
        read_conll(path)


FUZZ_TEXT = st.lists(
    st.sampled_from(
        [
            "John",
            "B-PER",
            "I-LOC",
            "O",
            "PER",
            "-DOCSTART-",
            "-X-",
            "NNP",
            "\n",
            "\n\n",
            " ",
            "\t",
            "\xe9",
            "\x00",
            "\r",
            "\xa0",
        ]
    ),
    max_size=40,
).map("".join)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.one_of(st.binary(max_size=200), FUZZ_TEXT.map(str.encode)),
    columns=st.one_of(st.none(), st.lists(st.sampled_from(COLUMN_NAMES), min_size=1, max_size=5)),
    scheme=st.sampled_from([None, "iob1", "iob2", "io"]),
    documents=st.sampled_from([None, "docstart", "sentence"]),
)
def test_any_bytes_give_documents_or_a_format_error(tmp_path, data, columns, scheme, documents):
    path = write(tmp_path, data, "fuzz.txt")
    try:
        docs = read_conll(path, columns=columns, scheme=scheme, documents=documents)
    except ConllFormatError as err:
        assert str(err).startswith(f"{path}:"), err  # names the file and line
        return
    except ValueError as err:  # an invalid column map, before any reading
        assert columns is not None and "expected one 'token'" in str(err)
        return
    for doc in docs:
        assert doc.tokens and all(len(c) == len(doc) for c in doc.columns.values())
        assert doc.tags is None or len(doc.tags) == len(doc)
