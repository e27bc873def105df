"""Plain text split into tokens as CoNLL-2003 splits it, for word classes learned from raw text.

CoNLL-2003 (Tjong Kim Sang & De Meulder 2003) is tokenised much as the Penn Treebank is (Marcus
et al. 1993), with a few differences that matter to a word's class, read off its training file:

- punctuation at a word's edges is split off (``,`` ``;`` ``:`` ``?`` ``!`` ``(`` ``)`` ``"``
  ``'``), and so is a word's final period, except after an abbreviation: letters each followed
  by a period (``U.S.``, ``J.``, ``a.m.``) and a short list of titles, company forms and months
  (``Mr.``, ``Inc.``, ``Sept.``, ``vs.``) keep it;
- the clitics ``'s`` ``n't`` ``'re`` ``'m`` ``'ve`` ``'ll`` ``'d`` are tokens (``do n't``,
  ``ca n't``, ``Reuters 's``), while an apostrophe inside a name stays (``O'Brien``);
- double quotes are straight (``"``), where the Treebank writes ```` `` ```` and ``''``; brackets
  are ``(`` ``)``, not ``-LRB-``;
- hyphens, slashes and the commas, colons and periods inside numbers stay inside the token
  (``1996-08-22``, ``1,000``, ``5.93``, ``10:30``); ``...`` and ``--`` are tokens.

``conll_tokens`` is idempotent on text already split this way (a CoNLL sentence joined by spaces
comes back as its tokens, save for a few odd tokens such as ``f...``), so pre-tokenised sources
(the Brown corpus and MASC, with Treebank quotes) and raw prose go through the same function.
It is a handful of regular expressions, ~10x faster than syntok's segmenter (which the tagging
CLI uses on new text, and which splits ``U.S.`` and ``O'Brien``).
"""

from __future__ import annotations

import re

# Treebank and typographic quotes -> CoNLL's straight ones
_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})
_TREEBANK_QUOTES = re.compile(r"``|''")

# punctuation split off a word's start and end
_LEADING = re.compile(r"^([\"'(\[{]|\$(?=\d)|\.\.\.+|--+)")
_TRAILING = re.compile(r"([\"')\]},;:?!]|(?<=\d)%|\.\.\.+|--+)$")
_CLITIC = re.compile(r"^(.*[A-Za-z].*?)(n't|N'T|'s|'S|'re|'RE|'m|'M|'ve|'VE|'ll|'LL|'d|'D)$")
_LONE_CLITIC = re.compile(r"^'(s|re|m|ve|ll|d)\b", re.IGNORECASE)
_PUNCTUATION = re.compile(r"^[.\-]+$")  # "...", "--", "." stay whole
_ABBREVIATION = re.compile(r"^([A-Za-z]\.)+$")
ABBREVIATIONS = frozenset(
    "Mr Mrs Ms Dr Prof St Sr Jr Inc Corp Co Ltd Bros Cos Plc Gen Sen Rep Gov Lt Col Capt Sgt "
    "Maj Adm Rev Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec Mt Ft Ave No vs etc Ste "
    "approx Nos Pty Dept Univ Ala Ariz Ark Calif Colo Conn Del Fla Ga Ill Ind Kan Ky La Mass Md "
    "Mich Minn Miss Mo Mont Neb Nev Okla Ore Pa Penn Tenn Tex Va Vt Wash Wis Wyo".split()
)


def _split_word(word: str) -> list[str]:
    """One whitespace-separated chunk as its CoNLL tokens (see the module docstring)."""
    head: list[str] = []
    tail: list[str] = []
    while len(word) > 1 and not _PUNCTUATION.match(
        word
    ):  # peel punctuation off both ends until none is left
        m = _LEADING.match(word)
        if m and m.end() < len(word) and not _LONE_CLITIC.match(word):
            head.append(m.group(1))
            word = word[m.end() :]
            continue
        m = _TRAILING.search(word)
        if m and m.start() > 0:
            tail.append(m.group(1))
            word = word[: m.start()]
            continue
        if word.endswith(".") and not _keeps_period(word):
            tail.append(".")
            word = word[:-1]
            continue
        break
    m = _CLITIC.match(word)
    core = [m.group(1), m.group(2)] if m else [word]
    return head + core + tail[::-1]


def _keeps_period(word: str) -> bool:
    """Whether a word ending in ``.`` keeps the period as CoNLL-2003 does (an abbreviation)."""
    return bool(_ABBREVIATION.match(word)) or word[:-1] in ABBREVIATIONS


def conll_tokens(text: str) -> list[str]:
    """The tokens of ``text`` (a sentence, a paragraph or a line) in CoNLL-2003's form."""
    text = _TREEBANK_QUOTES.sub('"', text.translate(_QUOTES))
    out: list[str] = []
    for word in text.split():
        if word.isalnum():  # most words: nothing to split
            out.append(word)
        else:
            out.extend(_split_word(word))
    return out
