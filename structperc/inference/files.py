"""Tag a file: read it, tag it a batch at a time, write the output as it comes.

``TagJob`` is a ``structperc-tag`` run's settings (``conf/predict.yaml``; ``predict.py`` reads
them from the command line): the model to load (``TaggerSettings``, which the service loads its
model by too) and what to read and write.  ``tag_file`` does the work: the input read by
``InputSpec`` (text as a stream of paragraphs, column files whole), the model's labels a batch
of documents at a time (``Tagger.label_batch`` for text, ``Tagger.tag_documents`` for
documents), each batch's output written before the next is read (``io.write_output_pieces``:
standard output piece by piece, a file through a temporary file renamed into place), and the
scores of gold tags at the end.  So tagging text takes a memory that does not grow with the
input: a batch, a window, the model.

Under ``torchrun`` (``group``) every rank tags a consecutive block of the documents, read whole,
and rank 0 writes them all.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import torch

from structperc.data.conll import read_utf8
from structperc.data.constraints import Constraints
from structperc.data.document import Document, runs_of
from structperc.data.partial import UNKNOWN
from structperc.data.text import entity_spans, read_text
from structperc.distributed import SERIAL, Group, contiguous_shards
from structperc.eval.chunks import evaluate
from structperc.eval.tokens import token_scores
from structperc.features.read_ahead import prefetched
from structperc.inference.column_tagger import ColumnTagger
from structperc.inference.formats import (
    BATCH_TOKENS,
    OUTPUT_FORMATS,
    InputSpec,
    JsonlEntities,
    docstart_of,
    document_lines,
    entity_line,
    labels_line,
    output_encoding,
    text_batches,
    text_lines,
)
from structperc.inference.tagger import Tagger
from structperc.inference.token_batch import WINDOW_TOKENS
from structperc.io import refuse_overwriting_input, write_output_pieces
from structperc.plugins import import_plugins

log = logging.getLogger("structperc.predict")


@dataclass(frozen=True)
class TaggerSettings:
    """How a run folder is loaded for tagging: ``model`` the folder; ``tagger`` a column
    tagger's folder for input without the POS and chunk columns (default: the one the model
    carries); ``n_test``, ``constraints`` override the model's n' and tag-scheme constraints;
    ``batch_size`` documents a torch batch; ``device``; ``window`` the longest run of tokens
    decoded as one (``token_batch.windows``); ``threads`` the threads the compiled path uses
    (``workers.py``); ``plugins`` modules of the user's imported before the model loads (besides
    those the model records: ``structperc.plugins``)."""

    model: str
    tagger: str | None = None
    n_test: int | None = None
    constraints: str | None = None
    batch_size: int = 16
    device: str = "cpu"
    window: int = WINDOW_TOKENS
    threads: int = 1
    plugins: list[str] | None = None

    def load(self) -> Tagger:
        """The ``Tagger`` of these settings, the ``plugins`` imported first."""
        import_plugins(self.plugins)
        columns = ColumnTagger.load(self.tagger) if self.tagger is not None else None
        return Tagger.load(
            self.model,
            n=self.n_test,
            constraints=self.constraints,
            column_tagger=columns,
            batch_size=self.batch_size,
            device=self.device,
            window=self.window,
            threads=self.threads,
        )


# the settings that are not text, and what they must be (``checked_settings``)
KINDS = {
    "batch_size": "a whole number",
    "n_test": "a whole number or null",
    "window": "a whole number",
    "threads": "a whole number",
    "evaluate": "true or false",
    "columns": "a list of column names, e.g. [token,_,ner]",
    "plugins": "a list of module names, e.g. [my_features]",
}


def checked_settings(values: dict) -> dict:
    """``values`` (``conf/predict.yaml``'s keys, read from a command line) with text settings as
    strings (``model=3`` is the folder "3"); ValueError naming a setting of the wrong kind
    (``batch_size=x``, a device torch does not know, ...)."""
    out = dict(values)
    for key, value in out.items():
        kind = KINDS.get(key, "text")
        if value is None:
            continue
        if kind.startswith("a whole"):
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif kind.startswith("true"):
            ok = isinstance(value, bool)
        elif kind.startswith("a list"):
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        else:
            ok = not isinstance(value, list | dict)
            out[key] = str(value)
        if not ok:
            raise ValueError(f"{key}={value!r}: expected {kind}")
    try:
        torch.device(out.get("device", "cpu"))
    except (RuntimeError, ValueError) as err:
        raise ValueError(f"device={out['device']}: {str(err).splitlines()[0]}") from None
    return out


@dataclass(frozen=True)
class TagJob(TaggerSettings):
    """A ``structperc-tag`` run: the model (``TaggerSettings``), the ``input`` and ``output``
    files (``-``: standard input, output), how the input is read (``InputSpec``'s settings), the
    output's format and encoding, and whether gold tags are scored (``evaluate``)."""

    input: str = "-"
    output: str = "-"
    input_format: str = "conll"
    output_format: str = "conll"
    output_encoding: str | None = None
    layout: str | None = None
    columns: list[str] | None = None
    scheme: str | None = None
    documents: str | None = None
    evaluate: bool = True
    constraint_column: str | None = None
    unknown: str = UNKNOWN

    @classmethod
    def of(cls, settings: dict) -> TagJob:
        """The job of a settings mapping (``conf/predict.yaml``'s keys)."""
        return cls(**{f.name: settings[f.name] for f in fields(cls) if f.name in settings})

    def run(self, group: Group = SERIAL):
        """Load the model and tag the file (``tag_file``): the scores where there are any."""
        spec = InputSpec(self.input_format, self.layout, self.columns, self.documents, self.scheme)
        if self.output_format not in OUTPUT_FORMATS:  # (before the model loads)
            raise ValueError(
                f"output_format must be one of {OUTPUT_FORMATS}, got {self.output_format!r}"
            )
        refuse_overwriting_input(self.input, self.output)
        if self.constraint_column is not None and self.input_format == "text":
            raise ValueError(
                f"constraint_column={self.constraint_column}: plain text has no columns"
            )
        loading = {f.name: getattr(self, f.name) for f in fields(TaggerSettings)}
        tagger = TaggerSettings(**loading).load()
        return tag_file(
            tagger,
            self.input,
            self.output,
            spec,
            self.output_format,
            self.output_encoding,
            self.evaluate,
            group,
            (self.constraint_column, self.unknown),
        )


class Counts:
    """What a run tagged, for its log line."""

    def __init__(self):
        self.documents = self.tokens = 0
        self.t0 = time.perf_counter()

    def log(self, group: Group) -> None:
        log.info(
            "tagged %d documents, %d tokens in %.1fs on %d rank(s)",
            self.documents,
            self.tokens,
            time.perf_counter() - self.t0,
            group.world,
        )


def tag_file(
    tagger: Tagger,
    input_path: str | Path,
    output_path: str | Path,
    spec: InputSpec,
    output_format: str = "conll",
    encoding: str | None = None,
    score: bool = True,
    group: Group = SERIAL,
    constraint_column: tuple[str | None, str] = (None, UNKNOWN),
):
    """Tag ``input_path`` into ``output_path`` (``output_format``, in ``encoding``: default the
    model's corpus encoding where its column format reads the input, else UTF-8); returns the
    scores when gold tags exist (chunk scores, or a plain tagging model's token scores), on
    rank 0 (the other ranks return None).  ValueError, before anything is read, when
    ``output_path`` is the input file or a format is unknown.  ``constraint_column``: (a column
    of the input that constrains the labeling, its mark of a free token), or (None, _): the
    column's cells are ``data.constraints.Constraints.from_cells``'s, the decoders find the
    best labeling that keeps them."""
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"output_format must be one of {OUTPUT_FORMATS}, got {output_format!r}")
    refuse_overwriting_input(input_path, output_path)
    fmt = spec.column_format(tagger.corpus_format)
    encoding = output_encoding(encoding, fmt if output_format == "conll" else None)
    counts = Counts()
    if spec.format == "text" and not group.parallel:
        lines, name = text_lines(input_path)
        pieces = text_output(tagger, lines, name, output_format, counts)
        write_output_pieces(output_path, pieces, encoding)
        counts.log(group)
        if not counts.documents:
            log.warning("%s: no words to tag: the output is empty", name)
        return None
    if spec.format == "text":
        text, source = read_utf8(input_path)
        paragraphs = read_text(text, source=source)
        docs = [p.document for p in paragraphs]
    else:
        paragraphs, text = None, ""
        docs = spec.read_documents(input_path, tagger.corpus_format)
    if not docs and group.is_main:
        log.warning("%s: no words to tag: the output is empty", input_path)
    known = column_constraints(docs, *constraint_column)

    def tag_run(first: int, run: list[Document]) -> list[list[str]]:
        if known is None:
            return tagger.tag_documents(run)
        return tagger.tag_documents(run, constraints=known[first : first + len(run)])

    if group.parallel:
        block = contiguous_shards([len(d) for d in docs], group.world)[group.rank]
        parts = group.gather_objects(tag_run(block[0] if block else 0, [docs[i] for i in block]))
        if parts is None:  # not rank 0: rank 0 writes
            return None
        tagged = [p for part in parts for p in part]
    else:
        tagged = []
    predictions: list[list[str]] = []

    def pieces() -> Iterator[str]:
        docstart = docstart_of(docs)
        runs = ((0, docs),) if group.parallel else runs_of(docs, BATCH_TOKENS)
        for first, run in runs:
            tags = tagged if group.parallel else tag_run(first, run)
            for k, (doc, doc_tags) in enumerate(zip(run, tags, strict=True)):
                predictions.append(doc_tags)
                counts.documents += 1
                counts.tokens += len(doc)
                if output_format == "conll":
                    yield document_lines(doc, doc_tags, fmt, docstart)
                elif tagger.plain:
                    yield labels_line(doc.source, doc.tokens, doc_tags)
                elif paragraphs is not None:
                    entities = entity_spans(text, paragraphs[first + k], doc_tags)
                    yield json.dumps({"source": doc.source, "entities": entities}) + "\n"
                else:
                    yield entity_line(doc, doc_tags)

    write_output_pieces(output_path, pieces(), encoding)
    counts.log(group)
    if score and docs and all(d.tags is not None for d in docs):
        if tagger.plain:
            return token_scores([d.tags for d in docs], predictions)
        return evaluate([d.tags for d in docs], predictions, [d.sentence_starts for d in docs])
    return None


def column_constraints(docs: list[Document], column: str | None, unknown: str):
    """Each document's ``Constraints`` from its ``column`` (None without one); ValueError
    naming a document that lacks it."""
    if column is None:
        return None
    for doc in docs:
        if column not in doc.columns:
            raise ValueError(
                f"{doc.source or 'the input'}: no column {column!r} to read constraints from "
                f"(name it in the column map, e.g. columns=[token,pos,chunk,{column}])"
            )
    return [Constraints.from_cells(doc.columns[column], unknown) for doc in docs]


def text_output(
    tagger: Tagger, lines: Iterator[str], name: str, output_format: str, counts: Counts
) -> Iterator[str]:
    """The output of a text, batch by batch (``formats.text_batches``): the entities of each
    paragraph (``jsonl``), its tokens and tags (``conll``, or ``jsonl`` of a plain model: a
    paragraph read in pieces is written a piece at a time, as documents of their own)."""
    entities = JsonlEntities(name)
    labels = tagger.label_set
    tag_columns = None
    has_tokens = False  # the paragraph being read
    batches = text_batches(lines)
    for part in prefetched(batches) if tagger.threads > 1 else batches:
        batch = part.batch
        if tag_columns is None and len(batch):
            first = next(k for k, (a, b) in enumerate(batch.documents.tolist()) if b > a)
            where = f"{name}:{part.lines[first]}"
            tag_columns = tagger.tags_columns([Document(tokens=batch.tokens[:1], source=where)])
        ids = tagger.label_batch(batch, tag_columns) if len(batch) else np.zeros(0, np.int64)
        starts, ends, kinds = labels.chunks(ids)
        bounds = batch.documents.tolist()
        first_chunk = np.searchsorted(starts, [a for a, _ in bounds]).tolist() + [len(starts)]
        for k, (piece, (d0, d1)) in enumerate(zip(part.pieces, bounds, strict=True)):
            counts.tokens += d1 - d0
            has_tokens = has_tokens or d1 > d0
            if piece.closes:
                counts.documents += has_tokens
                has_tokens = False
            if output_format == "jsonl" and not labels.plain:
                chunks = range(first_chunk[k], first_chunk[k + 1])
                found = [
                    (
                        int(part.offsets[starts[c], 0]),
                        int(part.offsets[ends[c] - 1, 1]),
                        labels.types[kinds[c]],
                    )
                    for c in chunks
                ]
                yield entities.piece(piece, part.lines[k], d1 > d0, found)
                continue
            if d1 == d0:
                continue
            source = f"{name}:{part.lines[k]}"
            tokens = batch.tokens[d0:d1]
            tags = labels.tags(ids[d0:d1])
            if output_format == "jsonl":
                yield labels_line(source, tokens, tags)
                continue
            inner = batch.sentences[(batch.sentences[:, 0] >= d0) & (batch.sentences[:, 0] < d1)]
            doc = Document(tokens, sentence_starts=(inner[:, 0] - d0).tolist(), source=source)
            yield document_lines(doc, tags, None, False)
