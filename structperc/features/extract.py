"""From documents to EmbeddingBag input: CSR feature ids per token.

Pipeline (all vectorised with NumPy once the attribute strings exist):

1. attribute strings per token (``attributes.py``, ``gazetteer.py``);
2. each attribute's strings -> integer codes through a dictionary frozen on the training data
   (unseen strings -> -1, "does not fire");
3. each template's code per token: the attribute's code at ``t + offset`` within the same document;
   for a bigram ``c1 * n_attr + c2``; the global key is ``template << 42 | code``;
   with ``boundary=True`` a position outside the document takes a boundary value named by how
   far outside it lies (``_B-1``, ``_B-2`` before the start, ``_B+1``, ``_B+2`` after the end;
   CRF++'s convention), so "the document starts here" is a feature too;
4. the vocabulary keeps the keys seen at least ``min_count`` times in training (Kazama & Torisawa
   2007: "we omitted features whose surface part occurred less than twice"), sorted, so a key's
   feature id is its rank (``searchsorted``); with ``hash_bits=N`` (feature hashing,
   ``hashing.py``) a kept key's id is instead its row among 2^N, a stable hash of the key, and
   keys whose hashes meet share a row: the weight tables have 2^N rows whatever the data.
   ``min_count`` still decides which keys fire (a key seen fewer times in training fires
   nothing, hashed or not); hashing only folds the kept keys into the fixed rows;
5. ids per token, flattened with offsets (``include_last_offset=True`` CSR).

The vocabulary is plain data (attribute value lists and the kept keys), saved with the model.

**Inheritance** (continuing a saved model on new data, ``inherit``): the next fit keeps every
feature of an earlier vocabulary beside the new data's.  Its attribute values join the new
dictionaries (``fit_values``), and its keys, decoded to their template and value strings and
encoded again under the new dictionaries (``recode``; codes are ranks in the sorted values, so
they move when values are added), join the keys the cutoffs keep (``fit_keys``).  Both fits go
through these two calls: ``fit`` here and the chunked fit (``chunked_vocabulary.py``).
``carried_rows`` then pairs each old feature's row with its new one, for the weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from structperc.data.document import Document
from structperc.features.hashing import check_bits, collisions, hashed_rows
from structperc.features.templates import Template

KEY_SHIFT = 42
CODE_MASK = (1 << KEY_SHIFT) - 1


@dataclass
class FactorColumn:
    """An attribute column as its distinct values and each token's index into them: the column
    ``[values[i] for i in index]``, whose functions (``map``) and codes cost once per distinct
    value instead of once per token (the feature templates' columns, ``template_features.py``).

    values: [U] distinct values (str or None: no feature; after ``map`` they may repeat).
    index:  [N] int64, each token's value.
    """

    values: list[str | None]
    index: np.ndarray

    @classmethod
    def of(cls, column: list[str | None]) -> FactorColumn:
        seen: dict[str | None, int] = {}
        index = np.fromiter(
            (seen.setdefault(v, len(seen)) for v in column), dtype=np.int64, count=len(column)
        )
        return cls(list(seen), index)

    def map(self, fn) -> FactorColumn:
        """``fn`` of every value (None stays None), the tokens' indexes shared."""
        return FactorColumn([None if v is None else fn(v) for v in self.values], self.index)

    def tolist(self) -> list[str | None]:
        return [self.values[i] for i in self.index.tolist()]

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, item):
        if isinstance(item, slice):
            return [self.values[i] for i in self.index[item].tolist()]
        return self.values[self.index[item]]


Column = list[str | None] | FactorColumn


def distinct_values(column: Column) -> set[str]:
    """The values (not None) a column holds."""
    if isinstance(column, FactorColumn):
        return {column.values[i] for i in np.unique(column.index).tolist()} - {None}
    return {v for v in column if v is not None}


@dataclass
class FeatureMatrix:
    """CSR features of a list of documents.

    ids:         [nnz] int32, feature ids of all tokens, token after token.
    offsets:     [N + 1] int64, token i owns ids[offsets[i]:offsets[i + 1]].
    doc_offsets: [D + 1] int64, document d owns tokens doc_offsets[d]:doc_offsets[d + 1].
    values:      [nnz] float32, the value of each occurrence (a real-valued feature scores
                 value * weight: EmbeddingBag's per-sample weights), or None: every value is 1
                 (binary features, the lookups without per-sample weights).
    mapped:      the tensors are views of files mapped into memory (``store.py``): a loop
                 over the documents calls ``store.release_pages`` now and then.
    files:       for a mapped matrix, its files read without the maps (``store.MatrixFiles``:
                 ``document(d)``), which a loop in a random order takes; else None.
    groups:      [F] int32, the lookup group of every feature row the ids address
                 (``LocalFeatures.lookup_groups``): the CRF's lookup sums the feature sets
                 that repeat across tokens once (``crf/factored.py``); None: no groups.
    """

    ids: torch.Tensor
    offsets: torch.Tensor
    doc_offsets: torch.Tensor
    values: torch.Tensor | None = None
    mapped: bool = False
    files: object | None = None
    groups: np.ndarray | None = None

    @property
    def num_docs(self) -> int:
        return len(self.doc_offsets) - 1

    @property
    def num_tokens(self) -> int:
        return len(self.offsets) - 1

    def tensors(self) -> dict[str, torch.Tensor]:
        out = {"ids": self.ids, "offsets": self.offsets, "doc_offsets": self.doc_offsets}
        if self.values is not None:
            out["values"] = self.values
        return out


class Vocabulary:
    """Attribute dictionaries and the kept feature keys, frozen after ``fit``; ``hash_bits``:
    the keys' rows are hashed into 2^hash_bits (module docstring), None: a row per key."""

    def __init__(
        self,
        templates: list[Template],
        min_count: int = 2,
        boundary: bool = False,
        min_counts: list[int] | None = None,
        hash_bits: int | None = None,
    ):
        self.templates = templates
        self.min_count = min_count
        self.boundary = boundary
        # per template, its own cutoff (feature templates' ``min_count=N``); None: min_count
        self.min_counts = None if min_counts is None else [int(c) for c in min_counts]
        if self.min_counts is not None and len(self.min_counts) != len(templates):
            raise ValueError(f"{len(self.min_counts)} min_counts for {len(templates)} templates")
        self.hash_bits = check_bits(hash_bits)
        self.values: dict[str, list[str]] = {}  # attribute -> values seen in training
        self.keys = np.zeros(0, dtype=np.int64)  # sorted kept keys
        self.key_rows = np.zeros(0, dtype=np.int64)  # [K] each key's row: its rank, or hash
        self._index: dict[str, dict[str, int]] = {}
        self.inherited: Vocabulary | None = None  # fitted: its features are kept (``inherit``)

    def __len__(self) -> int:
        """The kept feature keys."""
        return len(self.keys)

    @property
    def num_rows(self) -> int:
        """The rows of the weight tables: a row per key, or 2^hash_bits."""
        return len(self.keys) if self.hash_bits is None else 1 << self.hash_bits

    def _set_keys(self, keys: np.ndarray) -> None:
        """Keep the sorted ``keys`` [K] and their rows."""
        self.keys = keys
        if self.hash_bits is None:
            self.key_rows = np.arange(len(keys), dtype=np.int64)
        else:
            self.key_rows = hashed_rows(keys, self.hash_bits)

    def collisions(self) -> int:
        """The kept keys less the rows they fill (0 without hashing): keys whose row is another
        key's too, less one per shared row."""
        return collisions(self.key_rows)

    def row_of(self, key: int) -> int | None:
        """The row of feature ``key``, or None when it is not kept."""
        rank = int(np.searchsorted(self.keys, key))
        if rank < len(self.keys) and int(self.keys[rank]) == key:
            return int(self.key_rows[rank])
        return None

    def template_rows(self, flags: np.ndarray) -> np.ndarray:
        """[R] bool: the rows all of whose keys belong to templates ``flags`` ([T] bool) marks,
        and that hold a key (with hashing a row may hold keys of several templates)."""
        of_key = np.asarray(flags, dtype=bool)[self.keys >> KEY_SHIFT]  # [K]
        if self.hash_bits is None:
            return of_key
        held = np.zeros(self.num_rows, dtype=bool)
        held[self.key_rows] = True
        unmarked = np.zeros(self.num_rows, dtype=bool)
        unmarked[self.key_rows[~of_key]] = True
        return held & ~unmarked

    @property
    def attributes(self) -> list[str]:
        return sorted({a for t in self.templates for a, _ in t})

    # -- inheriting -------------------------------------------------------------------------
    def inherit(self, old: Vocabulary) -> None:
        """Make the next fit keep every feature of the fitted vocabulary ``old`` (module
        docstring).  Its templates and boundary values must be this vocabulary's (in any order);
        else ValueError naming the difference.  Its ``hash_bits`` may differ: the rows are
        paired key by key (``carried_rows``)."""
        differences = template_differences(old, self)
        if differences:
            raise ValueError(f"the features differ from the saved model's: {differences}")
        self.inherited = old

    def recode(self, old: Vocabulary) -> np.ndarray:
        """[K_old] int64: each key of ``old`` under this vocabulary's templates and
        dictionaries (decoded to its template and value strings, encoded again), -1 where a
        template or value is not here."""
        out = np.full(len(old.keys), -1, dtype=np.int64)
        here = {template_name(t): j for j, t in enumerate(self.templates)}
        of_template = old.keys >> KEY_SHIFT
        translate = {a: self.codes_of(a, vs) for a, vs in old.values.items()}
        for j_old, template in enumerate(old.templates):
            sel = np.flatnonzero(of_template == j_old)
            j = here.get(template_name(template))
            if j is None or not len(sel):
                continue
            code = old.keys[sel] & CODE_MASK
            parts = []  # new value codes [k] per part, the last part first
            for a, _ in reversed(template):  # mixed radix, the last part the least significant
                code, c = np.divmod(code, max(len(old.values[a]), 1))
                parts.append(translate[a][c])
            key = np.zeros(len(sel), dtype=np.int64)
            found = np.ones(len(sel), dtype=bool)
            for (a, _), c in zip(template, reversed(parts), strict=True):
                key = key * max(len(self.values[a]), 1) + np.maximum(c, 0)
                found &= c >= 0
            out[sel] = np.where(found, (np.int64(j) << KEY_SHIFT) | key, -1)
        return out

    def carried_rows(self, old: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
        """(rows of ``old`` [M], rows here [M]): for every key of ``old`` kept here, its row
        there and its row here (after a fit that ``inherit``-ed ``old``: every key of it)."""
        recoded = self.recode(old)  # [K_old]
        rank = np.minimum(np.searchsorted(self.keys, recoded), max(len(self.keys) - 1, 0))
        kept = (recoded >= 0) & (self.keys[rank] == recoded) if len(self.keys) else recoded < -1
        return old.key_rows[kept], self.key_rows[rank[kept]]

    # -- building ---------------------------------------------------------------------------
    def fit(self, columns: dict[str, list[str | None]], doc_ids: np.ndarray) -> Vocabulary:
        """Freeze the attribute dictionaries and the keys seen >= min_count times."""
        self.fit_values({name: distinct_values(columns[name]) for name in self.attributes})
        self.fit_keys(self.key_counts(columns, doc_ids))
        return self

    def fit_values(self, distinct: dict[str, set[str]]) -> None:
        """Freeze each attribute's dictionary: its ``distinct`` training values (and those of
        the ``inherited`` vocabulary), sorted, then the boundary values."""
        reach = max((abs(o) for t in self.templates for _, o in t), default=0) * self.boundary
        bounds = [_boundary_value(d) for d in range(-reach, reach + 1) if d]
        for name in self.attributes:
            vals = set(distinct[name])
            if self.inherited is not None:
                vals.update(self.inherited.values.get(name, ()))
                vals.difference_update(bounds)
            self.values[name] = sorted(vals) + bounds
        self._build_index()

    def key_counts(
        self, columns, doc_ids: np.ndarray, codes: dict[str, np.ndarray] | None = None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per template, (its codes seen [K] sorted, how often each [K]) over the tokens of
        ``columns`` (or their attribute ``codes``, ``_codes``'s) after ``fit_values``."""
        out = []
        for col in self._template_codes(columns, doc_ids, codes):
            out.append(np.unique(col[col >= 0], return_counts=True))
        return out

    def fit_keys(self, counts: list[tuple[np.ndarray, np.ndarray]]) -> None:
        """Keep each template's codes seen at least its cutoff times (``key_counts``'s), and
        every key of the ``inherited`` vocabulary."""
        keys = []
        for j, (uniq, seen) in enumerate(counts):
            cutoff = self.min_count if self.min_counts is None else self.min_counts[j]
            keys.append((np.int64(j) << KEY_SHIFT) | uniq[seen >= cutoff])
        if self.inherited is not None:
            recoded = self.recode(self.inherited)
            keys.append(recoded[recoded >= 0])
        self._set_keys(np.unique(np.concatenate(keys)) if keys else self.keys)

    def codes_of(self, name: str, values) -> np.ndarray:
        """[n] int64: the code of each of ``values`` (a sized iterable) in attribute ``name``'s
        dictionary, -1 where it is not there."""
        index = self._index.get(name, {})
        return np.fromiter((index.get(v, -1) for v in values), dtype=np.int64, count=len(values))

    def _build_index(self) -> None:
        self._index = {a: {v: i for i, v in enumerate(vs)} for a, vs in self.values.items()}

    # -- applying ---------------------------------------------------------------------------
    def transform(
        self,
        columns: dict[str, list[str | None]] | None,
        doc_ids: np.ndarray,
        codes: dict[str, np.ndarray] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Feature ids in CSR form: (ids [nnz] int32, offsets [N + 1] int64), of the attribute
        ``columns`` or their ``codes`` (``_codes``'s)."""
        n = len(doc_ids)
        cols = []
        for j, col in enumerate(self._template_codes(columns, doc_ids, codes)):
            key = (np.int64(j) << KEY_SHIFT) | np.where(col >= 0, col, 0)
            pos = np.searchsorted(self.keys, key)
            pos = np.minimum(pos, max(len(self.keys) - 1, 0))
            hit = (col >= 0) & (self.keys[pos] == key) if len(self.keys) else col < -1
            rows = self.key_rows[pos] if len(self.keys) else pos
            cols.append(np.where(hit, rows, -1).astype(np.int32))
        dense = np.stack(cols, axis=1) if cols else np.zeros((n, 0), np.int32)  # [N, S]
        mask = dense >= 0
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(mask.sum(axis=1), out=offsets[1:])
        return dense[mask], offsets

    def _codes(self, columns: dict[str, Column], name: str) -> np.ndarray:
        index = self._index[name]
        column = columns[name]
        if isinstance(column, FactorColumn):  # the codes of the distinct values, gathered
            table = np.fromiter(
                (index.get(v, -1) if v is not None else -1 for v in column.values),
                dtype=np.int64,
                count=len(column.values),
            )
            return table[column.index] if len(table) else np.full(len(column), -1, np.int64)
        return np.fromiter(
            (index.get(v, -1) if v is not None else -1 for v in columns[name]),
            dtype=np.int64,
            count=len(columns[name]),
        )

    def _template_codes(self, columns, doc_ids: np.ndarray, codes=None):
        """Yield, per template, the code of every token ([N] int64, -1 = does not fire), from
        the attribute ``columns`` or their ``codes`` (attribute -> [N] int64)."""
        n = len(doc_ids)
        if codes is None:
            codes = {a: self._codes(columns, a) for a in self.attributes}
        shifted_cache: dict[tuple[str, int], np.ndarray] = {}
        if self.boundary and n:
            # first and one-past-last token of each token's document ([N] each)
            starts = np.flatnonzero(np.r_[True, doc_ids[1:] != doc_ids[:-1]])
            ends = np.r_[starts[1:], n]
            which = np.cumsum(np.r_[False, doc_ids[1:] != doc_ids[:-1]])
            first, last = starts[which], ends[which]

        def shifted(a: str, off: int) -> np.ndarray:
            if (a, off) not in shifted_cache:
                out = np.full(n, -1, dtype=np.int64)
                src = np.arange(n) + off
                ok = (src >= 0) & (src < n)
                ok[ok] &= doc_ids[src[ok]] == doc_ids[ok]
                out[ok] = codes[a][src[ok]]
                if self.boundary and off:
                    index = self._index[a]
                    outside = np.where(
                        src < first, src - first, np.where(src >= last, src - last + 1, 0)
                    )
                    for d in np.unique(outside[outside != 0]):
                        out[outside == d] = index.get(_boundary_value(int(d)), -1)
                shifted_cache[(a, off)] = out
            return shifted_cache[(a, off)]

        for template in self.templates:
            if not template:
                yield np.zeros(n, dtype=np.int64)
            elif len(template) == 1:
                yield shifted(*template[0])
            else:  # mixed radix: ((c1 * |V2| + c2) * |V3| + c3) ...
                (a1, o1), *rest = template
                code = shifted(a1, o1)
                valid = code >= 0
                span = max(len(self.values[a1]), 1)
                for a, o in rest:
                    c = shifted(a, o)
                    valid = valid & (c >= 0)
                    width = max(len(self.values[a]), 1)
                    code, span = code * width + c, span * width
                if span >= 1 << KEY_SHIFT:
                    raise ValueError(
                        f"template {template}: {span} value combinations exceed the 2^{KEY_SHIFT} "
                        "feature keys; use attributes with fewer values (e.g. pos, not w)"
                    )
                yield np.where(valid, code, -1)

    def feature_string(self, feature: int) -> str:
        """Feature id (a row) -> ``TEMPLATE=VALUE`` (values of several parts joined by ``|``),
        e.g. ``w[-1]=Paris``, ``pos[-1]|pos[0]=NNP|VBZ``; the bias is ``bias``.  With hashing,
        the strings of the keys that share the row joined by `` or `` (``(empty row)``: none)."""
        if self.hash_bits is None:
            return self.key_string(int(self.keys[feature]))
        keys = self.keys[self.key_rows == feature]
        return " or ".join(self.key_string(int(k)) for k in keys) or "(empty row)"

    def key_string(self, key: int) -> str:
        """Feature ``key`` -> ``TEMPLATE=VALUE`` (``feature_string``)."""
        template = self.templates[key >> KEY_SHIFT]
        if not template:
            return "bias"
        code = key & CODE_MASK
        values = []
        for a, _ in reversed(template):  # mixed radix, the last part the least significant
            width = max(len(self.values[a]), 1)
            code, c = divmod(code, width)
            values.append(self.values[a][c])
        name = template_name(template)
        return f"{name}={'|'.join(reversed(values))}"

    # -- persistence ------------------------------------------------------------------------
    def state(self) -> tuple[dict, dict[str, torch.Tensor]]:
        """(JSON-able metadata, tensors) — no pickle."""
        meta = {
            "templates": [[list(p) for p in t] for t in self.templates],
            "min_count": self.min_count,
            "boundary": self.boundary,
            "values": self.values,
        }
        if self.min_counts is not None:  # (the state of a vocabulary without them stays)
            meta["min_counts"] = self.min_counts
        if self.hash_bits is not None:  # (likewise)
            meta["hash_bits"] = self.hash_bits
        return meta, {"feature_keys": torch.from_numpy(self.keys)}

    @classmethod
    def from_state(cls, meta: dict, tensors: dict[str, torch.Tensor]) -> Vocabulary:
        templates = [tuple((a, int(o)) for a, o in t) for t in meta["templates"]]
        vocab = cls(
            templates,
            meta["min_count"],
            meta.get("boundary", False),
            meta.get("min_counts"),
            meta.get("hash_bits"),
        )
        vocab.values = {a: list(v) for a, v in meta["values"].items()}
        vocab._set_keys(tensors["feature_keys"].numpy().astype(np.int64))
        vocab._build_index()
        return vocab


def template_name(template: Template) -> str:
    """A template's name: its parts ``attribute[offset]`` joined by ``|`` (``bias``: none)."""
    return "|".join(f"{a}[{o}]" for a, o in template) or "bias"


def template_differences(old: Vocabulary, new: Vocabulary) -> str:
    """What of the templates and boundary values differs between two vocabularies, in words
    ("" when nothing does)."""
    out = []
    there = {template_name(t) for t in old.templates}
    here = {template_name(t) for t in new.templates}
    if there - here:
        out.append(f"templates only in the saved model: {_some(there - here)}")
    if here - there:
        out.append(f"templates only in this run: {_some(here - there)}")
    if old.boundary != new.boundary:
        out.append(f"boundary={old.boundary} in the saved model, {new.boundary} here")
    return "; ".join(out)


def _some(names: set[str], shown: int = 8) -> str:
    """The first ``shown`` of ``names``, sorted, and how many there are when more."""
    first = sorted(names)[:shown]
    return f"{first}" + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _boundary_value(distance: int) -> str:
    """The value of a position ``distance`` tokens outside the document (-2 -> ``_B-2``)."""
    return f"_B{distance:+d}"


def concat_columns(per_doc: list[dict[str, list[str | None]]]) -> dict[str, list[str | None]]:
    """Join per-document attribute columns into corpus-wide columns."""
    if not per_doc:
        return {}
    out: dict[str, list[str | None]] = {name: [] for name in per_doc[0]}
    for cols in per_doc:
        for name, vals in cols.items():
            out[name].extend(vals)
    return out


def join_csr(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Consecutive CSR pieces (ids [nnz_k], offsets [n_k + 1] from 0) as one (ids, offsets)."""
    if not parts:
        return np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int64)
    shift = np.cumsum([0] + [len(ids) for ids, _ in parts[:-1]])
    offsets = [parts[0][1][:1]] + [o[1:] + s for (_, o), s in zip(parts, shift, strict=True)]
    return np.concatenate([ids for ids, _ in parts]), np.concatenate(offsets)


def doc_index(docs: list[Document]) -> np.ndarray:
    """[N] int64: the document of each token of the concatenated corpus."""
    return np.repeat(np.arange(len(docs), dtype=np.int64), [len(d) for d in docs])
