"""Features: from documents to the sparse feature ids of each token (CSR), and the non-local
features of whole labelings.

    pipeline.py           ``LocalFeatures``: Kazama & Torisawa's (2007) Table 1, or templates
    templates.py          the named attributes at offsets (the default feature set)
    template_language.py  templates as text (``w[-1..1]``, ``suffix3(w[0])/pos[0]``)
    template_features.py  templates compiled into the vocabulary's gathers; the presets
    functions.py          the functions templates apply, and the registry of the user's own
    attributes.py         the per-token attributes of Table 1
    extract.py            the vocabulary and the CSR feature matrix
    hashing.py            a vocabulary of a fixed 2^bits rows
    gazetteer.py          gazetteer matching (CoNLL-2003's list; jackknifed)
    gazetteer_files.py    the user's lists, each its own attribute family
    external/             lists from installable packages (cities, countries, names, ...)
    word_classes.py       classes learned from unlabeled text as columns (``wordclasses``)
    cache.py, store.py,   the on-disk feature cache, memory-mapped matrices, and extraction
    chunked_*.py          of a corpus larger than memory
    document.py           ``NonLocalFeatures``: Φ^g of n candidate labelings of a document
    non_local/            its six families (phrase, subphrase, majorities, conjunction)
    collins.py            Collins's (2002) global features, for reranking
    part_features.py      Shimizu & Haas's (2006) part features of the label-chunk model
"""

from structperc.features.document import NonLocalFeatures
from structperc.features.extract import FeatureMatrix, Vocabulary
from structperc.features.functions import (
    TemplateError,
    known_functions,
    register_attribute,
    unregister_attribute,
)
from structperc.features.pipeline import LocalFeatures
from structperc.features.template_features import preset_names, template_path
from structperc.features.template_language import TemplateSpec, parse_template, parse_templates

__all__ = [
    "FeatureMatrix",
    "LocalFeatures",
    "NonLocalFeatures",
    "TemplateError",
    "TemplateSpec",
    "Vocabulary",
    "known_functions",
    "parse_template",
    "parse_templates",
    "preset_names",
    "register_attribute",
    "template_path",
    "unregister_attribute",
]
