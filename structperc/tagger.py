"""Tag new text with a trained model: the Python API behind ``structperc.predict``.

    from structperc.tagger import Tagger

    tagger = Tagger.load("outputs/conll03_local/2026-11-23_10-00-00")   # a run folder
    tagger.tag(["John", "lives", "in", "Paris", "."])   # ['B-PER', 'O', 'O', 'B-LOC', 'O']
    tagger.entities("John lives in Paris.")
    # [{'start': 0, 'end': 4, 'type': 'PER', 'text': 'John'},
    #  {'start': 14, 'end': 19, 'type': 'LOC', 'text': 'Paris'}]

A model is loaded once (its structure: plain Viterbi, or the n'-best rescored with non-local
features, and its local features with the gazetteer they were trained with) and tags token lists,
``Document``s or plain text (paragraphs are documents; ``data/text.py``).  A model whose features
read the POS or chunk column needs them in the input; tokens and text do not carry them, so such
a model needs its column tagger (``column_tagger``: a POS tagger and chunker, ``tasks/tagchunk.py``)
and says so otherwise.  A run folder may carry one (``RUN/tagger``: ``features.tagger``, as
``make run`` sets it): ``Tagger.load`` then finds it, and loads it when input first lacks the
columns.
"""

from __future__ import annotations

from pathlib import Path

from structperc.data.document import Document
from structperc.data.text import entity_spans, read_text
from structperc.features.pipeline import LocalFeatures
from structperc.structures.chain import ChainData
from structperc.tasks.loading import ColumnTagger, load_tagger


class MissingColumns(ValueError):
    """The input lacks columns the model's features read, and no column tagger fills them."""


class Tagger:
    """A trained sequence labeler over new input.

    Args:
        structure: the model's structure (``tasks.loading.load_tagger``).
        features: its fitted local features.
        column_tagger: fills the POS and chunk columns the features need (``fill(docs)``), the
            folder of one (loaded when first needed), or None.
        batch_size: documents decoded at once.
        device: where the tables live.
    """

    def __init__(
        self,
        structure,
        features: LocalFeatures,
        column_tagger=None,
        batch_size: int = 16,
        device: str = "cpu",
    ):
        self.structure, self.features = structure, features
        self._column_tagger = column_tagger
        self.batch_size, self.device = batch_size, device
        structure.weights.to(device)

    @property
    def column_tagger(self) -> ColumnTagger | None:
        """The column tagger, loaded on first use when given as a folder."""
        if isinstance(self._column_tagger, str | Path):
            self._column_tagger = ColumnTagger.load(self._column_tagger, device=self.device)
        return self._column_tagger

    @classmethod
    def load(
        cls,
        run_dir: str | Path,
        *,
        n: int | None = None,
        constraints: str | None = None,
        column_tagger=None,
        batch_size: int = 16,
        device: str = "cpu",
    ) -> Tagger:
        """The model of a run folder (``model.json`` + ``model.safetensors``); ``n`` and
        ``constraints`` override the model's own n' and tag-scheme constraints.  Without a
        ``column_tagger``, the one the run folder carries (``RUN/tagger``), if any."""
        structure, features = load_tagger(run_dir, n=n, constraints=constraints)
        carried = Path(run_dir) / "tagger"
        if column_tagger is None and features.tags == "auto":  # trained on the tagger's columns
            column_tagger = ColumnTagger.load(carried if carried.is_dir() else features.tagger)
        elif column_tagger is None and carried.is_dir():  # for input without the columns
            column_tagger = carried
        return cls(structure, features, column_tagger, batch_size, device)

    @property
    def labels(self) -> list[str]:
        return self.structure.weights.labels

    def needed_columns(self) -> set[str]:
        """The input columns the model's features read ("pos", "chunk", or any column its
        feature templates name)."""
        return self.features.input_columns()

    def _with_columns(self, docs: list[Document]) -> list[Document]:
        if self.features.tags == "auto":  # the model saw the tagger's columns, never the given
            return self.column_tagger.fill(docs)
        missing = {c for c in self.needed_columns() for d in docs if c not in d.columns}
        if not missing:
            return docs
        others = missing - {"pos", "chunk"}  # columns no column tagger makes
        if others:
            where = docs[0].source or "the input"
            raise MissingColumns(
                f"{where}: the model's feature templates read the {' and '.join(sorted(others))} "
                f"column(s), which the input lacks: give them (a column map naming them, e.g. "
                f"columns=[token,{','.join(sorted(others))}])"
            )
        if self.column_tagger is None:
            where = docs[0].source or "the input"
            raise MissingColumns(
                f"{where}: the model's features read the {' and '.join(sorted(missing))} "
                f"column(s), which the input lacks: give a column tagger (tagger=runs/tagchunk, "
                f"which `make tagger` trains), or the columns (a column map with pos/chunk)"
            )
        return self.column_tagger.fill(docs)

    def tag_documents(self, docs: list[Document], progress: bool = False) -> list[list[str]]:
        """The predicted IOB2 tags of every document (none for no documents, or no tokens)."""
        if not any(len(d) for d in docs):  # nothing to extract features from
            return [[] for _ in docs]
        docs = self._with_columns(docs)
        data = ChainData(self.features.transform(docs), documents=docs)
        ids = self.structure.predict(data, self.batch_size, self.device, progress)
        return [[self.labels[i] for i in p] for p in ids]

    def tag(self, tokens: list[str]) -> list[str]:
        """The tags of one tokenized document."""
        return self.tag_documents([Document(tokens=list(tokens), source="<tokens>")])[0]

    def entities(self, text: str) -> list[dict]:
        """The entities of plain text with character offsets: ``{"start", "end", "type",
        "text"}`` with ``text[start:end]`` the entity (offsets into ``text`` as given, counted in
        characters; no words, as in ``""``, no entities)."""
        paragraphs = read_text(text)
        tags = self.tag_documents([p.document for p in paragraphs])
        return [e for p, t in zip(paragraphs, tags, strict=True) for e in entity_spans(text, p, t)]
