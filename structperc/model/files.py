"""Model files: ``model.safetensors`` (weight tables, feature keys) + ``model.json`` (labels,
feature settings and vocabulary, run metadata, the size and sha256 of the tensor file).  Loading
checks the tensor file against them, so a truncated or damaged file is reported by name, and
reads tensors and JSON only: no pickle, no code.

The tables are stored sparse (format 2): for each table its non-zero entries as flat indices
(``weights.<name>.index``, int32 while the table has fewer than 2^31 entries) and values
(``weights.<name>.values``), its shape in the JSON; loading writes them into zero tables.  Most
of a table is never updated (the main job keeps 2.3 M of its 27.9 M weights), so the file is a
fifth of the dense one.  Dense files (format 1: ``weights.<name>``) still load.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import Tensor

from structperc.features.pipeline import LocalFeatures
from structperc.io import (
    atomic_save_tensors,
    atomic_write_json,
    check_digest,
    file_digest,
    load_tensors,
    read_json,
)
from structperc.model.weights import ChainWeights, flat_at

FORMAT = "structperc.chain/2"
FORMATS = ("structperc.chain/1", FORMAT)  # 1: dense tables


def sparse_tables(tables: dict[str, Tensor]) -> tuple[dict[str, Tensor], dict[str, list[int]]]:
    """The non-zero entries of each table (flat index, value) and the tables' shapes."""
    tensors, shapes = {}, {}
    for name, table in tables.items():
        flat = table.detach().reshape(-1)
        index = torch.nonzero(flat).squeeze(1)
        dtype = torch.int32 if flat.numel() < 2**31 else torch.int64
        tensors[f"weights.{name}.index"] = index.to(dtype)
        tensors[f"weights.{name}.values"] = flat[index]
        shapes[name] = list(table.shape)
    return tensors, shapes


def fill_tables(tables: dict[str, Tensor], tensors: dict[str, Tensor], shapes: dict, path) -> None:
    """Write the stored entries into ``tables`` (zeroed first); ValueError on a shape mismatch."""
    for name, table in tables.items():
        if shapes.get(name) != list(table.shape):
            raise ValueError(
                f"{path}: table {name!r} has shape {shapes.get(name)}, the model needs "
                f"{list(table.shape)}"
            )
        table.data.zero_()
        flat, pos = flat_at(table.data, tensors[f"weights.{name}.index"].long())
        flat[pos] = tensors[f"weights.{name}.values"]


def save_model(
    directory: str | Path,
    weights: ChainWeights,
    features: LocalFeatures,
    info: dict | None = None,
    doc_features=None,
) -> Path:
    """Write the model into ``directory`` (atomically, file by file).

    ``doc_features`` (a fitted ``NonLocalFeatures``) is stored with a ``DocumentWeights`` model.
    """
    directory = Path(directory)
    meta, vocab_tensors = features.state()
    tensors, shapes = sparse_tables(weights.tables())
    tensors.update({f"vocab.{n}": t for n, t in vocab_tensors.items()})
    atomic_save_tensors(directory / "model.safetensors", tensors)
    digest = file_digest(directory / "model.safetensors")
    doc = {"document_features": doc_features.state()[0]} if doc_features is not None else {}
    atomic_write_json(
        directory / "model.json",
        {
            "format": FORMAT,
            "labels": weights.labels,
            "edges": weights.edges,
            "tensors": {"file": "model.safetensors", **digest},
            "tables": shapes,
            "features": meta,
            "info": info or {},
            **doc,
        },
    )
    return directory


def load_model(directory: str | Path) -> tuple[ChainWeights, LocalFeatures, dict]:
    """(weights, fitted features, info) from a directory written by ``save_model``.

    A model with non-local features comes back as ``DocumentWeights``, and its fitted
    ``NonLocalFeatures`` as ``info["document_features"]``.
    """
    directory = Path(directory)
    meta_path = directory / "model.json"
    if not meta_path.is_file():
        raise FileNotFoundError(f"no model.json in {directory}: not a structperc model directory")
    meta = read_json(meta_path)
    if meta.get("format") not in FORMATS:
        raise ValueError(f"{meta_path}: format {meta.get('format')!r}, expected one of {FORMATS}")
    if "tensors" in meta:  # models written before the digest load unchecked
        check_digest(directory / meta["tensors"]["file"], meta["tensors"])
    tensors = load_tensors(directory / "model.safetensors")
    vocab = {k[6:]: v for k, v in tensors.items() if k.startswith("vocab.")}
    features = LocalFeatures.from_state(meta["features"], vocab)
    info = dict(meta.get("info", {}))
    edges = meta.get("edges", True)
    if "document_features" in meta:
        from structperc.features.document import NonLocalFeatures
        from structperc.model.document_weights import DocumentWeights

        doc_features = NonLocalFeatures.from_state(meta["document_features"])
        num_global = (
            meta["tables"]["global"][0] if "tables" in meta else len(tensors["weights.global"])
        )
        weights = DocumentWeights(features.num_features, meta["labels"], num_global, edges)
        info["document_features"] = doc_features
    else:
        weights = ChainWeights(features.num_features, meta["labels"], edges)
    if "tables" in meta:
        fill_tables(weights.tables(), tensors, meta["tables"], directory / "model.safetensors")
    else:  # format 1: dense tables
        for name, table in weights.tables().items():
            table.data.copy_(tensors[f"weights.{name}"])
    return weights, features, info
