"""The unlabeled text that word classes are learned from: which files, and their sentences.

The data folder's ``unlabeled/`` holds gzip-compressed UTF-8 text, a paragraph (or a sentence)
a line, a blank line between documents (its README lists the sources: Reuters-21578 newswire of
1987 and five NLTK corpora, 5.9M words).  A *corpus* here is one of those files, named by its
stem (``reuters21578`` for ``reuters21578.txt.gz``); ``all`` is every file, in sorted order.
Each line is tokenised as CoNLL-2003 is (``tokens.conll_tokens``) and is one training sequence.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator, Sequence
from pathlib import Path

from structperc.progress import bar
from structperc.wordclasses.tokens import conll_tokens

SUFFIX = ".txt.gz"
ALL = "all"


def unlabeled_dir(configured: str | Path, data_dir: str | Path | None = None) -> Path:
    """The folder of unlabeled text: ``configured`` if absolute (or an existing relative path),
    else taken from the data folder ``data_dir`` (resolved: ``data.loading.resolve_data_dir``;
    training resolves ``features.word_classes.dir`` so, ``tasks/inputs.local_features``)."""
    path = Path(configured).expanduser()
    if path.is_absolute() or path.is_dir():
        return path
    if data_dir is None:
        raise FileNotFoundError(
            f"features.word_classes.dir={configured!s} is relative, and there is no data "
            "folder to take it from (set STRUCTPERC_DATA, or give an absolute dir)"
        )
    return Path(data_dir) / path


def corpus_files(folder: Path, corpora: str | Sequence[str]) -> list[Path]:
    """The files of ``corpora`` (``all`` or a list of stems) in ``folder``, sorted by name."""
    available = sorted(folder.glob(f"*{SUFFIX}"))
    if not available:
        raise FileNotFoundError(
            f"no unlabeled text (*{SUFFIX}) in {folder} (features.word_classes.dir)"
        )
    by_stem = {p.name[: -len(SUFFIX)]: p for p in available}
    if isinstance(corpora, str):
        corpora = list(by_stem) if corpora == ALL else [corpora]
    unknown = sorted(set(corpora) - set(by_stem))
    if unknown:
        raise ValueError(
            f"features.word_classes.corpora: no {', '.join(unknown)} in {folder}; "
            f"known: {ALL}, {', '.join(by_stem)}"
        )
    return [by_stem[c] for c in sorted(set(corpora))]


def read_sentences(files: Sequence[Path], progress: bool = False) -> list[list[str]]:
    """Every non-empty line of ``files`` as CoNLL-2003 tokens, in file order."""
    out: list[list[str]] = []
    for path in files:
        for tokens in _lines(path, progress):
            out.append(tokens)
    return out


def _lines(path: Path, progress: bool) -> Iterator[list[str]]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in bar(f, enabled=progress, desc=path.name, unit=" lines"):
                tokens = conll_tokens(line)
                if tokens:
                    yield tokens
    except (OSError, UnicodeDecodeError, EOFError) as e:
        raise ValueError(f"{path}: not gzip-compressed UTF-8 text ({e})") from e
