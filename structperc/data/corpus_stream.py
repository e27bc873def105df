"""A column corpus read into document stores, one document in memory at a time.

``ColumnCorpus.load`` holds every split's documents in memory: some 1-3 KB a token with their
columns as Python strings, which a corpus of millions of tokens does not fit.
``stream_corpus`` reads the same corpus into ``DocumentStore`` files (``document_store.py``)
and returns each split as ``StoredDocuments``: the same documents, in the same order, with the
same held-out dev slice, cuts and tag conversion as ``ColumnCorpus.load`` (``tests/
test_streaming.py`` compares them), read back one at a time.

It reads the files twice: once for what the whole corpus decides before any document is kept
(the tag scheme, with ``scheme=auto``: ``schemes.detect_scheme`` over every split's labels;
the number of training documents, which the held-out slice is drawn from), and once to write
the stores.  ``training_tokens`` tells, without reading the documents, about how many tokens
the training files hold (their non-blank lines): ``labeler`` streams a corpus larger than
``STREAM_FROM``.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from structperc.data.column_corpus import AUTO, SPLITS, ColumnCorpus, ColumnFormat, corpus_scheme
from structperc.data.conll import iter_conll
from structperc.data.document import Document
from structperc.data.document_store import DocumentStore, StoredDocuments

STREAM_FROM = 500_000  # training tokens from which a corpus is streamed (``labeler``)


def training_tokens(corpus: ColumnCorpus, data_dir: str | os.PathLike | None) -> int:
    """About how many tokens the training files hold: their non-blank lines (boundary and
    comment lines count too), read as bytes."""
    total = 0
    for path in corpus.files(data_dir)["train"]:
        with open(path, "rb") as f:
            for block in iter(lambda f=f: f.read(1 << 24), b""):
                total += block.count(b"\n") - block.count(b"\n\n")
    return total


def iter_split(fmt: ColumnFormat, paths: list[Path], max_docs: int | None) -> Iterator[Document]:
    """The documents of a split's files in order, the first ``max_docs`` of them; labels raw
    while the scheme is ``auto``, else in IOB2 (``ColumnFormat.read``'s)."""
    n = 0
    for path in paths:
        for doc in iter_conll(path, **fmt.read_options()):
            if max_docs is not None and n >= max_docs:
                return
            n += 1
            yield doc


def stream_corpus(
    corpus: ColumnCorpus, data_dir: str | os.PathLike | None, folder: str | Path
) -> tuple[dict[str, StoredDocuments], ColumnFormat]:
    """``ColumnCorpus.load``'s splits as document stores in ``folder`` (module docstring), and
    the format with its scheme told."""
    files = corpus.files(data_dir)
    if "train" not in files:
        raise ValueError("data.train: expected a training file (or glob)")
    fmt = corpus.format
    if fmt.scheme == AUTO:
        scanned = {s: iter_split(fmt, paths, corpus.max_docs) for s, paths in files.items()}
        fmt = replace(fmt, scheme=corpus_scheme(scanned, fmt.label))
    folder = Path(folder)
    held: set[int] = set()
    holding = "dev" not in files and bool(corpus.dev_holdout)
    if holding:
        count = sum(1 for _ in iter_split(fmt, files["train"], corpus.max_docs))
        held = held_out(count, corpus.dev_holdout, corpus.dev_seed)
    stores: dict[str, DocumentStore] = {}
    for split in SPLITS:
        if split not in files:
            continue
        stores[split] = DocumentStore(folder / f"{split}.docs")
        if split == "train" and holding:
            stores["dev"] = DocumentStore(folder / "dev.docs")
        kept = 0
        for i, doc in enumerate(iter_split(fmt, files[split], corpus.max_docs)):
            if split == "train" and i in held:
                stores["dev"].add([doc])
            elif split != "train" or corpus.train_docs is None or kept < corpus.train_docs:
                stores[split].add([doc])
                kept += 1
    return {s: stores[s].close() for s in SPLITS if s in stores}, fmt


def held_out(count: int, size: float, seed: int) -> set[int]:
    """The training documents (numbers among ``count``) held out as dev:
    ``column_corpus.hold_out``'s draw."""
    if size < 0 or (size >= 1 and int(size) != size):
        raise ValueError(f"data.dev_holdout must be a fraction in [0, 1) or a count, got {size}")
    n = max(1, round(size * count)) if size < 1 else int(size)
    if not 0 < n < count:
        raise ValueError(
            f"data.dev_holdout={size} keeps {n} of {count} training documents for dev: "
            "expected at least one for each"
        )
    return set(random.Random(seed).sample(range(count), n))
