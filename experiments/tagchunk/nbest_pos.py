"""Chunking over the POS tagger's n best taggings instead of its best one only.

The cascade chunks the single best POS tagging, so a POS error the chunker could have noticed
is passed on.  Here each of the POS chain's n best taggings y_1 .. y_n (scores s_pos) is
chunked by the chunker's Viterbi (chunking z_k, score s_chunk), and the pair kept is

    argmax_k  a * s_pos(y_k) + s_chunk(z_k | y_k)

(a = inf is the cascade: the best POS tagging).  The weight a is chosen on the tagger's dev
split; a tagger trained with a dev split (``task.dev_sentences`` > 0) is needed.

    python experiments/tagchunk/nbest_pos.py \\
        --tagger experiments/tagchunk/runs/conll00_tagchunk_jackknife \\
        --out experiments/tagchunk/nbest_pos.json
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch

from structperc.data.conll import with_columns
from structperc.data.document import Document
from structperc.data.loading import load_corpus, require_data_dir
from structperc.data.tags import iobes_to_iob2
from structperc.eval.chunks import evaluate
from structperc.inference.loading import load_tagger
from structperc.model.batch import make_batch
from structperc.structures.chain import ChainData
from structperc.tasks.tagchunk import split_dev

WEIGHTS = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, math.inf]


def candidates(pos, chunk, doc: Document, n: int) -> list[tuple[float, float, list[str]]]:
    """(s_pos, s_chunk, IOB2 chunk tags) of the chunker's best chunking of each of the n best
    POS taggings of ``doc``, best POS tagging first."""
    (pos_structure, pos_features), (chunk_structure, chunk_features) = pos, chunk
    data = ChainData(pos_features.transform([doc]), documents=[doc])
    paths, scores = pos_structure.nbest(make_batch(data.features, [0]), n)  # [n, T], [n]
    labels = pos_structure.weights.labels
    kept = [(p.tolist(), float(s)) for p, s in zip(paths, scores, strict=True) if p[0] >= 0]
    tagged = [with_columns(doc, pos=[labels[i] for i in p]) for p, _ in kept]
    chunk_data = ChainData(chunk_features.transform(tagged), documents=tagged)
    out = []
    for k, (_, pos_score) in enumerate(kept):
        best, score = chunk_structure.nbest(make_batch(chunk_data.features, [k]), 1)
        tags = [chunk_structure.weights.labels[i] for i in best[0].tolist()]
        out.append((pos_score, float(score[0]), iobes_to_iob2(tags)))
    return out


def choose(row: list[tuple[float, float, list[str]]], weight: float) -> list[str]:
    """The chunk tags of the candidate with the largest weight * s_pos + s_chunk."""
    if math.isinf(weight):
        return row[0][2]
    return max(row, key=lambda c: weight * c[0] + c[1])[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--tagger", type=Path, required=True, help="a tagchunk run with a dev split")
    ap.add_argument("--out", type=Path, required=True, help="JSON of the figures")
    ap.add_argument("--n", type=int, default=10, help="POS taggings per sentence (default 10)")
    ap.add_argument("--data-dir", default=None, help="data folder ($STRUCTPERC_DATA)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    trained = json.loads((args.tagger / "results.json").read_text())
    if "dev" not in trained:
        raise SystemExit(f"{args.tagger}: trained without a dev split (task.dev_sentences=0)")
    corpus = load_corpus("conll2000", require_data_dir(args.data_dir, corpus="conll2000"))
    dev_sentences = len(corpus["train"]) - trained["train_sentences"]
    splits = split_dev(corpus, dev_sentences)
    pos, chunk = load_tagger(args.tagger / "pos"), load_tagger(args.tagger / "chunk")
    result: dict = {"tagger": str(args.tagger), "n": args.n, "weights": [str(w) for w in WEIGHTS]}
    for split in ("dev", "test"):
        docs = splits[split]
        t0 = time.perf_counter()
        rows = [candidates(pos, chunk, d, args.n) for d in docs]
        seconds = time.perf_counter() - t0
        gold = [d.tags for d in docs]
        starts = [d.sentence_starts for d in docs]
        result[split] = {
            "f1": {
                str(w): evaluate(gold, [choose(r, w) for r in rows], starts).f1 for w in WEIGHTS
            },
            "tokens_per_second": sum(len(d) for d in docs) / seconds,
        }
    dev = result["dev"]["f1"]
    result["chosen"] = max(dev, key=dev.get)  # the first of equals: the smaller weight
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({s: result[s]["f1"][result["chosen"]] for s in ("dev", "test")}))


if __name__ == "__main__":
    main()
