"""Chunk tag schemes: read any of them into IOB2, write IOB2 back into any of them, and tell from
a corpus's labels which one it uses.

A chunk (an entity, a phrase) is a span of tokens with a type.  The schemes differ only in the
prefix each token of a span gets (Ramshaw & Marcus 1995; Tjong Kim Sang & Veenstra 1999,
"Representing Text Chunks"; Ratinov & Roth 2009 for BILOU):

    scheme  first token            inside   last token             one-token chunk
    iob1    I (B after a chunk     I        I                      I (B as for first)
            of the same type)
    iob2    B                      I        I                      B
    ioe1    I                      I        I (E before a chunk    I (E as for last)
                                             of the same type)
    ioe2    I                      I        E                      E
    iobes   B                      I        E                      S
    bilou   B                      I        L                      U
    io      I                      I        I                      I   (adjacent chunks of one
                                                                        type merge: lossy)

``O`` is outside every chunk in all of them.  Reading is one rule for every scheme: a chunk is a
maximal run of tokens of one type, cut before a token whose prefix begins chunks (B; S, U) and
after a token whose prefix ends them (E; S, L, U).  Under that rule IOB1, IOB2 and IO read alike,
as do IOE1 and IOE2, and a sequence a scheme would not write (``O I-X`` in IOB2, ``B-X O`` in
IOBES) is still read the way conlleval.pl reads it: the chunk starts or ends there.  ``io``
also reads bare types (``PER`` as ``I-PER``).  Everything inside structperc is IOB2
(``data/tags.py``); ``to_iob2`` and ``from_iob2`` convert one sentence at a time (a chunk never
crosses a sentence end), and ``from_iob2(to_iob2(t, s), s) == t`` for every sequence ``t`` the
scheme ``s`` writes (``tests/test_data_schemes.py`` checks it on every short sequence).

A label set without chunk prefixes (Penn Treebank POS tags, morphological tags) is no chunking:
its scheme is ``plain`` and its labels are used as they are, scored by token accuracy.
``detect_scheme`` tells the scheme from a corpus's raw labels (``data.scheme=auto``).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

log = logging.getLogger(__name__)

OUTSIDE = "O"
# the prefixes each scheme reads, the ones that begin a chunk and the ones that end one
READS: dict[str, frozenset[str]] = {
    "iob1": frozenset("BI"),
    "iob2": frozenset("BI"),
    "io": frozenset("BI"),
    "ioe1": frozenset("IE"),
    "ioe2": frozenset("IE"),
    "iobes": frozenset("BIES"),
    "bilou": frozenset("BILU"),
}
BEGINS, ENDS = frozenset("BSU"), frozenset("ESLU")
CHUNK_SCHEMES = tuple(READS)
ALIASES = {"ioe": "ioe2", "bioes": "iobes", "bio": "iob2", "iob": "iob1"}
PLAIN = "plain"
SCHEMES = (*CHUNK_SCHEMES, PLAIN)  # what a corpus can be in; "auto" asks detect_scheme
_PREFIXED = re.compile(r"^[BIESLU]-\S")
# the share of a tag-scheme pair's evidence the other scheme may have and still be chosen by
# data.scheme=auto (detect_scheme): a handful of slips among thousands of chunks
STRAYS = 0.01


class SchemeError(ValueError):
    """Labels that the scheme cannot read, or a corpus whose scheme cannot be told."""


def scheme_name(name: str) -> str:
    """The scheme ``name`` (lower case, aliases such as ``ioe`` resolved); ValueError naming the
    schemes otherwise."""
    key = str(name).lower()
    key = ALIASES.get(key, key)
    if key not in SCHEMES:
        raise ValueError(f"unknown tag scheme {name!r}: expected auto or one of {SCHEMES}")
    return key


def is_prefixed(label: str) -> bool:
    """Whether ``label`` has a chunk prefix: one of B I E S L U, a hyphen, a type."""
    return bool(_PREFIXED.match(label))


def _split(label: str, scheme: str) -> tuple[str, str]:
    """(prefix, type) of a label under ``scheme``; SchemeError for one it does not read."""
    if label == OUTSIDE:
        return OUTSIDE, ""
    if scheme == "io" and not is_prefixed(label):
        return "I", label  # a bare type
    prefix, dash, kind = label.partition("-")
    if not dash or prefix not in READS[scheme] or not kind.strip():
        allowed = ", ".join(f"{p}-TYPE" for p in sorted(READS[scheme]))
        raise SchemeError(f"label {label!r} is not {scheme.upper()}: expected O, {allowed}")
    return prefix, kind


def chunks(labels: Sequence[str], scheme: str) -> list[tuple[int, int, str]]:
    """The chunks of one sentence as (start, end exclusive, type), read by the module's rule.

    SchemeError names the first label the scheme does not read (``SchemeError.index``: its
    position)."""
    parts = []
    for i, label in enumerate(labels):
        try:
            parts.append(_split(label, scheme))
        except SchemeError as err:
            err.index = i
            raise
    out: list[tuple[int, int, str]] = []
    start, kind = -1, ""
    for i, (prefix, typ) in enumerate(parts):
        ended = kind and parts[i - 1][0] in ENDS
        if kind and (typ != kind or prefix in BEGINS or ended):
            out.append((start, i, kind))
            kind = ""
        if typ and not kind:
            start, kind = i, typ
    if kind:
        out.append((start, len(parts), kind))
    return out


def to_iob2(labels: Sequence[str], scheme: str) -> list[str]:
    """One sentence's labels in IOB2 (``plain`` labels come back as they are)."""
    if scheme == PLAIN:
        return list(labels)
    out = [OUTSIDE] * len(labels)
    for start, end, kind in chunks(labels, scheme):
        out[start] = "B-" + kind
        out[start + 1 : end] = ["I-" + kind] * (end - start - 1)
    return out


def from_iob2(labels: Sequence[str], scheme: str) -> list[str]:
    """One sentence's IOB2 labels written in ``scheme`` (the module's table)."""
    if scheme == PLAIN:
        return list(labels)
    spans = chunks(labels, "iob2")
    out = [OUTSIDE] * len(labels)
    for k, (start, end, kind) in enumerate(spans):
        tags = ["I"] * (end - start)
        after_same = k > 0 and spans[k - 1][1] == start and spans[k - 1][2] == kind
        before_same = k + 1 < len(spans) and spans[k + 1][0] == end and spans[k + 1][2] == kind
        if scheme == "iob2" or (scheme == "iob1" and after_same):
            tags[0] = "B"
        elif scheme == "ioe2" or (scheme == "ioe1" and before_same):
            tags[-1] = "E"
        elif scheme in ("iobes", "bilou"):
            single, last = ("S", "E") if scheme == "iobes" else ("U", "L")
            if end - start == 1:
                tags[0] = single
            else:
                tags[0], tags[-1] = "B", last
        out[start:end] = [f"{p}-{kind}" for p in tags]
    return out


def detect_scheme(sentences: Iterable[tuple[Sequence[str], Callable[[int], str]]]) -> str:
    """The scheme of a corpus's raw labels (``data.scheme=auto``).

    ``sentences``: (labels, where) per sentence, ``where(j)`` the "path:line" of its label j.
    ``plain`` when no label has a chunk prefix; else the chunk scheme whose prefixes the labels
    use (L or U: BILOU; S, or B with E: IOBES; E: IOE1 or IOE2; B and I: IOB1 or IOB2), the two
    of a pair told apart by where the labels put their prefixes (IOB2 begins every chunk with B,
    IOB1 only one that follows a chunk of its type; IOE likewise at the ends).  A corpus of I-
    and O alone reads the same as IOB1, IO and IOE1: it is IOB1.  When the labels give evidence
    for both schemes of a pair, the one with at most ``STRAYS`` of the other's evidence (an
    annotation slip among thousands of chunks: CoNLL-2002 Spanish has one sentence opening
    with ``I-LOC``) is chosen with one warning naming the count and the first stray, whose
    labels are then read as conlleval reads them (``chunks``); comparable evidence for both is
    a SchemeError naming a line of each, as is a mix of prefixed and bare labels.
    """
    first: dict[str, str] = {}  # evidence -> where it was first seen
    counts: Counter[str] = Counter()  # evidence -> how many labels give it
    prefixes: set[str] = set()
    for labels, where in sentences:
        kinds = [split_loose(t) for t in labels]
        for j, (prefix, kind) in enumerate(kinds):
            if prefix == OUTSIDE:
                continue
            key = "prefixed" if prefix else "bare"
            first.setdefault(key, f"{where(j)}: {labels[j]!r}")
            if not prefix:
                continue
            prefixes.add(prefix)
            prev_same = j > 0 and kinds[j - 1][1] == kind
            next_same = j + 1 < len(kinds) and kinds[j + 1][1] == kind
            evidence = []
            if prefix == "I" and not prev_same:
                evidence.append(("iob1", "begins a chunk"))
            if prefix == "B" and not prev_same:
                evidence.append(("iob2", "after no chunk of its type"))
            if prefix == "I" and not next_same:
                evidence.append(("ioe1", "ends a chunk"))
            if prefix == "E" and not next_same:
                evidence.append(("ioe2", "before no chunk of its type"))
            for key, what in evidence:
                counts[key] += 1
                first.setdefault(key, f"{where(j)}: {labels[j]!r} {what}")
    if "bare" in first and "prefixed" in first:
        raise SchemeError(
            f"{first['bare']} has no chunk prefix but {first['prefixed']} has one: expected "
            "chunk labels (B-TYPE, I-TYPE, ...) or plain labels throughout (data.scheme=io reads "
            "bare types as I-TYPE)"
        )
    if "prefixed" not in first:
        return PLAIN if "bare" in first else "iob2"
    if prefixes & {"L", "U"}:
        return _only(prefixes, "bilou", first)
    if "S" in prefixes or {"B", "E"} <= prefixes:
        return _only(prefixes, "iobes", first)
    pair = ("ioe1", "ioe2") if "E" in prefixes else ("iob1", "iob2")
    if pair[0] in first and pair[1] in first:
        return _majority(pair, counts, first)
    return pair[1] if pair[1] in first else pair[0]


def _majority(pair: tuple[str, str], counts: Counter[str], first: dict[str, str]) -> str:
    """The scheme of ``pair`` whose evidence outweighs the other's by 1 / ``STRAYS`` or more
    (with a warning naming the strays), else SchemeError (``detect_scheme``)."""
    most, fewest = sorted(pair, key=lambda k: -counts[k])
    if counts[fewest] <= STRAYS * counts[most]:
        log.warning(
            "data.scheme=auto: %s (%s labels read as %s; %s as %s, read as conlleval reads "
            "%s: first %s)",
            most.upper(), f"{counts[most]:,}", most.upper(), f"{counts[fewest]:,}",
            fewest.upper(), "it" if counts[fewest] == 1 else "them", first[fewest],
        )  # fmt: skip
        return most
    raise SchemeError(
        f"data.scheme=auto cannot tell the tag scheme: {counts[pair[0]]:,} labels read as "
        f"{pair[0].upper()} (first {first[pair[0]]}), {counts[pair[1]]:,} as "
        f"{pair[1].upper()} (first {first[pair[1]]}): name it "
        f"(data.scheme={pair[0]} or {pair[1]})"
    )


def _only(prefixes: set[str], scheme: str, first: dict[str, str]) -> str:
    extra = sorted(prefixes - READS[scheme])
    if extra:
        raise SchemeError(
            f"data.scheme=auto: the labels use the prefixes {sorted(prefixes)}, which no one "
            f"scheme has ({scheme.upper()} has no {extra[0]}-; first label: {first['prefixed']})"
        )
    return scheme


def split_loose(label: str) -> tuple[str, str]:
    """(prefix, type) of any label: ("O", "") for O, ("", label) for one without a chunk prefix."""
    if label == OUTSIDE:
        return OUTSIDE, ""
    if is_prefixed(label):
        return label[0], label[2:]
    return "", label
