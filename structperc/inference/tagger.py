"""Tag new text with a trained model: the Python API behind ``structperc.predict``.

    from structperc.inference.tagger import Tagger

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

Where the compiled kernels apply (numba installed, the CPU, a named-attribute model: the main
job's and the column tagger's; ``compiled_chain.CompiledChain.of``), the model and its column
tagger run compiled (``compiled_tagger.py``) a ``TokenBatch`` at a time: the labels of the
torch path up to float rounding, at some 30 times its speed; the torch path tags the others.
A document longer than ``window`` tokens is decoded in windows (``token_batch.windows``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from structperc.data.column_corpus import ColumnFormat
from structperc.data.constraints import encode_constraints
from structperc.data.document import Document, runs_of
from structperc.data.loading import HUB_REPOS
from structperc.data.schemes import PLAIN
from structperc.data.tags import valid_iob2
from structperc.data.text import entity_spans, read_text
from structperc.features.pipeline import LocalFeatures
from structperc.inference.column_tagger import ColumnTagger
from structperc.inference.compiled_chain import CompiledChain
from structperc.inference.compiled_tagger import CompiledTagger
from structperc.inference.labelings import LabelSet
from structperc.inference.loading import load_tagger
from structperc.inference.token_batch import WINDOW_TOKENS, TokenBatch, windows
from structperc.structures.chain import ChainData

# the tokens ``tag_documents`` decodes at once on the compiled path (whole documents, a longer
# one alone): its codes and sums take a few KB a token
BATCH_TOKENS = 1 << 15


class MissingColumns(ValueError):
    """The input lacks columns the model's features read, and no column tagger fills them."""


class Tagger:
    """A trained sequence labeler over new input.

    Args:
        structure: the model's structure (``inference.loading.load_tagger``).
        features: its fitted local features.
        column_tagger: fills the POS and chunk columns the features need (``fill(docs)``), the
            folder of one (loaded when first needed), or None.
        batch_size: documents decoded at once (the torch path).
        device: where the tables live.
        corpus: what the model records of its training corpus (``model.json``'s
            ``info.corpus``: its name and column format), or None.
        window: the longest run of tokens decoded as one (longer documents are decoded in
            windows of whole sentences; ``token_batch.windows``).
        compiled: run the compiled kernels where they apply (False: always the torch path).
        threads: the threads the compiled kernels share a batch among (``workers.py``).
    """

    def __init__(
        self,
        structure,
        features: LocalFeatures,
        column_tagger=None,
        batch_size: int = 16,
        device: str = "cpu",
        corpus: dict | None = None,
        window: int = WINDOW_TOKENS,
        compiled: bool = True,
        threads: int = 1,
    ):
        if window < 1:
            raise ValueError(f"window={window}: a window holds at least one token")
        self.structure, self.features = structure, features
        self._column_tagger = column_tagger
        self.batch_size, self.device = batch_size, device
        self.corpus = corpus
        self.window, self.threads = window, threads
        structure.weights.to(device)
        self.label_set = LabelSet(structure.weights.labels)
        self.run_dir: Path | None = None  # the run folder it was loaded from (``explain``)
        self._explainer = None
        self._load_options: dict = {}  # n and constraints as given to ``load``
        self._compiled: CompiledTagger | None | bool = compiled  # built on first use

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
        window: int = WINDOW_TOKENS,
        compiled: bool = True,
        threads: int = 1,
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
        tagger = cls(
            structure,
            features,
            column_tagger,
            batch_size,
            device,
            info.get("corpus"),
            window,
            compiled,
            threads,
        )
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

    def tags_columns(self, docs: list[Document]) -> bool:
        """Whether the column tagger gives ``docs`` the POS and chunk columns the features read
        (always for a model trained on its columns, else where the input lacks them);
        ``MissingColumns`` where the input lacks columns no column tagger makes, or lacks POS or
        chunks and there is no column tagger."""
        if self.features.tags == "auto":  # the model saw the tagger's columns, never the given
            return True
        missing = {c for c in self.needed_columns() for d in docs if c not in d.columns}
        if not missing:
            return False
        where = docs[0].source or "the input"
        others = missing - {"pos", "chunk"}  # columns no column tagger makes
        if others:
            raise MissingColumns(
                f"{where}: the model's feature templates read the {' and '.join(sorted(others))} "
                f"column(s), which the input lacks: give them (a column map naming them, e.g. "
                f"columns=[token,{','.join(sorted(others))}])"
            )
        if self.column_tagger is None:
            raise MissingColumns(
                f"{where}: the model's features read the {' and '.join(sorted(missing))} "
                f"column(s), which the input lacks: give a column tagger (tagger=runs/tagchunk, "
                f"which `make tagger` trains), or the columns (a column map with pos/chunk)"
            )
        return True

    def _with_columns(self, docs: list[Document]) -> list[Document]:
        """``docs`` with the columns the features read (``tags_columns``)."""
        return self.column_tagger.fill(docs) if self.tags_columns(docs) else docs

    @property
    def compiled(self) -> CompiledTagger | None:
        """The model and its column tagger compiled (built on first use), or None where the
        kernels do not apply: the torch path tags."""
        if self._compiled is True:
            model = CompiledChain.of(self.structure, self.features, self.device)
            columns = (lambda: self.column_tagger) if self._column_tagger is not None else None
            self._compiled = (
                None if model is None else CompiledTagger(model, columns, self.window, self.threads)
            )
        return self._compiled or None

    def label_batch(self, batch: TokenBatch, tag_columns: bool) -> np.ndarray:
        """[N] label ids of a batch's tokens, valid IOB2 sentence by sentence
        (``LabelSet.valid``); the POS and chunk columns the column tagger's (``tag_columns``)
        or the batch's.  Compiled where the kernels apply, else by the torch path."""
        compiled = self.compiled
        if compiled is not None and (not tag_columns or compiled.columns is not None):
            ids = compiled.label(batch, tag_columns)
        else:
            ids = self._torch_labels(batch, tag_columns)
        return self.label_set.valid(ids, batch.sentence_flags())

    def _torch_labels(self, batch: TokenBatch, tag_columns: bool) -> np.ndarray:
        """``label_batch``'s ids by ``structure.predict``, a window a document (a window's
        features read its own tokens only)."""
        sentence_starts = batch.sentences[:, 0]
        docs = []
        for t0, t1, _, _ in windows(batch, self.window).tolist():
            inside = sentence_starts[(sentence_starts > t0) & (sentence_starts < t1)] - t0
            columns = {c: v[t0:t1] for c, v in batch.columns.items()}
            starts = [0, *inside.tolist()]
            docs.append(Document(batch.tokens[t0:t1], columns, sentence_starts=starts))
        if tag_columns:
            docs = self.column_tagger.fill(docs)
        data = ChainData(self.features.transform(docs), documents=docs)
        paths = self.structure.predict(data, self.batch_size, self.device)
        return np.array([i for p in paths for i in p], dtype=np.int64)

    def tag_documents(
        self, docs: list[Document], progress: bool = False, constraints=None
    ) -> list[list[str]]:
        """The predicted tags of every document (none for no documents, or no tokens): valid
        IOB2 sentence by sentence (``tags.valid_iob2``: an ``I-X`` the decoder put at a
        chunk's start is ``B-X``, the chunk conlleval reads), or the plain labels.
        ``constraints``: one per document (``data.constraints``: a ``Constraints``, its fields
        as a dict, a per-token list, or None), the best labeling that satisfies them (the
        torch path: the compiled one decodes without constraints)."""
        if not any(len(d) for d in docs):  # nothing to extract features from
            return [[] for _ in docs]
        compiled = self.compiled
        if compiled is None or not self.label_set.repairable or constraints is not None:
            docs = self._with_columns(docs)
            data = ChainData(self.features.transform(docs), documents=docs)
            if constraints is not None:
                lengths = [len(d) for d in docs]
                data.allowed, data.forbidden = encode_constraints(constraints, lengths, self.labels)
            ids = self.structure.predict(data, self.batch_size, self.device, progress)
            tags = [[self.labels[i] for i in p] for p in ids]
            return [valid_iob2(t, d.sentence_spans()) for d, t in zip(docs, tags, strict=True)]
        tag_columns = self.tags_columns(docs)
        given = () if tag_columns else tuple(self.needed_columns() & {"pos", "chunk"})
        out: list[list[str]] = []
        for _, run in runs_of(docs, BATCH_TOKENS):
            batch = TokenBatch.of(run, given)
            ids = self.label_batch(batch, tag_columns)
            out += [self.label_set.tags(ids[a:b]) for a, b in batch.documents.tolist()]
        return out

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
            from structperc.inference.explainer import TaggingExplainer

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
