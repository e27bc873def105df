"""The errors of a chunker, in classes: what went wrong with each entity, not only how often.

Chunks are conlleval's (``chunks.chunk_spans``), closed at every sentence start as conlleval.pl
closes them at its blank lines (``chunks.sentences``), so the counts agree with the reported F1:
every gold chunk that is not found and every predicted chunk that is not right is in exactly one
class.  With G the gold chunks and P the predicted ones of a sentence, a chunk (s, e, type), and
"overlap" meaning at least one token in common (the classes of Chinchor & Sundheim 1993's MUC
scoring, as NER error analyses use them):

    type               a predicted chunk has the gold chunk's boundaries but another type
    boundary           no such chunk; an overlapping predicted chunk has the gold chunk's type
    type and boundary  no such chunks; some predicted chunk overlaps it (other type, other span)
    missed             no predicted chunk overlaps the gold chunk
    spurious           a predicted chunk (not right) that overlaps no gold chunk

The first four are counted per gold chunk under its type, "spurious" under the predicted type;
a predicted chunk that overlaps a wrong gold chunk is that gold chunk's error, not one of its own.
So n_gold − n_correct = type + boundary + type and boundary + missed for every type, and
n_pred − n_correct >= spurious.

An error's *pattern* is its class with the two sides' types and words (``ORG "Japan"`` ->
``LOC "Japan"``): the same mistake made again has the same pattern.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from structperc.eval.chunks import chunk_spans

CLASSES = ("type", "boundary", "type and boundary", "missed", "spurious")
Span = tuple[int, int, str]  # (start, end exclusive, type), in document positions


@dataclass(frozen=True)
class ChunkError:
    """One error: its class, document, the gold chunk (None: spurious) and the predicted chunks
    that overlap it (the spurious chunk itself for "spurious")."""

    kind: str
    doc: int
    gold: Span | None
    pred: tuple[Span, ...]

    @property
    def entity_type(self) -> str:
        """The type it is counted under: the gold chunk's, the predicted one's for spurious."""
        return self.gold[2] if self.gold is not None else self.pred[0][2]

    def region(self) -> tuple[int, int]:
        """The token span covering the gold and the predicted chunks."""
        spans = ([self.gold] if self.gold else []) + list(self.pred)
        return min(s for s, _, _ in spans), max(e for _, e, _ in spans)

    def pattern(self, tokens: Sequence[str]) -> tuple[str, str, str]:
        """(class, gold side, predicted side), e.g. ("type", 'ORG "Japan"', 'LOC "Japan"')."""

        def side(spans) -> str:
            return " + ".join(f'{t} "{" ".join(tokens[s:e])}"' for s, e, t in spans) or "-"

        return self.kind, side([self.gold] if self.gold else []), side(self.pred)


def document_chunks(tags: Sequence[str], sentence_starts: Sequence[int] = ()) -> set[Span]:
    """The conlleval chunks of one document, closed at each sentence start."""
    bounds = [0, *(s for s in sentence_starts if 0 < s < len(tags)), len(tags)]
    out: set[Span] = set()
    for a, b in zip(bounds, bounds[1:], strict=False):
        out |= {(a + s, a + e, t) for s, e, t in chunk_spans(list(tags[a:b]))}
    return out


def document_errors(
    doc: int, gold: Sequence[str], pred: Sequence[str], sentence_starts: Sequence[int] = ()
) -> list[ChunkError]:
    """The errors of one document's predicted tags, in the order of their positions."""
    g, p = document_chunks(gold, sentence_starts), document_chunks(pred, sentence_starts)
    right = g & p
    errors = []
    for span in sorted(g - right):
        s, e, typ = span
        overlapping = tuple(sorted(x for x in p - right if x[0] < e and s < x[1]))
        if any(x[:2] == (s, e) for x in overlapping):
            kind = "type"
        elif any(x[2] == typ for x in overlapping):
            kind = "boundary"
        elif overlapping:
            kind = "type and boundary"
        else:
            kind = "missed"
        errors.append(ChunkError(kind, doc, span, overlapping))
    for span in sorted(p - right):
        s, e, _ = span
        if not any(x[0] < e and s < x[1] for x in g):
            errors.append(ChunkError("spurious", doc, None, (span,)))
    errors.sort(key=lambda x: x.region())
    return errors


def chunk_errors(
    gold: Sequence[Sequence[str]],
    pred: Sequence[Sequence[str]],
    sentence_starts: Sequence[Sequence[int]] | None = None,
) -> list[ChunkError]:
    """The errors of every document (one tag list per document in each)."""
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} documents but pred has {len(pred)}")
    starts = sentence_starts if sentence_starts is not None else [()] * len(gold)
    out = []
    for d, (g, p, s) in enumerate(zip(gold, pred, starts, strict=True)):
        if len(g) != len(p):
            raise ValueError(f"document {d}: gold has {len(g)} labels but pred has {len(p)}")
        out += document_errors(d, g, p, s)
    return out


def error_counts(errors: Sequence[ChunkError]) -> dict[str, dict[str, int]]:
    """type -> class -> count, every class present (0 where none), types sorted."""
    counts: dict[str, Counter] = {}
    for err in errors:
        counts.setdefault(err.entity_type, Counter())[err.kind] += 1
    return {t: {k: counts[t][k] for k in CLASSES} for t in sorted(counts)}


def class_totals(errors: Sequence[ChunkError]) -> dict[str, int]:
    """class -> count over every type."""
    found = Counter(err.kind for err in errors)
    return {k: found[k] for k in CLASSES}
