"""An on-disk cache of extracted features, keyed by everything that determines them.

The key hashes the feature settings, the identity of the input files (path, size, mtime) and the
cache format version, so a second run on the same data and settings skips extraction, and any
change rebuilds it.  Entries are safetensors + JSON, written atomically.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import torch

from structperc.features.extract import FeatureMatrix
from structperc.io import atomic_save_tensors, atomic_write_json, load_tensors, read_json

FORMAT_VERSION = 1


def file_identity(path: str | Path) -> list:
    p = Path(path)
    st = p.stat()
    return [str(p.resolve()), st.st_size, int(st.st_mtime)]


def cache_key(parts: dict) -> str:
    blob = json.dumps({"v": FORMAT_VERSION, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def cached_features(
    cache_dir: str | Path | None,
    key_parts: dict,
    build: Callable[[], tuple[dict, dict[str, torch.Tensor], dict[str, FeatureMatrix]]],
) -> tuple[dict, dict[str, torch.Tensor], dict[str, FeatureMatrix], bool]:
    """(meta, vocabulary tensors, matrices per split, hit) from the cache or from ``build()``."""
    if cache_dir is None:
        return (*build(), False)
    entry = Path(cache_dir) / cache_key(key_parts)
    if (entry / "meta.json").is_file() and (entry / "features.safetensors").is_file():
        meta = read_json(entry / "meta.json")
        tensors = load_tensors(entry / "features.safetensors")
        vocab = {k[6:]: v for k, v in tensors.items() if k.startswith("vocab.")}
        splits = {
            s: FeatureMatrix(
                tensors[f"{s}.ids"], tensors[f"{s}.offsets"], tensors[f"{s}.doc_offsets"]
            )
            for s in meta["splits"]
        }
        return meta["features"], vocab, splits, True
    meta, vocab, splits = build()
    tensors = {f"vocab.{k}": v for k, v in vocab.items()}
    for s, fm in splits.items():
        tensors.update({f"{s}.{k}": v for k, v in fm.tensors().items()})
    atomic_save_tensors(entry / "features.safetensors", tensors)
    atomic_write_json(
        entry / "meta.json", {"features": meta, "splits": list(splits), "key": key_parts}
    )
    return meta, vocab, splits, False
