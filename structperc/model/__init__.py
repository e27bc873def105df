"""Models: sparse linear weights in ``torch.nn.EmbeddingBag`` tables, their batches, their
updates without autograd, and their files.

    weights.py              ``ChainWeights``: node [F, L] and edge [F, L*L] (or joint) tables
                            and the chain's potentials from them
    document_weights.py     ``DocumentWeights``: the chain plus the non-local feature table
    label_chunk_weights.py  ``LabelChunkWeights``: a table per part type
    ranker_weights.py       ``RankerWeights``: a reranker's base weight and global features
    batch.py                ``FeatureBatch``: documents as EmbeddingBag input, padded layouts
    updates.py              ``SparseDelta``, ``Updater``: sparse differences, in-place updates
                            and lazy averaging
    mixing.py               iterative parameter mixing over several processes
    growth.py, carry.py     tables grown for new features and labels; a saved model's weights
                            carried into a new model (warm starts)
    compact_table.py        a read-only table without its zero rows (a model loaded to tag)
    files.py                ``save_model`` / ``load_model``: safetensors + JSON, no pickle
"""

from structperc.model.batch import FeatureBatch, make_batch
from structperc.model.compact_table import CompactTable
from structperc.model.document_weights import DocumentWeights
from structperc.model.files import load_model, save_model
from structperc.model.label_chunk_weights import LabelChunkWeights
from structperc.model.mixing import ParameterMixing
from structperc.model.ranker_weights import RankerWeights
from structperc.model.updates import SparseDelta, Updater, path_delta
from structperc.model.weights import ChainWeights, chain_potentials

__all__ = [
    "ChainWeights",
    "CompactTable",
    "DocumentWeights",
    "FeatureBatch",
    "LabelChunkWeights",
    "ParameterMixing",
    "RankerWeights",
    "SparseDelta",
    "Updater",
    "chain_potentials",
    "load_model",
    "make_batch",
    "path_delta",
    "save_model",
]
