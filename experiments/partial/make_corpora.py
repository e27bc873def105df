"""Write the partially annotated CoNLL-2003 training sets of experiments/partial (seeded).

    python experiments/partial/make_corpora.py --out /tmp/partial_corpora --seeds 0 1 2

Each corpus is the CoNLL-2003 training file with its NER column in IOB2 (the chunk column in
IOB2 too: read as the original IOB1 reads) and some labels replaced by ``?`` (unknown) or by
``O|B-X|I-X`` (one of those: ``data.any_of="|"``).  For seed s, in <out>/s<s>/:

    hidden50/train.txt        50 % of the tokens' labels hidden at random (``?``)
    spans_partial/train.txt   half the sentences fully labelled; in the other half a random
                              half of the entities marked, every other token ``?`` (an annotator
                              who marked some entities and nothing else)
    spans_as_o/train.txt      the same with every ``?`` read as O (the usual fallback)
    spans_half/train.txt      the fully labelled half alone
    spans_all_partial/train.txt  the other half with every entity marked, O unknown (the
                              issue's literal wording; there "unknown as O" is the full data)
    missing_partial/train.txt half the documents annotate no ORG: there every token that is
                              not another type's is ``O|B-ORG|I-ORG``
    missing_as_o/train.txt    the same documents with their ORG entities labelled O
    missing_half/train.txt    the documents with every type annotated alone
    stats.json                how many tokens and entities each corpus hides

The dev and test files are the originals (IOB1, which ``data.scheme=iob2`` reads alike).
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

from structperc.data.conll import read_conll
from structperc.data.tags import spans

MISSING_TYPE = "ORG"


def sentences_of(doc):
    return doc.sentence_spans()


def write(path: Path, docs, labels_of) -> None:
    """Documents with their NER cells ``labels_of(doc)`` (one per token), chunk tags in IOB2;
    sentences with no cell (None) are dropped, documents without sentences too."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for doc in docs:
        cells = labels_of(doc)
        if cells is None:
            continue
        body = []
        for s, e in sentences_of(doc):
            if cells[s] is None:
                continue
            for t in range(s, e):
                body.append(f"{doc.tokens[t]} {doc.columns['pos'][t]} {doc.columns['chunk'][t]} "
                            f"{cells[t]}\n")  # fmt: skip
            body.append("\n")
        if body:
            lines.append("-DOCSTART- -X- -X- O\n\n")
            lines.extend(body)
    path.write_text("".join(lines), encoding="utf-8")


def hidden(docs, rate, rng):
    out = {}
    for i, doc in enumerate(docs):
        out[i] = [("?" if rng.random() < rate else t) for t in doc.tags]
    return out


def spans_half(docs, rng, keep_entity):
    """(partial cells, which sentences are the fully labelled half) per document."""
    partial, labelled = {}, {}
    for i, doc in enumerate(docs):
        cells, marks = list(doc.tags), [None] * len(doc)
        for s, e in sentences_of(doc):
            full = rng.random() < 0.5
            marks[s] = full
            if full:
                continue
            cells[s:e] = ["?"] * (e - s)
            for a, b, kind in spans(doc.tags[s:e]):
                if rng.random() < keep_entity:
                    cells[s + a : s + b] = [f"B-{kind}"] + [f"I-{kind}"] * (b - a - 1)
        partial[i], labelled[i] = cells, marks
    return partial, labelled


def write_hidden(train, root: Path, seed: int) -> dict:
    """hidden50: each label hidden with probability 1/2."""
    cells = hidden(train, 0.5, random.Random(seed))
    by_doc = {id(d): cells[i] for i, d in enumerate(train)}
    write(root / "hidden50" / "train.txt", train, lambda d: by_doc[id(d)])
    total = sum(len(d) for d in train)
    return {"tokens": total, "hidden": sum(c.count("?") for c in cells.values())}


def write_spans(train, root: Path, seed: int, name: str, keep: float) -> dict:
    """<name>_partial (and for "spans" its two baselines): half the sentences fully labelled,
    in the others each entity marked with probability ``keep``, every other token ``?``."""
    partial, labelled = spans_half(train, random.Random(f"{seed}-{name}"), keep)
    p = {id(d): partial[i] for i, d in enumerate(train)}
    write(root / f"{name}_partial" / "train.txt", train, lambda d: p[id(d)])
    if name == "spans":
        as_o = {k: [("O" if c == "?" else c) for c in v] for k, v in p.items()}
        write(root / "spans_as_o" / "train.txt", train, lambda d: as_o[id(d)])
        lab = {id(d): labelled[i] for i, d in enumerate(train)}

        def half(d):
            cells = list(d.tags)
            for s, _ in sentences_of(d):
                if not lab[id(d)][s]:
                    cells[s] = None  # (the sentence is dropped)
            return cells

        write(root / "spans_half" / "train.txt", train, half)
    kept = 0
    for i, d in enumerate(train):
        for s, e in sentences_of(d):
            if not labelled[i][s]:
                kept += len(spans([c if c != "?" else "O" for c in partial[i][s:e]]))
    return {
        "tokens": sum(len(d) for d in train),
        "unknown": sum(c.count("?") for c in partial.values()),
        "entities": sum(len(spans(d.tags)) for d in train),
        "entities_in_open_half_marked": kept,
    }


def write_missing(train, root: Path, seed: int) -> dict:
    """missing_*: half the documents annotate no MISSING_TYPE."""
    rng = random.Random(f"{seed}-missing")
    lacking = {i for i in range(len(train)) if rng.random() < 0.5}
    choice = f"O|B-{MISSING_TYPE}|I-{MISSING_TYPE}"
    index = {id(d): i for i, d in enumerate(train)}

    def missing(d, as_o):
        if index[id(d)] not in lacking:
            return list(d.tags)
        out = []
        for t in d.tags:
            other = t != "O" and not t.endswith(f"-{MISSING_TYPE}")
            out.append(t if other else ("O" if as_o else choice))
        return out

    write(root / "missing_partial" / "train.txt", train, lambda d: missing(d, False))
    write(root / "missing_as_o" / "train.txt", train, lambda d: missing(d, True))
    write(root / "missing_half" / "train.txt", train,
          lambda d: None if index[id(d)] in lacking else list(d.tags))  # fmt: skip
    lost = sum(1 for i in lacking for *_, k in spans(train[i].tags) if k == MISSING_TYPE)
    return {
        "type": MISSING_TYPE,
        "documents": len(train),
        "documents_lacking": len(lacking),
        "entities_lost": lost,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="/tmp/partial_corpora")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    data = Path(os.environ.get("STRUCTPERC_DATA", "../shared/data"))
    args = parser.parse_args()
    train = read_conll(data / "conll2003" / "train.txt", unknown=None)
    stats = {}
    for seed in args.seeds:
        root = Path(args.out) / f"s{seed}"
        stats[f"s{seed}"] = {
            "hidden50": write_hidden(train, root, seed),
            "spans": write_spans(train, root, seed, "spans", 0.5),
            "spans_all": write_spans(train, root, seed, "spans_all", 1.0),
            "missing": write_missing(train, root, seed),
        }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    print(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()
