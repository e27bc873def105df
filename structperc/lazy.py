"""Names of a package imported when first used (PEP 562's module ``__getattr__``).

A package's ``__init__`` lists where each of its public names is defined, and
``lazy_attributes`` gives it the module ``__getattr__`` and ``__dir__`` that import the
defining module on first access and keep the name in the package's namespace from then on.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module


def lazy_attributes(
    namespace: dict, where: dict[str, str], public: list[str]
) -> tuple[Callable, Callable]:
    """(``__getattr__``, ``__dir__``) of the package whose globals are ``namespace``: ``where``
    maps a name to the module that defines it, ``public`` is its ``__all__``."""
    package = namespace["__name__"]

    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(where[name]), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*namespace, *public])

    return __getattr__, __dir__
