"""Silver training corpora at 1x, 4x, 16x and 30x CoNLL-2003's training size.

The source is the unlabeled English text of the data folder (``unlabeled/``: Reuters-21578,
the ABC news, Brown, MASC and the other NLTK texts; see its
README), tagged by ``make run``'s model (the main job: the proposed algorithm with non-local
features and word classes, its column tagger included).  No gold test data is used: these are
the model's labels, a "silver" standard, as large as the text allows (about 6.8M tokens).

Every size is drawn from the same mix of the sources: the tagged sentences of all of them are
put in one seeded random order (``--seed``, default 0), and each corpus is the first whole
sentences of that order that reach its size, so a smaller corpus is a subset of every larger
one (1x within 4x within 16x within 30x) and the genres are in the same proportions at every
size.  (Cutting prefixes of the sources in their order, as this script did first, made 1x and
4x Reuters alone and 30x a mix with Brown and MASC, whose rarer vocabulary costs more per
token: the curve then measured the genre as well as the size.)  Two columns (token, IOB2
tag; a blank line after each sentence), read with ``data=columns 'data.columns=[token,ner]'``:

    size   tokens (at least)
    1x        203,621   CoNLL-2003's training tokens
    4x        814,484
    16x     3,257,936
    30x     6,108,630

The tagging runs in pieces of ``--piece`` paragraphs through ``Tagger`` (one model load), so
its memory is a piece's, and writes ``tagged.txt`` once (resumable: a finished source file is
not tagged again), then cuts the corpora.

    .venv/bin/python experiments/scale/make_silver.py --out .cache/silver
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import time
from pathlib import Path

CONLL03_TRAIN_TOKENS = 203_621
SIZES = {"1x": 1, "4x": 4, "16x": 16, "30x": 30}
SOURCES = (
    "reuters21578.txt.gz",
    "abc_news.txt.gz",
    "brown_corpus.txt.gz",
    "masc_written.txt.gz",
    "misc_english.txt.gz",
)


def paragraphs(path: Path):
    """The paragraphs (lines) of a gzipped text file, blank lines skipped."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                yield line


def pieces(path: Path, piece: int):
    """The source's documents, ``piece`` paragraphs at a time."""
    from structperc.data.text import read_text

    batch: list[str] = []
    for para in [*paragraphs(path), None]:
        if para is not None:
            batch.append(para)
        if batch and (para is None or len(batch) >= piece):
            yield [p.document for p in read_text("\n\n".join(batch), source=path.name)]
            batch = []


def resume_point(part: Path, sizes: list[int]) -> tuple[int, int]:
    """(whole pieces, bytes) of a killed run's ``.part`` file: the pieces of ``sizes`` tokens
    it holds entirely, and the byte offset where the next one starts."""
    if not part.exists():
        return 0, 0
    done, tokens, offset, bound = 0, 0, 0, (sizes[0] if sizes else 0)
    with open(part, "rb") as f:
        for line in f:
            if done == len(sizes):
                break
            offset += len(line)
            if line.strip():
                tokens += 1
            elif tokens == bound:
                done += 1
                kept = offset
                bound += sizes[done] if done < len(sizes) else 0
    return (done, kept) if done else (0, 0)


def tag_source(tagger, path: Path, out: Path, piece: int) -> int:
    """Tag one source file into ``out`` (token tag lines, a blank line after each sentence);
    returns its tokens.  A killed run's ``.part`` file is kept up to its last whole piece and
    tagging goes on from there."""
    part = out.with_suffix(".part")
    documents = list(pieces(path, piece))
    sizes = [sum(len(d) for d in docs) for docs in documents]
    done, offset = resume_point(part, sizes)
    if done:
        print(f"{path.name}: {done} of {len(sizes)} pieces tagged already", flush=True)
    with open(part, "r+b" if done else "wb") as raw:
        raw.truncate(offset)
        raw.seek(offset)
        with open(raw.fileno(), "w", encoding="utf-8", closefd=False) as f:
            for docs in documents[done:]:
                for doc, tags in zip(docs, tagger.tag_documents(docs), strict=True):
                    for s, e in doc.sentence_spans():
                        f.write(
                            "".join(
                                f"{w} {t}\n"
                                for w, t in zip(doc.tokens[s:e], tags[s:e], strict=True)
                            )
                        )
                        f.write("\n")
                f.flush()
    os.replace(part, out)
    return sum(sizes)


def sentences(tagged: list[Path]) -> list[str]:
    """Every sentence of the tagged files, as its token lines and a blank line."""
    out: list[str] = []
    for path in tagged:
        lines: list[str] = []
        with open(path, encoding="utf-8") as src:
            for line in [*src, "\n"]:  # (a last sentence without its blank line ends too)
                if line.strip():
                    lines.append(line)
                elif lines:
                    out.append("".join(lines) + "\n")
                    lines = []
    return out


def cut(pool: list[str], order: list[int], target: int, out: Path) -> int:
    """The first whole sentences of ``pool`` in ``order`` holding at least ``target`` tokens,
    written to ``out`` (atomically); returns their tokens."""
    n = 0
    with open(out.with_suffix(".part"), "w", encoding="utf-8") as f:
        for i in order:
            f.write(pool[i])
            n += pool[i].count("\n") - 1
            if n >= target:
                break
    if n < target:
        raise ValueError(f"the tagged text has {n} tokens, fewer than {target}")
    os.replace(out.with_suffix(".part"), out)
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="runs/main", help="the run folder that tags")
    parser.add_argument("--data", default=os.environ.get("STRUCTPERC_DATA", "../shared/data"))
    parser.add_argument("--out", type=Path, default=Path(".cache/silver"))
    parser.add_argument("--piece", type=int, default=2000, help="paragraphs tagged at a time")
    parser.add_argument("--sizes", default=",".join(SIZES))
    parser.add_argument("--seed", type=int, default=0, help="the sentences' random order")
    args = parser.parse_args()
    from structperc.inference.tagger import Tagger

    args.out.mkdir(parents=True, exist_ok=True)
    tagger = Tagger.load(args.model)
    record = {"model": str(args.model), "sources": {}}
    tagged = []
    for name in SOURCES:
        target = args.out / f"tagged.{name.removesuffix('.txt.gz')}.txt"
        if not target.exists():
            t0 = time.perf_counter()
            n = tag_source(tagger, Path(args.data) / "unlabeled" / name, target, args.piece)
            record["sources"][name] = {"tokens": n, "seconds": round(time.perf_counter() - t0, 1)}
            print(f"{name}: {n:,} tokens in {record['sources'][name]['seconds']} s", flush=True)
        tagged.append(target)
    pool = sentences(tagged)
    order = list(range(len(pool)))
    random.Random(args.seed).shuffle(order)
    record["sentences"], record["seed"], record["corpora"] = len(pool), args.seed, {}
    for size in args.sizes.split(","):
        out = args.out / f"silver{size}.txt"
        record["corpora"][size] = cut(pool, order, SIZES[size] * CONLL03_TRAIN_TOKENS, out)
        print(f"{out}: {record['corpora'][size]:,} tokens", flush=True)
    (args.out / "silver.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
