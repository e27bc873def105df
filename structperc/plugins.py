"""User plugins: modules of the user's own, imported before a model is trained or loaded.

A plugin is any importable module that registers something when it is imported: a feature
function (``@register_attribute`` in ``structperc.features.functions``), a task (``@task`` in
``structperc.tasks.registry``), a learner a config names by ``_target_``.  It is named by its
dotted module path wherever a model is made or read:

    python -m structperc.run +experiment=conll03_local plugins=[my_features]
    structperc-tag model=RUN_DIR input=in.txt output=out.txt plugins=[my_features]
    structperc-serve model=RUN_DIR plugins=[my_features]
    CRF(plugins=["my_features"])            # the scikit-learn face

A saved model records the plugins its process imported and the modules that define the
feature functions its templates use (``model.json``'s ``"plugins"``, the face's model header),
so tagging, serving or loading it imports them first: the user names them once, at training.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from importlib import import_module

_IMPORTED: list[str] = []  # the plugins this process imported, in order


def plugin_names(value) -> list[str]:
    """``value`` (None, one dotted name, "a,b", or a list of names) as a list of module names;
    ValueError on anything else."""
    if value is None:
        return []
    if isinstance(value, str):
        names = [v.strip() for v in value.strip("[]").split(",")]
    elif isinstance(value, Iterable):
        names = list(value)
    else:
        raise ValueError(f"plugins: expected a list of module names, got {value!r}")
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"plugins: expected module names, got {name!r}")
    return [n for n in names if n]


def import_plugins(value, where: str = "plugins") -> list[str]:
    """Import each module of ``value`` (``plugin_names``) and remember it among the plugins of
    this process (``imported_plugins``); returns the names.  A module that cannot be imported is
    a ValueError naming it and ``where`` (a setting, a model file)."""
    names = plugin_names(value)
    for name in names:
        try:
            import_module(name)
        except ImportError as err:
            raise ValueError(
                f"{where}: plugin {name!r} cannot be imported ({err}); put its folder on "
                "PYTHONPATH or install it"
            ) from err
        if name not in _IMPORTED:
            _IMPORTED.append(name)
    return names


def imported_plugins() -> list[str]:
    """The plugins this process imported so far (``import_plugins``), in order."""
    return list(_IMPORTED)


def recorded_plugins(modules: Iterable[str] = ()) -> list[str]:
    """What a model saved now records: the plugins imported so far and ``modules`` (those that
    define the user functions its features use), without the script run as ``__main__`` (which
    no other process can import) and without duplicates."""
    out = dict.fromkeys([*_IMPORTED, *modules])
    return [m for m in out if m and m != "__main__" and not m.startswith("structperc.")]


def forget_plugin(name: str) -> None:
    """Take ``name`` out of this process's plugins and out of ``sys.modules`` (tests: a plugin
    imported again runs its registrations again)."""
    if name in _IMPORTED:
        _IMPORTED.remove(name)
    sys.modules.pop(name, None)
