"""Part features of Shimizu & Haas (2006, section 5.3): token type t_q (Table 5) and Table 6.

Every token x_q gets a token type t_q by the first rule of Table 5 its word matches entirely:

    CAPITAL  [A-Z][a-z]+        CAP_ONE  [A-Z]        CAP_ALL  [A-Z]+
    CAP_MIX  [A-Z]+[a-z]+[A-Z]+[a-z]*  ("McDonald"; the extracted text of this rule is garbled)
    NUMBER   .*[0-9].*          (no type for any other token)

Each part type is lexicalized by Table 6; with the unlexicalized feature (the part alone, "is
there a token labeled NOUN in a chunk labeled I?", here the empty template) that gives the
templates below, as (attribute, offset) tuples of ``features.templates`` relative to the token
the part is read at:

    pos_node     <C, P, r>            (), x_{r-1}, x_r, x_{r+1}, t_r                  read at r
    pos_edge     <C, P0, P, r-1, r>   (), x_{r-1}, x_r                                read at r
    chunk_start  <C, q, r> (1st half) (), x_q, x_{q-1}                                read at q
    chunk_end    <C, q, r> (2nd half) x_r, x_{r+1}                                    read at r
    chunk_edge   <C0, C, q-1, q>      (), x_{q-1}, x_q                                read at q

The chunk node's features depend on the span only through its two ends, so they split into a
half read at the first token and a half read at the last one; the DP (``decode/label_chunk.py``)
still takes a score for every span.  A feature is a template's value; its weights are one row
of the part type's table, with a column per tag combination (``model/label_chunk_weights.py``).
The vocabulary of each part type is a ``features.extract.Vocabulary`` (count cutoff
``min_count`` on the training sentences).

The same machinery gives the linear-chain baselines their features (``cascade.py``): one group
whose rows are both node and edge features of ``model.weights.ChainWeights``.
"""

from __future__ import annotations

import re

import numpy as np
import torch

from structperc.data.document import Document
from structperc.data.label_chunk import collapse_pos
from structperc.features.extract import (
    KEY_SHIFT,
    FeatureMatrix,
    Vocabulary,
    concat_columns,
    doc_index,
)
from structperc.features.templates import Template

TOKEN_TYPES: tuple[tuple[str, re.Pattern], ...] = (
    ("CAPITAL", re.compile(r"[A-Z][a-z]+")),
    ("CAP_ONE", re.compile(r"[A-Z]")),
    ("CAP_ALL", re.compile(r"[A-Z]+")),
    ("CAP_MIX", re.compile(r"[A-Z]+[a-z]+[A-Z]+[a-z]*")),
    ("NUMBER", re.compile(r".*[0-9].*")),
)

W, T, POS = "w", "t", "pos"  # attributes: word, token type (Table 5), collapsed POS tag

PAPER_TEMPLATES: dict[str, list[Template]] = {
    "pos_node": [(), ((W, -1),), ((W, 0),), ((W, 1),), ((T, 0),)],
    "pos_edge": [(), ((W, -1),), ((W, 0),)],
    "chunk_start": [(), ((W, 0),), ((W, -1),)],
    "chunk_end": [((W, 0),), ((W, 1),)],
    "chunk_edge": [(), ((W, -1),), ((W, 0),)],
}
# The baselines' features: the POS tagger reads what the joint model's POS parts read; the NP
# chunker also reads the collapsed POS tags (gold in training, the tagger's on test).
TAGGER_TEMPLATES: list[Template] = [(), ((W, -1),), ((W, 0),), ((W, 1),), ((T, 0),)]
CHUNKER_TEMPLATES: list[Template] = [
    *TAGGER_TEMPLATES,
    ((POS, -1),),
    ((POS, 0),),
    ((POS, 1),),
    ((POS, -1), (POS, 0)),
    ((POS, 0), (POS, 1)),
]


def token_type(word: str) -> str | None:
    """t_q of Table 5, or None when no rule matches."""
    for name, pattern in TOKEN_TYPES:
        if pattern.fullmatch(word):
            return name
    return None


def token_columns(doc: Document) -> dict[str, list[str | None]]:
    """The attribute columns of one sentence: words, token types, collapsed POS tags."""
    pos = doc.columns.get("pos")
    return {
        W: list(doc.tokens),
        T: [token_type(w) for w in doc.tokens],
        POS: [collapse_pos(p) for p in pos] if pos else [None] * len(doc),
    }


def is_lexicalized(template: Template) -> bool:
    """Whether a template reads the words (the paper's back-off freezes these in epoch 1)."""
    return any(attr == W for attr, _ in template)


class PartFeatures:
    """Settings, and after ``fit`` the vocabularies, of features grouped by part type.

    Args:
        templates: part type -> its templates (default: Table 6, ``PAPER_TEMPLATES``).
        min_count: keep a feature seen at least this often in the training sentences.
    """

    def __init__(self, templates: dict[str, list] | None = None, min_count: int = 1):
        if min_count < 1:
            raise ValueError(f"features.min_count must be >= 1, got {min_count}")
        given = PAPER_TEMPLATES if templates is None else templates
        self.templates = {g: [_template(t) for t in ts] for g, ts in given.items()}
        self.min_count = min_count
        self.vocabs = {g: Vocabulary(ts, min_count) for g, ts in self.templates.items()}

    @property
    def groups(self) -> list[str]:
        return list(self.templates)

    @property
    def num_features(self) -> dict[str, int]:
        return {g: len(v) for g, v in self.vocabs.items()}

    def fit(self, train: list[Document]) -> PartFeatures:
        """Freeze every part type's vocabulary on the training sentences."""
        cols, docs = self._columns(train), doc_index(train)
        for vocab in self.vocabs.values():
            vocab.fit(cols, docs)
        return self

    def transform(self, docs: list[Document]) -> dict[str, FeatureMatrix]:
        """Part type -> CSR feature ids of every token of ``docs``."""
        cols, index = self._columns(docs), doc_index(docs)
        doc_offsets = np.zeros(len(docs) + 1, dtype=np.int64)
        np.cumsum([len(d) for d in docs], out=doc_offsets[1:])
        out = {}
        for g, vocab in self.vocabs.items():
            ids, offsets = vocab.transform(cols, index)
            out[g] = FeatureMatrix(
                torch.from_numpy(ids), torch.from_numpy(offsets), torch.from_numpy(doc_offsets)
            )
        return out

    def unlexicalized_rows(self) -> dict[str, torch.Tensor]:
        """Part type -> [F] bool: the features that read no word (trainable in a back-off epoch)."""
        out = {}
        for g, vocab in self.vocabs.items():
            template_of = vocab.keys >> KEY_SHIFT  # [F] the template of each feature
            lex = np.array([is_lexicalized(t) for t in self.templates[g]], dtype=bool)
            out[g] = torch.from_numpy(~lex[template_of])
        return out

    def _columns(self, docs: list[Document]) -> dict[str, list[str | None]]:
        return concat_columns([token_columns(d) for d in docs])


def _template(t) -> Template:
    """A template from config lists, e.g. [["w", -1]] or [] (the unlexicalized feature)."""
    return tuple((str(a), int(o)) for a, o in t)
