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

A model trained on a column corpus of its own (``data=columns``) records its column format
(``corpus_format``): ``Tagger.read`` reads a file in that layout, encoding and scheme (the label
column may be absent), and ``Tagger.write`` writes one back in it, the prediction last.  A plain
tagging model (POS tags, no chunk prefixes: ``plain``) has no entities; ``entities`` is then
refused and ``tag`` gives its tags.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from structperc.data.column_corpus import ColumnFormat
from structperc.data.constraints import encode_constraints
from structperc.data.document import Document
from structperc.data.loading import HUB_REPOS
from structperc.data.schemes import PLAIN
from structperc.data.tags import valid_iob2
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
        corpus: what the model records of its training corpus (``model.json``'s
            ``info.corpus``: its name and column format), or None.
    """

    def __init__(
        self,
        structure,
        features: LocalFeatures,
        column_tagger=None,
        batch_size: int = 16,
        device: str = "cpu",
        corpus: dict | None = None,
    ):
        self.structure, self.features = structure, features
        self._column_tagger = column_tagger
        self.batch_size, self.device = batch_size, device
        self.corpus = corpus
        structure.weights.to(device)
        self.run_dir: Path | None = None  # the run folder it was loaded from (``explain``)
        self._explainer = None
        self._load_options: dict = {}  # n and constraints as given to ``load``

    @property
    def corpus_format(self) -> ColumnFormat | None:
        """The column format of the model's own corpus (``data=columns``); None for the
        CoNLL-2003/2000 presets, which prediction reads by their layout, and older models."""
        if not self.corpus or self.corpus.get("name") in HUB_REPOS:
            return None
        return ColumnFormat.from_json({k: v for k, v in self.corpus.items() if k != "name"})

    @property
    def plain(self) -> bool:
        """Whether the model tags plain labels (no chunks: POS tags and the like)."""
        if self.corpus and self.corpus.get("scheme") == PLAIN:
            return True
        return not any(t[:2] in ("B-", "I-") for t in self.labels)

    def read(self, path: str | Path, **options) -> list[Document]:
        """The documents of a file in the model's column format (``options`` override its
        fields: ``documents``, ``scheme`` ...); the label column may be absent."""
        fmt = self.corpus_format
        if fmt is None:
            raise ValueError(
                f"{path}: the model records no column format of its own (a CoNLL-2003/2000 "
                "preset or an older model): read the file with data.conll.read_conll"
            )
        return replace(fmt, **options).read(path, optional_label=True)

    def write(
        self, path: str | Path, docs: list[Document], predictions: list[list[str]], **options
    ) -> None:
        """``docs`` and ``predictions`` in the model's column format and scheme (``read``)."""
        fmt = self.corpus_format
        if fmt is None:
            raise ValueError("the model records no column format of its own: use write_conll")
        replace(fmt, **options).write(path, docs, predictions)

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
        structure, features, info = load_tagger(run_dir, n=n, constraints=constraints, info=True)
        carried = Path(run_dir) / "tagger"
        if column_tagger is None and features.tags == "auto":  # trained on the tagger's columns
            column_tagger = ColumnTagger.load(carried if carried.is_dir() else features.tagger)
        elif column_tagger is None and carried.is_dir():  # for input without the columns
            column_tagger = carried
        tagger = cls(structure, features, column_tagger, batch_size, device, info.get("corpus"))
        tagger.run_dir = Path(run_dir)
        tagger._load_options = {"n": n, "constraints": constraints}
        return tagger

    @property
    def labels(self) -> list[str]:
        return self.structure.weights.labels

    def needed_columns(self) -> set[str]:
        """The input columns the model's features read ("pos", "chunk", or any column its
        feature templates name), of those its training corpus had."""
        needed = self.features.input_columns()
        if self.corpus and "columns" in self.corpus:  # what its training corpus had
            needed &= set(self.corpus["columns"])
        return needed

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

    def tag_documents(
        self, docs: list[Document], progress: bool = False, constraints=None
    ) -> list[list[str]]:
        """The predicted tags of every document (none for no documents, or no tokens): valid
        IOB2 sentence by sentence (``tags.valid_iob2``: an ``I-X`` the decoder put at a
        chunk's start is ``B-X``, the chunk conlleval reads), or the plain labels.
        ``constraints``: one per document (``data.constraints``: a ``Constraints``, its fields
        as a dict, a per-token list, or None), the best labeling that satisfies them."""
        if not any(len(d) for d in docs):  # nothing to extract features from
            return [[] for _ in docs]
        docs = self._with_columns(docs)
        data = ChainData(self.features.transform(docs), documents=docs)
        if constraints is not None:
            lengths = [len(d) for d in docs]
            data.allowed, data.forbidden = encode_constraints(constraints, lengths, self.labels)
        ids = self.structure.predict(data, self.batch_size, self.device, progress)
        tags = [[self.labels[i] for i in p] for p in ids]
        return [valid_iob2(t, d.sentence_spans()) for d, t in zip(docs, tags, strict=True)]

    def tag(self, tokens: list[str], constraints=None) -> list[str]:
        """The tags of one tokenized document; ``constraints``: what is known of them
        (``data.constraints.Constraints``, its fields as a dict, or one entry per token: None
        free, a label fixed, a set of labels allowed)."""
        doc = Document(tokens=list(tokens), source="<tokens>")
        return self.tag_documents(
            [doc], constraints=None if constraints is None else [constraints]
        )[0]

    def explain(self, text_or_tokens: str | list[str], positions: list[int] | None = None):
        """Why each token got its label: the runner-up label, the margin and the features
        between them (``explain/tokens.py``).  A token list gives one ``DocumentExplanation``
        (``positions``: only those tokens), plain text one per paragraph.  The model's full
        tables are read from its run folder on first use."""
        if isinstance(text_or_tokens, str):
            return self.explain_documents([p.document for p in read_text(text_or_tokens)])
        doc = Document(tokens=list(text_or_tokens), source="<tokens>")
        if not len(doc):
            raise ValueError("no tokens to explain")
        (out,) = self.explain_documents([doc], [positions])
        return out

    def explain_documents(self, docs: list[Document], positions=None) -> list:
        """``explain`` of ``Document``s: every token, or the tokens ``positions[d]`` of
        document d (None: all of them)."""
        if not docs:
            return []
        return self.explainer().explain(self._with_columns(docs), positions)

    def explain_weights(self, top: int = 20, pairs: bool = False) -> dict:
        """The model's top features per label, its transition matrix and non-local weights
        (``TaggingExplainer.explain_weights``)."""
        return self.explainer().explain_weights(top, pairs)

    def explainer(self):
        """The model with its full tables (``explainer.TaggingExplainer``), loaded from
        its run folder on first use."""
        if self.run_dir is None:
            raise ValueError("explaining needs the model's run folder: use Tagger.load(run_dir)")
        if self._explainer is None:
            from structperc.explainer import TaggingExplainer

            self._explainer = TaggingExplainer.load(self.run_dir, **self._load_options)
        return self._explainer

    def entities(self, text: str) -> list[dict]:
        """The entities of plain text with character offsets: ``{"start", "end", "type",
        "text"}`` with ``text[start:end]`` the entity (offsets into ``text`` as given, counted in
        characters; no words, as in ``""``, no entities)."""
        if self.plain:
            raise ValueError(
                "the model tags plain labels (no chunk prefixes): it finds no entities"
            )
        paragraphs = read_text(text)
        tags = self.tag_documents([p.document for p in paragraphs])
        return [e for p, t in zip(paragraphs, tags, strict=True) for e in entity_spans(text, p, t)]
