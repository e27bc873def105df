"""Viterbi labels and token marginals of a chain with one transition matrix, compiled.

``compiled_chain(structure, device)`` is a ``CompiledChain`` where the chain is CRFsuite's model
(``ChainWeights(edges=False)``) without label constraints, on the CPU, with numba installed, and
None otherwise (the torch paths: ``ChainStructure.predict``, ``decode/transition_scan.py``).
Its ``labels`` are ``chain_kernels.viterbi``'s paths (the first maximum on ties, as
``decode.viterbi._token_recursion``), its ``marginals`` the scaled forward-backward of
``crf_kernels.node_marginals``; one pass over the documents, no padding.

``decode`` is the pipeline's prediction over a data set (the labeler's dev and test evaluation,
the cascade's chains, the bench): the compiled labels where they apply, for data without
prediction constraints, forbidden spans or features mapped from disk (whose pages the torch
path releases as it goes), and ``ChainStructure.predict`` otherwise.  The compiled decoder takes
each document alone whatever ``batch_size`` is (there is no padding to share), so decoding one
document at a time costs what decoding a batch does.
"""

from __future__ import annotations

import numpy as np
import torch

from structperc.features.extract import FeatureMatrix
from structperc.native import available as numba_available
from structperc.native.inputs import csr_arrays, table_arrays
from structperc.structures.chain import ChainData, ChainStructure


def compiled_chain(structure, device) -> CompiledChain | None:
    """The compiled decoder of ``structure`` (module docstring), or None."""
    if not numba_available() or torch.device(device).type != "cpu":
        return None
    if type(structure) is not ChainStructure or structure.allowed is not None:
        return None
    return None if structure.weights.edges else CompiledChain(structure)


def decode(
    structure, data: ChainData, batch_size: int = 256, device="cpu", progress: bool = False
) -> list[list[int]]:
    """Viterbi label ids of every document of ``data`` (module docstring)."""
    plain = data.allowed is None and not data.forbidden and not data.features.mapped
    compiled = compiled_chain(structure, device) if plain else None
    if compiled is None:
        return structure.predict(data, batch_size=batch_size, device=device, progress=progress)
    return [p.tolist() for p in compiled.labels(data.features)]


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
