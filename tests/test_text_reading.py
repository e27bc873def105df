"""Plain text as the tagger reads it: syntok's tokens and sentences without syntok's per-token
Python (``data/tokenization.py``, ``data/sentences.py``), paragraphs streamed in pieces
(``data.text.text_pieces``), and the output of a stream written piece by piece."""

from __future__ import annotations

import json

import pytest
import syntok.segmenter as segmenter

from structperc.data.sentences import sentence_starts
from structperc.data.text import read_text, text_pieces
from structperc.data.tokenization import LONE_CR, ChunkTokenizer, paragraphs
from structperc.inference.formats import JsonlEntities, text_batches

TEXTS = [
    "Peter Blackburn met officials in Brussels. He said (in London) that the U.S. and E.U. "
    "agreed. Dr. Smith, No. 5, arrived on Jan. 3. Prices rose 3.5 pct to $1,750.",
    'He said "it is over." Then he left!  What? (See page 3.) [Reuters] Markets fell ...',
    "A. B. Jones won. I. The first. II. The second; and so on: done. e.g. this one. ok.",
    "Well-known firms don't say it's IBM's. They're U.K.-based. Mr. O'Neil paid 1/2 of it.",
    "(Bracketed sentence one.) Next one starts here. [ META ] [ Firefox ] Bookmarks fail.",
    "Tab\tseparated\u00a0words and a zero\u200bwidth space. Ünïcödé Straße. «Quoted» text.",
    "Line one\r\nline two\rline three\n\n\nNew paragraph. Ends without a stop",
]


def syntok_paragraphs(text: str) -> list[tuple[list[str], list[int], list[int]]]:
    """(tokens, their offsets, the sentence starts) of each paragraph, by syntok itself."""
    out = []
    for paragraph in segmenter.analyze(LONE_CR.sub("\n", text)):
        tokens, offsets, starts = [], [], []
        for sentence in paragraph:
            values = [t for t in sentence if t.value]
            if not values:
                continue
            starts.append(len(tokens))
            tokens += [t.value for t in values]
            offsets += [t.offset for t in values]
        if tokens:
            out.append((tokens, offsets, starts))
    return out


@pytest.mark.parametrize("text", TEXTS)
def test_tokens_and_sentences_are_syntoks(text):
    tokenizer = ChunkTokenizer()
    got = []
    for offset, paragraph in paragraphs(text):
        tokens = tokenizer.tokenize(paragraph, offset)
        if len(tokens):
            starts = sentence_starts(tokens.values, tokens.starts, tokens.spaced)
            got.append((tokens.values, tokens.starts, starts))
    assert got == syntok_paragraphs(text)


def test_control_characters_separate_tokens_as_whitespace_does(tmp_path):
    """Mis-decoded text ("Ã\x82Â", as in the Brown corpus's) holds C1 controls, which syntok
    keeps inside tokens and a CoNLL reader refuses: no token holds one, offsets stay the text's,
    and the tokens written as CoNLL read back."""
    from structperc.data.conll import read_conll, write_conll

    text = "Caf\u00c3\x82\u00c2 au lait\x00 in Paris\x7f.\n\nA\x1bB c\x9fd"
    docs = read_text(text)
    tokens = [t for d in docs for t in d.document.tokens]
    controls = {chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)]}
    assert not [t for t in tokens if controls & set(t)]
    assert tokens[-9:] == ["au", "lait", "in", "Paris", ".", "A", "B", "c", "d"]
    for d in docs:
        assert [text[s:e] for s, e in d.offsets] == d.document.tokens
    path = tmp_path / "out.txt"
    write_conll(path, [d.document for d in docs], [["O"] * len(d.document) for d in docs])
    back = read_conll(path, columns=["token", "ner"], documents="sentence")
    assert [t for d in back for t in d.tokens] == tokens


def test_a_chunk_is_tokenized_once():
    tokenizer = ChunkTokenizer()
    calls = []
    split = tokenizer._split
    tokenizer._split = lambda chunk: calls.append(chunk) or split(chunk)
    tokenizer.tokenize("(Paris) (Paris) Paris Paris.")
    assert calls == ["(Paris)", "Paris", "Paris."]


def test_read_text_keeps_offsets_and_lines():
    text = "\ufeffLine one\r\nline two\n\n  \nThird, here."
    docs = read_text(text)
    assert [d.document.source for d in docs] == ["<text>:1", "<text>:5"]
    for d in docs:
        for token, (s, e) in zip(d.document.tokens, d.offsets, strict=True):
            assert text[s:e] == token


def test_paragraphs_stream_in_pieces_cut_at_whitespace():
    lines = ["alpha beta gamma delta\n", "epsilon zeta\n", "\n", "  \n", "eta theta iota\n"]
    pieces = list(text_pieces(lines, piece_chars=12))
    text = "".join(lines)
    assert all(text[p.offset : p.offset + len(p.text)] == p.text for p in pieces)
    assert all(len(p.text) <= 12 for p in pieces)
    assert [p.opens for p in pieces] == [True, False, False, False, True, False]
    assert [p.closes for p in pieces] == [False, False, False, True, False, True]
    assert [p.line for p in pieces] == [1, 1, 2, 2, 5, 5]
    glued = "".join(p.text for p in pieces[:4])
    assert glued.split() == "alpha beta gamma delta epsilon zeta".split()


def test_text_batches_are_read_texts_tokens():
    """The stream's documents, tokens, offsets and sentences are ``read_text``'s."""
    text = "\n\n".join(TEXTS[:5])
    batches = list(text_batches(iter(text.splitlines(keepends=True)), tokens=30))
    assert len(batches) > 1  # (batches of about 30 tokens)
    expected = read_text(text)
    got = []
    for b in batches:
        first = b.batch.sentences[:, 0]
        for d0, d1 in b.batch.documents.tolist():
            starts = first[(first >= d0) & (first < d1)] - d0
            got.append((b.batch.tokens[d0:d1], b.offsets[d0:d1, 0].tolist(), starts.tolist()))
    assert got == [
        (e.document.tokens, [s for s, _ in e.offsets], e.document.sentence_starts) for e in expected
    ]


def test_entity_lines_written_piece_by_piece_are_one_json_line():
    """A paragraph in three pieces: its entities in one line, as ``json.dumps`` writes it."""
    pieces = list(text_pieces(["John met Mary in Paris and Rome today\n"], piece_chars=12))
    assert len(pieces) == 4
    writer = JsonlEntities("in.txt")
    spans = {0: [(0, 4, "PER")], 1: [(9, 13, "PER")], 2: [(17, 22, "LOC")], 3: [(27, 31, "LOC")]}
    out = "".join(writer.piece(p, 1, True, spans[k]) for k, p in enumerate(pieces))
    text = "John met Mary in Paris and Rome today\n"
    expected = {
        "source": "in.txt:1",
        "entities": [
            {"start": s, "end": e, "type": t, "text": text[s:e]}
            for k in range(4)
            for s, e, t in spans[k]
        ],
    }
    assert out == json.dumps(expected) + "\n"
