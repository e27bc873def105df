"""The notation the non-local feature families share: tokens, mentions, feature strings.

Tokens x_0 .. x_{T-1}; w_i = x_i, lower-cased when ``casefold``.  The mentions M(y) are the
maximal IOB2 spans m = (s, e, c) of y (``data.tags.spans``, the conlleval rule), with class
c = the entity type; "O" stands for "not an entity".  str(m) = (w_s .. w_{e-1}).  An
*occurrence* of a token string u is any position p with (w_p .. w_{p+|u|-1}) = u.  Pairs of
classes in unordered pairs are written in alphabetical order.  A feature is the string
``<family>=<class>|<class>`` and Φ^g counts how often it fires: each unordered mention pair,
each (mention, unlabeled occurrence) pair, each mention token and each mention fires once, so
k equal mentions give k(k-1)/2 phrase pairs.

Sentences and connectors are here too, for ``conj`` and for ``DocumentIndex``: the tokens
between two linked mentions are one of ``CONNECTORS`` (lower-cased), of kind ``COMMA`` (",")
or ``AND_OR`` (the others).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

FAMILIES = ("phrase", "subphrase", "tokmaj", "entmaj", "supmaj", "conj")
CONNECTORS = {(",",): 1, ("and",): 2, ("or",): 2, (",", "and"): 2, (",", "or"): 2}
COMMA, AND_OR = 1, 2  # link kinds
Mention = tuple[int, int, str]


def check_families(families: Iterable[str]) -> tuple[str, ...]:
    """The chosen families in the order of ``FAMILIES``; unknown names raise ``ValueError``."""
    chosen = tuple(families)
    unknown = set(chosen) - set(FAMILIES)
    if unknown:
        raise ValueError(f"unknown non-local families {sorted(unknown)}; known: {FAMILIES}")
    return tuple(f for f in FAMILIES if f in chosen)


def feature(family: str, a: str, b: str) -> str:
    """The feature string ``family=a|b``."""
    return f"{family}={a}|{b}"


def pair(family: str, a: str, b: str) -> str:
    """The feature of an unordered pair of classes (alphabetical order)."""
    return feature(family, *sorted((a, b)))


def normalize(tokens: Sequence[str], casefold: bool) -> list[str]:
    """The token strings compared by the features (lower-cased when ``casefold``)."""
    return [t.lower() for t in tokens] if casefold else list(tokens)


def occurrences(tokens: Sequence[str], string: Sequence[str]) -> list[int]:
    """Start positions p with tokens[p:p + len(string)] == string."""
    n, k = len(tokens), len(string)
    return [p for p in range(n - k + 1) if list(tokens[p : p + k]) == list(string)]


def contains(outer: Sequence[str], inner: Sequence[str]) -> bool:
    """Whether ``inner`` is a proper contiguous sub-sequence of ``outer``."""
    return len(inner) < len(outer) and bool(occurrences(outer, inner))


def sentence_ids(length: int, sentence_starts: Sequence[int]) -> np.ndarray:
    """[T] int64: the sentence of every token."""
    marks = np.zeros(length + 1, dtype=np.int64)
    marks[[s for s in sentence_starts if 0 < s < length]] = 1
    return np.cumsum(marks)[:length]
