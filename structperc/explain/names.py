"""Names of the rows and columns of every model's weight tables (``contributions.Namer``).

Rows are features, named as the feature vocabularies name them (``w[0]=Paris``,
``pos[-1]|pos[0]=NNP|VBZ``, ``bias``; the non-local ``phrase=LOC|PER``; a ranker's global feature
strings); columns are what a feature's weight is for:

    chain        node  [F, L]      column j          -> label j              ``B-ORG``
                 edge  [F, L*L]    column i * L + j  -> label pair i -> j    ``O -> B-ORG``
                 edge  [1, L*L]    (edges=False) the one transition row, named ``transition``
    rescoring    global [G, 1]     a non-local feature of the whole labeling
    label-chunk  pos_node C*P+P, pos_edge (C*P+P0)*P+P, chunk_start/end C, chunk_edge C0*C+C
                 (``model/label_chunk_weights.py``)
    ranker       base [1, 1]       w_0, the weight of the first model's score L(x)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

TRANSITION = "transition"  # the row name of a shared transition matrix (edges=False)
BASE = "first model's score L(x)"  # the ranker's base feature
ARROW = " -> "


class TableNamer:
    """Names from a feature-name function per table and the chain's labels.

    Args:
        labels: the chain's labels (columns of "node" and "edge").
        features: table name -> (row -> feature name).
        edges: whether "edge" rows are features (True) or the one transition row (False).
    """

    def __init__(
        self,
        labels: Sequence[str],
        features: dict[str, Callable[[int], str]],
        edges: bool = True,
    ):
        self.labels = list(labels)
        self.features = features
        self.edges = edges
        # names repeat across explanations: each is made once
        self.feature: Callable[[str, int], str] = functools.cache(self._feature)
        self.target: Callable[[str, int], str] = functools.cache(self._target)

    def _feature(self, table: str, row: int) -> str:
        if table == "edge" and not self.edges:
            return TRANSITION
        if table == "base":
            return BASE
        return self.features[table](row)

    def _target(self, table: str, column: int) -> str:
        if table == "node":
            return self.labels[column]
        if table == "edge":
            i, j = divmod(column, len(self.labels))
            return f"{self.labels[i]}{ARROW}{self.labels[j]}"
        return ""  # global and base: one column, the labeling as a whole


def chain_namer(
    labels: Sequence[str],
    feature_name: Callable[[int], str],
    edges: bool = True,
    global_names: Sequence[str] | None = None,
) -> TableNamer:
    """The namer of a chain (``feature_name``: row -> name of the local features) and, with
    ``global_names``, of its non-local table (the rescoring structure's)."""
    features = {"node": feature_name, "edge": feature_name}
    if global_names is not None:
        names = list(global_names)
        features["global"] = names.__getitem__
    return TableNamer(labels, features, edges)


def local_features_namer(weights, features, doc_features=None) -> TableNamer:
    """The namer of a tagging model: ``ChainWeights`` (or ``DocumentWeights``) with its fitted
    ``LocalFeatures`` and, for non-local features, the fitted ``NonLocalFeatures``."""
    global_names = None if doc_features is None else doc_features.feature_names()
    return chain_namer(weights.labels, features.vocab.feature_string, weights.edges, global_names)


class LabelChunkNamer:
    """The namer of a label-chunk model: part vocabularies (``PartFeatures.vocabs``) and tags."""

    def __init__(self, vocabs: dict, pos_tags: Sequence[str], chunk_tags: Sequence[str]):
        self.vocabs = vocabs
        self.pos_tags, self.chunk_tags = list(pos_tags), list(chunk_tags)

    def feature(self, table: str, row: int) -> str:
        return f"{table}:{self.vocabs[table].feature_string(row)}"

    def target(self, table: str, column: int) -> str:
        P, C = len(self.pos_tags), len(self.chunk_tags)
        pos, chunk = self.pos_tags, self.chunk_tags
        if table == "pos_node":
            c, p = divmod(column, P)
            return f"{chunk[c]}/{pos[p]}"
        if table == "pos_edge":
            cp0, p = divmod(column, P)
            c, p0 = divmod(cp0, P)
            return f"{chunk[c]}/{pos[p0]}{ARROW}{pos[p]}"
        if table in ("chunk_start", "chunk_end"):
            return chunk[column]
        if table == "chunk_edge":
            c0, c = divmod(column, C)
            return f"{chunk[c0]}{ARROW}{chunk[c]}"
        raise ValueError(f"no part type {table!r} in a label-chunk model")


def ranker_namer(
    global_names: Sequence[str],
    labels: Sequence[str] = (),
    local_name: Callable[[int], str] | None = None,
    edges: bool = True,
) -> TableNamer:
    """The namer of a ranker: its global feature strings (``StringVocabulary.strings``) and, for
    re-ranking 2, the chain's labels and local feature names."""
    names = list(global_names)
    features: dict[str, Callable[[int], str]] = {"global": names.__getitem__}
    if local_name is not None:
        features.update(node=local_name, edge=local_name)
    return TableNamer(labels, features, edges)
