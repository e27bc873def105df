"""Viterbi labels and token marginals of a chain with one transition matrix, compiled.

``compiled_chain(structure, device)`` is a ``CompiledChain`` where the chain is CRFsuite's model
(``ChainWeights(edges=False)``) without label constraints, on the CPU, with numba installed, and
None otherwise (the torch paths: ``ChainStructure.predict``, ``decode/transition_scan.py``).
Its ``labels`` are ``chain_kernels.viterbi``'s paths (the first maximum on ties, as
``decode.viterbi._token_recursion``), its ``marginals`` the scaled forward-backward of
``crf_kernels.node_marginals``; one pass over the documents, no padding.
"""

from __future__ import annotations

import numpy as np
import torch

from structperc.features.extract import FeatureMatrix
from structperc.native import available as numba_available
from structperc.native.inputs import csr_arrays, table_arrays
from structperc.structures.chain import ChainStructure


def compiled_chain(structure, device) -> CompiledChain | None:
    """The compiled decoder of ``structure`` (module docstring), or None."""
    if not numba_available() or torch.device(device).type != "cpu":
        return None
    if type(structure) is not ChainStructure or structure.allowed is not None:
        return None
    return None if structure.weights.edges else CompiledChain(structure)


class CompiledChain:
    def __init__(self, structure: ChainStructure):
        self.weights = structure.weights

    def _inputs(self, features: FeatureMatrix) -> tuple:
        node, trans = table_arrays(self.weights)
        return (*csr_arrays(features, node.dtype), node, trans)

    def warm(self, features: FeatureMatrix) -> None:
        """Load the decoders in this process (numba's cache, else a compilation) by running
        them on none of ``features``' documents."""
        from structperc.native.chain_kernels import predict_all
        from structperc.native.crf_kernels import node_marginals

        doc_offsets, *rest = self._inputs(features)
        L = self.weights.num_labels
        predict_all(doc_offsets[:1], *rest, np.empty(0, np.int64))
        node_marginals(doc_offsets[:1], *rest, np.empty((0, L)))

    def labels(self, features: FeatureMatrix) -> list[list[int]]:
        """The Viterbi label ids of every document."""
        from structperc.native.chain_kernels import predict_all

        out = np.empty(features.num_tokens, np.int64)  # [N]
        predict_all(*self._inputs(features), out)
        return split(out, features.doc_offsets)

    def marginals(self, features: FeatureMatrix) -> list[np.ndarray]:
        """p(y_t = j | x) [T_d, L] (float64) of every document."""
        from structperc.native.crf_kernels import node_marginals

        out = np.empty((features.num_tokens, self.weights.num_labels))  # [N, L]
        node_marginals(*self._inputs(features), out)
        return split(out, features.doc_offsets)


def split(rows: np.ndarray, doc_offsets) -> list:
    """``rows`` [N, ...] cut into the documents' runs."""
    bounds = doc_offsets.tolist()
    return [rows[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
