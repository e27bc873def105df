"""Gazetteer matching: the longest entry starting at each token, as an IOB2 tag per entity type.

Kazama & Torisawa (2007) Table 1 uses ``go`` (ORG), ``gp`` (PER) and ``gm`` (MISC): for each type,
the tokens of the longest (greedy, left to right, non-overlapping) match with an entry of that
type get ``B``/``I``, the others ``O``.

The CoNLL-2003 list ``eng.list`` was built from the training annotations (8,214 of its 8,215
entries are training entities), so on training documents it is an oracle.  ``jackknife`` mode
removes that leak: the training documents are split into K folds, and a document of fold k is
matched only against entries that occur as same-type entities in the *other* folds; dev and test
documents see the whole list, as a user would.  ``naive`` uses the whole list everywhere and
``none`` switches the attributes off.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from structperc.data.document import Document
from structperc.data.tags import known_spans

Entries = dict[str, set[tuple[str, ...]]]  # type -> set of token tuples

MODES = ("none", "naive", "jackknife")


def read_gazetteer(path: str | Path) -> Entries:
    """Read a ``TYPE word word ...`` list (one entry a line) into type -> entries."""
    entries: Entries = defaultdict(set)
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) < 2:
                raise ValueError(f"{path}:{lineno}: expected 'TYPE word [word ...]', got {line!r}")
            entries[parts[0]].add(tuple(parts[1:]))
    return dict(entries)


class EntryIndex:
    """Entries of one type, indexed by first token for greedy longest matching.

    ``lowercase`` matches case-insensitively (so all-capitals headlines match too).
    """

    def __init__(self, entries: set[tuple[str, ...]], lowercase: bool = False):
        self.lowercase = lowercase
        if lowercase:
            entries = {tuple(w.lower() for w in e) for e in entries}
        self.entries = entries
        by_first: dict[str, set[int]] = defaultdict(set)
        for e in entries:
            by_first[e[0]].add(len(e))
        self.lengths = {w: sorted(ns, reverse=True) for w, ns in by_first.items()}

    def match(self, tokens: list[str]) -> list[str]:
        """IOB2 tags (B/I/O, no type) of the greedy longest matches in ``tokens``."""
        if self.lowercase:
            tokens = [w.lower() for w in tokens]
        tags = ["O"] * len(tokens)
        t = 0
        while t < len(tokens):
            for n in self.lengths.get(tokens[t], ()):
                # t + n past the end: the slice would be cut short and could equal a shorter entry
                if t + n <= len(tokens) and tuple(tokens[t : t + n]) in self.entries:
                    tags[t] = "B"
                    for u in range(t + 1, t + n):
                        tags[u] = "I"
                    t += n
                    break
            else:
                t += 1
        return tags


def jackknife_entries(train: list[Document], entries: Entries, folds: int) -> list[Entries]:
    """For each fold k, the entries that occur as same-type entities outside fold k."""
    seen: dict[tuple[str, tuple[str, ...]], set[int]] = defaultdict(set)
    for i, doc in enumerate(train):
        if doc.tags is None:
            continue
        for start, end, typ in known_spans(doc.tags):  # (the entities the annotation fixes)
            seen[(typ, tuple(doc.tokens[start:end]))].add(i % folds)
    out = []
    for k in range(folds):
        out.append(
            {
                typ: {e for e in ents if seen.get((typ, e), set()) - {k}}
                for typ, ents in entries.items()
            }
        )
    return out


def gazetteer_columns(
    docs: list[Document], indexes_per_doc: list[dict[str, EntryIndex]], types: dict[str, str]
) -> list[dict[str, list[str]]]:
    """Per document, attribute name (e.g. ``go``) -> B/I/O tag per token.

    ``types`` maps attribute names to entity types (``{"go": "ORG", ...}``); ``indexes_per_doc``
    gives, per document, the entry index of each type it may be matched against.
    """
    empty = EntryIndex(set())
    return [
        {name: idx.get(typ, empty).match(doc.tokens) for name, typ in types.items()}
        for doc, idx in zip(docs, indexes_per_doc, strict=True)
    ]
