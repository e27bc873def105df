"""Tagged output is read back by the reader that wrote it.

* The writers: a decoder without tag-scheme constraints may put ``I-X`` at a chunk's start
  (after ``O``, after another type, at a sentence start); ``structperc-tag`` wrote such
  sequences into output that claims IOB2 (``Brown B-PER / Forman I-ORG / Inc I-ORG`` on raw
  Reuters text), and ``data=columns`` with ``data.scheme=auto`` then refused its own output as
  IOB1.  Every writer now writes each sentence as the scheme writes it (the chunks conlleval
  reads: ``I-X`` that begins one is ``B-X``), and the jsonl entities are those same chunks.
* ``data.scheme=auto``: one annotation slip (CoNLL-2002 Spanish opens one of its sentences with
  ``I-LOC``) made a corpus of thousands of IOB2 chunks undecidable.  Overwhelming evidence for
  one scheme now wins, with one warning naming the count and the first stray.
"""

from __future__ import annotations

import json
import logging

import pytest

from structperc.data.column_corpus import ColumnCorpus, ColumnFormat, in_scheme
from structperc.data.conll import read_conll
from structperc.data.document import Document
from structperc.data.schemes import SchemeError, chunks, detect_scheme, to_iob2
from structperc.data.tags import spans, valid_iob2

DOC = Document(
    tokens=["Brown", "Forman", "Inc", "said", "so", ".", "Paris", "rose"],
    sentence_starts=[0, 6],
)
DECODED = ["B-PER", "I-ORG", "I-ORG", "O", "I-LOC", "O", "I-LOC", "I-MISC"]  # invalid IOB2
WRITTEN = ["B-PER", "B-ORG", "I-ORG", "O", "B-LOC", "O", "B-LOC", "B-MISC"]


def test_valid_iob2_is_conllevals_reading_written_in_iob2():
    assert valid_iob2(DECODED, DOC.sentence_spans()) == WRITTEN
    assert valid_iob2(WRITTEN, DOC.sentence_spans()) == WRITTEN  # valid input unchanged
    # a chunk that runs over a sentence end is cut there, as conlleval reads it
    assert valid_iob2(["B-X", "I-X", "I-X"], [(0, 2), (2, 3)]) == ["B-X", "I-X", "B-X"]
    assert valid_iob2(["NN", "I-X"], [(0, 2)]) == ["NN", "I-X"]  # plain labels: as they are


@pytest.mark.parametrize("scheme", ["iob2", "iob1", "iobes", "bilou", "ioe2"])
def test_column_writers_write_valid_sequences_their_reader_takes(tmp_path, scheme):
    fmt = ColumnFormat(columns=("token", "ner"), scheme=scheme, documents="sentence")
    path = tmp_path / f"out.{scheme}"
    fmt.write(path, [Document(tokens=DOC.tokens, sentence_starts=DOC.sentence_starts)], [DECODED])
    back = fmt.read(path)  # reads the scheme strictly and converts to IOB2
    assert [t for d in back for t in d.tags] == WRITTEN
    # and data.scheme=auto tells the scheme from the written file (IOB1 and IOB2 read alike)
    corpus = ColumnCorpus(ColumnFormat(columns=("token", "ner"), documents="sentence"), str(path))
    docs, told = corpus.load(None)
    assert told.scheme in ({scheme, "iob2"} if scheme == "iob1" else {scheme})
    assert in_scheme(DOC, DECODED, scheme) == in_scheme(DOC, WRITTEN, scheme)


def test_a_runs_prediction_file_holds_valid_iob2(tmp_path):
    from structperc.tasks.labeler import write_predictions

    path = tmp_path / "pred.txt"
    gold = Document(tokens=DOC.tokens, tags=WRITTEN, sentence_starts=DOC.sentence_starts)
    write_predictions(path, [gold], [DECODED])
    lines = [ln.split() for ln in path.read_text().splitlines() if ln.strip()]
    assert [row[-1] for row in lines] == WRITTEN


def test_structperc_tag_output_reads_back_with_scheme_auto(
    token_model, tmp_path, caplog, monkeypatch
):
    """The tagger's predictions, forced invalid at a chunk's start, are written valid in conll
    and as the same chunks in jsonl; the conll output trains with data.scheme=auto."""
    from structperc.inference.tagger import Tagger
    from structperc.predict import tag_file

    tagger = Tagger.load(token_model, compiled=False)  # (its structure's predict is replaced)
    raw = tagger.structure.predict

    def invalid_starts(data, *args, **kwargs):  # every B-X decoded as I-X: what no constraint
        paths = raw(data, *args, **kwargs)  # forbids (an I-X after O or another type)
        labels = tagger.labels
        swap = {labels.index(t): labels.index("I-" + t[2:]) for t in labels if t[:2] == "B-"}
        return [[swap.get(i, i) for i in p] for p in paths]

    text = tmp_path / "in.txt"
    text.write_text("John Smith lives in Paris .\nMary Jones works for Acme Corp in London .\n")
    outputs = {}
    for fmt in ("conll", "jsonl"):
        out = tmp_path / f"out.{fmt}"
        tagger.structure.predict = invalid_starts
        monkeypatch.setattr(Tagger, "load", classmethod(lambda cls, *a, **k: tagger))
        tag_file(token_model, text, out, input_format="text", output_format=fmt)
        outputs[fmt] = out
    rows = [ln.split() for ln in outputs["conll"].read_text().splitlines() if ln.strip()]
    tags = [r[-1] for r in rows]
    assert any(t.startswith("B-") for t in tags)  # there were chunks, and they begin with B-
    prev = "O"
    for t in tags:  # valid IOB2: no I-X after O or another type
        assert not (t.startswith("I-") and prev[2:] != t[2:]), tags
        prev = t
    docs = read_conll(outputs["conll"], columns=["token", "ner"], scheme="iob2")
    want = [
        " ".join(d.tokens[s:e]) for d in docs for s, e, _ in spans(d.tags)
    ]  # the chunks of the conll file ...
    got = [
        e["text"].replace("\n", " ")
        for line in outputs["jsonl"].read_text().splitlines()
        for e in json.loads(line)["entities"]
    ]
    assert got == want  # ... are the jsonl's entities
    with caplog.at_level(logging.WARNING):
        corpus = ColumnCorpus(ColumnFormat(columns=("token", "ner")), str(outputs["conll"]))
        _, told = corpus.load(None)
    assert told.scheme == "iob2" and "data.scheme=auto" not in caplog.text


# -- data.scheme=auto ---------------------------------------------------------------------------


def where(j: int) -> str:
    return f"esp.train:{j + 1}"


def iob2_corpus(n: int) -> list[list[str]]:
    return [["B-PER", "I-PER", "O", "B-LOC", "O", "B-ORG"] for _ in range(n)]


def test_a_stray_among_thousands_of_chunks_is_read_as_conlleval_reads_it(caplog):
    sentences = iob2_corpus(600) + [["I-LOC", "O", "B-PER"]]  # one slip: 1,801 against 1
    with caplog.at_level(logging.WARNING):
        assert detect_scheme([(s, where) for s in sentences]) == "iob2"
    assert caplog.text.count("\n") == 1  # one line
    assert "1,801 labels read as IOB2; 1 as IOB1" in caplog.text
    assert "esp.train:1: 'I-LOC' begins a chunk" in caplog.text
    assert chunks(["I-LOC", "O", "B-PER"], "iob2") == [(0, 1, "LOC"), (2, 3, "PER")]
    # the same the other way: an IOB1 corpus with one B- after no chunk of its type
    iob1 = [["I-PER", "I-PER", "O", "I-LOC", "B-LOC"] for _ in range(300)] + [["O", "B-ORG"]]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert detect_scheme([(s, where) for s in iob1]) == "iob1"
    assert "600 labels read as IOB1; 1 as IOB2" in caplog.text


def test_comparable_evidence_for_two_schemes_stays_an_error():
    mixed = iob2_corpus(30) + [["I-LOC", "O", "I-PER"]] * 20  # 90 against 40
    with pytest.raises(SchemeError, match=r"40 labels read as IOB1 .*90 as IOB2"):
        detect_scheme([(s, where) for s in mixed])


@pytest.mark.realdata
def test_conll2003_in_iob2_with_one_slip_reads_with_scheme_auto(data_dir, tmp_path, caplog):
    """CoNLL-2003's training file written in IOB2, one sentence made to open with the I-LOC
    of a slip (after a sentence ending in B-LOC on a period, as in CoNLL-2002 Spanish)."""
    docs = read_conll(data_dir / "conll2003" / "train.txt", "conll2003")[:300]
    slipped = False
    for doc in docs:
        spans_ = doc.sentence_spans()
        for (_, b), (c, _) in zip(spans_, spans_[1:], strict=False):
            if not slipped and doc.tags[c] == "B-LOC" and doc.tokens[b - 1] == ".":
                doc.tags[c] = "I-LOC"
                slipped = True
    assert slipped
    path = tmp_path / "train.iob2"
    lines = []
    for doc in docs:
        for a, b in doc.sentence_spans():
            lines += [f"{w} {t}" for w, t in zip(doc.tokens[a:b], doc.tags[a:b], strict=True)]
            lines.append("")
    path.write_text("\n".join(lines) + "\n")
    with caplog.at_level(logging.WARNING):
        corpus = ColumnCorpus(
            ColumnFormat(columns=("token", "ner"), documents="sentence"), str(path)
        )
        read, told = corpus.load(None)
    assert told.scheme == "iob2"
    assert "1 as IOB1, read as conlleval reads it" in caplog.text
    assert sum(len(d) for d in read["train"]) + sum(len(d) for d in read.get("dev", [])) == sum(
        len(d) for d in docs
    )
    assert to_iob2(["I-LOC", "O"], "iob2") == ["B-LOC", "O"]
