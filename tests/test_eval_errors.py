"""The error classes of a chunker (``eval/errors.py``): hand-made cases, the counts conlleval
implies, and the main job's test predictions counted again by a small count of this file's own.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from structperc.eval.chunks import evaluate
from structperc.eval.errors import CLASSES, chunk_errors, class_totals, error_counts
from structperc.report.predictions import read_predictions

ROOT = Path(__file__).resolve().parents[1]
MAIN_PREDICTIONS = ROOT / "experiments" / "report" / "main_test.pred.txt.gz"


@pytest.mark.parametrize(
    "gold, pred, kind, counted_under",
    [
        ("B-LOC O", "B-ORG O", "type", "LOC"),
        ("B-PER I-PER", "B-PER O", "boundary", "PER"),
        ("B-PER O", "B-PER I-PER", "boundary", "PER"),
        ("B-ORG I-ORG O", "O B-LOC I-LOC", "type and boundary", "ORG"),
        ("B-MISC O", "O O", "missed", "MISC"),
        ("O O", "O B-LOC", "spurious", "LOC"),
    ],
)
def test_each_class_on_its_smallest_case(gold, pred, kind, counted_under):
    (err,) = chunk_errors([gold.split()], [pred.split()])
    assert err.kind == kind and err.entity_type == counted_under


def test_a_predicted_chunk_over_two_gold_chunks_is_their_error_not_its_own():
    errors = chunk_errors([["B-PER", "B-PER"]], [["B-PER", "I-PER"]])
    assert [e.kind for e in errors] == ["boundary", "boundary"]
    assert class_totals(errors)["spurious"] == 0


def test_chunks_close_at_sentence_starts_as_conlleval_reads_the_file():
    gold, pred = [["B-LOC", "I-LOC"]], [["B-LOC", "I-LOC"]]
    assert chunk_errors(gold, pred, [[0]]) == []
    # two gold chunks, one predicted over both: two boundary errors within one sentence; a
    # sentence start between the tokens closes the predicted chunk there, and both are right
    errors = chunk_errors([["B-LOC", "B-LOC"]], [["B-LOC", "I-LOC"]], [[0]])
    assert [e.kind for e in errors] == ["boundary", "boundary"]
    assert chunk_errors([["B-LOC", "B-LOC"]], [["B-LOC", "I-LOC"]], [[0, 1]]) == []


@pytest.mark.parametrize("seed", range(5))
def test_the_classes_account_for_every_chunk_conlleval_does_not_count_correct(seed):
    rng = random.Random(seed)
    tags = ["O", "O", "O", "B-A", "I-A", "B-B", "I-B", "I-A"]
    gold = [[rng.choice(tags) for _ in range(rng.randint(1, 30))] for _ in range(20)]
    pred = [[rng.choice(tags) for _ in g] for g in gold]
    starts = [sorted({0, *rng.sample(range(len(g)), min(2, len(g)))}) for g in gold]
    scores = evaluate(gold, pred, starts)
    counts = error_counts(chunk_errors(gold, pred, starts))
    for typ, s in scores.per_type.items():
        c = counts.get(typ, dict.fromkeys(CLASSES, 0))
        assert (
            s.n_gold - s.n_correct
            == c["type"] + c["boundary"] + c["type and boundary"] + c["missed"]
        )
        assert s.n_pred - s.n_correct >= c["spurious"]


def independent_count(lines: list[str]) -> dict[str, dict[str, int]]:
    """The five classes per type, counted from the file's lines without the package: chunks by
    the IOB2 reading (B- starts, I- of the same type continues, anything else ends), per
    sentence; then the rules of the classes, written out again."""
    found: dict[str, dict[str, int]] = {}
    sentences, current = [], []
    for line in lines + [""]:
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if current:
                sentences.append(current)
            current = []
            continue
        current.append((fields[-2], fields[-1]))

    def spans(tags):
        out, start = [], None
        for i, tag in enumerate(tags + ["O"]):
            if start is not None and not (tag.startswith("I-") and tag[2:] == tags[start][2:]):
                out.append((start, i, tags[start][2:]))
                start = None
            if tag.startswith("B-") or (tag.startswith("I-") and start is None):
                start = i
        return out

    def add(typ, kind):
        found.setdefault(typ, dict.fromkeys(CLASSES, 0))[kind] += 1

    for sentence in sentences:
        g = spans([a for a, _ in sentence])
        p = spans([b for _, b in sentence])
        for s, e, t in g:
            if (s, e, t) in p:
                continue
            near = [x for x in p if x not in g and x[0] < e and s < x[1]]
            if any((x[0], x[1]) == (s, e) for x in near):
                add(t, "type")
            elif any(x[2] == t for x in near):
                add(t, "boundary")
            elif near:
                add(t, "type and boundary")
            else:
                add(t, "missed")
        for s, e, t in p:
            if (s, e, t) not in g and not any(x[0] < e and s < x[1] for x in g):
                add(t, "spurious")
    return dict(sorted(found.items()))


def test_the_main_jobs_test_errors_are_counted_alike_by_an_independent_count(tmp_path):
    """experiments/report/main_test.pred.txt.gz: the test predictions of make run's main job
    (the run whose report experiments/report shows)."""
    text = gzip.decompress(MAIN_PREDICTIONS.read_bytes()).decode("utf-8")
    (tmp_path / "test.pred.txt").write_text(text, encoding="utf-8")
    items = read_predictions(tmp_path / "test.pred.txt")
    gold, pred = [p.doc.tags for p in items], [p.pred for p in items]
    starts = [p.doc.sentence_starts for p in items]
    ours = error_counts(chunk_errors(gold, pred, starts))
    assert ours == independent_count(text.splitlines())
    recorded = json.loads((MAIN_PREDICTIONS.parent / "error_classes.json").read_text())
    assert recorded["test"] == ours  # the figures experiments/report/README.md shows
    scores = evaluate(gold, pred, starts)
    missed_or_wrong = sum(sum(c.values()) - c["spurious"] for c in ours.values())
    assert missed_or_wrong == scores.n_gold - scores.n_correct
