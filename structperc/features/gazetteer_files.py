"""Gazetteers from the user's files: any number of lists, each its own attribute family.

``features.gazetteer_files`` is a list of lists, each a mapping:

    path:      the file (relative: to the working folder, else to the data folder)
    format:    ``typed``: ``TYPE word word ...`` a line (CoNLL-2003's ``eng.list``), or
               ``per_type``: ``word word ...`` a line, every entry of the one type ``type``
    type:      the entity type of a ``per_type`` list (default: the file's stem)
    name:      the family's name (default: the file's stem); its attributes are ``NAME.TYPE``
    casefold:  match lower-cased (default false)
    jackknife: the list was built from the training annotations (default false): a training
               document is matched only against entries that occur as same-type entities in
               other folds of the training data (``gazetteer.jackknife_entries``), so the list is
               no oracle on training data
    encoding:  the file's encoding (default utf-8; a byte-order mark is dropped)

A family's attribute ``NAME.TYPE`` is ``B`` at the first token of the longest match of an entry of
that type and ``I`` inside it, and does not fire outside a match (as the external lists,
``features/external``).  Templates name the attributes (``places.LOC[0]``, ``places.*[-1..1]``);
Table 1's named attributes use each one as a unigram within the window and as a bigram.  A saved
model keeps each list's entries and the sha256 of its file, so tagging needs no list.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from structperc.data.document import Document
from structperc.features.gazetteer import (
    Entries,
    EntryIndex,
    gazetteer_columns,
    jackknife_entries,
)
from structperc.io import file_digest

FORMATS = ("typed", "per_type")
KEYS = ("path", "format", "type", "name", "casefold", "jackknife", "encoding")


@dataclass(frozen=True)
class GazetteerFile:
    """One list's settings (see the module docstring)."""

    path: str
    format: str = "typed"
    type: str | None = None
    name: str | None = None
    casefold: bool = False
    jackknife: bool = False
    encoding: str = "utf-8"

    @classmethod
    def from_config(cls, item, where: str) -> GazetteerFile:
        if isinstance(item, str):
            item = {"path": item}
        if isinstance(item, Mapping):  # (Hydra gives a DictConfig)
            item = {str(k): v for k, v in item.items()}
        if not isinstance(item, dict) or "path" not in item:
            raise ValueError(f"{where}: expected a mapping with a path, got {item!r}")
        unknown = set(item) - set(KEYS)
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}; expected {list(KEYS)}")
        spec = cls(**{k: item[k] for k in KEYS if item.get(k) is not None})
        if spec.format not in FORMATS:
            raise ValueError(f"{where}: format {spec.format!r}, expected one of {FORMATS}")
        if spec.format == "typed" and spec.type is not None:
            raise ValueError(f"{where}: 'type' is for format per_type (a typed list names types)")
        return spec

    @property
    def family(self) -> str:
        name = self.name or re.sub(r"[^A-Za-z0-9_]", "_", Path(self.path).stem)
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"gazetteer file {self.path}: name {name!r} is not a name")
        return name


def read_entries(spec: GazetteerFile) -> Entries:
    """type -> entries (token tuples) of one list; a bad line is an error naming FILE:LINE."""
    entries: Entries = defaultdict(set)
    default_type = spec.type or Path(spec.path).stem
    with open(spec.path, encoding=spec.encoding) as f:
        for lineno, line in enumerate(f, 1):
            if lineno == 1:
                line = line.removeprefix("\ufeff")
            parts = line.split()
            if not parts:
                continue
            if spec.format == "per_type":
                entries[default_type].add(tuple(parts))
            elif len(parts) < 2:
                raise ValueError(
                    f"{spec.path}:{lineno}: expected 'TYPE word [word ...]' (format typed), "
                    f"got {line.rstrip()!r}"
                )
            else:
                entries[parts[0]].add(tuple(parts[1:]))
    if not entries:
        raise ValueError(f"{spec.path}: the gazetteer list has no entries")
    return dict(entries)


@dataclass
class GazetteerFamily:
    """A read list: its settings, entries and the attribute of each type."""

    spec: GazetteerFile
    entries: Entries
    sha256: str = ""

    @property
    def attributes(self) -> dict[str, str]:
        """attribute (``NAME.TYPE``) -> type, types sorted."""
        return {f"{self.spec.family}.{t}": t for t in sorted(self.entries)}

    def fold_indexes(self, train: Sequence[Document], folds: int) -> list[dict[str, EntryIndex]]:
        """The jackknife's entry index of each fold (the entries of the other folds)."""
        low = self.spec.casefold
        return [
            {t: EntryIndex(e, low) for t, e in fold.items()}
            for fold in jackknife_entries(train, self.entries, folds)
        ]

    def columns(
        self,
        docs: Sequence[Document],
        training: bool,
        folds: int,
        start: int = 0,
        fold_indexes: list[dict[str, EntryIndex]] | None = None,
    ) -> list[dict[str, list[str | None]]]:
        """Per document, attribute -> B/I (None outside a match); ``training`` with
        ``jackknife``: each document against the entries of the other folds (``fold_indexes``
        of the whole training set, ``docs`` being its documents from number ``start`` on; by
        default ``docs`` are the whole set)."""
        if training and self.spec.jackknife:
            if fold_indexes is None:
                fold_indexes = self.fold_indexes(docs, folds)
            indexes = [fold_indexes[(start + i) % folds] for i in range(len(docs))]
        else:
            indexes = [self._index] * len(docs)
        tags = gazetteer_columns(docs, indexes, self.attributes)
        return [{a: [None if t == "O" else t for t in ts] for a, ts in d.items()} for d in tags]

    @property
    def _index(self) -> dict[str, EntryIndex]:
        if not hasattr(self, "_full"):
            self._full = {t: EntryIndex(e, self.spec.casefold) for t, e in self.entries.items()}
        return self._full

    def state(self) -> dict:
        return {
            "settings": {k: getattr(self.spec, k) for k in KEYS},
            "sha256": self.sha256,
            "entries": {t: sorted(" ".join(e) for e in es) for t, es in self.entries.items()},
        }

    @classmethod
    def from_state(cls, state: dict) -> GazetteerFamily:
        entries = {t: {tuple(e.split(" ")) for e in es} for t, es in state["entries"].items()}
        return cls(GazetteerFile(**state["settings"]), entries, state.get("sha256", ""))


def read_families(items) -> list[GazetteerFamily]:
    """The lists of ``features.gazetteer_files``, read; families must have distinct names."""
    families = []
    for i, item in enumerate(items or ()):
        spec = GazetteerFile.from_config(item, f"features.gazetteer_files[{i}]")
        if not Path(spec.path).is_file():
            raise FileNotFoundError(f"features.gazetteer_files[{i}]: no such file {spec.path}")
        digest = file_digest(spec.path)["sha256"]
        families.append(GazetteerFamily(spec, read_entries(spec), digest))
    names = [f.spec.family for f in families]
    if len(set(names)) != len(names):
        raise ValueError(
            f"features.gazetteer_files: two lists named {names}; give each a distinct 'name'"
        )
    return families
