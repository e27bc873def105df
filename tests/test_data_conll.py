"""Reading and writing CoNLL files: documents, IOB2 conversion, errors, round trips."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from structperc.data.conll import (
    ConllFormatError,
    has_docstart,
    read_conll,
    write_conll,
)
from structperc.data.document import Document
from structperc.data.tags import spans

CONLL03 = """\
-DOCSTART- -X- O O

EU NNP I-NP I-ORG
rejects VBZ I-VP O
German JJ I-NP I-MISC
call NN I-NP O
. . O O

Peter NNP I-NP I-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- O O

BRUSSELS NNP I-NP I-LOC
1996-08-22 CD I-NP O

Bonn NNP I-NP I-LOC
Paris NNP B-NP B-LOC
"""

CONLL00 = """\
Confidence NN B-NP
in IN B-PP
the DT B-NP
pound NN I-NP

He PRP B-NP
reckons VBZ B-VP
"""


def put(tmp_path, text: str | bytes, name: str = "data.txt"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def fields(doc: Document):
    return doc.tokens, doc.columns, doc.tags, doc.sentence_starts


# --- documents and sentences -------------------------------------------------------------------


def test_docstart_mode_concatenates_sentences(tmp_path):
    path = put(tmp_path, CONLL03)
    docs = read_conll(path)
    assert len(docs) == 2
    first, second = docs
    assert first.tokens == ["EU", "rejects", "German", "call", ".", "Peter", "Blackburn"]
    assert first.sentence_starts == [0, 5]
    assert first.tags == ["B-ORG", "O", "B-MISC", "O", "O", "B-PER", "I-PER"]
    assert first.columns == {
        "pos": ["NNP", "VBZ", "JJ", "NN", ".", "NNP", "NNP"],
        "chunk": ["B-NP", "B-VP", "B-NP", "I-NP", "O", "B-NP", "I-NP"],  # IOB1 -> IOB2 too
    }
    assert first.source == f"{path}:3"
    assert second.source == f"{path}:14"
    assert second.sentence_starts == [0, 2]
    # B-LOC after I-LOC of the same type stays B; the sentence start becomes B.
    assert second.tags == ["B-LOC", "O", "B-LOC", "B-LOC"]
    assert all(has_docstart(d) for d in docs)


def test_sentence_mode_makes_each_sentence_a_document(tmp_path):
    path = put(tmp_path, CONLL03)
    docs = read_conll(path, documents="sentence")
    assert [d.tokens[0] for d in docs] == ["EU", "Peter", "BRUSSELS", "Bonn"]
    assert all(d.sentence_starts == [0] for d in docs)
    assert [d.source for d in docs] == [f"{path}:{n}" for n in (3, 9, 14, 17)]
    assert not any(has_docstart(d) for d in docs)


def test_sentence_boundary_restarts_entities(tmp_path):
    # The same type on both sides of a sentence break is two entities, in both modes.
    text = "-DOCSTART- -X- O O\n\nA NNP I-NP I-PER\n\nB NNP I-NP I-PER\n"
    for mode in ("docstart", "sentence"):
        docs = read_conll(put(tmp_path, text), documents=mode)
        tags = [t for d in docs for t in d.tags]
        assert tags == ["B-PER", "B-PER"]


def test_conll2000_defaults_to_sentences(tmp_path):
    docs = read_conll(put(tmp_path, CONLL00), layout="conll2000")
    assert len(docs) == 2
    assert docs[0].tags == ["B-NP", "B-PP", "B-NP", "I-NP"]
    assert docs[0].columns == {"pos": ["NN", "IN", "DT", "NN"]}
    one = read_conll(put(tmp_path, CONLL00), layout="conll2000", documents="docstart")
    assert len(one) == 1 and one[0].sentence_starts == [0, 4]


def test_max_docs(tmp_path):
    path = put(tmp_path, CONLL03)
    assert [len(d) for d in read_conll(path, max_docs=1)] == [7]
    assert len(read_conll(path, max_docs=5)) == 2
    assert len(read_conll(path, documents="sentence", max_docs=3)) == 3
    assert read_conll(path, max_docs=0) == []


def test_unlabeled_input(tmp_path):
    text = "-DOCSTART- -X- -X-\n\nEU NNP I-NP\nrejects VBZ I-VP\n"
    (doc,) = read_conll(put(tmp_path, text))
    assert doc.tags is None
    assert doc.columns == {"pos": ["NNP", "VBZ"], "chunk": ["B-NP", "B-VP"]}
    (doc,) = read_conll(put(tmp_path, "He PRP\nsaid VBD\n"), layout="conll2000")
    assert doc.tags is None and doc.columns == {"pos": ["PRP", "VBD"]}


def test_lenient_whitespace_crlf_bom_and_missing_final_newline(tmp_path):
    text = "\ufeff-DOCSTART- -X- O O\r\n\r\nEU\tNNP  I-NP I-ORG\r\n \r\nPeter NNP I-NP I-PER"
    (doc,) = read_conll(put(tmp_path, text))
    assert doc.tokens == ["EU", "Peter"]
    assert doc.tags == ["B-ORG", "B-PER"]
    assert doc.sentence_starts == [0, 1]


def test_docstart_without_blank_line_ends_the_sentence(tmp_path):
    text = "A NNP I-NP I-PER\n-DOCSTART- -X- O O\nB NNP I-NP I-PER\n"
    assert [d.tokens for d in read_conll(put(tmp_path, text))] == [["A"], ["B"]]
    assert [d.tokens for d in read_conll(put(tmp_path, text), documents="sentence")] == [
        ["A"],
        ["B"],
    ]


def test_bad_arguments(tmp_path):
    path = put(tmp_path, CONLL03)
    with pytest.raises(ValueError, match="layout"):
        read_conll(path, layout="conll2002")
    with pytest.raises(ValueError, match="documents"):
        read_conll(path, documents="paragraph")
    with pytest.raises(ValueError, match="max_docs"):
        read_conll(path, max_docs=-1)
    with pytest.raises(FileNotFoundError):
        read_conll(tmp_path / "missing.txt")


# --- errors ------------------------------------------------------------------------------------


def expect_error(path, line: int, *needles: str, **kwargs) -> ConllFormatError:
    with pytest.raises(ConllFormatError) as info:
        read_conll(path, **kwargs)
    err = info.value
    message = str(err)
    assert message.startswith(f"{path}:{line}:"), message
    assert path.name in message
    for needle in needles:
        assert needle in message, message
    # No chained traceback from inside the reader: raised directly or "from None".
    assert err.__cause__ is None
    assert err.__context__ is None or err.__suppress_context__
    assert isinstance(err, ValueError)
    return err


def test_error_wrong_column_count_on_first_line(tmp_path):
    path = put(tmp_path, "-DOCSTART- -X- O O\n\nEU NNP I-NP I-ORG extra\n", "five.txt")
    expect_error(path, 3, "expected 4 columns (token pos chunk ner)", "3 for unlabeled", "got 5")


def test_error_wrong_column_count_later(tmp_path):
    text = "EU NNP I-NP I-ORG\nrejects VBZ I-VP O\n\nGerman JJ I-MISC\n"
    path = put(tmp_path, text, "short.txt")
    expect_error(path, 4, "expected 4 columns like line 1", "got 3", "German JJ I-MISC")


def test_error_wrong_column_count_conll2000(tmp_path):
    path = put(tmp_path, "Confidence\n", "one.txt")
    expect_error(path, 1, "expected 3 columns (token pos chunk)", layout="conll2000")


def test_error_unknown_tag(tmp_path):
    text = "-DOCSTART- -X- O O\n\nEU NNP I-NP I-ORG\nrejects VBZ I-VP E-PER\n"
    path = put(tmp_path, text, "iobes.txt")
    expect_error(path, 4, "column 4 (ner)", "'E-PER'", "expected O, B-TYPE or I-TYPE")


def test_error_unknown_chunk_tag(tmp_path):
    path = put(tmp_path, "EU NNP NP I-ORG\n", "chunk.txt")
    expect_error(path, 1, "column 3 (chunk)", "'NP'", "expected O, B-TYPE or I-TYPE")


def test_error_tag_without_type(tmp_path):
    path = put(tmp_path, "Confidence NN B-NP\nin IN B-\n", "notype.txt")
    expect_error(path, 2, "'B-'", "no type", "expected B-TYPE or I-TYPE", layout="conll2000")


@pytest.mark.parametrize(
    ("text", "line"),
    [("", 1), ("\n\n", 2), ("-DOCSTART- -X- O O\n\n-DOCSTART- -X- O O\n", 3)],
)
def test_error_empty_file(tmp_path, text, line):
    path = put(tmp_path, text, "empty.txt")
    expect_error(path, line, "expected at least one token line", "empty")


def test_error_not_utf8(tmp_path):
    data = b"EU NNP I-NP I-ORG\n\nM\xfcller NNP I-NP I-PER\n"
    path = put(tmp_path, data, "latin1.txt")
    expect_error(path, 3, "expected UTF-8", "0xfc")


# --- writing -----------------------------------------------------------------------------------


def test_round_trip_without_predictions(tmp_path):
    docs = read_conll(put(tmp_path, CONLL03))
    out = tmp_path / "out" / "copy.txt"
    write_conll(out, docs)
    again = read_conll(out)
    assert [fields(d) for d in again] == [fields(d) for d in docs]
    assert out.read_text().startswith("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\n")


def test_write_predictions_docstart(tmp_path):
    docs = read_conll(put(tmp_path, CONLL03))
    predictions = [["O"] * len(d) for d in docs]
    out = tmp_path / "pred.txt"
    write_conll(out, docs, predictions)
    text = out.read_text()
    blocks = text.split("\n\n")
    assert blocks[0] == "-DOCSTART- -X- -X- O O"
    assert blocks[1].splitlines()[0] == "EU NNP B-NP B-ORG O"
    assert blocks[2] == "Peter NNP B-NP B-PER O\nBlackburn NNP I-NP I-PER O"
    assert text.count("-DOCSTART-") == 2
    assert text.endswith("Paris NNP B-NP B-LOC O\n\n")
    # One column count throughout, as conlleval wants.
    assert {len(line.split()) for line in text.splitlines() if line} == {5}


def test_write_sentence_documents_has_no_docstart(tmp_path):
    docs = read_conll(put(tmp_path, CONLL03), documents="sentence")
    out = tmp_path / "pred.txt"
    write_conll(out, docs, [d.tags for d in docs])
    text = out.read_text()
    assert "-DOCSTART-" not in text
    assert text.split("\n\n")[1] == "Peter NNP B-NP B-PER B-PER\nBlackburn NNP I-NP I-PER I-PER"
    write_conll(out, docs, [d.tags for d in docs], docstart=True)
    assert out.read_text().count("-DOCSTART- -X- -X- O O\n\n") == 4


def test_unlabeled_round_trip_through_predictions(tmp_path):
    docs = read_conll(put(tmp_path, "He PRP\nsaid VBD\n\nNo DT\n"), layout="conll2000")
    out = tmp_path / "tagged.txt"
    write_conll(out, docs, [["B-NP", "B-VP"], ["B-NP"]])
    again = read_conll(out, layout="conll2000")
    assert [d.tags for d in again] == [["B-NP", "B-VP"], ["B-NP"]]
    assert [d.columns for d in again] == [d.columns for d in docs]


def test_write_is_atomic_and_checks_lengths(tmp_path):
    docs = read_conll(put(tmp_path, CONLL03))
    out = tmp_path / "out.txt"
    out.write_text("old\n")
    with pytest.raises(ValueError, match="prediction has 1 entries, expected 7"):
        write_conll(out, docs, [["O"], ["O"] * len(docs[1])])
    with pytest.raises(ValueError, match="one tag list per document"):
        write_conll(out, docs, [["O"] * len(docs[0])])
    assert out.read_text() == "old\n"
    write_conll(out, docs, [["O"] * len(d) for d in docs])
    assert out.read_text().startswith("-DOCSTART-")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.txt", "out.txt"]  # no temp files


# --- the real files ----------------------------------------------------------------------------


@pytest.mark.realdata
def test_real_conll2003_counts_and_speed(data_dir):
    expected = {"train": (946, 203_621), "dev": (216, 51_362), "test": (231, 46_435)}
    for split, (n_docs, n_tokens) in expected.items():
        start = time.process_time()
        docs = read_conll(data_dir / "conll2003" / f"{split}.txt")
        elapsed = time.process_time() - start
        assert (len(docs), sum(map(len, docs))) == (n_docs, n_tokens), split
        if split == "train":
            assert elapsed < 2.0, f"reading train took {elapsed:.2f} s of CPU"
            kinds = Counter(kind for d in docs for *_, kind in spans(d.tags))
            assert kinds == {"LOC": 7_140, "MISC": 3_438, "ORG": 6_321, "PER": 6_600}
            assert sum(len(d.sentence_starts) for d in docs) == 14_041
            assert all(  # IOB2: an I-X only continues an X
                not t.startswith("I-") or t[2:] == p[2:]
                for d in docs
                for p, t in zip(["O", *d.tags], d.tags, strict=False)
            )


@pytest.mark.realdata
def test_real_conll2000_counts(data_dir):
    for split, (n_sentences, n_tokens, n_chunks) in {
        "train": (8_936, 211_727, 106_978),
        "test": (2_012, 47_377, 23_852),
    }.items():
        docs = read_conll(data_dir / "conll2000" / f"{split}.txt", layout="conll2000")
        assert len(docs) == n_sentences
        assert sum(map(len, docs)) == n_tokens
        assert sum(len(spans(d.tags)) for d in docs) == n_chunks


def test_sentence_spans_skip_empty_sentences():
    doc = Document(tokens=list("abcde"), sentence_starts=[0, 2, 2, 4])
    assert doc.sentence_spans() == [(0, 2), (2, 4), (4, 5)]
    assert Document(tokens=[]).sentence_spans() == []
