"""How far the column tagger's POS and chunk columns are from the given ones of CoNLL-2003.

Kazama & Torisawa (2007, Table 5) replace the given columns by a tagger's; ours lowers NER F1
(README).  This measures, on a CoNLL-2003 split, the agreement of the tagger's POS tags with the
given POS column (all tokens, entity tokens, and tokens of all-capital sentences: headlines) and
the chunk F1 of its chunks against the given chunk column (IOB2), with the most frequent POS
disagreements on entity tokens.  The Penn Treebank's two quote tags (`` and '') count as
CoNLL-2003's one (").

    python experiments/tagchunk/agreement.py \\
        --tagger experiments/tagchunk/runs/conll00_tagchunk_jackknife \\
        --out experiments/tagchunk/agreement.json
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import torch

from structperc.data.loading import load_corpus, require_data_dir
from structperc.eval.chunks import evaluate
from structperc.inference.column_tagger import ColumnTagger


def all_capitals(words: list[str]) -> bool:
    """A headline: every token with a letter is written in capitals, and there is one."""
    cased = [w for w in words if any(c.isalpha() for c in w)]
    return bool(cased) and all(w.isupper() for w in cased)


# the tagger writes the Penn Treebank's opening and closing quote tags, CoNLL-2003 one tag
SAME_TAG = {"``": '"', "''": '"'}


def agreement(pairs: list[tuple[str, str]]) -> float:
    return 100.0 * sum(a == b for a, b in pairs) / max(len(pairs), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--tagger", type=Path, required=True, help="a tagchunk run folder")
    ap.add_argument("--out", type=Path, required=True, help="JSON of the figures")
    ap.add_argument("--split", default="dev", help="CoNLL-2003 split (default dev)")
    ap.add_argument("--data-dir", default=None, help="data folder ($STRUCTPERC_DATA)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    data = require_data_dir(args.data_dir, corpus="conll2003")
    docs = load_corpus("conll2003", data, splits=[args.split])[args.split]
    filled = ColumnTagger.load(args.tagger).fill(docs)
    every, entity, headline = [], [], []
    for given, tagged in zip(docs, filled, strict=True):
        for a, b in given.sentence_spans():
            caps = all_capitals(given.tokens[a:b])
            for i in range(a, b):
                ours = tagged.columns["pos"][i]
                pair = (given.columns["pos"][i], SAME_TAG.get(ours, ours))
                every.append(pair)
                if given.tags[i] != "O":
                    entity.append(pair)
                if caps:
                    headline.append(pair)
    chunks = evaluate(
        [d.columns["chunk"] for d in docs],
        [t.columns["chunk"] for t in filled],
        [d.sentence_starts for d in docs],
    )
    out = {
        "tagger": str(args.tagger),
        "split": args.split,
        "tokens": len(every),
        "pos_agreement": agreement(every),
        "entity_tokens": len(entity),
        "pos_agreement_entity_tokens": agreement(entity),
        "headline_tokens": len(headline),
        "pos_agreement_headline_tokens": agreement(headline),
        "chunk_f1_against_given": chunks.f1,
        "chunk_f1_per_type": {k: v.f1 for k, v in chunks.per_type.items()},
        "entity_disagreements": [
            [given, tagged, n]
            for (given, tagged), n in Counter(p for p in entity if p[0] != p[1]).most_common(6)
        ],
    }
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
