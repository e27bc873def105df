"""Non-leaking gazetteers from installable packages (GeoNames, ISO 3166, US Census names, CLDR,
company legal forms), as extra attribute families of the local features.

Kazama & Torisawa (2007) use gazetteer attributes matched greedily, longest first
(``features/gazetteer.py``); the CoNLL-2003 list leaks the training annotations, these lists do
not.  ``sources.py`` reads each package, ``tokens.py`` turns names into token tuples.
"""

from structperc.features.external.sources import (
    SOURCES,
    check_sources,
    external_entries,
    source_attributes,
    source_versions,
)

__all__ = ["SOURCES", "check_sources", "external_entries", "source_attributes", "source_versions"]
