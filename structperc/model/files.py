"""Model files: ``model.safetensors`` (weight tables, feature keys) + ``model.json`` (labels,
feature settings and vocabulary, run metadata, the size and sha256 of the tensor file).  Loading
checks the tensor file against them, so a truncated or damaged file is reported by name, and
reads tensors and JSON only: no pickle, no code.
"""

from __future__ import annotations

from pathlib import Path

from structperc.features.pipeline import LocalFeatures
from structperc.io import (
    atomic_save_tensors,
    atomic_write_json,
    check_digest,
    file_digest,
    load_tensors,
    read_json,
)
from structperc.model.weights import ChainWeights

FORMAT = "structperc.chain/1"


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
    tensors = {f"weights.{n}": t for n, t in weights.tables().items()}
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
    if meta.get("format") != FORMAT:
        raise ValueError(f"{meta_path}: format {meta.get('format')!r}, expected {FORMAT!r}")
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
        num_global = len(tensors["weights.global"])
        weights = DocumentWeights(features.num_features, meta["labels"], num_global, edges)
        info["document_features"] = doc_features
    else:
        weights = ChainWeights(features.num_features, meta["labels"], edges)
    for name, table in weights.tables().items():
        table.data.copy_(tensors[f"weights.{name}"])
    return weights, features, info
