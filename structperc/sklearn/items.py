"""Token features as python-crfsuite reads them: an item's attribute names and values.

python-crfsuite (``ItemSequence``; Okazaki's CRFsuite underneath) takes one item per token,
either a list of attribute names (each with value 1.0) or a dict, read key by key:

    {"k": "v"}            the attribute "k:v" with value 1.0 (the key and value joined by ":")
    {"k": 2.5}            the attribute "k" with value 2.5 (an int the same; True 1.0, False 0.0)
    {"k": {...}}          the nested dict's attributes, each name prefixed with "k:"
    {"k": [...]}, set     the list's (or set's) names, each prefixed with "k:", value 1.0

An attribute named twice in one item counts twice (CRFsuite sums what the item lists).  A token's
score for label y is sum_a value_a * w[a, y]: the values are EmbeddingBag's per-sample weights.
"""

from __future__ import annotations

from collections.abc import Sequence

SEPARATOR = ":"  # python-crfsuite's joiner of a key and its string value or nested names


class FeatureFormatError(ValueError):
    """An item that python-crfsuite's format does not allow (the message names where)."""


def item_attributes(item, where: str = "item") -> tuple[list[str], list[float]]:
    """(names, values) of one token's item, in python-crfsuite's order (module docstring)."""
    names: list[str] = []
    values: list[float] = []
    if isinstance(item, dict):
        _dict_attributes(item, "", names, values, where)
    elif isinstance(item, (list, tuple, set, frozenset)):
        for name in item:
            names.append(_name(name, where))
            values.append(1.0)
    else:
        raise FeatureFormatError(
            f"{where}: a token's features must be a dict or a list of strings, "
            f"got {type(item).__name__}"
        )
    return names, values


def _dict_attributes(item: dict, prefix: str, names: list, values: list, where: str) -> None:
    for key, value in item.items():
        name = prefix + _name(key, where)
        kind = type(value)
        if kind is str:  # the common cases first
            names.append(name + SEPARATOR + value)
            values.append(1.0)
        elif kind is bool or kind is float or kind is int:
            names.append(name)
            values.append(float(value))
        elif isinstance(value, dict):
            _dict_attributes(value, name + SEPARATOR, names, values, where)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for member in value:
                names.append(name + SEPARATOR + _name(member, f"{where}, key {name!r}"))
                values.append(1.0)
        elif isinstance(value, str):
            names.append(name + SEPARATOR + str(value))
            values.append(1.0)
        elif isinstance(value, bytes):
            names.append(name + SEPARATOR + value.decode("utf-8"))
            values.append(1.0)
        else:
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise FeatureFormatError(
                    f"{where}: feature {name!r} has a value of type {type(value).__name__}; "
                    "expected a str, bool, number, dict, list or set"
                ) from None
            names.append(name)
            values.append(number)


def _name(key, where: str) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        return key.decode("utf-8")
    raise FeatureFormatError(
        f"{where}: a feature name must be a str, got {type(key).__name__} {key!r}"
    )


def sequence_attributes(xseq: Sequence, where: str) -> tuple[list[str], list, list[int]]:
    """The attributes of every token of one sequence: (names, values, count per token).

    The values are python-crfsuite's numbers (a bool stands for 1.0 or 0.0).  A flat dict of
    str keys with str, bool or number values, the common item, is read inline (this loop is
    most of ``fit``'s time before training starts); anything else goes through
    ``item_attributes``.
    """
    names: list[str] = []
    values: list = []
    counts: list[int] = []
    add_name, add_value = names.append, values.append
    for t, item in enumerate(xseq):
        before = len(names)
        if type(item) is dict:
            for key, value in item.items():
                kind = type(value)
                if type(key) is str:
                    if kind is str:
                        add_name(key + SEPARATOR + value)
                        add_value(1.0)
                        continue
                    if kind is bool or kind is float or kind is int:
                        add_name(key)
                        add_value(value)
                        continue
                _dict_attributes({key: value}, "", names, values, f"{where}[{t}]")
        else:
            more, more_values = item_attributes(item, f"{where}[{t}]")
            names += more
            values += more_values
        counts.append(len(names) - before)
    return names, values, counts
