"""A fitted vocabulary's templates as lookup arrays, and the weight table they index.

``Vocabulary.transform`` (``features/extract.py``) turns attribute codes into feature ids by
a binary search of every template's key over all the model's keys, then ``embedding_bag`` sums
the weight rows.  ``TemplateTables`` answers the same question for the compiled scorer
(``native/template_kernels.py``): per template j, its parts (attribute index, offset, the
attribute's number of values) and a map from its code to the row of the weight table that the
feature reads:

    dense    row = dense[base_j + code]   when the template has at most ``DENSE_CODES`` codes
             (every unigram, and bigrams of small attributes: POS, chunk, gazetteer tags)
    sparse   a binary search in the template's own sorted codes (bigrams of words)

A feature whose row is all zeros (``CompactTable``'s row 0) maps to -1, as a code the vocabulary
never kept: it adds nothing.  ``ScoreTable`` is the weight table as a NumPy array and the
columns of node and edge scores in it (a compact table keeps only the columns with a weight).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from torch import nn

from structperc.features.extract import KEY_SHIFT, Vocabulary
from structperc.model.compact_table import CompactTable
from structperc.model.weights import ChainWeights

DENSE_CODES = 1 << 20  # a template with at most this many codes gets a dense map (4 MB)


@dataclass
class TemplateTables:
    """The templates of a fitted vocabulary as arrays, in two groups.

    Word templates (``Jw`` of them: unigrams of an attribute of the word alone, whose rows
    ``template_kernels.word_sums`` adds once per word): ``word_column`` [Jw] the attribute's
    index in ``word_attributes``, ``word_offset`` [Jw] the index of its offset in ``offsets``
    [O], ``word_base`` [Jw] into ``word_dense`` [Dw] int32.

    Context templates (J, at most P parts; ``template_kernels.context_row``): n_parts [J];
    part_attr, part_off, part_width [J, P] (the attribute's index in ``attributes``, the
    offset, the attribute's number of values); dense_base [J] (-1: a sparse template) into
    dense [D] int32; lo, hi [J] into the sparse templates' sorted ``keys`` [K] int64 and their
    ``rows`` [K] int32.
    """

    attributes: list[str]
    word_attributes: list[str]
    offsets: np.ndarray
    word_column: np.ndarray
    word_offset: np.ndarray
    word_base: np.ndarray
    word_dense: np.ndarray
    n_parts: np.ndarray
    part_attr: np.ndarray
    part_off: np.ndarray
    part_width: np.ndarray
    dense_base: np.ndarray
    dense: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    keys: np.ndarray
    rows: np.ndarray

    @classmethod
    def build(
        cls, vocab: Vocabulary, row_of: np.ndarray, word_attributes: list[str]
    ) -> TemplateTables:
        """The tables of ``vocab`` whose feature f reads row ``row_of[f]`` (-1: none);
        unigrams of ``word_attributes`` are word templates."""
        attributes = vocab.attributes
        index = {a: i for i, a in enumerate(attributes)}
        width = {a: max(len(vocab.values[a]), 1) for a in attributes}
        template_of = vocab.keys >> KEY_SHIFT  # keys sort by template first
        codes = vocab.keys & ((1 << KEY_SHIFT) - 1)
        bounds = np.searchsorted(template_of, np.arange(len(vocab.templates) + 1))

        def code_rows(j: int, span: int) -> np.ndarray:
            mine = slice(bounds[j], bounds[j + 1])
            table = np.full(span, -1, np.int32)
            table[codes[mine]] = row_of[mine]
            return table

        word = [
            j
            for j, t in enumerate(vocab.templates)
            if len(t) == 1 and t[0][0] in word_attributes and width[t[0][0]] <= DENSE_CODES
        ]
        offsets = sorted({vocab.templates[j][0][1] for j in word})
        word_dense, word_base, size = [], [], 0
        for j in word:
            a = vocab.templates[j][0][0]
            word_dense.append(code_rows(j, width[a]))
            word_base.append(size)
            size += width[a]
        chosen = set(word)
        context = [j for j in range(len(vocab.templates)) if j not in chosen]
        J, P = len(context), max((len(vocab.templates[j]) for j in context), default=0) or 1
        n_parts = np.zeros(J, np.int64)
        part_attr = np.zeros((J, P), np.int64)
        part_off = np.zeros((J, P), np.int64)
        part_width = np.ones((J, P), np.int64)
        dense_base = np.full(J, -1, np.int64)
        lo, hi = np.zeros(J, np.int64), np.zeros(J, np.int64)
        dense, sparse_keys, sparse_rows = [], [], []
        size = kept = 0
        for n, j in enumerate(context):
            template = vocab.templates[j]
            n_parts[n] = len(template)
            span = 1
            for k, (a, off) in enumerate(template):
                part_attr[n, k], part_off[n, k], part_width[n, k] = index[a], off, width[a]
                span *= width[a]
            if span <= DENSE_CODES:
                dense.append(code_rows(j, span))
                dense_base[n] = size
                size += span
            else:
                mine = slice(bounds[j], bounds[j + 1])
                lo[n] = kept
                sparse_keys.append(codes[mine])
                sparse_rows.append(row_of[mine].astype(np.int32))
                kept += bounds[j + 1] - bounds[j]
                hi[n] = kept
        return cls(
            attributes=attributes,
            word_attributes=list(word_attributes),
            offsets=np.array(offsets, np.int64),
            word_column=np.array(
                [word_attributes.index(vocab.templates[j][0][0]) for j in word], np.int64
            ),
            word_offset=np.array([offsets.index(vocab.templates[j][0][1]) for j in word], np.int64),
            word_base=np.array(word_base, np.int64),
            word_dense=_joined(word_dense, np.int32),
            n_parts=n_parts,
            part_attr=part_attr,
            part_off=part_off,
            part_width=part_width,
            dense_base=dense_base,
            dense=_joined(dense, np.int32),
            lo=lo,
            hi=hi,
            keys=_joined(sparse_keys, np.int64),
            rows=_joined(sparse_rows, np.int32),
        )

    def word_arrays(self) -> tuple:
        """What ``template_kernels.word_sums`` reads as ``word_templates``."""
        return self.word_column, self.word_offset, self.word_base, self.word_dense

    def context_arrays(self) -> tuple:
        """What ``template_kernels.context_row`` reads as ``tables``."""
        return (
            self.n_parts,
            self.part_attr,
            self.part_off,
            self.part_width,
            self.dense_base,
            self.dense,
            self.lo,
            self.hi,
            self.keys,
            self.rows,
        )


def _joined(parts: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


@dataclass
class ScoreTable:
    """A chain's weights as the compiled scorer reads them.

    table: [R, W] float32, the rows the features read; row_of: [F] int64, feature -> row (-1:
    a zero row); node_cols [L], edge_cols [L * L] (empty: a transition matrix): the column of
    each node and edge score in the table (-1: zero everywhere); trans: [L, L] the transition
    matrix of a model without edge features (else empty).
    """

    table: np.ndarray
    row_of: np.ndarray
    node_cols: np.ndarray
    edge_cols: np.ndarray
    trans: np.ndarray

    @classmethod
    def of(cls, weights: ChainWeights) -> ScoreTable:
        L = weights.num_labels
        bag = weights.joint if weights.edges else weights.node
        width = L + L * L if weights.edges else L
        if isinstance(bag, CompactTable):
            table = bag.table.numpy()
            row_of = bag.row_of.numpy().astype(np.int64)
            row_of = np.where(row_of > 0, row_of, -1)  # row 0 is all zeros
            full = np.full(width, -1, np.int64)
            kept = np.arange(width) if bag.columns is None else bag.columns.numpy()
            full[kept] = np.arange(len(kept))
        else:
            assert isinstance(bag, nn.EmbeddingBag)
            table = bag.weight.detach().numpy()
            row_of = np.arange(len(table), dtype=np.int64)
            full = np.arange(width, dtype=np.int64)
        if weights.edges:
            return cls(table, row_of, full[:L], full[L:], np.zeros((0, 0), table.dtype))
        trans = weights.edge.weight.detach().numpy().reshape(L, L)
        return cls(table, row_of, full, np.zeros(0, np.int64), trans)
