"""Tests for structperc.eval.chunks: hand-made counts, seqeval agreement, real CoNLL-2003 dev."""

from __future__ import annotations

import json
import random
import warnings

import pytest
from seqeval.metrics import (
    accuracy_score,
    classification_report,
    f1_score,
    precision_score,
    recall_score,
)

from structperc.eval import ChunkScores, TypeScores, chunk_spans, evaluate
from structperc.eval import sentences as chunks_sentences

REL = 1e-9


# ---------------------------------------------------------------- chunk_spans


@pytest.mark.parametrize(
    "tags, spans",
    [
        ([], set()),
        (["O", "O"], set()),
        # IOB1: I-X after O (or at the start) starts a chunk
        (["I-PER", "I-PER", "O", "I-LOC"], {(0, 2, "PER"), (3, 4, "LOC")}),
        (["O", "I-X", "I-X"], {(1, 3, "X")}),
        # IOB2
        (["B-PER", "I-PER", "O", "B-LOC"], {(0, 2, "PER"), (3, 4, "LOC")}),
        # a type change starts a chunk, with or without B-
        (["I-X", "I-Y", "I-Y"], {(0, 1, "X"), (1, 3, "Y")}),
        (["B-X", "I-Y"], {(0, 1, "X"), (1, 2, "Y")}),
        # B- of the same type splits
        (["I-X", "B-X", "I-X"], {(0, 1, "X"), (1, 3, "X")}),
        (["B-X", "B-X"], {(0, 1, "X"), (1, 2, "X")}),
        # IOE: E- ends a chunk when another of the same type follows
        (["I-X", "E-X", "I-X", "O"], {(0, 2, "X"), (2, 3, "X")}),
        (["E-X", "E-X"], {(0, 1, "X"), (1, 2, "X")}),
        # hyphens in the type: split at the first one only
        (["B-ORG-X", "I-ORG-X"], {(0, 2, "ORG-X")}),
        # conlleval.pl does not know S- and does not end a chunk at E-X -> B-X
        (["B-X", "E-X", "B-X", "E-X"], {(0, 4, "X")}),
        (["S-X", "S-X", "O", "S-Y"], {(0, 2, "X"), (3, 4, "Y")}),
    ],
)
def test_chunk_spans(tags, spans):
    assert chunk_spans(tags) == spans


# ---------------------------------------------------------------- evaluate, hand-made

GOLD = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
PRED = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "I-ORG"]]


def test_evaluate_counts_and_per_type():
    s = evaluate(GOLD, PRED)
    assert (s.n_gold, s.n_pred, s.n_correct, s.n_tokens) == (3, 3, 1, 6)
    assert s.precision == pytest.approx(100 / 3)
    assert s.recall == pytest.approx(100 / 3)
    assert s.f1 == pytest.approx(100 / 3)
    assert s.accuracy == pytest.approx(100 * 4 / 6)
    assert list(s.per_type) == ["LOC", "ORG", "PER"]
    assert s.per_type["PER"] == TypeScores(100.0, 100.0, 100.0, n_gold=1, n_pred=1, n_correct=1)
    assert s.per_type["LOC"] == TypeScores(0.0, 0.0, 0.0, n_gold=1, n_pred=0, n_correct=0)
    assert s.per_type["ORG"] == TypeScores(0.0, 0.0, 0.0, n_gold=1, n_pred=2, n_correct=0)


def test_evaluate_partial_type_scores():
    gold = [["I-X", "I-X", "O", "I-X", "O", "I-Y"]]
    pred = [["I-X", "I-X", "O", "I-X", "I-X", "I-Y"]]  # second X too long
    s = evaluate(gold, pred)
    assert s.per_type["X"].precision == pytest.approx(50.0)
    assert s.per_type["X"].recall == pytest.approx(50.0)
    assert s.per_type["Y"].f1 == 100.0
    p, r = 200 / 3, 200 / 3
    assert s.f1 == pytest.approx(2 * p * r / (p + r))


def test_boundary_and_type_errors_are_not_correct():
    gold = [["O", "I-X", "I-X", "O"]]
    for pred in (["I-X", "I-X", "I-X", "O"], ["O", "I-X", "B-X", "O"], ["O", "I-Y", "I-Y", "O"]):
        assert evaluate(gold, [pred]).n_correct == 0


def test_perfect_and_empty_predictions():
    perfect = evaluate(GOLD, GOLD)
    assert (perfect.precision, perfect.recall, perfect.f1, perfect.accuracy) == (100.0,) * 4
    empty = evaluate(GOLD, [["O"] * len(doc) for doc in GOLD])
    assert (empty.n_pred, empty.n_correct, empty.n_gold) == (0, 0, 3)
    assert (empty.precision, empty.recall, empty.f1) == (0.0, 0.0, 0.0)
    assert all(t.n_pred == 0 and t.f1 == 0.0 for t in empty.per_type.values())
    none = evaluate([], [])
    assert (none.n_tokens, none.n_gold, none.accuracy, none.f1, none.per_type) == (
        0,
        0,
        0.0,
        0.0,
        {},
    )
    assert evaluate([[]], [[]]).n_tokens == 0


def test_odd_prefixes_follow_conlleval():
    # conlleval.pl never ends a chunk after a "." prefix: the chunk is still counted as correct
    s = evaluate([["I-X", ".-X"]], [["I-X", ".-X"]])
    assert (s.n_gold, s.n_pred, s.n_correct, s.precision) == (1, 1, 1, 100.0)


def test_length_mismatch_names_the_document():
    with pytest.raises(ValueError, match="2 documents but pred has 1"):
        evaluate(GOLD, GOLD[:1])
    with pytest.raises(ValueError, match=r"document 1: gold has 2 labels but pred has 3"):
        evaluate(GOLD, [GOLD[0], ["O", "O", "O"]])


def test_to_dict_is_json_and_frozen():
    s = evaluate(GOLD, PRED)
    d = json.loads(json.dumps(s.to_dict()))
    assert d["n_correct"] == 1 and d["per_type"]["ORG"]["n_pred"] == 2
    assert set(d) == {f for f in ChunkScores.__dataclass_fields__}
    with pytest.raises(AttributeError):
        s.f1 = 1.0  # type: ignore[misc]


def test_format_matches_conlleval_layout():
    assert evaluate(GOLD, PRED).format().splitlines() == [
        "processed 6 tokens with 3 phrases; found: 3 phrases; correct: 1.",
        "accuracy:  66.67%; precision:  33.33%; recall:  33.33%; FB1:  33.33",
        "              LOC: precision:   0.00%; recall:   0.00%; FB1:   0.00  0",
        "              ORG: precision:   0.00%; recall:   0.00%; FB1:   0.00  2",
        "              PER: precision: 100.00%; recall: 100.00%; FB1: 100.00  1",
    ]


# ---------------------------------------------------------------- agreement with seqeval


def assert_matches_seqeval(gold: list[list[str]], pred: list[list[str]]) -> None:
    s = evaluate(gold, pred)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seqeval's nan macro averages when nothing is found
        p = precision_score(gold, pred, zero_division=0)
        r = recall_score(gold, pred, zero_division=0)
        f = f1_score(gold, pred, zero_division=0)
        report = classification_report(gold, pred, output_dict=True, zero_division=0)
    assert s.precision / 100 == pytest.approx(p, rel=REL, abs=1e-12)
    assert s.recall / 100 == pytest.approx(r, rel=REL, abs=1e-12)
    assert s.f1 / 100 == pytest.approx(f, rel=REL, abs=1e-12)
    if s.n_tokens:
        assert s.accuracy / 100 == pytest.approx(accuracy_score(gold, pred), rel=REL)
    types = {k: v for k, v in report.items() if not k.endswith(" avg")}
    assert set(types) == set(s.per_type)
    for name, row in types.items():
        t = s.per_type[name]
        assert t.precision / 100 == pytest.approx(row["precision"], rel=REL, abs=1e-12)
        assert t.recall / 100 == pytest.approx(row["recall"], rel=REL, abs=1e-12)
        assert t.f1 / 100 == pytest.approx(row["f1-score"], rel=REL, abs=1e-12)
        assert t.n_gold == row["support"]
    assert s.n_gold == report["micro avg"]["support"]


@pytest.mark.parametrize("seed", range(4))
def test_random_sequences_match_seqeval(seed):
    rng = random.Random(seed)
    for _ in range(100):
        types = ["PER", "LOC", "ORG"][: rng.randint(2, 3)]
        labels = ["O"] + [f"{p}-{t}" for t in types for p in "BI"]
        weights = [len(labels)] + [1] * (len(labels) - 1)  # about half O
        n_docs = rng.randint(1, 5)
        gold = [rng.choices(labels, weights, k=rng.randint(0, 15)) for _ in range(n_docs)]
        pred = [
            [t if rng.random() < 0.6 else rng.choices(labels, weights)[0] for t in doc]
            for doc in gold
        ]
        assert_matches_seqeval(gold, pred)


# ---------------------------------------------------------------- real CoNLL-2003 dev


def read_conll_sentences(path) -> list[list[str]]:
    """The last column of a CoNLL file, one list per sentence (-DOCSTART- lines skipped)."""
    sentences, current = [], []
    for line in path.read_text().splitlines():
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if current:
                sentences.append(current)
            current = []
        else:
            current.append(fields[-1])
    if current:
        sentences.append(current)
    return sentences


def perturb(gold: list[list[str]]) -> list[list[str]]:
    """Deterministic "real-looking" predictions: retypes, drops, boundary shifts, splits, FPs."""
    types = ["LOC", "MISC", "ORG", "PER"]
    pred, k = [], 0
    for n, sent in enumerate(gold):
        out = list(sent)
        for start, end, typ in sorted(chunk_spans(sent)):
            k += 1
            if k % 11 == 0:  # missed entity
                out[start:end] = ["O"] * (end - start)
            elif k % 7 == 0:  # wrong type
                new = types[(types.index(typ) + 1) % 4]
                out[start:end] = [t[:2] + new for t in sent[start:end]]
            elif k % 9 == 0:  # boundary one token too long, or too short
                if end < len(sent) and sent[end] == "O":
                    out[end] = "I-" + typ
                elif end - start > 1:
                    out[start] = "O"
            elif k % 17 == 0 and end - start > 1:  # split in two
                out[start + 1] = "B-" + typ
        if n % 17 == 0:  # a spurious entity on the first token outside every entity
            for i, (gold_tag, pred_tag) in enumerate(zip(sent, out, strict=True)):
                if gold_tag == "O" and pred_tag == "O":
                    out[i] = "I-MISC"
                    break
        pred.append(out)
    return pred


@pytest.mark.realdata
def test_conll2003_dev_matches_seqeval(data_dir):
    path = data_dir / "conll2003" / "dev.txt"
    if not path.is_file():
        pytest.skip(f"{path} not found; set STRUCTPERC_DATA to the shared data folder")
    gold = read_conll_sentences(path)
    self_score = evaluate(gold, gold)
    # official figures, Tjong Kim Sang & De Meulder (2003), Tables 1-2
    assert self_score.n_tokens == 51362
    assert {k: v.n_gold for k, v in self_score.per_type.items()} == {
        "LOC": 1837,
        "MISC": 922,
        "ORG": 1341,
        "PER": 1842,
    }
    assert self_score.f1 == 100.0
    pred = perturb(gold)
    s = evaluate(gold, pred)
    assert 60.0 < s.f1 < 90.0 and s.n_pred != s.n_gold  # the perturbation did something
    assert_matches_seqeval(gold, pred)


# ---------------------------------------------------------------- sentence boundaries


def test_sentences_cut_documents_at_their_starts():
    seqs = [["a", "b", "c", "d"], ["e"], []]
    assert chunks_sentences(seqs, [[0, 2, 3], [0], [0]]) == [["a", "b"], ["c"], ["d"], ["e"]]
    # a missing 0, duplicate and out-of-range starts: empty sentences are dropped
    assert chunks_sentences([["a", "b", "c"]], [[1, 1, 3]]) == [["a"], ["b", "c"]]
    with pytest.raises(ValueError, match="sentence starts for 1 documents but 2"):
        chunks_sentences([["a"], ["b"]], [[0]])


def test_chunks_close_at_sentence_starts_as_conlleval_does():
    """An I-PER run across a sentence break: conlleval (a blank line between the sentences)
    sees two PER chunks in gold and prediction, both correct; the whole document one chunk in
    the prediction, against two in gold, none correct."""
    gold = [["B-PER", "I-PER", "B-PER", "O"]]
    pred = [["B-PER", "I-PER", "I-PER", "O"]]
    s = evaluate(gold, pred, [[0, 2]])
    assert (s.n_gold, s.n_pred, s.n_correct, s.f1) == (2, 2, 2, 100.0)
    assert s.f1_document == 0.0
    whole = evaluate(gold, pred)
    assert (whole.n_gold, whole.n_pred, whole.n_correct) == (2, 1, 0)
    assert whole.f1_document is None
    # the token accuracy counts tokens, not the blank lines between sentences
    assert s.accuracy == whole.accuracy == 75.0
