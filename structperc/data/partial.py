"""Partial annotation: tokens whose label is unknown, or known only to lie in a set of labels.

A label column may leave a token open: the *unknown* mark (``?`` by default, ``data.unknown``)
says nothing about it, and a cell of labels joined by the *any-of* separator (``B-PER|O``,
``data.any_of``) says it is one of them.  Such a document's annotation is a set of labelings,
the *compatible* ones, and training maximises (the CRF) or moves towards (the perceptrons) the
best of them instead of one gold labeling (Tsuboi et al. 2008, "Training Conditional Random
Fields Using Incomplete Annotations"; the latent-variable perceptron of Sun et al. 2009).

**Cells.**  Inside structperc a document's ``tags`` hold IOB2 labels, and a token that is not
known holds a *partial cell*: ``PARTIAL`` followed by its allowed labels, each after
``PARTIAL`` (``PARTIAL`` alone: any label).  ``PARTIAL`` is a control character, which no label
read from a file can hold (``conll.check_controls``), so a cell never passes for a label.

**Reading a scheme with open tokens.**  The IOB2 form of a token depends on its own tag and the
previous one (``schemes.chunks``).  A token whose previous tag is open is read under every tag
the previous token may have: in IOB1, IO and the IOE schemes, where a chunk's first token is not
marked, ``? I-PER`` leaves ``I-PER`` either ``B-PER`` or ``I-PER``.  Where every chunk start is
marked (IOB2, IOBES, BILOU), a continuing tag (``I-PER``; ``E-``, ``L-``) is a continuation, and
it tells the open token before it too: in ``? I-PER`` that one is ``B-PER`` or ``I-PER``; in
IOBES and BILOU a tag that promises a continuation (``B-PER``, ``I-PER``) makes the open token
after it ``I-PER``.

**Compatible labelings** are the products of the tokens' sets: a labeling is compatible when
each token's label lies in its set (``allowed_mask``).  A chain without tag-scheme constraints
may then pair, say, ``O`` before ``I-PER``; with ``decoder.constraints=iob2`` it cannot.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
from torch import Tensor

from .schemes import ENDS, OUTSIDE, PLAIN, READS, SchemeError, to_iob2

PARTIAL = "\x1f"  # opens a partial cell (a control character: never part of a label read)
UNKNOWN = "?"  # the default unknown mark of a label column (``data.unknown``)
ANY_OF = "|"  # the default separator of a cell of several labels (``data.any_of``)
EXPLICIT_STARTS = frozenset({"iob2", "iobes", "bilou"})  # schemes that mark every chunk start
_OTHER_TYPE = "\x00"  # a chunk type other than the token's, for reading after an open token


def partial_cell(labels: Iterable[str] | None = None) -> str:
    """The cell of a token known to carry one of ``labels`` (None: any label)."""
    if labels is None:
        return PARTIAL
    ordered = sorted(set(labels))
    if not ordered:
        raise ValueError("a partial cell needs at least one label")
    return PARTIAL + PARTIAL.join(ordered)


def is_partial(tag: str) -> bool:
    """Whether ``tag`` is a partial cell, not a label."""
    return tag.startswith(PARTIAL)


def cell_labels(tag: str) -> frozenset[str] | None:
    """The labels a cell allows: {tag} for a label, its set for a partial cell, None for an
    unknown token (any label)."""
    if not tag.startswith(PARTIAL):
        return frozenset((tag,))
    return frozenset(tag[1:].split(PARTIAL)) if len(tag) > 1 else None


def shown(tag: str, unknown: str = UNKNOWN, any_of: str = ANY_OF) -> str:
    """A cell as a file writes it: the label, the unknown mark, or the labels joined."""
    labels = cell_labels(tag)
    if labels is None:
        return unknown
    return any_of.join(sorted(labels))


def has_partial(tags: Sequence[str] | None) -> bool:
    """Whether a document's tags leave any token open."""
    return tags is not None and any(t.startswith(PARTIAL) for t in tags)


def raw_cells(
    labels: Sequence[str], unknown: str | None = UNKNOWN, any_of: str | None = ANY_OF
) -> list[str]:
    """One sentence's raw labels with the unknown mark and any-of cells as partial cells (of raw
    labels, not converted yet); labels without either come back as they are."""
    out = []
    for label in labels:
        if unknown is not None and label == unknown:
            out.append(PARTIAL)
        elif any_of and any_of in label and label != any_of:
            members = [m for m in label.split(any_of) if m]
            out.append(partial_cell(members))
        else:
            out.append(label)
    return out


def _prefix_type(label: str) -> tuple[str, str]:
    if label == OUTSIDE:
        return OUTSIDE, ""
    prefix, dash, kind = label.partition("-")
    return (prefix, kind) if dash else ("I", label)  # (an IO bare type)


def cells_to_iob2(cells: Sequence[str], scheme: str) -> list[str]:
    """One sentence's cells (labels in ``scheme``, and partial cells of such labels) in IOB2:
    each token's label, or a partial cell of the IOB2 labels it may have (module docstring).
    ``schemes.SchemeError`` (with ``index``) for a label the scheme does not read."""
    if not any(is_partial(c) for c in cells):
        return to_iob2(cells, scheme)
    sets = [cell_labels(c) for c in cells]
    if scheme == PLAIN:
        pairs = zip(cells, sets, strict=True)
        return [c if s is None or len(s) > 1 else next(iter(s)) for c, s in pairs]
    for i, s in enumerate(sets):  # every label must be one the scheme reads
        for label in s or ():
            try:
                to_iob2([label], scheme)
            except SchemeError as err:  # say where
                err.index = i
                raise
    explicit = scheme in EXPLICIT_STARTS
    out: list[set[str] | None] = []
    for t, s in enumerate(sets):
        if s is None:
            out.append(None)
            continue
        if t == 0:
            before: Iterable[str] = (OUTSIDE,)
        elif sets[t - 1] is not None:
            before = sets[t - 1]
        else:
            before = _open_before(s, scheme, explicit)
        out.append({to_iob2([p, z], scheme)[1] for p in before for z in s})
    if explicit:
        _narrow_open_tokens(sets, out, scheme)
    return [partial_cell(o) if o is None or len(o) > 1 else next(iter(o)) for o in out]


def _open_before(labels: Iterable[str], scheme: str, explicit: bool) -> set[str]:
    """The tags an open token before one of ``labels`` is read under: a chunk of the label's
    type that goes on into it (schemes with marked starts), or any prefix of that type or of
    another type, or O."""
    kinds = {_prefix_type(z)[1] for z in labels} - {""}
    if explicit:
        return {f"B-{k}" for k in kinds} or {OUTSIDE}
    prefixes = READS[scheme]
    return {OUTSIDE} | {f"{p}-{k}" for p in prefixes for k in (*kinds, _OTHER_TYPE)}


def _narrow_open_tokens(sets: list, out: list, scheme: str) -> None:
    """In a scheme with marked starts, an open token takes what its known neighbours say of it:
    before a continuing tag it is of that chunk (B- or I- of its type); after a tag that
    promises a continuation (IOBES/BILOU B- and I-) it is inside that chunk (I-)."""
    promise = {"iobes": {"B", "I"}, "bilou": {"B", "I"}}.get(scheme, set())
    for t, s in enumerate(sets):
        if s is not None:
            continue
        narrowed: set[str] | None = None
        after = sets[t + 1] if t + 1 < len(sets) else None
        if after is not None and all(_continues(z, scheme) for z in after):
            kinds = {_prefix_type(z)[1] for z in after}
            narrowed = {f"{p}-{k}" for p in "BI" for k in kinds}
        before = sets[t - 1] if t > 0 else None
        if before is not None and all(_prefix_type(z)[0] in promise for z in before):
            kinds = {_prefix_type(z)[1] for z in before}
            inside = {f"I-{k}" for k in kinds}
            narrowed = inside if narrowed is None else narrowed & inside
        if narrowed:
            out[t] = narrowed


def _continues(label: str, scheme: str) -> bool:
    """Whether ``label`` goes on a chunk begun before it, in a scheme that marks starts."""
    prefix = _prefix_type(label)[0]
    return prefix == "I" or (prefix in ENDS and prefix not in ("S", "U"))


def known_tags(tags: Sequence[str]) -> list[str]:
    """``tags`` with every partial cell as ``O`` (where only the known labels matter: the spans
    of known entities, ``tags.known_spans``)."""
    return [OUTSIDE if is_partial(t) else t for t in tags]


def allowed_mask(tags: Sequence[str], labels: Sequence[str]) -> Tensor:
    """[T, L] bool: the labels each token may carry (a label's own row is one-hot; a label
    outside ``labels`` maps to "O" as ``tags.encode_labels`` does).  ValueError for a partial
    cell none of whose labels is in ``labels``."""
    index = {t: i for i, t in enumerate(labels)}
    fallback = index.get(OUTSIDE, 0)
    mask = torch.zeros((len(tags), len(labels)), dtype=torch.bool)
    for t, tag in enumerate(tags):
        allowed = cell_labels(tag)
        if allowed is None:
            mask[t] = True
            continue
        if not is_partial(tag):
            mask[t, index.get(tag, fallback)] = True
            continue
        rows = [index[a] for a in allowed if a in index]
        if not rows:
            raise ValueError(
                f"token {t}: none of its labels {sorted(allowed)} is a label of the model "
                f"({list(labels)})"
            )
        mask[t, rows] = True
    return mask
