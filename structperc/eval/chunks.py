"""Chunk-level evaluation equivalent to ``conlleval.pl``.

Reference: the evaluation script of the CoNLL-2000 shared task (Tjong Kim Sang & Buchholz, 2000,
"Introduction to the CoNLL-2000 Shared Task: Chunking"), ``conlleval.pl`` version 2004-01-26,
also used for CoNLL-2002/2003 NER.

A label ``P-TYPE`` is split at its first hyphen into a prefix ``P`` and a type (``O`` and other
labels without a hyphen have the empty type).  Chunk boundaries follow conlleval's
``startOfChunk``/``endOfChunk`` exactly, with an implicit ``O`` before and after every sequence
scored.  conlleval.pl reads a file whose blank lines end every *sentence*, so a chunk never
spans a sentence break there: ``evaluate(..., sentence_starts=...)`` closes every chunk at the
sentence starts of a document exactly as those blank lines do, and that is the reported F1.  The
score of whole documents, where an ``I-X`` run may cross a sentence break and count as one chunk,
is kept beside it as ``f1_document``.
A chunk starts at a token when the previous/current prefixes are B/B, I/B, O/B, O/I, E/E, E/I or
O/E, when the token's prefix is not ``O`` or ``.`` and its type differs from the previous type,
or when its prefix is ``[`` or ``]``.  A chunk ends before a token when the pair is B/B, B/O, I/B,
I/O, E/E, E/I or E/O, when the previous prefix is not ``O`` or ``.`` and the type changes, or
when the previous prefix is ``[`` or ``]``.  Hence IOB1, IOB2 and IOE1/IOE2 are read correctly
(an ``I-X`` after ``O`` or after another type starts a chunk; ``B-X`` starts one).  Like
conlleval.pl, ``S-`` prefixes and an ``E-X`` -> ``B-X`` transition are *not* boundaries, so
IOBES input must be converted to IOB2 first.

A predicted chunk is correct when a gold chunk has the same start, end and type.  With
``correct``, ``pred`` and ``gold`` chunk counts (overall or for one type), in percent:

    P  = 100 * correct / pred        (0 when pred == 0)
    R  = 100 * correct / gold        (0 when gold == 0)
    F1 = 2 * P * R / (P + R)         (0 when P + R == 0)
    accuracy = 100 * (tokens whose gold and predicted labels agree) / tokens   (0 when no tokens)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace

__all__ = ["ChunkScores", "TypeScores", "chunk_spans", "evaluate", "sentences"]

_B_STARTS = {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")}
_B_ENDS = {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")}
_O = ("O", "")


def _split(label: str) -> tuple[str, str]:
    """``"I-ORG"`` -> ``("I", "ORG")``; split at the first hyphen like conlleval's regex."""
    prefix, sep, typ = label.partition("-")
    if not sep:
        return label, ""
    return prefix, ("" if typ == "0" else typ)  # Perl's truthiness turns a type "0" into ""


def _start(prev: tuple[str, str], cur: tuple[str, str]) -> bool:
    """conlleval's ``startOfChunk``: does a chunk start at ``cur``?"""
    (pt, ptype), (t, typ) = prev, cur
    return (pt, t) in _B_STARTS or (t != "O" and t != "." and ptype != typ) or t == "[" or t == "]"


def _end(prev: tuple[str, str], cur: tuple[str, str]) -> bool:
    """conlleval's ``endOfChunk``: does a chunk end between ``prev`` and ``cur``?"""
    (pt, ptype), (t, typ) = prev, cur
    return (
        (pt, t) in _B_ENDS or (pt != "O" and pt != "." and ptype != typ) or pt == "[" or pt == "]"
    )


def chunk_spans(tags: list[str]) -> set[tuple[int, int, str]]:
    """The chunks of one document as ``(start, end, type)`` with ``end`` exclusive.

    ``["I-PER", "I-PER", "O", "B-LOC"]`` -> ``{(0, 2, "PER"), (3, 4, "LOC")}``.  A chunk's type is
    the type of its first token.  (Only for malformed prefixes such as ``[``/``]`` can a chunk
    start while another is open; the open one is then closed there.)
    """
    spans: set[tuple[int, int, str]] = set()
    prev = _O
    begin = -1
    typ = ""
    for i, label in enumerate([*tags, "O"]):
        cur = _split(label)
        if begin >= 0 and _end(prev, cur):
            spans.add((begin, i, typ))
            begin = -1
        if _start(prev, cur):
            if begin >= 0:
                spans.add((begin, i, typ))
            begin, typ = i, cur[1]
        prev = cur
    if begin >= 0:  # only for malformed labels that never end, e.g. a bare "S"
        spans.add((begin, len(tags), typ))
    return spans


def _percent(part: int, whole: int) -> float:
    """100 * part / whole, 0 when whole is 0."""
    return 100.0 * part / whole if whole else 0.0


@dataclass(frozen=True)
class TypeScores:
    """Scores of one chunk type; precision/recall/f1 in percent (0..100)."""

    precision: float
    recall: float
    f1: float
    n_gold: int
    n_pred: int
    n_correct: int

    @classmethod
    def of(cls, correct: int, pred: int, gold: int) -> TypeScores:
        """The scores of ``correct`` right of ``pred`` predicted and ``gold`` gold chunks (or
        tokens, ``tokens.py``)."""
        p, r = _percent(correct, pred), _percent(correct, gold)
        f = 2.0 * p * r / (p + r) if p + r else 0.0
        return cls(p, r, f, n_gold=gold, n_pred=pred, n_correct=correct)

    def line(self, name: str) -> str:
        """The line of conlleval.pl's table for the type ``name`` (the last column ``n_pred``)."""
        return (
            f"{name:>17}: precision: {self.precision:6.2f}%; recall: {self.recall:6.2f}%; "
            f"FB1: {self.f1:6.2f}  {self.n_pred}"
        )


@dataclass(frozen=True)
class ChunkScores:
    """Overall conlleval scores; precision/recall/f1/accuracy in percent (0..100).

    ``per_type`` maps every type found in gold or predictions to its scores, sorted by name.
    ``f1_document``: the F1 of the same labels with chunks closed only at document ends (None
    unless ``evaluate`` was given sentence starts).
    """

    precision: float
    recall: float
    f1: float
    accuracy: float
    n_gold: int
    n_pred: int
    n_correct: int
    n_tokens: int
    per_type: dict[str, TypeScores] = field(default_factory=dict)
    f1_document: float | None = None

    def to_dict(self) -> dict:
        """A JSON-serialisable dict (``per_type`` becomes a dict of dicts)."""
        return asdict(self)

    def format(self) -> str:
        """A table laid out like conlleval.pl's output (the last column is ``n_pred``)."""
        lines = [
            f"processed {self.n_tokens} tokens with {self.n_gold} phrases; "
            f"found: {self.n_pred} phrases; correct: {self.n_correct}."
        ]
        if self.n_tokens:
            lines.append(
                f"accuracy: {self.accuracy:6.2f}%; precision: {self.precision:6.2f}%; "
                f"recall: {self.recall:6.2f}%; FB1: {self.f1:6.2f}"
            )
        lines += [s.line(name) for name, s in self.per_type.items()]
        return "\n".join(lines)


def sentences(
    sequences: Sequence[Sequence[str]], sentence_starts: Sequence[Sequence[int]]
) -> list[Sequence[str]]:
    """The sentences of every sequence, cut at its ``sentence_starts`` (ascending offsets; a
    missing 0 is implied), as conlleval.pl sees them between the blank lines of a written file.
    Empty sentences are dropped (two blank lines in a row are one boundary for conlleval)."""
    if len(sequences) != len(sentence_starts):
        raise ValueError(
            f"got sentence starts for {len(sentence_starts)} documents but {len(sequences)} "
            "label sequences"
        )
    out: list[Sequence[str]] = []
    for seq, starts in zip(sequences, sentence_starts, strict=True):
        bounds = [0, *(s for s in starts if 0 < s < len(seq)), len(seq)]
        out.extend(seq[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a)
    return out


def evaluate(
    gold: Sequence[Sequence[str]],
    pred: Sequence[Sequence[str]],
    sentence_starts: Sequence[Sequence[int]] | None = None,
) -> ChunkScores:
    """Score predicted label sequences against gold ones, one list of labels per document.

    With ``sentence_starts`` (one ascending list of offsets per document, as
    ``Document.sentence_starts``), every sentence is scored as conlleval.pl scores the lines
    between two blank lines, and ``f1_document`` is the F1 over whole documents; without it,
    every sequence is one sentence.  Raises ValueError if the number of documents or the length
    of a document differs.
    """
    _check_lengths(gold, pred)
    if sentence_starts is None:
        return _count(gold, pred)
    scores = _count(sentences(gold, sentence_starts), sentences(pred, sentence_starts))
    return replace(scores, f1_document=_count(gold, pred).f1)


def _check_lengths(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> None:
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} documents but pred has {len(pred)}")
    for d, (g_tags, p_tags) in enumerate(zip(gold, pred, strict=True)):
        if len(g_tags) != len(p_tags):
            raise ValueError(
                f"document {d}: gold has {len(g_tags)} labels but pred has {len(p_tags)}"
            )


def _count(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> ChunkScores:
    """A literal port of conlleval.pl's counting loop over sentences ``gold`` / ``pred``, each
    followed by conlleval's blank line (an ``O``/``O`` pair that is not a token).  Chunks are
    counted where they start, and a predicted chunk is correct when it starts and ends together
    with a gold chunk of the same type.  For labels with prefixes B/I/E/S/O this equals comparing
    the sets from :func:`chunk_spans` sentence by sentence."""
    counts: dict[str, list[int]] = {}  # type -> [gold, pred, correct]
    n_tokens = n_agree = 0
    split: dict[str, tuple[str, str]] = {}
    in_correct = False  # inside a gold and a predicted chunk that started together
    for g_tags, p_tags in zip(gold, pred, strict=True):
        n_tokens += len(g_tags)
        lg = lp = _O  # previous gold / predicted (prefix, type)
        for gl, pl in [*zip(g_tags, p_tags, strict=True), ("O", "O")]:
            g = split.get(gl) or split.setdefault(gl, _split(gl))
            p = split.get(pl) or split.setdefault(pl, _split(pl))
            if in_correct:
                g_end, p_end = _end(lg, g), _end(lp, p)
                if g_end and p_end and lg[1] == lp[1]:
                    in_correct = False
                    counts.setdefault(lg[1], [0, 0, 0])[2] += 1
                elif g_end != p_end or g[1] != p[1]:
                    in_correct = False
            g_start, p_start = _start(lg, g), _start(lp, p)
            if g_start:
                counts.setdefault(g[1], [0, 0, 0])[0] += 1
            if p_start:
                counts.setdefault(p[1], [0, 0, 0])[1] += 1
            in_correct = in_correct or (g_start and p_start and g[1] == p[1])
            n_agree += g == p
            lg, lp = g, p
        n_agree -= 1  # the sentinel ("O", "O"), conlleval's blank line after a sentence
    if in_correct:  # only with odd prefixes that never end a chunk, e.g. ["I-X", ".-X"]
        counts.setdefault("", [0, 0, 0])[2] += 1  # conlleval's lastCorrectType after a blank line
    per_type = {  # like conlleval, only types of found chunks (normally all types)
        typ: TypeScores.of(c, p, g) for typ, (g, p, c) in sorted(counts.items()) if g or p
    }
    n_gold, n_pred, n_correct = (sum(c[k] for c in counts.values()) for k in range(3))
    overall = TypeScores.of(n_correct, n_pred, n_gold)  # the scores of every chunk
    return ChunkScores(
        **asdict(overall),
        accuracy=_percent(n_agree, n_tokens),
        n_tokens=n_tokens,
        per_type=per_type,
    )
