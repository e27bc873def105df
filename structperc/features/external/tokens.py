"""From a name as a package writes it to the token tuples a gazetteer entry holds.

CoNLL-2003 (Tjong Kim Sang & De Meulder 2003) tokenises on whitespace and splits off
punctuation, but keeps hyphenated words (``Bosnia-Herzegovina``), abbreviations with their
periods (``U.S.``, ``St.``) and apostrophes inside a word as one token.  A name is therefore
split on whitespace only, after three normalisations:

- it is cut at its first comma or opening parenthesis: what follows qualifies the name
  (``Korea, Republic of`` -> ``Korea``; ``Halle (Saale)`` -> ``Halle``);
- an ASCII form is added, with the accents dropped (``Zürich`` -> ``Zurich``): the CoNLL text
  is ASCII;
- an entry must begin with a capital letter (its first letter, so ``& Co.`` stays): a name in
  running text does, and the lists' few lower-case words (CLDR's ``world``) would fire on
  common words.
"""

from __future__ import annotations

import itertools
import re
import unicodedata

_QUALIFIER = re.compile(r"[,(]")
MAX_ALL_CASINGS = 4  # letters of a one-token term whose every casing is an entry (casings())


def ascii_fold(name: str) -> str:
    """``name`` with combining accents removed (``São Paulo`` -> ``Sao Paulo``)."""
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def starts_capitalised(tokens: tuple[str, ...]) -> bool:
    """Whether the first letter of the entry is a capital (True for ``& Co.``)."""
    first = next((c for c in "".join(tokens) if c.isalpha()), "")
    return first.isupper()


def name_variants(name: str) -> set[tuple[str, ...]]:
    """The entries of one name: its tokens and those of its ASCII form (see the module doc)."""
    name = _QUALIFIER.split(name, maxsplit=1)[0]
    out = set()
    for form in (name, ascii_fold(name)):
        tokens = tuple(form.split())
        if tokens and starts_capitalised(tokens):
            out.add(tokens)
    return out


def casings(term: str) -> set[str]:
    """The capitalised spellings of a lower-case term, for lists that give only lower case.

    A one-token term of at most ``MAX_ALL_CASINGS`` letters gets every casing whose first
    letter is a capital (``gmbh`` -> ``GmbH``, ``GMBH``, ``Gmbh``, ...; ``s.p.a.`` ->
    ``S.p.A.``); any other term its title case and its upper case (``pty. ltd.`` ->
    ``Pty. Ltd.``, ``PTY. LTD.``).
    """
    term = term.strip()
    letters = [i for i, c in enumerate(term) if c.isalpha()]
    if not letters:
        return set()
    if len(term.split()) > 1 or len(letters) > MAX_ALL_CASINGS:
        return {term.title(), term.upper()}
    out = set()
    first, rest = letters[0], letters[1:]
    for upper in itertools.product((False, True), repeat=len(rest)):
        chars = list(term.lower())
        chars[first] = chars[first].upper()
        for i, up in zip(rest, upper, strict=True):
            if up:
                chars[i] = chars[i].upper()
        out.add("".join(chars))
    return out
