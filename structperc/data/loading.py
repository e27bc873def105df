"""Find the data folder and load a corpus's splits as Documents, locally or from the hub.

The local CoNLL files (``<data_dir>/<name>/<split>.txt``) are the reference: they keep the
``-DOCSTART-`` lines that document-level features need.  Both sources go through one
Hugging Face ``datasets.Dataset`` layout (tokens, pos, chunk, tags, sentence_starts, source),
so the rest of the code sees one shape whichever source was used.  The hub copies
(``eriktks/conll2003``, ``eriktks/conll2000``) are only a fallback when no folder is found.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .conll import DEFAULT_DOCUMENTS, LAYOUTS, mark_docstart, read_conll
from .document import Document
from .tags import iob1_to_iob2

log = logging.getLogger(__name__)

ENV_VAR = "STRUCTPERC_DATA"
"""The environment variable that names the data folder (over ``data.dir``)."""
CONFIG_KEY = "data.dir"
SPLITS: dict[str, tuple[str, ...]] = {
    "conll2003": ("train", "dev", "test"),
    "conll2000": ("train", "test"),
}
"""The splits of each shared task's corpus."""
# Hub repositories to try, in order, and the hub's split names.  These repositories hold a
# loading script, which datasets>=4 no longer runs; the hub's own Parquet export of the same
# data (revision PARQUET_REVISION) is tried next.
HUB_REPOS: dict[str, tuple[str, ...]] = {
    "conll2003": ("eriktks/conll2003",),
    "conll2000": ("eriktks/conll2000", "conll2000"),
}
PARQUET_REVISION = "refs/convert/parquet"
HUB_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
FIELDS = ("tokens", "pos", "chunk", "tags", "sentence_starts", "source")


def resolve_data_dir(configured: str | os.PathLike | None) -> Path | None:
    """The data folder: ``$STRUCTPERC_DATA`` if it names a folder, else ``configured`` if it
    does (the config key ``data.dir``), else None.  A relative path is taken from the cwd.

    The one place the data folder is decided: the training entry point calls it once
    (``run.ComposedConfig.data_dir``), a script through ``require_data_dir``; everything below
    takes the folder it returns (``load_corpus``, ``ColumnCorpus.files``, the relative paths of
    gazetteers, templates and unlabeled text)."""
    env = os.environ.get(ENV_VAR)
    if env and not Path(env).expanduser().is_dir():
        log.warning("%s=%s is not a folder; ignoring it", ENV_VAR, env)
    for candidate in (env, configured):
        if candidate and Path(candidate).expanduser().is_dir():
            return Path(candidate).expanduser()
    return None


DEFAULT_DATA_DIR = "../shared/data"  # conf/data/*.yaml's data.dir


def require_data_dir(
    given: str | os.PathLike | None = None,
    corpus: str | None = None,
    default: str | os.PathLike = DEFAULT_DATA_DIR,
) -> Path:
    """The data folder of a script: ``given`` when the user named one (a command-line flag),
    else ``resolve_data_dir(default)`` (``$STRUCTPERC_DATA``, then ``default``).

    Raises FileNotFoundError naming what was tried when there is none, or (with ``corpus``) when
    it lacks ``<corpus>/``.
    """
    if given is not None:
        root, tried = Path(given).expanduser(), f"{given!s} (given)"
        if not root.is_dir():
            raise FileNotFoundError(f"{root}: no such data folder")
    else:
        root = resolve_data_dir(default)
        tried = f"${ENV_VAR}={os.environ.get(ENV_VAR)!r}, {default!s}"
        if root is None:
            raise FileNotFoundError(f"no data folder: tried {tried}; set {ENV_VAR} or name one")
    if corpus is not None and not (root / corpus).is_dir():
        raise FileNotFoundError(f"{root / corpus}: no such folder (tried {tried})")
    return root


def load_corpus(
    name: str,
    data_dir: str | os.PathLike | None,
    max_docs: int | None = None,
    splits: Sequence[str] | None = None,
) -> dict[str, list[Document]]:
    """Load the splits of ``name`` ("conll2003" or "conll2000") as lists of Documents.

    data_dir: the data folder, resolved (``resolve_data_dir``: ``$STRUCTPERC_DATA`` over
              ``data.dir``, by the entry point); None: none.  The files read are
              ``<folder>/<name>/<split>.txt``.
    max_docs: keep the first N documents of each split.
    splits:   which splits, default all: train/dev/test for conll2003, train/test for conll2000.

    CoNLL-2003 documents are the ``-DOCSTART-`` documents, CoNLL-2000 ones are sentences.  When
    no local folder exists the splits come from the Hugging Face hub (HUB_REPOS).  The hub copy
    drops the ``-DOCSTART-`` lines, so every document is then a single sentence (a warning is
    logged) and document-level features lose their context.  Raises FileNotFoundError when
    neither source works.
    """
    if name not in LAYOUTS:
        raise ValueError(f"unknown corpus {name!r}: expected one of {sorted(LAYOUTS)}")
    wanted = tuple(SPLITS[name] if splits is None else splits)
    unknown = [s for s in wanted if s not in SPLITS[name]]
    if unknown:
        raise ValueError(f"{name} has no split(s) {unknown}: expected some of {SPLITS[name]}")

    root = Path(data_dir).expanduser() if data_dir is not None else None
    if root is not None and (root / name).is_dir():
        docstart = DEFAULT_DOCUMENTS[name] == "docstart"
        tables = {s: _local_split(root / name, name, s, max_docs) for s in wanted}
    else:
        docstart = False
        tables = _hub_splits(name, wanted, max_docs, _tried_folders(data_dir, name))
    return {s: to_documents(tables[s], docstart=docstart) for s in wanted}


def _tried_folders(data_dir: str | os.PathLike | None, name: str) -> list[str]:
    return [str(Path(data_dir).expanduser() / name)] if data_dir else []


def _local_split(folder: Path, name: str, split: str, max_docs: int | None) -> Any:
    path = folder / f"{split}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file; the {name} folder needs {SPLITS[name]}")
    return to_dataset(read_conll(path, layout=name, max_docs=max_docs))


def _features() -> Any:
    import datasets

    strings = datasets.List(datasets.Value("string"))
    return datasets.Features(
        {
            "tokens": strings,
            "pos": strings,
            "chunk": strings,
            "tags": strings,
            "sentence_starts": datasets.List(datasets.Value("int32")),
            "source": datasets.Value("string"),
        }
    )


def to_dataset(documents: Iterable[Document]) -> Any:
    """A ``datasets.Dataset`` with one row per document (FIELDS); absent columns are None."""
    import datasets

    rows: dict[str, list] = {f: [] for f in FIELDS}
    for doc in documents:
        rows["tokens"].append(doc.tokens)
        rows["pos"].append(doc.columns.get("pos"))
        rows["chunk"].append(doc.columns.get("chunk"))
        rows["tags"].append(doc.tags)
        rows["sentence_starts"].append(doc.sentence_starts)
        rows["source"].append(doc.source)
    return datasets.Dataset.from_dict(rows, features=_features())


def to_documents(table: Any, docstart: bool = False) -> list[Document]:
    """Documents from a Dataset made by ``to_dataset``; ``docstart`` marks them for writing."""
    cols = table[:] if len(table) else {f: [] for f in FIELDS}
    out = []
    for tokens, pos, chunk, tags, starts, source in zip(*(cols[f] for f in FIELDS), strict=True):
        columns = {k: v for k, v in (("pos", pos), ("chunk", chunk)) if v is not None}
        doc = Document(
            tokens=tokens, columns=columns, tags=tags, sentence_starts=starts, source=source
        )
        out.append(mark_docstart(doc, docstart))
    return out


def _hub_splits(
    name: str, wanted: Sequence[str], max_docs: int | None, tried: list[str]
) -> dict[str, Any]:
    import datasets

    errors = []
    attempts = [(repo, rev) for repo in HUB_REPOS[name] for rev in (None, PARQUET_REVISION)]
    for repo, revision in attempts:
        try:
            hub = datasets.load_dataset(repo, **({"revision": revision} if revision else {}))
        except Exception as err:  # any failure (offline, missing, format) means: try the next
            first = str(err).splitlines()[0] if str(err) else ""
            where = f"{repo}@{revision}" if revision else repo
            errors.append(f"{where}: {type(err).__name__}: {first}")
            continue
        log.warning(
            "no local %s folder: loading %s from the Hugging Face hub; it has no -DOCSTART- "
            "lines, so every document is a single sentence",
            name,
            repo,
        )
        return {s: to_dataset(_hub_documents(hub, repo, name, s, max_docs)) for s in wanted}
    folders = " or ".join(tried) if tried else "(none configured)"
    raise FileNotFoundError(
        f"no {name} data: no local folder {folders}, and the Hugging Face hub failed "
        f"({'; '.join(errors)}). Put {name}/{{{','.join(SPLITS[name])}}}.txt in a folder and "
        f"point ${ENV_VAR} or the config key {CONFIG_KEY} at it."
    ) from None


def _label_names(feature: Any) -> list[str] | None:
    """The names of a (sequence of) ClassLabel feature, or None for plain strings."""
    inner = getattr(feature, "feature", feature)
    return list(inner.names) if hasattr(inner, "names") else None


def _hub_documents(
    hub: Any, repo: str, name: str, split: str, max_docs: int | None
) -> list[Document]:
    """One hub split as sentence Documents, ClassLabel ids mapped back to tag strings."""
    hub_split = HUB_SPLITS[split]
    table = hub[hub_split]
    if max_docs is not None:
        table = table.select(range(min(max_docs, len(table))))
    cols = table[:] if len(table) else {}
    names = {
        c: _label_names(table.features[c])
        for c in ("pos_tags", "chunk_tags", "ner_tags")
        if c in table.features
    }

    def strings(column: str, i: int) -> list[str]:
        values = cols[column][i]
        labels = names[column]
        return [labels[v] for v in values] if labels is not None else list(values)

    out = []
    ids = cols.get("id") or [str(i) for i in range(len(table))]
    for i, tokens in enumerate(cols.get("tokens", [])):
        if not tokens:
            continue  # old versions of the hub script yield an empty last example
        columns = {"pos": strings("pos_tags", i)}
        if name == "conll2003":
            columns["chunk"] = iob1_to_iob2(strings("chunk_tags", i))
            tags = iob1_to_iob2(strings("ner_tags", i))
        else:
            tags = iob1_to_iob2(strings("chunk_tags", i))
        source = f"{repo}/{hub_split}:{ids[i]}"
        out.append(Document(tokens=list(tokens), columns=columns, tags=tags, source=source))
    return out
