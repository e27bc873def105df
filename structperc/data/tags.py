"""Tag-scheme helpers: validate IOB tags, convert IOB1 to IOB2, and read entity spans.

Everything inside structperc works on IOB2 (every entity starts with ``B-X``).  CoNLL-2003 ships
IOB1 (``I-X`` starts an entity, ``B-X`` only separates two adjacent entities of one type), so the
readers convert on the way in.  ``spans`` uses the conlleval rule, under which IOB1 and IOB2 read
the same: an entity starts at ``B-X`` or at an ``I-X`` that follows ``O`` or another type.
``label_set`` and ``encode_labels`` give a training set's labels and their ids.

IOBES (``S-X`` a one-token chunk, ``E-X`` a chunk's last token; Ratinov & Roth 2009) is a
training encoding only: a chain trained on it (the tagchunk chunker) knows where a chunk ends, and
its output is turned back into IOB2 (``iobes_to_iob2``) before anything scores or writes it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from structperc.data.document import Document
from structperc.data.partial import allowed_mask, cell_labels, has_partial, is_partial, known_tags

OUTSIDE = "O"
PREFIXES = ("B", "I")


class TagError(ValueError):
    """A tag that is not ``O``, ``B-X`` or ``I-X`` with a non-empty type ``X``."""


def split_tag(tag: str) -> tuple[str, str]:
    """Split a tag into (prefix, type): ``"B-PER"`` -> ``("B", "PER")``, ``"O"`` -> ``("O", "")``.

    Raises TagError for anything else: another prefix (``E-X``, ``S-X``), a missing type
    (``B-``), a missing dash (``BPER``) or an empty tag.
    """
    if tag == OUTSIDE:
        return OUTSIDE, ""
    prefix, dash, kind = tag.partition("-")
    if not dash or prefix not in PREFIXES:
        raise TagError(f"unknown tag {tag!r}: expected O, B-TYPE or I-TYPE")
    if not kind or kind.isspace():
        raise TagError(f"tag {tag!r} has no type: expected B-TYPE or I-TYPE")
    return prefix, kind


def iob1_to_iob2(tags: list[str]) -> list[str]:
    """Convert one sentence's tags from IOB1 to IOB2.

    An ``I-X`` at the start, after ``O`` or after a tag of another type becomes ``B-X``; ``B-X``
    stays ``B-X``.  Well-formed IOB2 comes back unchanged, so the call is safe on either scheme.
    Convert sentence by sentence: across a sentence boundary an entity must restart.
    """
    out: list[str] = []
    prev_kind = ""
    for tag in tags:
        prefix, kind = split_tag(tag)
        if prefix == "I" and kind != prev_kind:
            tag = "B-" + kind
        out.append(tag)
        prev_kind = kind
    return out


def is_iob2_labeling(tags: Sequence[str]) -> bool:
    """Whether every tag is ``O``, ``B-X`` or ``I-X`` (a chunk labeling, not plain labels)."""
    return all(t == "O" or t[:2] in ("B-", "I-") for t in tags)


def valid_iob2(tags: Sequence[str], sentence_spans: Sequence[tuple[int, int]]) -> list[str]:
    """A document's IOB2 tags as IOB2 writes them, sentence by sentence (``iob1_to_iob2``): an
    ``I-X`` that begins a chunk (a decoder without constraints may put one after ``O``, after
    another type, or at a sentence start) becomes ``B-X``, the chunk conlleval reads there.
    The chunks are unchanged; plain labels (``is_iob2_labeling`` false) come back as they are."""
    if not is_iob2_labeling(tags):
        return list(tags)
    out: list[str] = []
    for s, e in sentence_spans:
        out.extend(iob1_to_iob2(list(tags[s:e])))
    return out


def iob2_to_iobes(tags: list[str]) -> list[str]:
    """One sentence's IOB2 tags in IOBES: a chunk's last token ``E-X`` (``S-X`` when it is also
    its first); the other tags unchanged.  ``[B-NP, I-NP, B-VP]`` -> ``[B-NP, E-NP, S-VP]``."""
    out: list[str] = []
    for i, tag in enumerate(tags):
        prefix, kind = split_tag(tag)
        if prefix == OUTSIDE:
            out.append(tag)
            continue
        last = i + 1 == len(tags) or tags[i + 1] != "I-" + kind
        if last:
            prefix = "S" if prefix == "B" else "E"
        out.append(f"{prefix}-{kind}")
    return out


def iobes_to_iob2(tags: list[str]) -> list[str]:
    """IOBES tags as IOB2 (``S-X`` -> ``B-X``, ``E-X`` -> ``I-X``); IOB2 tags come back unchanged,
    so the call is safe on either scheme (and on tag sets such as POS tags that use neither)."""
    return [("B-" if t[0] == "S" else "I-") + t[2:] if t[:2] in ("S-", "E-") else t for t in tags]


def spans(tags: list[str]) -> list[tuple[int, int, str]]:
    """Maximal entity spans as ``(start, end_exclusive, type)``, in order.

    A span starts at ``B-X``, or at an ``I-X`` after ``O`` or after another type (as conlleval
    does), and runs over the ``I-X`` tags of the same type that follow.
    """
    out: list[tuple[int, int, str]] = []
    start = -1
    cur = ""
    for i, tag in enumerate(tags):
        prefix, kind = split_tag(tag)
        if prefix == "I" and kind == cur:
            continue
        if cur:
            out.append((start, i, cur))
        start, cur = i, kind
    if cur:
        out.append((start, len(tags), cur))
    return out


def known_spans(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """The entity spans (start, end exclusive, type) a partial annotation fixes: every token of
    the span known, and the token after it known (or the end); ``spans`` of a full one."""
    out = []
    for start, end, kind in spans(known_tags(tags)):
        inside = not any(is_partial(t) for t in tags[start:end])
        closed = end == len(tags) or not is_partial(tags[end])
        if inside and closed:
            out.append((start, end, kind))
    return out


def label_set(docs: list[Document]) -> list[str]:
    """Sorted label set of the (training) documents, "O" first: their labels and the labels
    their partial cells name (``data/partial.py``)."""
    tags: set[str] = set()
    for d in docs:
        for cell in set(d.tags or ()):
            tags |= cell_labels(cell) or set()
    if not tags:
        raise ValueError("the training documents carry no tags")
    return ordered_labels(tags)


def ordered_labels(tags) -> list[str]:
    """The labels ``tags`` in a model's order: "O" first, then sorted."""
    return sorted(set(tags), key=lambda t: (t != OUTSIDE, t))


def encode_labels(docs: list[Document], labels: list[str]) -> torch.Tensor:
    """[N] label ids of every token; a tag outside ``labels`` maps to "O".  ValueError for a
    document with open tokens (``encode_partial`` reads those)."""
    for d in docs:
        if has_partial(d.tags):
            raise ValueError(
                f"{d.source or 'a document'}: its labels leave tokens open (partial annotation): "
                "only training reads them (encode_partial)"
            )
    index = {t: i for i, t in enumerate(labels)}
    fallback = index.get(OUTSIDE, 0)
    return torch.tensor([index.get(t, fallback) for d in docs for t in (d.tags or [])])


def encode_partial(
    docs: list[Document], labels: list[str]
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(label ids [N], allowed [N, L] bool or None) of the documents' tokens: an open token's id
    is -1 and its row of ``allowed`` the labels its cell allows (``partial.allowed_mask``);
    ``allowed`` is None when no token is open (then the ids are ``encode_labels``')."""
    if not any(has_partial(d.tags) for d in docs):
        return encode_labels(docs, labels), None
    index = {t: i for i, t in enumerate(labels)}
    fallback = index.get(OUTSIDE, 0)
    ids = [-1 if is_partial(t) else index.get(t, fallback) for d in docs for t in (d.tags or [])]
    rows = [allowed_mask(d.tags or [], labels) for d in docs]
    return torch.tensor(ids, dtype=torch.long), torch.cat(rows) if rows else None
