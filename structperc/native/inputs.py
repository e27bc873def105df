"""The NumPy views the kernels read: CSR features and the tables of CRFsuite's model.

``csr_arrays`` gives a ``FeatureMatrix`` as (doc_offsets [D + 1] int64, ids [nnz] int32,
offsets [N + 1] int64, values, weighted): the values [nnz] in ``dtype`` where the matrix has
them (``weighted``), else one 1 the kernels never read.  ``table_arrays`` gives the node table
W [F, L] and the transitions A [L (from), L (to)] of ``ChainWeights(edges=False)`` as views of
the ``EmbeddingBag`` weights, so that a kernel writing them writes the tables.
"""

from __future__ import annotations

import numpy as np

from structperc.features.extract import FeatureMatrix
from structperc.model.weights import ChainWeights


def csr_arrays(features: FeatureMatrix, dtype=np.float32) -> tuple:
    weighted = features.values is not None
    values = features.values.numpy().astype(dtype) if weighted else np.ones(1, dtype)
    return (  # (int64 offsets as they are: no copy of the [N + 1] array)
        np.asarray(features.doc_offsets.numpy(), dtype=np.int64),
        features.ids.numpy(),
        np.asarray(features.offsets.numpy(), dtype=np.int64),
        values,
        weighted,
    )


def table_arrays(weights: ChainWeights) -> tuple[np.ndarray, np.ndarray]:
    L = weights.num_labels
    node = weights.node.weight.detach().numpy()  # [F, L]
    return node, weights.edge.weight.detach().numpy().reshape(L, L)  # [L, L]
