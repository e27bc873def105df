"""Explain a tagging model's predictions on a file (``structperc-explain``), as JSON.

    structperc-explain model=RUN input=test.txt output=explained.json
    structperc-explain model=RUN input=news.txt input_format=text output=- top=5
    structperc-explain model=RUN input=test.txt output=errors.json only=errors

For every document of the input: its tokens, the predicted labels and, for every token (or, with
``only=errors``, every token whose prediction differs from the input's gold tag), the runner-up
label, the margin between the two labelings and the ``top`` features that contribute most to it
(name, terms of label, value and weight, contribution), with the count and sum of the others:
the contributions add up to the margin (``explain/tokens.py``).  With ``weights=true`` (the
default) the output also holds the model's weights: the ``top`` features per label, the
transition matrix and the non-local features' weights by family (``explain/weights.py``).

The input is read as ``structperc-tag`` reads it: CoNLL columns in the model's corpus format
(``data=columns``) or the CoNLL-2003 layout, with or without the gold tags, or plain text
(``input_format=text``: paragraphs are documents).  ``output=-`` writes standard output; a file is
written whole or not at all.  Failures are one line naming the file, and status 2.
"""

from __future__ import annotations

import json
import sys

from structperc.cli import fail_cleanly, interrupts_cleanly, key_value_settings
from structperc.data.conll import read_conll, read_utf8
from structperc.data.text import read_text
from structperc.inference.tagger import Tagger
from structperc.io import refuse_overwriting_input, write_output_text

PROGRAM = "structperc-explain"
USAGE = (
    "model=RUN_DIR input=FILE|- output=FILE|- [input_format=conll|text] [top=10] "
    "[only=all|errors] [weights=true|false] [n_test=N] [constraints=none|iob2] [tagger=DIR]"
)
DEFAULTS = {
    "model": ...,
    "input": ...,
    "output": ...,
    "input_format": "conll",
    "top": 10,
    "only": "all",
    "weights": True,
    "n_test": None,
    "constraints": None,
    "tagger": None,
}


def explain_file(settings: dict) -> dict:
    """The JSON object ``structperc-explain`` writes for ``settings`` (``DEFAULTS``' keys)."""
    s = settings
    if s["input_format"] not in ("conll", "text") or s["only"] not in ("all", "errors"):
        raise ValueError(
            f"input_format must be conll or text and only all or errors, got "
            f"{s['input_format']!r}, {s['only']!r}"
        )
    n = None if s["n_test"] is None else int(s["n_test"])
    tagger = Tagger.load(s["model"], n=n, constraints=s["constraints"], column_tagger=s["tagger"])
    if s["input_format"] == "text":
        text, source = read_utf8(s["input"])
        docs = [p.document for p in read_text(text, source=source)]
    elif tagger.corpus_format is not None:
        docs = tagger.read(s["input"])
    else:
        docs = read_conll(s["input"], "conll2003")
    positions = None
    if s["only"] == "errors":
        if not all(d.tags is not None for d in docs):
            raise ValueError(f"{s['input']}: only=errors needs the gold tags in the input")
        predicted = tagger.tag_documents(docs)
        positions = [
            [t for t, (g, p) in enumerate(zip(d.tags, pred, strict=True)) if g != p]
            for d, pred in zip(docs, predicted, strict=True)
        ]
    out: dict = {"model": str(s["model"]), "input": str(s["input"])}
    if s["weights"]:
        out["weights"] = tagger.explain_weights(s["top"])
    explained = tagger.explain_documents(docs, positions)
    out["documents"] = [d.to_json(s["top"]) for d in explained]
    return out


def main(args: list[str] | None = None) -> None:
    """``structperc-explain``: the command line (``sys.argv``)."""
    with interrupts_cleanly(PROGRAM):
        given = sys.argv[1:] if args is None else args
        s = key_value_settings(PROGRAM, USAGE, given, DEFAULTS, __doc__)
        try:
            refuse_overwriting_input(s["input"], s["output"])
            out = explain_file(s)
            write_output_text(s["output"], json.dumps(out, indent=1) + "\n")
        except (ValueError, OSError) as err:
            fail_cleanly(PROGRAM, err)


if __name__ == "__main__":
    main()
