"""A token-only copy of the CoNLL-2003 test set through the whole pipeline: the tagchunk model
fills the POS and chunk columns, then a NER model tags; F1 and tokens per second next to the same
model on the file with its given columns.

    python experiments/tagchunk/token_only.py --model experiments/kazama2007/runs/proposed_C1000 \\
        --tagger experiments/tagchunk/runs/conll00_tagchunk \\
        --out experiments/tagchunk/token_only.json

Both passes run in this process, one after the other, through ``structperc.predict.tag_file``
(reading, feature extraction, decoding and writing included).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch

from structperc.data.conll import read_conll
from structperc.data.loading import require_data_dir
from structperc.predict import tag_file


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", type=Path, required=True, help="a NER run folder")
    ap.add_argument("--tagger", type=Path, required=True, help="a tagchunk run folder")
    ap.add_argument("--out", type=Path, required=True, help="JSON of the figures")
    ap.add_argument(
        "--data-dir", default=None, help="data folder ($STRUCTPERC_DATA, else ../shared/data)"
    )
    args = ap.parse_args()
    torch.set_num_threads(1)
    test = require_data_dir(args.data_dir, corpus="conll2003") / "conll2003" / "test.txt"
    docs = read_conll(test)
    tokens = sum(len(d) for d in docs)
    work = Path(tempfile.mkdtemp(prefix="token_only_"))
    only = work / "tokens_and_tags.txt"  # tokens and gold tags: the columns of a user's file
    blocks = []
    for d in docs:  # the documents kept (-DOCSTART-), as the non-local features read them
        blocks.append("-DOCSTART- O")
        bounds = [*d.sentence_starts, len(d)]
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            rows = zip(d.tokens[a:b], d.tags[a:b], strict=True)
            blocks.append("\n".join(f"{w} {t}" for w, t in rows))
    only.write_text("\n\n".join(blocks) + "\n")
    rows = {}
    for name, path, kwargs in (
        ("given columns", test, {}),
        (
            "tokens only, tagger's columns",
            only,
            {
                "columns": ["token", "ner"],
                "scheme": "iob2",
                "documents": "docstart",
                "tagger": args.tagger,
            },
        ),
    ):
        t0 = time.perf_counter()
        scores = tag_file(args.model, path, work / "out.txt", **kwargs)
        seconds = time.perf_counter() - t0
        rows[name] = {"f1": scores.f1, "seconds": seconds, "tokens_per_second": tokens / seconds}
        print(name, json.dumps(rows[name]))
    args.out.write_text(json.dumps({"model": str(args.model), "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
