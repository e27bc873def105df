"""How the label-chunk DP's time grows with sentence length, and its speed on CoNLL-2000 test.

    .venv/bin/python experiments/shimizu2006/dp_timing.py            # writes dp_timing.{json,png}
    .venv/bin/python experiments/shimizu2006/dp_timing.py --quick    # fewer lengths and repeats
    .venv/bin/python experiments/shimizu2006/dp_timing.py --test-set-only --json OUT.json
                                                     # only the test-set rate (a bench row)
    ... --test-set-only --quick --max-sentences 200  # the first 200 test sentences (quick)

Random part scores with the paper's sizes (C = 2 chunk tags, P = 5 POS tags) for lengths n up to
120: the median time of ``structperc.decode.label_chunk.decode`` for one sentence (B = 1, as in
training) and per sentence in a batch of 32 equal-length sentences, and of the loop-for-loop
Figure 1 reference (``tests/oracles/label_chunk.figure1``) for n <= 60; a
least-squares fit t = a + b n + c n^2 of the batched times.  Then the throughput on the
CoNLL-2000 test set (2,012 sentences): features of the paper fitted on the first 447 training
sentences, weights random (the DP's time does not depend on their values), potentials + DP +
back-trace (``LabelChunkStructure.predict``), batch 1 and batch 32, sorted by length.
The data folder: ``--data``, or ``../shared/data``; ``$STRUCTPERC_DATA`` wins over both
(``structperc.data.loading.require_data_dir``).
One torch thread; the machine may be shared, so the JSON records the load average too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE.parents[1] / "tests"))  # the Figure 1 oracle (tests/oracles/)

from oracles.label_chunk import figure1  # noqa: E402

from structperc.data.loading import load_corpus, require_data_dir  # noqa: E402
from structperc.decode.label_chunk import LabelChunkPotentials, decode  # noqa: E402
from structperc.features.part_features import PartFeatures  # noqa: E402
from structperc.model.label_chunk_weights import LabelChunkWeights  # noqa: E402
from structperc.structures.label_chunk import LabelChunkStructure, PartData  # noqa: E402

C, P = 2, 5


def random_potentials(B: int, n: int, gen: torch.Generator) -> LabelChunkPotentials:
    def r(*shape):
        return torch.randn(*shape, generator=gen)

    return LabelChunkPotentials(
        r(B, n, C, P), r(B, n, C, P, P), r(B, n, n, C), r(B, n, C, C), torch.full((B,), n)
    )


def median_time(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def sweep(lengths: list[int], repeats: int) -> dict:
    gen = torch.Generator().manual_seed(0)
    rows = []
    for n in lengths:
        one = random_potentials(1, n, gen)
        many = random_potentials(32, n, gen)
        row = {
            "n": n,
            "batch1_ms": 1e3 * median_time(lambda one=one: decode(one), repeats),
            "batch32_ms_per_sentence": 1e3
            * median_time(lambda many=many: decode(many), max(repeats // 4, 2))
            / 32,
        }
        if n <= 60:
            row["figure1_ms"] = 1e3 * median_time(lambda one=one: figure1(one, 0), 2)
        rows.append(row)
        print(row, flush=True)
    xs = np.array([r["n"] for r in rows], dtype=float)
    ys = np.array([r["batch32_ms_per_sentence"] for r in rows])
    coef, *_ = np.linalg.lstsq(np.stack([np.ones_like(xs), xs, xs**2], 1), ys, rcond=None)
    return {"rows": rows, "batch32_fit_ms": {"a": coef[0], "b_per_n": coef[1], "c_per_n2": coef[2]}}


def test_set_speed(data_dir: Path, repeats: int, max_sentences: int | None = None) -> dict:
    corpus = load_corpus("conll2000", data_dir)
    train, test = corpus["train"][:447], corpus["test"][:max_sentences]
    features = PartFeatures().fit(train)
    data = PartData(features.transform(test))
    weights = LabelChunkWeights(features.num_features)
    structure = LabelChunkStructure(weights)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for t in weights.tables().values():
            t.copy_(torch.randn(t.shape, generator=gen))
    tokens = sum(len(d) for d in test)
    out = {"sentences": len(test), "tokens": tokens, "repeats": repeats}
    for bs in (1, 32):
        secs = median_time(lambda bs=bs: structure.predict(data, batch_size=bs), repeats)
        out[f"batch{bs}"] = {
            "seconds": secs,
            "sentences_per_second": len(test) / secs,
            "tokens_per_second": tokens / secs,
        }
        print(bs, out[f"batch{bs}"], flush=True)
    return out


def plot(rows: list[dict], path: Path) -> None:
    """A log-log line plot of the three timings against n, drawn with Pillow."""
    W, H, L, R, T, B = 720, 460, 70, 170, 30, 50
    img = Image.new("RGB", (W, H), "white")
    d = ImageDraw.Draw(img)
    series = {
        "DP, batch 1": ("batch1_ms", (31, 119, 180)),
        "DP, batch 32 (per sent.)": ("batch32_ms_per_sentence", (255, 127, 14)),
        "Figure 1 loops": ("figure1_ms", (44, 160, 44)),
    }
    pts = [(r["n"], r[k]) for r in rows for k, _ in series.values() if k in r]
    x0, x1 = np.log10(min(p[0] for p in pts)), np.log10(max(p[0] for p in pts))
    y0 = np.floor(np.log10(min(p[1] for p in pts)))
    y1 = np.ceil(np.log10(max(p[1] for p in pts)))

    def xy(n, ms):
        fx = (np.log10(n) - x0) / (x1 - x0)
        fy = (np.log10(ms) - y0) / (y1 - y0)
        return L + fx * (W - L - R), H - B - fy * (H - T - B)

    d.rectangle([L, T, W - R, H - B], outline="black")
    for e in range(int(y0), int(y1) + 1):
        _, y = xy(10**x0, 10.0**e)
        d.line([L - 4, y, L, y], fill="black")
        d.text((8, y - 6), f"{10.0**e:g} ms", fill="black")
    for n in sorted({r["n"] for r in rows}):
        x, _ = xy(n, 10.0**y0)
        d.line([x, H - B, x, H - B + 4], fill="black")
        d.text((x - 8, H - B + 8), str(n), fill="black")
    d.text(((W - R) // 2 - 40, H - 20), "sentence length n (log)", fill="black")
    d.text((L, 8), "label-chunk DP time vs n (C=2, P=5, 1 CPU thread; log-log)", fill="black")
    for i, (name, (key, color)) in enumerate(series.items()):
        line = [xy(r["n"], r[key]) for r in rows if key in r]
        d.line(line, fill=color, width=2)
        for x, y in line:
            d.ellipse([x - 3, y - 3, x + 3, y + 3], fill=color)
        d.line([W - R + 10, T + 12 + 18 * i, W - R + 30, T + 12 + 18 * i], fill=color, width=3)
        d.text((W - R + 34, T + 6 + 18 * i), name, fill="black")
    img.save(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--data",
        default=None,
        help="data folder (default: $STRUCTPERC_DATA, else ../shared/data)",
    )
    ap.add_argument("--test-set-only", action="store_true", help="skip the length sweep")
    ap.add_argument("--json", help="where to write the JSON (default: dp_timing.json here)")
    ap.add_argument(
        "--max-sentences", type=int, help="--test-set-only: the first N test sentences only"
    )
    args = ap.parse_args()
    try:
        data_dir = require_data_dir(args.data, corpus="conll2000")
    except FileNotFoundError as err:
        ap.error(str(err))
    torch.set_num_threads(1)
    if args.test_set_only:
        speed = test_set_speed(data_dir, 1 if args.quick else 3, args.max_sentences)
        out = {"conll2000_test": speed}
        out["machine"] = {"load_average": os.getloadavg(), "torch": torch.__version__}
        Path(args.json or HERE / "dp_test_set.json").write_text(json.dumps(out, indent=2) + "\n")
        return
    lengths = [5, 10, 20, 40, 60] if args.quick else [5, 10, 15, 20, 30, 40, 60, 80, 100, 120]
    repeats = 5 if args.quick else 15
    out = {
        "machine": {"load_average": os.getloadavg(), "torch": torch.__version__, "threads": 1},
        "sweep": sweep(lengths, repeats),
        "conll2000_test": test_set_speed(data_dir, 1 if args.quick else 3),
    }
    sixty = [r for r in out["sweep"]["rows"] if r["n"] == 60]
    out["sentence_of_60_tokens_ms"] = sixty[0]["batch1_ms"] if sixty else None
    out["machine"]["load_average_after"] = os.getloadavg()
    Path(args.json or HERE / "dp_timing.json").write_text(json.dumps(out, indent=2) + "\n")
    plot(out["sweep"]["rows"], HERE / "dp_timing.png")
    print(f"wrote {HERE / 'dp_timing.json'} and {HERE / 'dp_timing.png'}")


if __name__ == "__main__":
    main()
