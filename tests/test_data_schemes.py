"""Tag schemes (``data/schemes.py``): every scheme written from IOB2 and read back on every short
labeling (brute force), the table of the module docstring on one example, and the detection of a
corpus's scheme with its errors."""

from __future__ import annotations

import itertools

import pytest

from structperc.data.schemes import (
    CHUNK_SCHEMES,
    PLAIN,
    SchemeError,
    chunks,
    detect_scheme,
    from_iob2,
    scheme_name,
    to_iob2,
)
from structperc.data.tags import iob1_to_iob2, spans

# every IOB2-valid labeling of up to 4 tokens with two types
LABELS = ["O", "B-A", "I-A", "B-B", "I-B"]


def iob2_labelings(max_len: int = 4):
    for n in range(max_len + 1):
        for seq in itertools.product(LABELS, repeat=n):
            seq = list(seq)
            if iob1_to_iob2(seq) == seq:  # valid IOB2: no I-X after O or another type
                yield seq


def test_every_scheme_round_trips_every_short_iob2_labeling():
    for seq in iob2_labelings():
        for scheme in CHUNK_SCHEMES:
            written = from_iob2(seq, scheme)
            if scheme == "io":  # adjacent chunks of one type merge: the chunks' tokens remain
                assert [t[2:] for t in to_iob2(written, scheme)] == [t[2:] for t in seq]
                continue
            assert to_iob2(written, scheme) == seq, (scheme, seq, written)
            assert from_iob2(to_iob2(written, scheme), scheme) == written
            # the chunks read are IOB2's, by the conlleval-like reader of data/tags.py
            assert chunks(written, scheme) == spans(seq)


# "Mr John Smith , Paris Paris" with PER (2 tokens), LOC, LOC adjacent
IOB2 = ["O", "B-PER", "I-PER", "O", "B-LOC", "B-LOC"]
WRITTEN = {
    "iob1": ["O", "I-PER", "I-PER", "O", "I-LOC", "B-LOC"],
    "iob2": IOB2,
    "ioe1": ["O", "I-PER", "I-PER", "O", "E-LOC", "I-LOC"],
    "ioe2": ["O", "I-PER", "E-PER", "O", "E-LOC", "E-LOC"],
    "iobes": ["O", "B-PER", "E-PER", "O", "S-LOC", "S-LOC"],
    "bilou": ["O", "B-PER", "L-PER", "O", "U-LOC", "U-LOC"],
    "io": ["O", "I-PER", "I-PER", "O", "I-LOC", "I-LOC"],
}


@pytest.mark.parametrize("scheme", sorted(WRITTEN))
def test_the_table_of_schemes(scheme):
    assert from_iob2(IOB2, scheme) == WRITTEN[scheme]
    expected = IOB2 if scheme != "io" else IOB2[:5] + ["I-LOC"]
    assert to_iob2(WRITTEN[scheme], scheme) == expected


def test_reading_is_lenient_where_conlleval_is():
    assert to_iob2(["I-X", "B-X", "O", "I-Y"], "iob2") == ["B-X", "B-X", "O", "B-Y"]
    assert to_iob2(["B-X", "O", "E-Y"], "iobes") == ["B-X", "O", "B-Y"]
    assert to_iob2(["PER", "PER", "O"], "io") == ["B-PER", "I-PER", "O"]
    assert to_iob2(["NN", "VBZ"], PLAIN) == ["NN", "VBZ"]


def test_labels_a_scheme_does_not_read_are_errors_with_their_position():
    with pytest.raises(SchemeError, match="'E-X' is not IOB2") as info:
        to_iob2(["B-X", "E-X"], "iob2")
    assert info.value.index == 1
    with pytest.raises(SchemeError, match="not BILOU"):
        to_iob2(["S-X"], "bilou")
    with pytest.raises(SchemeError, match="not IOBES"):
        to_iob2(["B-"], "iobes")


def test_scheme_names_and_aliases():
    assert scheme_name("IOE") == "ioe2" and scheme_name("BIOES") == "iobes"
    with pytest.raises(ValueError, match="unknown tag scheme 'bieo'"):
        scheme_name("bieo")


def where(j: int) -> str:
    return f"f.txt:{j + 1}"


def sentences_of(*seqs):
    return [(s, where) for s in seqs]


@pytest.mark.parametrize("scheme", ["iob1", "iob2", "ioe1", "ioe2", "iobes", "bilou"])
def test_each_scheme_is_detected_from_text_written_in_it(scheme):
    written = from_iob2(IOB2, scheme)
    assert detect_scheme(sentences_of(written, ["O"])) == scheme


def test_plain_labels_and_bare_corpora():
    assert detect_scheme(sentences_of(["NN", "VBZ", "-LRB-"], ["DT"])) == PLAIN
    assert detect_scheme(sentences_of(["O", "O"])) == "iob2"  # no chunk: nothing to convert
    assert detect_scheme(sentences_of(["I-X", "O", "I-Y"])) == "iob1"  # = IO = IOE1 here


def test_undecidable_corpora_are_errors_naming_a_line_of_each_reading():
    with pytest.raises(SchemeError, match=r"f\.txt:1: 'I-X' begins a chunk.*f\.txt:1: 'B-Y'"):
        detect_scheme(sentences_of(["I-X", "O"], ["B-Y", "O"]))
    with pytest.raises(SchemeError, match=r"f\.txt:2: 'NN' has no chunk prefix but f\.txt:1"):
        detect_scheme(sentences_of(["B-PER", "NN"]))
    with pytest.raises(SchemeError, match="no one scheme has"):
        detect_scheme(sentences_of(["S-X", "L-X"]))
