"""The functions a feature template applies to a column, and the registry of users' own.

A template part such as ``suffix3(w[0])`` or ``shape(lemma[-1])`` applies a function to one
column's value at one offset (``template_language.py``).  The built-in functions map a value
(a string) to a value, or to None where they do not fire:

    lower        the value lower-cased                      "Paris" -> "paris"
    shape        each character as X, x, d or itself        "Mr.-2" -> "Xx.-d"
    short_shape  ``shape`` with runs collapsed              "Paris" -> "Xx"
    prefixN      the first N characters, only when the value has at least N (N = 1..9)
    suffixN      the last N characters, likewise
    length       the number of characters, as a string

and the word-form flags of Bikel et al. (1999), as in Kazama & Torisawa (2007) Table 1: ``"1"``
where the flag holds and the ``flag_off`` value elsewhere (None by default: no feature).

    twodigits   "96"      fourdigits  "1996"    digit_alpha "A8"     digit_dash   "12-3"
    digit_slash "1/2"     digit_comma "1,000"   digit_period "1.5"   number  other all-digit
    initcap     "Smith"   allcaps     "EU"      alllower    "the"    capperiod    "J."

**Your own functions.**  What a template cannot say is a Python function registered by name,
then used in templates like a built-in one::

    from structperc.features.functions import register_attribute

    @register_attribute("vowels")              # a value -> a value (or None: no feature)
    def vowels(value: str) -> str | None:
        return "".join(c for c in value if c in "aeiou") or None

    @register_attribute("position", scope="document")    # a document's column -> a column
    def position(values: list[str | None]) -> list[str | None]:
        return [str(min(i, 3)) for i in range(len(values))]

    # template: vowels(w[0])    position(w[0])/w[0]

A ``token`` function is called once per distinct value; a ``document`` function once per
document with the whole column (so it may look at the context).  A saved model records the
names of the functions its templates use, never their code, and the modules that define them
(``structperc.plugins``): loading it imports those modules first, so tagging, serving or loading
it finds them.  A model naming a function that is still not registered when it is loaded is an
error that says which one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from structperc.features.attributes import WORD_FLAGS
from structperc.features.extract import FactorColumn

Value = str | None


class TemplateError(ValueError):
    """A template that cannot be read, names an unknown function, or a column the corpus
    lacks."""


def word_shape(value: str) -> str:
    """Upper-case letters as X, lower-case as x, digits as d, anything else as itself."""
    return "".join(
        "X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c for c in value
    )


def short_word_shape(value: str) -> str:
    """``word_shape`` with each run of one character collapsed to one ("Xxxxx" -> "Xx")."""
    shape = word_shape(value)
    return "".join(c for i, c in enumerate(shape) if i == 0 or shape[i - 1] != c)


# Bikel et al.'s word-form flags, Table 1's tests (features/attributes.py) under readable names
FLAG_NAMES = {
    "twodigits": "2d",
    "fourdigits": "4d",
    "digit_alpha": "d&a",
    "digit_dash": "d&-",
    "digit_slash": "d&/",
    "digit_comma": "d&,",
    "digit_period": "d&.",
    "number": "n",
    "initcap": "ic",
    "allcaps": "ac",
    "alllower": "l",
    "capperiod": "cp",
}
FLAGS: dict[str, Callable[[str], object]] = {
    name: WORD_FLAGS[short] for name, short in FLAG_NAMES.items()
}

VALUE_FUNCTIONS: dict[str, Callable[[str], Value]] = {
    "lower": str.lower,
    "shape": word_shape,
    "short_shape": short_word_shape,
    "length": lambda v: str(len(v)),
}

_AFFIX = re.compile(r"^(prefix|suffix)([1-9])$")


@dataclass(frozen=True)
class Registered:
    """A user's function: ``scope`` ``token`` (value -> value) or ``document`` (column ->
    column)."""

    function: Callable
    scope: str


_REGISTRY: dict[str, Registered] = {}


def register_attribute(name: str, scope: str = "token") -> Callable[[Callable], Callable]:
    """Register ``fn`` under ``name`` for templates (a decorator; see the module docstring)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"register_attribute: {name!r} is not a name (letters, digits, _)")
    if scope not in ("token", "document"):
        raise ValueError(f"register_attribute({name!r}): scope must be 'token' or 'document'")
    if is_builtin(name):
        raise ValueError(f"register_attribute: {name!r} is a built-in template function")

    def add(fn: Callable) -> Callable:
        _REGISTRY[name] = Registered(fn, scope)
        return fn

    return add


def unregister_attribute(name: str) -> None:
    """Take ``name`` out of the registry (tests; a plugin that is unloaded)."""
    _REGISTRY.pop(name, None)


def registered_modules() -> list[str]:
    """The modules that define the users' functions registered now (a saved model records
    them: ``structperc.plugins``), in the order they were registered."""
    return list(dict.fromkeys(r.function.__module__ for r in _REGISTRY.values()))


def is_builtin(name: str) -> bool:
    """Whether ``name`` is a built-in template function (not a user's)."""
    return name in VALUE_FUNCTIONS or name in FLAGS or _AFFIX.match(name) is not None


def known_functions() -> list[str]:
    """Every function name a template may use now (affixes as prefixN/suffixN)."""
    return [*VALUE_FUNCTIONS, "prefixN", "suffixN", *FLAGS, *sorted(_REGISTRY)]


def check_function(name: str, where: str) -> None:
    """ValueError naming ``where`` (a template, a model file) unless ``name`` is known."""
    if is_builtin(name) or name in _REGISTRY:
        return
    raise TemplateError(
        f"{where}: unknown template function {name!r}; known: {', '.join(known_functions())} "
        f"(a function of your own must be registered first: @register_attribute({name!r}) in "
        "structperc.features.functions, in a module imported before training or loading)"
    )


def apply_function(
    name: str, column: FactorColumn, doc_bounds: list[tuple[int, int]], flag_off: Value = None
) -> FactorColumn:
    """The column ``name(column)``: one value (or None) per token of the corpus-wide
    ``column``, whose documents span ``doc_bounds`` (for ``document`` functions).  A token
    function sees each distinct value once; None (no value) stays None."""
    registered = _REGISTRY.get(name)
    if registered is not None and registered.scope == "document":
        values = column.tolist()
        out: list[Value] = []
        for start, end in doc_bounds:
            got = list(registered.function(values[start:end]))
            if len(got) != end - start:
                raise ValueError(
                    f"template function {name!r} returned {len(got)} values for a document of "
                    f"{end - start} tokens"
                )
            out.extend(None if v is None else str(v) for v in got)
        return FactorColumn.of(out)
    return column.map(_value_function(name, flag_off, registered))


def _value_function(name: str, flag_off: Value, registered: Registered | None):
    if registered is not None:
        user = registered.function
        return lambda v: None if (r := user(v)) is None else str(r)
    if name in VALUE_FUNCTIONS:
        return VALUE_FUNCTIONS[name]
    if name in FLAGS:
        test = FLAGS[name]
        return lambda v: "1" if test(v) else flag_off
    match = _AFFIX.match(name)
    if match is None:
        check_function(name, "template")
    n = int(match.group(2))
    if match.group(1) == "prefix":
        return lambda v: v[:n] if len(v) >= n else None
    return lambda v: v[-n:] if len(v) >= n else None
