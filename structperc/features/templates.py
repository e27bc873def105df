"""Feature templates: which token attributes, at which offsets, make a surface feature.

A template is a tuple of (attribute, offset) parts.  Kazama & Torisawa (2007) Table 1:

    unigram:  {"", x_-2, x_-1, x_0, x_+1, x_+2}      for every attribute x
    bigram:   {x_-2 x_-1, x_-1 x_0, x_0 x_+1}         for x in wl, pos, chk, go, gp, gm

and, for chunking (Sha & Pereira 2003's POS trigrams; none in Kazama's Table 1):

    trigram:  {x_-2 x_-1 x_0, x_-1 x_0 x_+1, x_0 x_+1 x_+2, and the bigram x_+1 x_+2}

Every surface feature is used twice, as a node feature (x × y_0) and as an edge feature
(x × y_-1 × y_0); that pairing is the weight tables' business, not the templates'.
The empty template ``()`` is the bias: it fires at every token.
"""

from __future__ import annotations

Template = tuple[tuple[str, int], ...]

BIGRAM_OFFSETS = ((-2, -1), (-1, 0), (0, 1))
TRIGRAM_OFFSETS = ((-2, -1, 0), (-1, 0, 1), (0, 1, 2), (1, 2))


def make_templates(
    attributes: tuple[str, ...],
    window: int,
    bigram_attributes: tuple[str, ...],
    trigram_attributes: tuple[str, ...] = (),
) -> list[Template]:
    """The bias, the unigram templates within ``window``, the bigram templates, and the
    trigram templates (with the right-hand bigram the bigram set lacks)."""
    templates: list[Template] = [()]
    for name in attributes:
        for off in range(-window, window + 1):
            templates.append(((name, off),))
    for name in bigram_attributes:
        for a, b in BIGRAM_OFFSETS:
            templates.append(((name, a), (name, b)))
    for name in trigram_attributes:
        for offsets in TRIGRAM_OFFSETS:
            templates.append(tuple((name, o) for o in offsets))
    return templates


def template_name(template: Template) -> str:
    """A readable name, e.g. ``w[-1]`` or ``pos[-1]|pos[0]``; the bias is ``bias``."""
    return "|".join(f"{a}[{o}]" for a, o in template) or "bias"
