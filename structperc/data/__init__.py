"""Data: Documents, CoNLL reading and writing, the column corpus and its tag schemes, IOB tag
helpers, corpus loading, synthetic data."""

from .column_corpus import ColumnCorpus, ColumnFormat
from .conll import (
    DEFAULT_DOCUMENTS,
    LABEL_COLUMN,
    LAYOUTS,
    SCHEMES,
    ConllFormatError,
    has_docstart,
    mark_docstart,
    read_conll,
    write_conll,
)
from .document import Document
from .loading import (
    ENV_VAR,
    SPLITS,
    load_corpus,
    require_data_dir,
    resolve_data_dir,
    to_dataset,
    to_documents,
)
from .schemes import detect_scheme, from_iob2, to_iob2
from .synthetic import make_corpus
from .tags import TagError, iob1_to_iob2, iob2_to_iobes, iobes_to_iob2, spans, split_tag
from .treebank import as_treebank, treebank_tokens

__all__ = [
    "DEFAULT_DOCUMENTS",
    "ENV_VAR",
    "LABEL_COLUMN",
    "LAYOUTS",
    "SCHEMES",
    "SPLITS",
    "ColumnCorpus",
    "ColumnFormat",
    "ConllFormatError",
    "Document",
    "TagError",
    "as_treebank",
    "detect_scheme",
    "from_iob2",
    "has_docstart",
    "iob1_to_iob2",
    "iob2_to_iobes",
    "iobes_to_iob2",
    "load_corpus",
    "make_corpus",
    "mark_docstart",
    "read_conll",
    "require_data_dir",
    "resolve_data_dir",
    "spans",
    "split_tag",
    "to_dataset",
    "to_documents",
    "to_iob2",
    "treebank_tokens",
    "write_conll",
]
