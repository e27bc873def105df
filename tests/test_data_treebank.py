"""Penn Treebank token forms for the column tagger (structperc/data/treebank.py)."""

from hypothesis import given
from hypothesis import strategies as st

from structperc.data import Document, as_treebank, has_docstart, mark_docstart, treebank_tokens


def test_brackets_take_their_treebank_names():
    tokens = ["(", "a", ")", "[", "b", "]", "{", "c", "}"]
    assert treebank_tokens(tokens) == [
        "-LRB-", "a", "-RRB-", "-LSB-", "b", "-RSB-", "-LCB-", "c", "-RCB-",
    ]  # fmt: skip


def test_straight_quotes_alternate_within_a_sentence_opening_first():
    tokens = ['"', "Yes", '"', ",", "he", "said", ",", '"', "no", '"', "."]
    out = treebank_tokens(tokens)
    assert [out[i] for i in (0, 2, 7, 9)] == ["``", "''", "``", "''"]
    assert [t for i, t in enumerate(out) if i not in (0, 2, 7, 9)] == [
        t for i, t in enumerate(tokens) if i not in (0, 2, 7, 9)
    ]


def test_quotes_pair_within_their_own_sentence():
    # sentence 1: an unpaired quote in the middle opens; sentence 2 starts afresh
    tokens = ["He", "said", '"', "no", ".", '"', "Yes", '"', "."]
    expected = ["He", "said", "``", "no", ".", "``", "Yes", "''", "."]
    assert treebank_tokens(tokens, [0, 5]) == expected


def test_an_unpaired_quote_that_ends_a_sentence_closes():
    # the quotation began in an earlier sentence
    assert treebank_tokens(["and", "so", "on", ".", '"']) == ["and", "so", "on", ".", "''"]
    assert treebank_tokens(['"', "a", '"', "b", '"']) == ["``", "a", "''", "b", "''"]


def test_typographic_quotes():
    assert treebank_tokens(["\u201c", "a", "\u201d", "\u00ab", "b", "\u00bb", "\u201e", "c"]) == [
        "``", "a", "''", "``", "b", "''", "``", "c",
    ]  # fmt: skip


def test_treebank_text_is_left_as_it_is():
    tokens = ["-LRB-", "``", "It", "'s", "$", "5", "''", "-RRB-", "--", "'", "`", "."]
    assert treebank_tokens(tokens) == tokens


TOKENS = st.lists(st.sampled_from(['"', "(", ")", "[", "}", "a", "B", ".", "``", "''", "\u201c"]))


@given(TOKENS, st.data())
def test_one_token_for_each_and_a_second_pass_changes_nothing(tokens, data):
    cuts = data.draw(st.sets(st.integers(1, max(len(tokens) - 1, 1)))) if tokens else set()
    starts = [0, *sorted(c for c in cuts if c < len(tokens))]
    out = treebank_tokens(tokens, starts)
    assert len(out) == len(tokens)
    assert treebank_tokens(out, starts) == out
    assert all(t not in '"()[]{}\u201c' for t in out)
    for before, after in zip(tokens, out, strict=True):  # only brackets and quotes change
        assert after == before or before in '"()[]{}\u201c'


def test_a_document_copy_keeps_everything_but_the_tokens():
    doc = Document(
        tokens=['"', "(", "EU", ")", '"'],
        columns={"pos": ['"', "(", "NNP", ")", '"']},
        tags=["O", "O", "B-ORG", "O", "O"],
        sentence_starts=[0],
        source="f.txt:3",
    )
    mark_docstart(doc)
    copy = as_treebank(doc)
    assert copy.tokens == ["``", "-LRB-", "EU", "-RRB-", "''"]
    assert doc.tokens == ['"', "(", "EU", ")", '"']  # the original is untouched
    assert (copy.columns, copy.tags, copy.sentence_starts, copy.source) == (
        doc.columns, doc.tags, doc.sentence_starts, doc.source,
    )  # fmt: skip
    assert has_docstart(copy)
