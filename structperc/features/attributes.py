"""Per-token surface attributes of Kazama & Torisawa (2007), Table 1.

Each attribute maps a token (with its POS and chunk columns) to a string value, or to None when it
does not fire.  The word-form flags follow Bikel et al. (1999):

    2d   two digits ("96")              4d   four digits ("1996")
    d&a  digits and letters ("A8")      d&-  digits and a dash ("12-3")
    d&/  digits and a slash ("1/2")     d&,  digits and a comma ("1,000")
    d&.  digits and a period ("1.5")    n    any other token made of digits only
    ic   initial capital ("Smith")      ac   all capitals ("EU")
    l    all lower case ("the")         cp   a capital followed by a period ("J.")

``w`` is the word, ``wl`` the lower-cased word, ``pos``/``chk`` the POS and chunk columns,
``p1..p4``/``s1..s4`` the prefixes and suffixes of length 1..4 (only when the word is at least
that long).  Gazetteer attributes (``go``, ``gp``, ``gm``, ...) come from ``gazetteer.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from structperc.data.document import Document

WORD_FLAGS: dict[str, Callable[[str], bool]] = {
    "2d": re.compile(r"^\d\d$").match,
    "4d": re.compile(r"^\d\d\d\d$").match,
    "d&a": lambda w: any(c.isdigit() for c in w) and any(c.isalpha() for c in w),
    "d&-": lambda w: any(c.isdigit() for c in w) and "-" in w,
    "d&/": lambda w: any(c.isdigit() for c in w) and "/" in w,
    "d&,": lambda w: any(c.isdigit() for c in w) and "," in w,
    "d&.": lambda w: any(c.isdigit() for c in w) and "." in w,
    "n": lambda w: w.isdigit() and len(w) not in (2, 4),
    "ic": lambda w: w[:1].isupper(),
    "ac": lambda w: w.isupper(),
    "l": lambda w: w.islower(),
    "cp": re.compile(r"^[A-Z]\.$").match,
}

LEXICAL = ("w", "wl", "pos", "chk", "p1", "p2", "p3", "p4", "s1", "s2", "s3", "s4")
FLAGS = tuple(WORD_FLAGS)
TABLE1 = LEXICAL + FLAGS


def token_attributes(
    doc: Document, names: tuple[str, ...] = TABLE1, flag_off: str | None = None
) -> dict[str, list[str | None]]:
    """The attribute columns of one document: name -> one value (or None) per token.

    A word-form flag is ``"1"`` where it holds and ``flag_off`` elsewhere: None (the flag does
    not fire, the default) or a value such as ``"0"``, which makes "this flag is off" a surface
    feature too, as in a CRF++ column file where every flag has a value at every token.
    """
    words = doc.tokens
    cols: dict[str, list[str | None]] = {}
    for name in names:
        if name == "w":
            cols[name] = list(words)
        elif name == "wl":
            cols[name] = [w.lower() for w in words]
        elif name == "pos":
            cols[name] = list(doc.columns.get("pos") or [None] * len(words))
        elif name == "chk":
            cols[name] = list(doc.columns.get("chunk") or [None] * len(words))
        elif name[0] in "ps" and name[1:].isdigit():
            n = int(name[1:])
            cut = (lambda w, n=n: w[:n]) if name[0] == "p" else (lambda w, n=n: w[-n:])
            cols[name] = [cut(w) if len(w) >= n else None for w in words]
        elif name in WORD_FLAGS:
            test = WORD_FLAGS[name]
            cols[name] = ["1" if test(w) else flag_off for w in words]
        else:
            raise ValueError(f"unknown token attribute {name!r}; known: {', '.join(TABLE1)}")
    return cols
