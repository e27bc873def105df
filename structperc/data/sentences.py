"""Sentence boundaries of a token sequence by syntok's rules, decided where they can fall.

syntok's segmenter (``syntok/_segmentation_states.py``, Florian Leitner) walks every token
through a state machine in Python; the boundaries it finds can only fall after a terminal
(``. ! ? ; ...`` and their Unicode forms) or around an opening bracket.  ``sentence_starts``
visits those places alone and decides each by the same tests, in syntok's order:

    no split before a lower-case word or inner punctuation (, ; :)
    a split before a sentence starter ("The", "However", ...), unless the sentence so far is
        one letter or a Roman numeral
    no split after an abbreviation (Dr, Inc, Corp, Mr, ...), after "No" before a number, before
        a number written on without a space, before a non-title word (or one letter) written on
        without a space, before a number of three digits or more, between a number and a month
        (and a month and a number), after a token with a dot inside ("U.S."), after one letter or
        Roman numeral that is the whole sentence or in capitals, after one consonant
    before an opening bracket: a split when the word after it is in title case, none when the
        word after the bracketed text is inner punctuation or lower case
    otherwise a split.

Closing brackets, terminals and a closing quote written on stay with the sentence they end, and
short bracketed text (within 50 tokens and under 70 characters, or without a sentence of its
own) never holds a boundary.  What this leaves out of syntok's machine is how it reads a
bracket that opens a sentence of three tokens or more (a sentence of its own here too) and the
rarest branches of its bracket look-ahead; ``experiments/bench/tagging`` reports how often the
two agree on raw newswire.
"""

from __future__ import annotations

from collections.abc import Sequence

from syntok._segmentation_states import State

TERMINALS = State.terminals
OPENING = State.opening_brackets
CLOSING = State.closing_brackets
CLOSING_QUOTES = State.closing_quotes
INNER = State.inner_sentence_punctuation
SPECIAL = TERMINALS | OPENING  # where a boundary may be decided
BRACKET_TOKENS = 50  # syntok's look-ahead for a closing bracket
BRACKET_CHARS = State.max_bracket_skipping_length


def _single_or_roman(token: str) -> bool:
    return len(token) == 1 or token in State.roman_numerals


def _bracketed(values: Sequence[str], i: int) -> tuple[int, bool]:
    """(the index of the token that closes the bracket at ``i`` within ``BRACKET_TOKENS``
    tokens, or -1; whether the bracketed text looks like a sentence: a first word in title
    case, a last word before a terminal), as syntok's ``__find_end_of_bracketed_text``."""
    depth, first_is_title, last_is_terminal = 1, None, False
    for k in range(i + 1, min(len(values), i + BRACKET_TOKENS)):
        v = values[k]
        if first_is_title is None and v.isalnum():
            first_is_title = v.istitle()
        elif first_is_title and v.isalnum():
            last_is_terminal = k + 1 < len(values) and values[k + 1] in TERMINALS
        if v in OPENING:
            depth += 1
        elif v in CLOSING:
            depth -= 1
            if depth == 0:
                return k, bool(first_is_title and last_is_terminal)
    return -1, False


def _bracket_end(values: Sequence[str], starts: Sequence[int], i: int) -> int:
    """The index of the token that closes the bracket at ``i`` when syntok skips the bracketed
    text (closed, and short or without a sentence inside), else -1."""
    end, inner = _bracketed(values, i)
    if end < 0:
        return -1
    short = starts[end] + len(values[end]) - starts[i] < BRACKET_CHARS
    return end if short or not inner else -1


def _splits(
    values: Sequence[str], spaced: Sequence[bool], before: str, nxt: int, after: str, first: bool
) -> bool:
    """syntok's decision (``_move_and_maybe_extract_terminal``) whether a sentence starts at
    token ``nxt``: ``before`` the token before the terminal, ``after`` the token after it,
    ``first`` whether the sentence so far is one token."""
    value = values[nxt]
    if value[:1].islower() or value in INNER:
        return False
    if not (first and _single_or_roman(before)) and value in State.starters:
        return True
    if before in State.abbreviations and after not in CLOSING:
        return False
    if before in ("no", "No", "NO") and value.isalnum() and any(c.isnumeric() for c in value):
        return False
    no_space = not spaced[nxt]
    if value.isnumeric() and no_space:
        return False
    if no_space and (not after.istitle() or not after.isalpha() or len(after) == 1):
        return False
    if value.isnumeric() and len(value) > 2:
        return False
    if before.isnumeric() and value in State.months:
        return False
    if before in State.months and value.isnumeric():
        return False
    if "." in before and after != ".":
        return False
    if (first or before.isupper()) and _single_or_roman(before):
        return False
    if len(before) == 1 and before.isalpha() and before not in State.vowels:
        return False
    if after in OPENING:  # the bracket at ``nxt``: what follows it, and what follows its end
        end, inner = _bracketed(values, nxt)
        past = values[end + 1] if end >= 0 and not inner and end + 1 < len(values) else ""
        if past in INNER:
            return False
        if nxt + 1 < len(values) and values[nxt + 1].istitle():
            return True
        return not past[:1].islower()
    return True


def sentence_starts(
    values: Sequence[str], starts: Sequence[int], spaced: Sequence[bool]
) -> list[int]:
    """The index of the first token of every sentence of a paragraph's tokens (``values``, their
    character ``starts`` and syntok spacing flags), ascending from 0; [] for no tokens."""
    n = len(values)
    if not n:
        return []
    out = [0]
    marks = [i for i, v in enumerate(values) if v in SPECIAL]
    skip_to = -1  # tokens up to here lie in bracketed text syntok skips (or a terminal's tail)
    group_end = -1  # the last token of the last bracketed text skipped
    moved = -1  # a token syntok moves as a word, whatever it is
    for i in marks:
        if i <= skip_to or i == 0 and values[0] not in OPENING:
            continue
        v = values[i]
        if v in OPENING:
            if i == moved:
                continue
            end = _bracket_end(values, starts, i)
            if i == out[-1]:  # a sentence opened by a bracket: a sentence of its own if long
                if end >= 0:
                    if end - i + 1 > 3 and end + 1 < n and not values[end + 1][:1].islower():
                        out.append(end + 1)
                    else:  # the sentence goes on: its next token is moved as a word
                        moved = end + 1
                    skip_to = group_end = end
                continue
            first = i - 1 == out[-1]
            if first and v != "(":  # moved as a word: its text is read token by token
                continue
            if end >= 0 and not first and i - 1 != group_end:  # skipped as the word before moves
                skip_to = group_end = end
                continue
            # syntok decides here as after a terminal: at the word after the bracketed text when
            # it skips it, else at the bracket
            before = values[i - 1]
            if end >= 0:
                skip_to = group_end = end
                if end + 1 < n and _splits(values, spaced, before, end + 1, values[end + 1], first):
                    out.append(end + 1)
            elif _splits(values, spaced, before, i, v, first):
                out.append(i)
            continue
        # a terminal at i: it and what follows it belong to the sentence
        before = values[i - 1]
        first = i - 1 == out[-1]
        k = i + 1
        after = None
        while k < n and (values[k] in TERMINALS or values[k] in CLOSING):
            after = values[k] if after is None else after
            k += 1
        if k < n and values[k] in CLOSING_QUOTES and not spaced[k]:
            after = values[k] if after is None else after
            k += 1
        while k < n and (values[k] in TERMINALS or values[k] in CLOSING):
            after = values[k] if after is None else after
            k += 1
        skip_to = k - 1
        if k >= n:
            break
        if values[k] in OPENING:
            after = values[k]
        after = values[k] if after is None else after
        if _splits(values, spaced, before, k, after, first):
            out.append(k)
    return out
