"""Model files: ``model.safetensors`` (weight tables, feature keys) + ``model.json`` (labels,
feature settings and vocabulary, run metadata, the size and sha256 of the tensor file).  Loading
checks the tensor file against them, so a truncated or damaged file is reported by name, and
reads tensors and JSON only: no pickle.  The only code loading runs is the user's plugins the
model records (``"plugins"``: the modules of its feature functions, ``structperc.plugins``),
imported before its features are rebuilt.

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

from structperc.features.functions import registered_modules
from structperc.features.pipeline import LocalFeatures
from structperc.features.template_language import TemplateError
from structperc.io import (
    atomic_save_tensors,
    atomic_write_json,
    check_digest,
    file_digest,
    load_tensors,
    read_json,
)
from structperc.model.compact_table import CompactTable
from structperc.model.weights import ChainWeights, flat_at
from structperc.plugins import import_plugins, plugin_names, recorded_plugins

FORMAT = "structperc.chain/2"
FORMATS = ("structperc.chain/1", FORMAT)  # 1: dense tables
# What model.json holds, as load_model reads it: key -> (JSON type, required).  "tables" is
# required in format 2; "tensors" is absent from the files written before the digest.
META_KEYS: dict[str, tuple[type, bool]] = {
    "format": (str, True),
    "labels": (list, True),
    "features": (dict, True),
    "tables": (dict, False),
    "tensors": (dict, False),
    "info": (dict, False),
    "document_features": (dict, False),
    "plugins": (list, False),
}
JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "true or false"}


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


def check_shape(shapes: dict, name: str, needed: list[int], path) -> None:
    """ValueError naming ``path`` unless the stored shape of table ``name`` is ``needed``."""
    if shapes.get(name) != needed:
        raise ValueError(
            f"{path}: table {name!r} has shape {shapes.get(name)}, the model needs {needed}"
        )


def fill_tables(tables: dict[str, Tensor], tensors: dict[str, Tensor], shapes: dict, path) -> None:
    """Write the stored entries into ``tables`` (zeroed first); ValueError on a shape mismatch."""
    for name, table in tables.items():
        check_shape(shapes, name, list(table.shape), path)
        table.data.zero_()
        flat, pos = flat_at(table.data, _tensor(tensors, f"weights.{name}.index", path).long())
        flat[pos] = _tensor(tensors, f"weights.{name}.values", path)


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
            "plugins": recorded_plugins(registered_modules()),
            **doc,
        },
    )
    return directory


def model_digest(directory: str | Path) -> str:
    """The sha256 of a saved model's tensor file: model.json's record of it, or the file's
    (a model saved before the record)."""
    directory = Path(directory)
    tensors = read_json(directory / "model.json").get("tensors")
    if isinstance(tensors, dict) and isinstance(tensors.get("sha256"), str):
        return tensors["sha256"]
    return file_digest(directory / "model.safetensors")["sha256"]


def json_type(value) -> str:
    """The JSON name of ``value``'s type ("an object", "an array", "a number", ...)."""
    if value is None:
        return "null"
    kind = next((name for t, name in JSON_TYPES.items() if isinstance(value, t)), None)
    return kind or ("a number" if isinstance(value, int | float) else type(value).__name__)


def check_meta(meta, path: Path) -> dict:
    """``meta`` (model.json's content) when it has the keys and types ``load_model`` reads;
    else ValueError naming ``path`` and what was expected."""
    if not isinstance(meta, dict):
        raise ValueError(
            f"{path}: expected a JSON object (format, labels, features, tables, tensors), found "
            f"{json_type(meta)}: not a structperc model file"
        )
    if meta.get("format") not in FORMATS:
        raise ValueError(f"{path}: format {meta.get('format')!r}, expected one of {FORMATS}")
    for key, (kind, required) in META_KEYS.items():
        required = required or (key == "tables" and meta["format"] == FORMAT)
        if key not in meta and not required:
            continue
        if not isinstance(meta.get(key), kind):
            found = f"found {json_type(meta[key])}" if key in meta else "it is missing"
            raise ValueError(f'{path}: expected "{key}" to be {JSON_TYPES[kind]}, {found}')
    _check_entries(meta, path)
    return meta


def _check_entries(meta: dict, path: Path) -> None:
    """The insides of "labels", "tables" and "tensors" (``check_meta``)."""
    if not all(isinstance(label, str) for label in meta["labels"]):
        raise ValueError(f'{path}: expected "labels" to be an array of strings')
    for name, shape in meta.get("tables", {}).items():
        if not (isinstance(shape, list) and all(type(n) is int and n >= 0 for n in shape)):
            raise ValueError(
                f'{path}: expected "tables"."{name}" to be a shape (an array of sizes), found '
                f"{shape!r}"
            )
    tensors = meta.get("tensors")
    expected = {"file": str, "bytes": int, "sha256": str}
    if tensors is not None and not all(isinstance(tensors.get(k), t) for k, t in expected.items()):
        raise ValueError(
            f'{path}: expected "tensors" to hold "file", "bytes" and "sha256" (the tensor file\'s '
            f"name, size and digest), found {sorted(tensors)}"
        )


def _from_state(path: Path, key: str, build, *args):
    """``build(*args)`` (a ``from_state``), its KeyError, TypeError, ... on settings of the
    wrong shape raised again as ValueError naming ``path`` and the key of model.json."""
    try:
        return build(*args)
    except TemplateError as err:  # a template the model names and this process cannot read
        raise ValueError(f"{path}: {err}") from err
    except (KeyError, TypeError, AttributeError, IndexError) as err:
        raise ValueError(
            f'{path}: "{key}" is not what structperc writes there ({type(err).__name__}: {err})'
        ) from err


def load_model(
    directory: str | Path, *, compact: bool = False
) -> tuple[ChainWeights, LocalFeatures, dict]:
    """(weights, fitted features, info) from a directory written by ``save_model``.

    A model with non-local features comes back as ``DocumentWeights``, and its fitted
    ``NonLocalFeatures`` as ``info["document_features"]``.  ``compact=True``: the table with a
    row per feature is a read-only ``CompactTable`` (for tagging: the same scores without the
    all-zero rows and columns; ``model/compact_table.py``), the small ones as always.
    """
    directory = Path(directory)
    meta_path = directory / "model.json"
    if not meta_path.is_file():
        raise FileNotFoundError(f"no model.json in {directory}: not a structperc model directory")
    meta = check_meta(read_json(meta_path), meta_path)
    if "tensors" in meta:  # models written before the digest load unchecked
        check_digest(directory / meta["tensors"]["file"], meta["tensors"])
    import_plugins(plugin_names(meta.get("plugins")), where=str(meta_path))
    tensors = load_tensors(directory / "model.safetensors")
    vocab = {k[6:]: v for k, v in tensors.items() if k.startswith("vocab.")}
    features = _from_state(meta_path, "features", LocalFeatures.from_state, meta["features"], vocab)
    info = dict(meta.get("info", {}))
    edges = meta.get("edges", True)
    compact = compact and "tables" in meta  # (dense files, format 1, load in full)
    rows = 0 if compact else features.num_features  # compact: the big table comes below
    if "document_features" in meta:
        from structperc.features.document import NonLocalFeatures
        from structperc.model.document_weights import DocumentWeights

        doc_features = _from_state(
            meta_path, "document_features", NonLocalFeatures.from_state, meta["document_features"]
        )
        num_global = _global_rows(meta, tensors, meta_path)
        weights = DocumentWeights(rows, meta["labels"], num_global, edges)
        info["document_features"] = doc_features
    else:
        weights = ChainWeights(rows, meta["labels"], edges)
    tensor_path = directory / "model.safetensors"
    if compact:
        _compact_feature_table(weights, features.num_features, tensors, meta["tables"], tensor_path)
    elif "tables" in meta:
        fill_tables(weights.tables(), tensors, meta["tables"], tensor_path)
    else:  # format 1: dense tables
        for name, table in weights.tables().items():
            table.data.copy_(_tensor(tensors, f"weights.{name}", tensor_path))
    return weights, features, info


def _compact_feature_table(
    weights: ChainWeights, num_features: int, tensors: dict[str, Tensor], shapes: dict, path
) -> None:
    """Give ``weights`` (built with no feature rows) its feature table as a ``CompactTable`` of
    the stored entries (``joint``, node | edge, or ``node``) and fill the small tables (the shared
    transition matrix, the non-local table) as ``fill_tables`` does."""
    L = weights.num_labels
    small = {k: v for k, v in weights.tables().items() if k == "global"}
    names = {"node": L, "edge": L * L} if weights.edges else {"node": L}
    for name, width in names.items():
        check_shape(shapes, name, [num_features, width], path)
    blocks = [
        (
            width,
            _tensor(tensors, f"weights.{name}.index", path),
            _tensor(tensors, f"weights.{name}.values", path),
        )
        for name, width in names.items()
    ]
    try:
        table = CompactTable(num_features, blocks)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    if weights.edges:
        weights.joint = table
    else:
        weights.node = table
        small["edge"] = weights.edge.weight
    fill_tables(small, tensors, shapes, path)


def _tensor(tensors: dict[str, Tensor], name: str, path) -> Tensor:
    """``tensors[name]``; ValueError naming the tensor file when it lacks that tensor."""
    if name not in tensors:
        raise ValueError(f"{path}: no tensor {name!r}, which the model needs")
    return tensors[name]


def _global_rows(meta: dict, tensors: dict[str, Tensor], meta_path: Path) -> int:
    """The rows of the non-local feature table, from its shape (format 2) or the table."""
    if "tables" not in meta:
        return len(_tensor(tensors, "weights.global", meta_path.parent / "model.safetensors"))
    shape = meta["tables"].get("global")
    if not shape:
        raise ValueError(f'{meta_path}: expected "tables"."global", the non-local feature table')
    return shape[0]
