"""The column tagger: POS tags, then chunk tags, for input without those columns.

``ColumnTagger`` is the POS tagger and chunker of the tagchunk task (``tasks/tagchunk.py``), a
cascade of two sequence labelers saved in ``pos/`` and ``chunk/`` of one run folder: it fills the
POS and chunk columns of any documents, for a NER model trained on automatic tags
(``features.tags=auto``, Kazama & Torisawa 2007, Table 5) or input that lacks them.
``inference/compiled_tagger.py`` runs the same two chains compiled.
"""

from __future__ import annotations

from pathlib import Path

from structperc.data.conll import with_columns
from structperc.data.document import Document, sub_document
from structperc.data.tags import iobes_to_iob2
from structperc.data.treebank import as_treebank
from structperc.inference.loading import check_column_tagger, load_tagger, predict_labels

# the sentences ``ColumnTagger.fill`` tags at once (rounded to whole batches): its features and
# scores then take a bounded memory whatever the input's length
FILL_SENTENCES = 2048


class ColumnTagger:
    """POS tags, then chunk tags reading them: the two chains of a tagchunk run folder."""

    def __init__(self, pos, chunk, batch_size: int = 64, device: str = "cpu"):
        self.pos, self.chunk = pos, chunk  # (structure, features) each
        self.batch_size, self.device = batch_size, device

    @classmethod
    def load(cls, run_dir: str | Path, **kwargs) -> ColumnTagger:
        """The POS tagger and chunker saved in ``run_dir/pos`` and ``run_dir/chunk``."""
        run_dir = check_column_tagger(run_dir)
        return cls(load_tagger(run_dir / "pos"), load_tagger(run_dir / "chunk"), **kwargs)

    def fill(self, docs: list[Document]) -> list[Document]:
        """Copies of ``docs`` whose POS and chunk columns are the taggers' (IOB2 chunks).

        Each sentence is tagged on its own, as the chains were trained (a CoNLL-2000 document is
        one sentence): over a whole document they would read across sentence ends and carry
        chunks over them.  The taggers read the tokens in Penn Treebank form (``data.treebank``:
        brackets and double quotes rewritten); the copies keep the documents' own tokens.
        """
        treebank = [as_treebank(d) for d in docs]
        spans = [d.sentence_spans() for d in treebank]
        sentences = [
            sub_document(d, s, e) for d, ss in zip(treebank, spans, strict=True) for s, e in ss
        ]
        pos, chunks = [], []
        # FILL_SENTENCES at a time (whole batches): the memory of one group, the same tags
        step = self.batch_size * max(1, FILL_SENTENCES // self.batch_size)
        for first in range(0, len(sentences), step):
            group = sentences[first : first + step]
            group_pos = predict_labels(self.pos, group, self.batch_size, self.device)
            with_pos = [with_columns(d, pos=p) for d, p in zip(group, group_pos, strict=True)]
            group_chunks = predict_labels(self.chunk, with_pos, self.batch_size, self.device)
            pos += group_pos
            chunks += [iobes_to_iob2(c) for c in group_chunks]  # a chunker trained on IOBES
        out, k = [], 0
        for doc, n in zip(docs, map(len, spans), strict=True):
            doc_pos = [t for p in pos[k : k + n] for t in p]
            doc_chunks = [t for c in chunks[k : k + n] for t in c]
            out.append(with_columns(doc, pos=doc_pos, chunk=doc_chunks))
            k += n
        return out
