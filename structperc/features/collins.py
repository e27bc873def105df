"""The global features of Collins (2002), section 3 and Figure 1, for reranking candidates.

A candidate is a tagged sequence; its features are a *set* of strings (binary values), computed
from the words and the candidate's tags alone.  Per word i (NULL outside the sequence):

    w_i   the word
    t_i   its tag in the candidate
    l_i   1 if the word begins with a lower-case letter, else 0
    f_i   the word's characters mapped to their type (A upper, a lower, 0 digit, any other
          character itself), consecutive repeats collapsed:  Animal -> Aa,  G.M. -> A.A.
    g_i   f_i with a flag appended: 1 if the word is in the lexicon of words seen more often
          lower-cased than capitalized (``LowercaseLexicon``, built from training text), else 0

Entity-anchored templates (Figure 1), one set per entity spanning words s..e of the candidate:
WE (the words), FF, GF (the f and g values), LW (last word), LWLC (its l), the bigram
boundaries BO00..BO11 (w or g of s-1 and s) and BE00..BE11 (e and e+1), the trigram boundaries
TO/TO2 (s-2..s and s-1..s+1) and TE/TE2 (e-1..e+1 and e-2..e), 8 each (w or g per position), and
the prefixes PF/PF2 (f and g of s..s+k) and suffixes SF/SF2 (e..e-k).  Collins recovers entity
boundaries only; with typed entities (CoNLL-2003) every entity-anchored feature is conjoined
with the entity's type: ``WE:PER=John_Smith`` (``typed=False`` gives Collins's own strings).

Quote templates: for a double quote at s and the next one at e, with e2 the last word inside
that begins with a letter or digit, Q (g and t of s..e) and Q2 (s-1..e+1) when e - s < 7, and

    QF  = F2.U.L.g_{s+1}.g_{e2}        QF2 = F2.F.g_{s+1}.g_{e2}

where F2 = 1 when the words inside are tagged as one entity, L counts the lower-cased words
inside and U the others (Collins's example has U = 7 for the six words of "The Day They Shot
John Lennon" and the comma before the closing quote) and F = 1 when U >= L.  Collins's running
example gives ``QF=1.7.0.Aa1.Aa0`` and ``QF2=1.1.Aa1.Aa0`` (tests/test_collins_features.py).

Reference: M. Collins (2002), Ranking algorithms for named-entity extraction: boosting and the
voted perceptron, ACL.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable

from structperc.data.tags import spans

NULL = "NULL"
QUOTES = frozenset({'"', "''", "``"})
MAX_QUOTE_SPAN = 7  # Q and Q2 only when e - s < 7 (Collins's footnote 2)


def char_type(c: str) -> str:
    if c.isupper():
        return "A"
    if c.islower():
        return "a"
    if c.isdigit():
        return "0"
    return c


def collapsed_type(word: str) -> str:
    """f: each character mapped to its type, consecutive repeats collapsed (Animal -> Aa)."""
    out: list[str] = []
    for c in word:
        t = char_type(c)
        if not out or out[-1] != t:
            out.append(t)
    return "".join(out)


class LowercaseLexicon:
    """Words seen more often lower-cased than capitalized in a text (case-folded entries).

    Counts, for each case-folded word, its occurrences that begin with a lower-case letter and
    those that begin with an upper-case one; a word is in the lexicon when the first outnumber
    the second.
    """

    def __init__(self, words: Iterable[str] = ()):
        self.words = frozenset(words)

    @classmethod
    def from_tokens(cls, tokens: Iterable[str]) -> LowercaseLexicon:
        lower: Counter = Counter()
        upper: Counter = Counter()
        for token in tokens:
            if token[:1].islower():
                lower[token.lower()] += 1
            elif token[:1].isupper():
                upper[token.lower()] += 1
        return cls(w for w, k in lower.items() if k > upper[w])

    def __contains__(self, word: str) -> bool:
        return word.lower() in self.words

    def __len__(self) -> int:
        return len(self.words)


def _join(values: Iterable[str], sep: str = "_") -> str:
    return sep.join(values)


class Sentence:
    """The per-word primitives of one token sequence (w, f, g, l), and the entity features
    already computed for it: the candidates of one unit share most of their entities."""

    def __init__(self, tokens: list[str], lexicon: LowercaseLexicon, typed: bool = True):
        self.tokens, self.typed = tokens, typed
        self.f = [collapsed_type(w) for w in tokens]
        self.g = [fi + ("1" if w in lexicon else "0") for fi, w in zip(self.f, tokens, strict=True)]
        self.lc = ["1" if w[:1].islower() else "0" for w in tokens]
        self.entities: dict[tuple[int, int, str], frozenset[str]] = {}

    def features(self, tags: list[str]) -> set[str]:
        """The global features of the candidate with IOB2 ``tags``."""
        out: set[str] = set()
        for span in spans(tags):
            if span not in self.entities:
                self.entities[span] = frozenset(self._entity(*span))
            out |= self.entities[span]
        out.update(quote_features(self.tokens, tags, self.g))
        return out

    def _entity(self, s: int, end: int, typ: str) -> set[str]:
        return entity_features(self.tokens, self.f, self.g, self.lc, s, end - 1, typ, self.typed)


def collins_features(
    tokens: list[str], tags: list[str], lexicon: LowercaseLexicon, typed: bool = True
) -> set[str]:
    """The global features of one candidate: ``tokens`` with IOB2 ``tags`` (section 3)."""
    return Sentence(tokens, lexicon, typed).features(tags)


def entity_features(
    tokens: list[str],
    f: list[str],
    g: list[str],
    lc: list[str],
    s: int,
    e: int,
    typ: str,
    typed: bool,
) -> set[str]:
    """Figure 1's features of the entity s..e (inclusive) of type ``typ``."""
    n = len(tokens)

    def at(values: list[str], i: int) -> str:
        return values[i] if 0 <= i < n else NULL

    out: set[str] = set()
    suffix = f":{typ}" if typed else ""

    def name(k: str) -> str:
        return k + suffix

    out.add(f"{name('WE')}={_join(tokens[s : e + 1])}")
    out.add(f"{name('FF')}={_join(f[s : e + 1])}")
    out.add(f"{name('GF')}={_join(g[s : e + 1])}")
    out.add(f"{name('LW')}={tokens[e]}")
    out.add(f"{name('LWLC')}={lc[e]}")
    for bits in itertools.product((0, 1), repeat=2):
        a, b = ((tokens, g)[x] for x in bits)
        key = "".join(map(str, bits))
        out.add(f"{name('BO' + key)}={at(a, s - 1)}_{at(b, s)}")
        out.add(f"{name('BE' + key)}={at(a, e)}_{at(b, e + 1)}")
    for bits in itertools.product((0, 1), repeat=3):
        a, b, c = ((tokens, g)[x] for x in bits)
        key = "".join(map(str, bits))
        out.add(f"{name('TO' + key)}={at(a, s - 2)}_{at(b, s - 1)}_{at(c, s)}")
        out.add(f"{name('TO2' + key)}={at(a, s - 1)}_{at(b, s)}_{at(c, s + 1)}")
        out.add(f"{name('TE' + key)}={at(a, e - 1)}_{at(b, e)}_{at(c, e + 1)}")
        out.add(f"{name('TE2' + key)}={at(a, e - 2)}_{at(b, e - 1)}_{at(c, e)}")
    for k in range(e - s + 1):
        out.add(f"{name('PF')}={_join(f[s : s + k + 1])}")
        out.add(f"{name('PF2')}={_join(g[s : s + k + 1])}")
        out.add(f"{name('SF')}={_join(f[e - k : e + 1][::-1])}")
        out.add(f"{name('SF2')}={_join(g[e - k : e + 1][::-1])}")
    return out


def quote_features(tokens: list[str], tags: list[str], g: list[str]) -> set[str]:
    """Q, Q2, QF, QF2 of every pair of consecutive double quotes (module docstring)."""
    n = len(tokens)
    out: set[str] = set()
    quotes = [i for i, w in enumerate(tokens) if w in QUOTES]
    for s, e in zip(quotes[::2], quotes[1::2], strict=False):
        inside = range(s + 1, e)
        words = [i for i in inside if tokens[i][:1].isalnum()]
        if not words:
            continue
        e2 = words[-1]
        if e - s < MAX_QUOTE_SPAN:
            out.add("Q=" + _join(f"{g[i]}_{tags[i]}" for i in range(s, e + 1)))
            lo, hi = max(s - 1, 0), min(e + 1, n - 1)
            q2 = [NULL, NULL] if s == 0 else []
            q2 += [f"{g[i]}_{tags[i]}" for i in range(lo, hi + 1)]
            q2 += [NULL, NULL] if e == n - 1 else []
            out.add("Q2=" + _join(q2))
        first = s + 1
        one_entity = tags[first].startswith("B-") and all(
            tags[i] == "I-" + tags[first][2:] for i in range(first + 1, e2 + 1)
        )
        lower = sum(tokens[i][:1].islower() for i in inside)
        upper = len(inside) - lower  # not lower-cased: Collins's U = 7 counts the comma too
        F2, F = int(one_entity), int(upper >= lower)
        out.add(f"QF={F2}.{upper}.{lower}.{g[first]}.{g[e2]}")
        out.add(f"QF2={F2}.{F}.{g[first]}.{g[e2]}")
    return out
