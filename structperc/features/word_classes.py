"""The word-class attribute family: columns of classes learned from unlabeled text.

``features.word_classes`` (a dict of ``wordclasses.WordClassSettings``, or None) names the
classes; ``structperc.wordclasses`` builds them (or reads them from its cache).  Each family
gives one attribute per granularity, used like Table 1's attributes as unigrams at offsets
-window..+window (Turian et al. 2010; Guo et al. 2014), and as bigrams where
``features.bigram_attributes`` names them:

    wc<k>   the k-means cluster of the word's word2vec vector, for each k of ``kmeans``
    bc<p>   the first p bits of the word's Brown path, for each p of ``brown_prefixes``

A token without a class (not in the clustered vocabulary under its exact, lower-cased or
title-cased form) has no value: the attribute does not fire there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from structperc.data.document import Document
from structperc.wordclasses import WordClasses, WordClassSettings, identity, load_word_classes


def _settings(cfg: Mapping) -> WordClassSettings:
    return WordClassSettings.from_config(dict(cfg))


def word_classes_from_config(cfg: Mapping | None) -> WordClasses | None:
    """The classes of ``features.word_classes`` (built on a cache miss, with progress bars on a
    terminal), or None for none."""
    return None if cfg is None else load_word_classes(_settings(cfg), progress=True)


def word_class_columns(classes: WordClasses, doc: Document) -> dict[str, list[str | None]]:
    """The word-class attribute columns of one document."""
    return classes.columns(doc.tokens)


def word_class_cache_key(cfg: Mapping) -> dict:
    """What the feature cache key holds for ``features.word_classes``: the settings that decide
    the classes (not where the text or the classes lie) and the keys of the class files, which
    hash the unlabeled files' sha256s and the libraries' versions."""
    settings = _settings(cfg)
    decided = {
        f.name: list(v) if isinstance(v := getattr(settings, f.name), tuple) else v
        for f in dataclasses.fields(settings)
        if f.name not in ("dir", "cache_dir")
    }
    return {"settings": decided, "classes": identity(settings)}
