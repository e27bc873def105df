"""A tagger's whole path compiled: tokens -> the column tagger's POS and chunk tags -> the
model's labels, a batch of documents at a time.

``CompiledColumns`` is the column tagger (``column_tagger.ColumnTagger``: a POS chain, then a
chunk chain reading its tags, sentence by sentence, on the tokens in Penn Treebank form), and
``CompiledTagger`` the model over it.  Both read the tokens as numbers of one ``TypeTable``,
whose per-word caches (attribute codes, gazetteer words, Treebank forms, connector kinds) grow
with the stream and start afresh when the table is full, at a batch's start.  The labels are
the torch path's (``Tagger.tag_documents``; ``tests/test_compiled_tagging.py``) up to float
rounding: the kernels add in float64 where torch adds in float32, so a near tie may go the
other way.
"""

from __future__ import annotations

import numpy as np

from structperc.data.tags import iobes_to_iob2
from structperc.data.treebank import BRACKETS, CLOSING, OPENING, STRAIGHT, TYPOGRAPHIC
from structperc.inference.compiled_chain import CompiledChain
from structperc.inference.token_batch import WINDOW_TOKENS, TokenBatch, windows
from structperc.inference.token_codes import TypeTable, WordColumn
from structperc.inference.workers import Workers

CONNECTORS = {",": 1, "and": 2, "or": 3}  # nonlocal_kernels' connector ids (lower case)


def _sentence_bounds(batch: TokenBatch) -> np.ndarray:
    """[S, 4]: every sentence as a window of its own (the column tagger's documents)."""
    return np.tile(batch.sentences, (1, 2))


class CompiledColumns:
    """The column tagger's two chains, compiled (``of``: None where either is not)."""

    def __init__(self, pos: CompiledChain, chunk: CompiledChain, types: TypeTable):
        self.pos, self.chunk, self.types = pos, chunk, types
        self.pos_labels = pos.labels
        self.chunk_labels = iobes_to_iob2(chunk.labels)  # a chunker trained on IOBES
        self._chunk_pos = chunk.coder.value_codes("pos", self.pos_labels)

        def forms(words: list[str]) -> np.ndarray:  # a word's Treebank form (quotes: below)
            return types.ids([BRACKETS.get(w) or TYPOGRAPHIC.get(w) or w for w in words])

        self._forms = WordColumn(forms)

    @classmethod
    def of(cls, column_tagger, types: TypeTable) -> CompiledColumns | None:
        pos = CompiledChain.of(*column_tagger.pos, column_tagger.device)
        chunk = CompiledChain.of(*column_tagger.chunk, column_tagger.device)
        return None if pos is None or chunk is None else cls(pos, chunk, types)

    def treebank(self, type_ids: np.ndarray, batch: TokenBatch) -> np.ndarray:
        """[N]: the numbers of the tokens' Treebank forms (``data.treebank.treebank_tokens``):
        brackets and typographic quotes by the word, a straight double quote by its place among
        its sentence's quotes (opening, closing, ...; an unpaired last quote that ends the
        sentence closes)."""
        out = self._forms.of(self.types)[type_ids]
        quote = self.types.index.get(STRAIGHT)
        if quote is None:
            return out
        where = np.flatnonzero(type_ids == quote)
        if not len(where):
            return out
        sentence = batch.sentence_ids()[where]
        first = np.r_[True, sentence[1:] != sentence[:-1]]
        group = np.cumsum(first) - 1
        rank = np.arange(len(where)) - np.flatnonzero(first)[group]
        opening, closing = self.types.ids([OPENING, CLOSING]).tolist()
        forms = np.where(rank % 2 == 0, opening, closing)
        last = np.r_[first[1:], True]  # the last quote of its sentence
        ends = batch.sentences[sentence, 1] - 1 == where
        forms[last & ends & (rank % 2 == 0)] = closing
        out[where] = forms
        return out

    def tag(
        self, type_ids: np.ndarray, batch: TokenBatch, workers=None
    ) -> tuple[np.ndarray, np.ndarray]:
        """([N] POS label ids, [N] chunk label ids) of the batch, sentence by sentence."""
        forms = self.treebank(type_ids, batch)
        bounds = _sentence_bounds(batch)
        codes = self.pos.codes(forms, self.types, batch.sentences)
        pos = self.pos.label(codes, forms, self.types, bounds, workers=workers)
        columns = {"pos": self._chunk_pos[pos]}
        codes = self.chunk.codes(forms, self.types, batch.sentences, columns)
        return pos, self.chunk.label(codes, forms, self.types, bounds, workers=workers)


class CompiledTagger:
    """A model (``CompiledChain``) and, for input without its POS and chunk columns, the
    compiled column tagger (``column_tagger``: a function that gives the column tagger, called
    when the columns are first needed): ``label`` gives the model's label ids of a
    ``TokenBatch``."""

    def __init__(
        self, model: CompiledChain, column_tagger=None, window: int = WINDOW_TOKENS, threads=1
    ):
        self.model, self.window = model, window
        self.workers = Workers(threads)  # (the kernels release the GIL)
        self.types = TypeTable()
        self._column_tagger = column_tagger
        self._columns: CompiledColumns | None | bool = column_tagger is not None
        self._compare = None  # the words the non-local features compare, when not the tokens
        if model.rescoring and model.casefold:
            self._compare = WordColumn(lambda words: self.types.ids([w.lower() for w in words]))
        self._connector = WordColumn(
            lambda words: np.array([CONNECTORS.get(w.lower(), 0) for w in words], np.int64)
        )

    @property
    def columns(self) -> CompiledColumns | None:
        """The compiled column tagger (built on first use), or None: none, or not compiled."""
        if self._columns is True:
            tagger = self._column_tagger()
            self._columns = CompiledColumns.of(tagger, self.types) if tagger is not None else None
            if self._columns is not None:
                coder = self.model.coder
                self._model_pos = coder.value_codes("pos", self._columns.pos_labels)
                self._model_chunk = coder.value_codes("chk", self._columns.chunk_labels)
        return self._columns or None

    def label(self, batch: TokenBatch, tag_columns: bool) -> np.ndarray:
        """[N] int64: the model's label ids of the batch's tokens, the POS and chunk columns the
        column tagger's (``tag_columns``) or the batch's own."""
        if self.types.full:
            self.types.clear()
        type_ids = self.types.ids(batch.tokens)
        coder = self.model.coder
        if tag_columns:
            pos, chunk = self.columns.tag(type_ids, batch, self.workers)
            columns = {"pos": self._model_pos[pos], "chunk": self._model_chunk[chunk]}
        else:
            names = {"pos": "pos", "chunk": "chk"}
            columns = {
                c: coder.value_codes(names[c], values)
                for c, values in batch.columns.items()
                if c in coder.column_of
            }
        codes = self.model.codes(type_ids, self.types, batch.documents, columns)
        text = None
        if self.model.rescoring:
            compare = self._compare.of(self.types)[type_ids] if self._compare else type_ids
            connector = self._connector.of(self.types)[type_ids]
            text = (compare, connector, batch.sentence_ids())
        bounds = windows(batch, self.window)
        return self.model.label(codes, type_ids, self.types, bounds, text, self.workers)
