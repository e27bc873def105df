"""A saved sequence labeler decoded by the compiled kernels: a chain's Viterbi path, or Kazama &
Torisawa's n'-best rescored with non-local features.

``CompiledChain.of(structure, features)`` is None where the kernels do not apply (numba
missing, a device other than the CPU, feature templates and the other attribute kinds
``AttributeCoder.supports`` refuses, another structure); the torch path then tags.  Otherwise it
holds the model as arrays: its attributes' coder (``token_codes.py``), its gazetteer lists
(``gazetteer_matcher.py``), its templates and weight table (``template_tables.py``), the
tag-scheme constraints, and, for a rescoring model, n' and the non-local features' weights by
code (``native/nonlocal_kernels.py``).

``label`` decodes the tokens of a batch (numbered words of a ``TypeTable``) in given windows:
the word sums of the batch's distinct words (``template_kernels.word_sums``), then the windows.
The kernels release the GIL: ``workers`` (``workers.py``) share the words and the windows.
"""

from __future__ import annotations

import numpy as np
import torch

from structperc.features.non_local.notation import FAMILIES
from structperc.features.pipeline import LocalFeatures
from structperc.inference.gazetteer_matcher import GazetteerMatcher
from structperc.inference.template_tables import ScoreTable, TemplateTables
from structperc.inference.token_codes import AttributeCoder, TypeTable
from structperc.inference.workers import Workers
from structperc.native import available as numba_available
from structperc.structures.chain import ChainStructure
from structperc.structures.rescoring import DocumentRescoring


class CompiledChain:
    """A chain (or document rescoring) model as the compiled kernels read it."""

    def __init__(self, structure: ChainStructure | DocumentRescoring, features: LocalFeatures):
        from structperc.native import template_kernels

        self._kernels = template_kernels
        weights = structure.weights
        self.labels = list(weights.labels)
        self.coder = AttributeCoder(features)
        self.gazetteers = GazetteerMatcher(features, self.coder)
        scores = ScoreTable.of(weights)
        self.table = scores.table
        self.tables = TemplateTables.build(
            features.vocab, scores.row_of, self.coder.type_attributes
        )
        chain = structure.chain if isinstance(structure, DocumentRescoring) else structure
        start, allowed = np.zeros(0, np.bool_), np.zeros((0, 0), np.bool_)
        if chain.allowed is not None:
            start, allowed = (m.numpy() for m in chain.allowed)
        trans = scores.trans.astype(np.float64) if len(scores.trans) else np.zeros((0, 0))
        self.scoring = (scores.node_cols, scores.edge_cols, trans, allowed, start)
        self.n = 1
        self.nonlocal_model = None
        if isinstance(structure, DocumentRescoring):
            self.n = structure.n
            self.nonlocal_model, self.casefold = nonlocal_weights(structure)

    @classmethod
    def of(cls, structure, features: LocalFeatures, device="cpu") -> CompiledChain | None:
        """The compiled model, or None where the kernels do not apply (module docstring)."""
        if not numba_available() or torch.device(device).type != "cpu":
            return None
        if type(structure) not in (ChainStructure, DocumentRescoring):
            return None
        if not AttributeCoder.supports(features):
            return None
        return cls(structure, features)

    @property
    def rescoring(self) -> bool:
        return self.nonlocal_model is not None

    def codes(
        self,
        type_ids: np.ndarray,
        types: TypeTable,
        documents: np.ndarray,
        columns: dict[str, np.ndarray] | None = None,
    ) -> np.ndarray:
        """[A, N] int32: the attribute codes of the tokens numbered ``type_ids`` [N] of the
        documents [D, 2] (token bounds), with the codes of the input ``columns`` ("pos",
        "chunk" -> [N])."""
        codes = self.coder.codes(type_ids, types)
        for name, row in (columns or {}).items():
            if name in self.coder.column_of:
                codes[self.coder.column_of[name]] = row
        self.gazetteers.fill(codes, type_ids, documents, types)
        return codes

    def label(
        self,
        codes: np.ndarray,
        type_ids: np.ndarray,
        types: TypeTable,
        bounds: np.ndarray,
        text: tuple | None = None,
        workers: Workers | None = None,
    ) -> np.ndarray:
        """[N] int64: the label ids of the tokens of the windows ``bounds`` [K, 4] = (t0, t1,
        d0, d1), each decoded alone, its templates reading the document [d0, d1).  A
        rescoring model needs ``text`` = (compare, connector, sentence) [N] ids
        (``nonlocal_kernels.best_candidate``).  ``workers``: threads that share the work."""
        unique, rows = np.unique(type_ids, return_inverse=True)
        word_codes = self.coder.codes_of_types(types)[unique]
        sums = np.empty((len(unique), len(self.tables.offsets), self.table.shape[1]), np.float32)
        workers = workers or Workers()
        parts = workers.runs(np.ones(len(unique), np.int64))
        workers.run(
            [
                lambda a=a, b=b: self._kernels.word_sums(
                    word_codes[a:b], self.tables.word_arrays(), self.table, sums[a:b]
                )
                for a, b in parts
            ],
        )
        model = (self.tables.context_arrays(), self.table, sums, self.tables.offsets)
        out = np.zeros(len(type_ids), dtype=np.int64)
        bounds = np.ascontiguousarray(bounds, dtype=np.int64).reshape(-1, 4)
        rows = rows.reshape(-1).astype(np.int64)
        decode = self._rescore if self.rescoring else self._label
        parts = workers.runs(bounds[:, 1] - bounds[:, 0])
        workers.run(
            [lambda a=a, b=b: decode(codes, rows, bounds[a:b], model, text, out) for a, b in parts]
        )
        return out

    def _label(self, codes, rows, bounds, model, text, out) -> None:
        """The Viterbi labels of each window (``template_kernels.label_sequences``)."""
        self._kernels.label_sequences(codes, rows, bounds, model, self.scoring, out)

    def _rescore(self, codes, rows, bounds, model, text, out) -> None:
        """Kazama & Torisawa's prediction (``structures/rescoring.py``'s ``predict``) of each
        window: the n' best under the local model (``nbest_kernels``), the first of the highest
        local + non-local score (``nonlocal_kernels.best_candidate``).  A kernel call a step
        (no compiled function calls another module's: numba's cache of a caller does not see a
        change to its callee's file)."""
        from structperc.native.nbest_kernels import nbest_paths
        from structperc.native.nonlocal_kernels import best_candidate

        kernels = self._kernels
        longest = int((bounds[:, 1] - bounds[:, 0]).max()) if len(bounds) else 0
        L = len(self.labels)
        sums = np.empty((longest, self.table.shape[1]), dtype=self.table.dtype)
        scratch_rows = np.empty((longest, len(self.tables.n_parts)), dtype=np.int32)
        pot = np.empty((longest, L, L))
        paths = np.empty((self.n, longest), dtype=np.int16)
        local = np.empty(self.n)
        for t0, t1, d0, d1 in bounds.tolist():
            T = t1 - t0
            if T == 0:
                continue
            kernels.window_sums(codes, rows, t0, t1, d0, d1, model, scratch_rows, sums)
            kernels.potentials(sums, T, self.scoring, pot)
            found = nbest_paths(pot, T, self.n, paths, local)
            if found == 0:  # no labeling of finite score (constraints): the first label
                continue
            best = best_candidate(paths, found, local, t0, t1, text, self.nonlocal_model)
            out[t0:t1] = paths[best, :T]


def nonlocal_weights(structure: DocumentRescoring) -> tuple[tuple, bool]:
    """(the non-local model of ``nonlocal_kernels.candidate_score``: label classes, B- flags,
    the weight of every code, the enabled families; whether strings compare case-folded)."""
    features = structure.doc_features
    table = structure.weights.global_.weight.detach().double().numpy()[:, 0]
    code_id = features.code_id
    weights = np.where(code_id >= 0, table[np.maximum(code_id, 0)], 0.0)
    enabled = np.array([f in features.families for f in FAMILIES], dtype=np.bool_)
    model = (
        features.label_class.astype(np.int64),
        features.label_begin.astype(np.bool_),
        weights,
        enabled,
    )
    return model, features.casefold
