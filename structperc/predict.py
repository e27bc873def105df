"""Tag a file with a trained model (``structperc-tag``).

    python -m structperc.predict model=RUN_DIR input=test.txt output=out.txt
    python -m structperc.predict model=RUN_DIR input=tokens.txt output=out.txt 'columns=[token]'
    python -m structperc.predict model=RUN_DIR input=news.txt output=out.jsonl \\
        input_format=text output_format=jsonl
    cat news.txt | structperc-tag model=RUN_DIR input=- output=- input_format=text \\
        output_format=jsonl > out.jsonl

Input: CoNLL columns in the layout's order (with or without the gold tags), any other column
layout through a column map (``columns=[token,_,_,ner]``, ``_`` skipping a column; gold tags in
any scheme of ``data/schemes.py``, ``scheme``), or plain text (``input_format=text``: paragraphs
are documents).  A model trained on a corpus of its own (``data=columns``) reads its input in
that corpus's columns, encoding, separator, documents and scheme without any of these settings,
and writes its output in them (``output_encoding`` another encoding; other input is read, and its
output written, as UTF-8).  Output: the input columns and the predicted tag as the last one
(``conll``), or one JSON line per document with its entities (``jsonl``: character offsets for
text input, token offsets for column input; a plain tagging model's tokens and tags instead).
Gold tags are scored as conlleval does, or, for a plain tagging model (POS tags), by token
accuracy and each label's precision, recall and F1.  ``input=-`` reads standard input and
``output=-`` writes standard output; the log goes to standard error, and so do the scores when
the output is standard output.  With gold tags present it prints the scores.  Under ``torchrun``
(``torchrun --standalone --nproc-per-node=N -m structperc.predict ...``) the documents are split
into N consecutive blocks of about equal tokens, each rank tags one, and rank 0 writes the one
output in the input's order.

Failures are one line on standard error: bad input, a bad model, an output that is the input or
cannot be written print what is wrong, naming the file (and line), and exit with status 2; a
missing ``model=``, ``input=`` or ``output=`` prints the usage line too; Ctrl-C prints
``structperc-tag: interrupted`` and exits with status 130 (``HYDRA_FULL_ERROR=1``: the
tracebacks).  The output file is written whole or not at all (a temporary file renamed into
place).  Plain text without words (an empty file or standard input, blank lines) gives an
empty output; an empty CoNLL file is an error, as in training.

Character offsets (``jsonl`` of text input) count characters of the input decoded from UTF-8, a
leading byte-order mark dropped and the line ends kept as in the file (a CRLF is two characters):
``open(path, encoding="utf-8-sig", newline="").read()[start:end]`` is the entity's text
(``data/text.py``).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path

import hydra
import torch
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import OverrideParseException
from omegaconf import DictConfig, OmegaConf

from structperc.cli import (
    config_dir,
    fail_cleanly,
    require_settings,
    run_entry_point,
    usage_error,
)
from structperc.data.conll import check_encoding, read_conll, read_utf8, write_conll
from structperc.data.constraints import Constraints
from structperc.data.partial import UNKNOWN
from structperc.data.tags import spans
from structperc.data.text import entity_spans, read_text
from structperc.distributed import SERIAL, Group, contiguous_shards
from structperc.eval.chunks import evaluate
from structperc.eval.tokens import token_scores
from structperc.io import STDIO, refuse_overwriting_input, write_output_text
from structperc.tagger import Tagger
from structperc.tasks.loading import ColumnTagger

log = logging.getLogger("structperc.predict")

INPUT_FORMATS, OUTPUT_FORMATS = ("conll", "text"), ("conll", "jsonl")
PROGRAM = "structperc-tag"
USAGE = "model=RUN_DIR input=FILE|- output=FILE|- [key=value ...]  (--help: every setting)"
REQUIRED = ("model", "input", "output")
# the settings that are not text, and what they must be (``settings``)
WHOLE_NUMBERS, SWITCHES, LISTS = ("batch_size", "n_test"), ("evaluate",), ("columns",)
KINDS = {
    "batch_size": "a whole number",
    "n_test": "a whole number or null",
    "evaluate": "true or false",
    "columns": "a list of column names, e.g. [token,_,ner]",
}


def tag_file(
    model_dir: str | Path,
    input_path: str | Path,
    output_path: str | Path,
    *,
    layout: str | None = None,
    documents: str | None = None,
    columns: list[str] | None = None,
    scheme: str | None = None,
    input_format: str = "conll",
    output_format: str = "conll",
    batch_size: int = 16,
    device: str = "cpu",
    score: bool = True,
    n_test: int | None = None,
    constraints: str | None = None,
    tagger: str | Path | None = None,
    output_encoding: str | None = None,
    group: Group = SERIAL,
    constraint_column: str | None = None,
    unknown: str = UNKNOWN,
):
    """Tag ``input_path`` into ``output_path``; returns the scores when gold tags exist (chunk
    scores, or a plain tagging model's token scores).

    ``layout``, ``columns``: how the input's columns are laid out (default: the column format
    the model records, else ``conll2003``); ``documents``, ``scheme`` override the layout's.

    ``tagger``: a tagchunk run folder that fills the POS and chunk columns the model needs and
    the input lacks (a model trained with ``features.tags=auto`` carries its own).
    ``output_encoding``: the output's (default: the input's, the model's corpus encoding where
    its column format reads the input; UTF-8 otherwise and for ``jsonl``).
    ``group``: the ranks sharing the work; each tags a consecutive block of the documents and
    rank 0 alone writes (and returns the scores; the others return None).
    ``constraint_column``: a column of the input (named in ``columns``) that constrains the
    labeling: ``unknown`` (``?``) leaves a token free, a label fixes it, labels joined by ``|``
    allow them (``data/constraints.py``); the decoders find the best labeling that keeps them.
    ValueError, before anything is read, when ``output_path`` is the input file.
    """
    if input_format not in INPUT_FORMATS or output_format not in OUTPUT_FORMATS:
        raise ValueError(
            f"input_format must be one of {INPUT_FORMATS} and output_format one of "
            f"{OUTPUT_FORMATS}, got {input_format!r}, {output_format!r}"
        )
    refuse_overwriting_input(input_path, output_path)
    if output_encoding is not None:
        output_encoding = check_encoding(output_encoding)
    columns_from = ColumnTagger.load(tagger) if tagger is not None else None
    tagger = Tagger.load(
        model_dir,
        n=n_test,
        constraints=constraints,
        column_tagger=columns_from,
        batch_size=batch_size,
        device=device,
    )
    paragraphs, text = None, ""
    if input_format == "text":
        text, source = read_utf8(input_path)
        paragraphs = read_text(text, source=source)
        docs = [p.document for p in paragraphs]
        if not docs and group.is_main:
            log.warning("%s: no words to tag: the output is empty", source)
    fmt = tagger.corpus_format if layout is None and columns is None else None
    if input_format == "text":
        fmt = None  # (written as the layout's columns)
    elif fmt is not None:  # the model's own corpus format
        options = {"documents": documents, "scheme": scheme}
        fmt = replace(fmt, **{k: v for k, v in options.items() if v is not None})
        docs = fmt.read(input_path, optional_label=True)
    else:
        layout = layout or "conll2003"
        docs = read_conll(input_path, layout, documents, columns=columns, scheme=scheme)
    known = column_constraints(docs, constraint_column, unknown, input_format)
    t0 = time.perf_counter()
    block = contiguous_shards([len(d) for d in docs], group.world)[group.rank]
    given = {} if known is None else {"constraints": [known[i] for i in block]}
    mine = tagger.tag_documents([docs[i] for i in block], progress=group.is_main, **given)
    parts = group.gather_objects(mine)
    if parts is None:  # not rank 0: rank 0 writes
        return None
    pred = [p for part in parts for p in part]
    n_tok = sum(len(d) for d in docs)
    seconds = time.perf_counter() - t0
    log.info(
        "tagged %d documents, %d tokens in %.1fs on %d rank(s)",
        len(docs),
        n_tok,
        seconds,
        group.world,
    )
    if output_format == "jsonl":
        lines = []
        for k, (doc, tags) in enumerate(zip(docs, pred, strict=True)):
            if tagger.plain:  # no entities: the tokens and their tags
                line = {"source": doc.source, "tokens": doc.tokens, "tags": tags}
                lines.append(json.dumps(line))
                continue
            if paragraphs is not None:
                entities = entity_spans(text, paragraphs[k], tags)
            else:
                entities = [
                    {"start": s, "end": e, "type": t, "text": " ".join(doc.tokens[s:e])}
                    for s, e, t in spans(tags)
                ]
            lines.append(json.dumps({"source": doc.source, "entities": entities}))
        text = "\n".join(lines) + "\n" if lines else ""
        write_output_text(output_path, text, output_encoding or "utf-8")
    elif fmt is not None:  # in the corpus's encoding, unless told another
        replace(fmt, encoding=output_encoding or fmt.encoding).write(output_path, docs, pred)
    else:
        write_conll(output_path, docs, pred, encoding=output_encoding or "utf-8")
    if score and docs and all(d.tags is not None for d in docs):
        if tagger.plain:
            return token_scores([d.tags for d in docs], pred)
        return evaluate([d.tags for d in docs], pred, [d.sentence_starts for d in docs])
    return None


def column_constraints(docs, column: str | None, unknown: str, input_format: str):
    """Each document's ``Constraints`` from its ``column`` (None without one); ValueError
    naming a document that lacks it."""
    if column is None:
        return None
    if input_format == "text":
        raise ValueError(f"constraint_column={column}: plain text has no columns")
    for doc in docs:
        if column not in doc.columns:
            raise ValueError(
                f"{doc.source or 'the input'}: no column {column!r} to read constraints from "
                f"(name it in the column map, e.g. columns=[token,pos,chunk,{column}])"
            )
    return [Constraints.from_cells(doc.columns[column], unknown) for doc in docs]


def check_arguments(args: list[str]) -> None:
    """Each ``key=value`` argument sets a key of ``conf/predict.yaml`` (or Hydra's ``hydra.*``):
    otherwise the usage line and one error line naming the argument (as for a missing setting),
    not Hydra's report of several lines and status 1.  A command line with flags (``--help``,
    ``--cfg job``, ...) is Hydra's to read."""
    if any(arg.startswith("-") for arg in args):
        return
    keys = set(OmegaConf.load(Path(config_dir()) / "predict.yaml")) - {"defaults", "hydra"}
    parser = OverridesParser.create()
    for arg in args:
        try:
            (override,) = parser.parse_overrides([arg])
        except OverrideParseException as err:
            reason = str(err).strip().splitlines()[0]
            usage_error(PROGRAM, USAGE, f"{arg!r} is not a setting key=value ({reason})")
        key = override.key_or_group
        if override.is_delete():
            usage_error(PROGRAM, USAGE, f"{arg!r}: settings are not deleted (key=null unsets one)")
        if key.split(".")[0] != "hydra" and key not in keys:
            usage_error(PROGRAM, USAGE, f"unknown setting {key}= in {arg!r}")


def settings(cfg: DictConfig) -> dict:
    """The settings of ``cfg`` as plain values: text settings as strings (``model=3`` is the
    folder "3"), ValueError naming a setting of the wrong kind (``batch_size=x``, a device
    torch does not know, ...)."""
    out = OmegaConf.to_container(cfg)
    for key, value in out.items():
        if value is None:
            continue
        if key in WHOLE_NUMBERS:
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif key in SWITCHES:
            ok = isinstance(value, bool)
        elif key in LISTS:
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        else:
            ok = not isinstance(value, list | dict)
            out[key] = str(value)
        if not ok:
            raise ValueError(f"{key}={value!r}: expected {KINDS.get(key, 'text')}")
    try:
        torch.device(out["device"])
    except (RuntimeError, ValueError) as err:
        raise ValueError(f"device={out['device']}: {str(err).splitlines()[0]}") from None
    return out


@hydra.main(version_base="1.3", config_path=config_dir(), config_name="predict")
def tag_main(cfg: DictConfig) -> None:
    """Hydra's job: ``tag_file`` with the settings of ``conf/predict.yaml``."""
    require_settings(PROGRAM, USAGE, [k for k in REQUIRED if OmegaConf.is_missing(cfg, k)])
    group = SERIAL
    try:
        s = settings(cfg)
        group = Group.from_environment("auto", s["device"])
        scores = tag_file(
            s["model"],
            s["input"],
            s["output"],
            layout=s["layout"],
            documents=s["documents"],
            columns=s["columns"],
            scheme=s["scheme"],
            input_format=s["input_format"],
            output_format=s["output_format"],
            batch_size=s["batch_size"],
            device=group.device_of(s["device"]),
            score=s["evaluate"],
            n_test=s["n_test"],
            constraints=s["constraints"],
            tagger=s["tagger"],
            output_encoding=s["output_encoding"],
            group=group,
            constraint_column=s["constraint_column"],
            unknown=s["unknown"],
        )
    except (ValueError, OSError) as err:
        fail_cleanly(PROGRAM, err)
    finally:
        group.close()
    if not group.is_main:
        return
    to_stdout = str(cfg.output) == STDIO  # then the scores go to stderr, with the log
    log.info("wrote %s", "<stdout>" if to_stdout else cfg.output)
    if scores is not None:
        print(scores.format(), file=sys.stderr if to_stdout else sys.stdout)


def main() -> None:
    """``structperc-tag``: the command line (``sys.argv``) through Hydra; Ctrl-C: one line."""
    check_arguments(sys.argv[1:])
    run_entry_point(PROGRAM, tag_main)


if __name__ == "__main__":
    main()
