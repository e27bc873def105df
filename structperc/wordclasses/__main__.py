"""Build word classes from unlabeled text into the cache, as a run with the same settings would.

    python -m structperc.wordclasses                         # the preset's settings
    python -m structperc.wordclasses --corpora reuters21578 --kmeans 100 500 1000
    python -m structperc.wordclasses --brown 1000 --kmeans   # Brown clusters only
    python -m structperc.wordclasses --show Peugeot Monday   # and print some words' classes

A run (``features=kazama_wordclasses``) builds missing families itself; this command builds them
ahead of it (with progress bars on a terminal) and says what it built, from where, in how long.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import time
from pathlib import Path

from structperc.data.loading import require_data_dir
from structperc.wordclasses.corpus import unlabeled_dir
from structperc.wordclasses.store import WordClassSettings, load_word_classes

DEFAULTS = WordClassSettings()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m structperc.wordclasses",
        description=__doc__.split("\n\n")[0],
        epilog="Defaults are those of features.word_classes "
        "(conf/features/kazama_wordclasses.yaml); the files are written atomically to "
        "--cache-dir, named by a hash of the settings and of the input files' sha256s.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    a = p.add_argument
    a("--dir", default=DEFAULTS.dir, help="unlabeled text; relative: in the data folder")
    a("--corpora", nargs="+", default=[DEFAULTS.corpora], help="'all' or file stems")
    a("--min-count", type=int, default=DEFAULTS.min_count, help="word2vec vocabulary cut-off")
    a("--architecture", choices=["skipgram", "cbow"], default=DEFAULTS.architecture)
    a("--vector-size", type=int, default=DEFAULTS.vector_size)
    a("--window", type=int, default=DEFAULTS.window, help="word2vec context, each side")
    a("--epochs", type=int, default=DEFAULTS.epochs)
    a("--negative", type=int, default=DEFAULTS.negative, help="noise words per example")
    a("--kmeans", type=int, nargs="*", default=list(DEFAULTS.kmeans), help="cluster counts")
    a("--brown", type=int, default=DEFAULTS.brown, help="Brown clusters (0: none)")
    a(
        "--brown-min-count",
        type=int,
        default=DEFAULTS.brown_min_count,
        help="Brown's vocabulary cut-off (time O(V m²): ~48 min, m = 1000, 43k words, 2 cores)",
    )
    a("--brown-prefixes", type=int, nargs="+", default=list(DEFAULTS.brown_prefixes))
    a("--seed", type=int, default=DEFAULTS.seed)
    a("--cache-dir", default=DEFAULTS.cache_dir)
    a("--show", nargs="*", default=[], metavar="WORD", help="print these words' classes")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("gensim").setLevel(logging.WARNING)
    corpora = args.corpora[0] if args.corpora == ["all"] else tuple(args.corpora)
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(WordClassSettings)}
    values["corpora"] = corpora
    try:
        if not Path(args.dir).expanduser().is_dir():  # relative: in the data folder
            values["dir"] = str(unlabeled_dir(args.dir, require_data_dir()))
        settings = WordClassSettings.from_config(values)
        t0 = time.perf_counter()
        classes = load_word_classes(settings, progress=True)
    except (ValueError, FileNotFoundError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"word classes in {time.perf_counter() - t0:.1f} s, in {settings.cache_dir}:")
    for name, table in classes.families.items():
        print(f"  {name}: {len(table)} words, {len(set(table.values()))} classes")
    print(f"  attributes: {', '.join(classes.attributes)}")
    for word in args.show:
        print(json.dumps({word: classes.classes(word)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
