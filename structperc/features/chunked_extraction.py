"""Feature extraction of a corpus larger than memory: chunk by chunk, into mapped matrices.

``extract_chunked(features, corpus, folder)`` does what ``features.fit(train)`` then
``features.transform(docs)`` for every split do (``cache.extract_features``), with the same
vocabulary and the same feature ids, reading each split's documents (any sequence: a list, or
``StoredDocuments`` read one at a time) in runs of whole documents of about ``CHUNK_TOKENS``
tokens, so that the attribute columns of one run are in memory at a time:

1. the templates are expanded against the training columns, and the gazetteer jackknife's
   folds are drawn over the whole training set (one pass each, when they are used);
2. the training runs are fitted by ``ChunkedVocabulary`` (attribute strings once per run,
   then integer passes over what it spilled) and written, run by run, into the mapped matrix
   ``folder/train.*`` (``store.MatrixWriter``);
3. every other split is transformed run by run into ``folder/<split>.*``.

Memory: a run's columns (a few KB a token: ``CHUNK_TOKENS`` ~ 100 MB at 250 templates), the
attribute dictionaries and the kept keys; the matrices are on disk (``store.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from structperc.data.document import Document, runs_of
from structperc.features.chunked_vocabulary import ChunkedVocabulary
from structperc.features.extract import FeatureMatrix, doc_index
from structperc.features.pipeline import LocalFeatures
from structperc.features.store import MatrixWriter
from structperc.progress import bar

CHUNK_TOKENS = 50_000

log = logging.getLogger(__name__)


def extract_chunked(
    features: LocalFeatures,
    corpus: dict[str, Sequence[Document]],
    folder: str | Path,
    chunk_tokens: int = CHUNK_TOKENS,
    progress: bool = True,
) -> dict[str, FeatureMatrix]:
    """Fit ``features`` on ``corpus["train"]`` and write every split's matrix into ``folder``
    (module docstring); returns the mapped matrices."""
    folder = Path(folder)
    train = corpus["train"]
    features.expand_templates(train)
    folds = features.jackknife_folds(train) if features.jackknifed else None
    builder = ChunkedVocabulary(features.vocab, folder / "spill")
    lengths: list[np.ndarray] = []
    try:
        shown = bar(runs_of(train, chunk_tokens), enabled=progress, desc="features", unit="run")
        for start, run in shown:
            builder.add(features.training_columns(run, start, folds), doc_index(run))
            lengths.append(np.array([len(d) for d in run], dtype=np.int64))
        builder.finish()
        writer = MatrixWriter(folder, "train")
        for k, run_lengths in enumerate(lengths):
            ids, offsets = builder.transform(k)
            writer.add(ids, offsets, run_lengths)
        matrices = {"train": writer.close()}
    finally:
        builder.close()
    for split, docs in corpus.items():
        if split == "train":
            continue
        writer = MatrixWriter(folder, split)
        for _, run in runs_of(docs, chunk_tokens):
            m = features.transform(run)
            writer.add(m.ids.numpy(), m.offsets.numpy(), np.diff(m.doc_offsets.numpy()))
        matrices[split] = writer.close()
    return matrices
