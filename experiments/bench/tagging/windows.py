"""The cost of decoding long documents in windows: CoNLL-2003 test F1 of the main job's model
with the window (``window=``, ``inference/token_batch.py``) cut down so that its documents
(up to 797 tokens) are decoded in pieces, against whole documents (the default 2,048 tokens:
every CoNLL-2003 document is one window, decoded exactly as the torch path does).

    .venv/bin/python experiments/bench/tagging/windows.py --model runs/main

Writes ``windows.json`` beside this file (the figures of ``experiments/bench/tagging/README.md``).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from structperc.data.conll import read_conll
from structperc.eval.chunks import evaluate
from structperc.inference.tagger import Tagger

HERE = Path(__file__).resolve().parent
WINDOWS = (2048, 512, 256, 128, 64)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="runs/main")
    args = ap.parse_args()
    data = Path(os.environ.get("STRUCTPERC_DATA", HERE.parents[3] / "shared" / "data"))
    docs = read_conll(data / "conll2003" / "test.txt", "conll2003")
    rows = []
    for window in WINDOWS:
        tagger = Tagger.load(args.model, window=window)
        pred = tagger.tag_documents(docs)
        scores = evaluate([d.tags for d in docs], pred, [d.sentence_starts for d in docs])
        cut = sum(len(d) > window for d in docs)
        rows.append({"window": window, "documents_cut": cut, "f1": scores.f1})
        print(json.dumps(rows[-1]), flush=True)
    out = {"model": str(args.model), "documents": len(docs), "rows": rows}
    (HERE / "windows.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
