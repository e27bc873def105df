"""The scikit-learn face's hashed models: test F1 against the table's size on CoNLL-2003.

sklearn-crfsuite's tutorial features (experiments/bench/sklearn_bench.py) of CoNLL-2003's
training sentences, labels as in the file (IOB1); ``CRF(algorithm="ap", max_iterations=10,
epsilon=0, hash_bits=b)`` for each b, and the dictionary model (no hashing) beside them; the
entity F1 of the test sentences (conlleval, ``eval.chunks.evaluate``), the rows the training
attributes fill and how many of those attributes share a row with another, the model's bytes
and the fit's seconds.

    python experiments/scale/face_hashing.py [--bits 16 18 20 22 24]

writes experiments/scale/face_hashing/{results.json,README.md}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "bench"))

from face_memory import tutorial_corpus  # noqa: E402
from sklearn_bench import iob_sents, sent2features, sent2labels  # noqa: E402

from structperc.data.loading import require_data_dir  # noqa: E402
from structperc.eval.chunks import evaluate  # noqa: E402
from structperc.sklearn import CRF  # noqa: E402
from structperc.sklearn.hashing import row_of  # noqa: E402

OUT = HERE / "face_hashing"
SETTINGS = {"algorithm": "ap", "max_iterations": 10, "epsilon": 0.0}


def one(bits: int | None, train: tuple, test: tuple, names: list[str]) -> dict:
    """Train with ``hash_bits=bits`` (None: the dictionary); what it measured."""
    t0 = time.perf_counter()
    crf = CRF(**SETTINGS, hash_bits=bits).fit(*train)
    fit_s = time.perf_counter() - t0
    found = evaluate(test[1], [list(p) for p in crf.predict(test[0])])
    out = {"bits": bits, "f1": found.f1, "fit_s": fit_s, "model_bytes": crf.size_}
    if bits is not None:
        rows = Counter(row_of(n, bits) for n in names)
        out["rows"] = 2**bits
        out["rows_filled"] = len(rows)
        out["sharing"] = sum(c for c in rows.values() if c > 1) / len(names)
    return out


def render(results: dict) -> str:
    lines = [
        "# The face's hashed models: test F1 against the table's size",
        "",
        "Written by `face_hashing.py` from `results.json`:",
        "",
        "```",
        results["command"].strip(),
        "```",
        "",
        f"sklearn-crfsuite's tutorial features of CoNLL-2003 train ({results['attributes']:,} "
        f"attributes), `CRF({', '.join(f'{k}={v!r}' for k, v in SETTINGS.items())}, "
        "hash_bits=b)`; entity F1 (conlleval) on CoNLL-2003 test. *Sharing*: the training "
        "attributes that share their row with another. Load average "
        f"{results['load_before']:.2f} before, {results['load_after']:.2f} after.",
        "",
        "| table | rows | rows filled | sharing | test F1 | model MB | fit s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results["rows"]:
        if r["bits"] is None:
            cells = ["dictionary", f"{results['attributes']:,}", "", "", ""]
        else:
            cells = [f"2^{r['bits']}", f"{r['rows']:,}", f"{r['rows_filled']:,}",
                     f"{100 * r['sharing']:.1f}%"]  # fmt: skip
            cells.append("")
        cells[4] = f"{r['f1']:.2f}"
        cells += [f"{r['model_bytes'] / 2**20:.1f}", f"{r['fit_s']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bits", type=int, nargs="+", default=[16, 18, 20, 22, 24])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    torch.set_num_threads(1)
    load_before = os.getloadavg()[0]
    data_dir = require_data_dir(None, "conll2003")
    train = tutorial_corpus(data_dir, 1)
    sents = iob_sents(data_dir / "conll2003" / "test.txt", None)
    test = ([sent2features(s) for s in sents], [sent2labels(s) for s in sents])
    plain = CRF(**SETTINGS).fit(*train)
    names = plain.attributes_
    rows = [one(None, train, test, names)]
    for bits in args.bits:
        rows.append(one(bits, train, test, names))
        print(rows[-1], flush=True)
    results = {
        "command": "python experiments/scale/face_hashing.py " + " ".join(sys.argv[1:]),
        "attributes": len(names),
        "rows": rows,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "README.md").write_text(render(results))
    print(render(results))


if __name__ == "__main__":
    main()
