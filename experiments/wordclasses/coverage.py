"""How many CoNLL-2003 tokens get a word class, and under which form (exact, lower-cased,
title-cased), for the preset's classes (built or read from the cache):

    python experiments/wordclasses/coverage.py > experiments/wordclasses/coverage.json
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from omegaconf import OmegaConf

from structperc.cli import config_dir
from structperc.data.loading import load_corpus, require_data_dir
from structperc.wordclasses import WordClassSettings, load_word_classes


def main() -> None:
    preset = OmegaConf.load(Path(config_dir()) / "features" / "kazama_wordclasses.yaml")
    settings = WordClassSettings.from_config(OmegaConf.to_container(preset.word_classes))
    classes = load_word_classes(settings)
    table = classes.families[classes.attributes[0]]
    corpus = load_corpus("conll2003", require_data_dir(corpus="conll2003"))
    out = {"family": classes.attributes[0], "words": len(table)}
    for split, docs in corpus.items():
        counts: Counter = Counter()
        for doc in docs:
            for w in doc.tokens:
                form = next(
                    (
                        f
                        for f, v in zip(
                            ("exact", "lower", "title"), (w, w.lower(), w.title()), strict=True
                        )
                        if v in table
                    ),
                    "none",
                )
                counts[form] += 1
        total = sum(counts.values())
        out[split] = {
            k: round(100 * counts[k] / total, 2) for k in ("exact", "lower", "title", "none")
        }
        out[split]["tokens"] = total
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
