"""Prediction files on which our scorer is checked against conlleval.pl (tests/test_conlleval.py).

Each case is a file in conlleval's input format (token columns, gold tag, predicted tag; blank
lines between sentences), made deterministically here, so that the reports conlleval.pl printed
for them can be kept in ``tests/data/conlleval/expected.json`` with the sha256 of each file.  The
cases aim at the sentence boundary rule: ``I-X`` runs across sentence breaks in IOB1, IOB2 and
IOE labels, empty sentences and runs of blank lines, ``-X-`` boundary lines, ``-DOCSTART-``
lines, a file without a final newline, random labels, and a slice of real CoNLL-2003 dev with
predictions that cross sentences as a whole-document decoder does.

To record the reports again (after changing a case), with the original script:

    python tests/conlleval_cases.py --conlleval PATH/conlleval.pl [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from structperc.data.conll import read_conll, write_conll
from structperc.data.document import Document
from structperc.eval.chunks import chunk_spans

EXPECTED = Path(__file__).resolve().parent / "data" / "conlleval" / "expected.json"
DEV_DOCS = 60  # documents of CoNLL-2003 dev in the real-data case


def _docs(sentences: list[tuple[list[str], list[str]]], per_doc: int) -> list[Document]:
    """Documents of ``per_doc`` consecutive (gold, pred) sentences; pred kept in ``columns``."""
    docs = []
    for k in range(0, len(sentences), per_doc):
        group = sentences[k : k + per_doc]
        doc = Document(tokens=[], columns={"pred": []}, tags=[], sentence_starts=[])
        for gold, pred in group:
            doc.sentence_starts.append(len(doc.tokens))
            doc.tokens += [f"w{len(doc.tokens) + i}" for i in range(len(gold))]
            doc.tags += gold
            doc.columns["pred"] += pred
        docs.append(doc)
    return docs


def _write_docs(path: Path, docs: list[Document], docstart: bool) -> None:
    preds = [d.columns.pop("pred") for d in docs]
    write_conll(path, docs, preds, docstart=docstart)
    for d, p in zip(docs, preds, strict=True):
        d.columns["pred"] = p


def cross_sentence(scheme: str) -> list[tuple[list[str], list[str]]]:
    """Sentences whose predictions run an entity on across the break (I-X, or E-X for IOE)."""
    i, e = ("I", "E") if scheme == "ioe" else ("I", "I")
    b = {"iob1": "I", "iob2": "B", "ioe": "I"}[scheme]
    return [
        # a predicted PER run from the end of one sentence into the next
        (["O", f"{b}-PER", f"{e}-PER"], ["O", f"{b}-PER", f"{i}-PER"]),
        ([f"{b}-PER", "O", "O"], [f"{i}-PER", "O", "O"]),
        # gold and predicted both cross: conlleval sees two chunks in each, both correct
        (["O", f"{b}-LOC", f"{i}-LOC"], ["O", f"{b}-LOC", f"{i}-LOC"]),
        ([f"{i}-LOC", f"{e}-LOC", "O"], [f"{i}-LOC", f"{e}-LOC", "O"]),
        # one-token sentences inside a long predicted run
        ([f"{b}-ORG"], [f"{b}-ORG"]),
        ([f"{b}-ORG"], [f"{i}-ORG"]),
        ([f"{b}-ORG"], [f"{i}-ORG"]),
        # a run that changes type at the break
        (["O", f"{b}-MISC"], ["O", f"{b}-MISC"]),
        ([f"{b}-PER", f"{e}-PER"], [f"{i}-MISC", f"{e}-MISC"]),
        (["O"], ["O"]),
    ]


def write_cross_sentence(folder: Path, scheme: str) -> Path:
    path = folder / f"cross_sentence_{scheme}.txt"
    _write_docs(path, _docs(cross_sentence(scheme), per_doc=5), docstart=True)
    return path


def write_blank_lines(folder: Path) -> Path:
    """Empty sentences: blank lines at the start, runs of them, ``-X-`` boundary lines, and no
    final newline."""
    path = folder / "blank_lines.txt"
    path.write_text(
        "\n\n"
        "a x B-PER I-PER\n"
        "b x I-PER I-PER\n"
        "\n\n\n"
        "c x I-PER I-PER\n"
        "d x O B-LOC\n"
        "-X- -X- O O\n"
        "e x B-LOC I-LOC\n"
        "-X- -X- O O\n"
        "-X- -X- O O\n"
        "f x I-LOC I-LOC\n"
        "\n"
        "g x O O\n"
        "\n"
        "h x B-ORG B-ORG\n"
        "i x I-ORG I-ORG",
        encoding="utf-8",
    )
    return path


def write_docstart(folder: Path) -> Path:
    """``-DOCSTART-`` lines between documents, without blank lines around some of them: conlleval
    reads such a line as a token tagged O (it ends a chunk and counts as a token)."""
    path = folder / "docstart.txt"
    path.write_text(
        "-DOCSTART- -X- O O\n"
        "\n"
        "a x B-PER B-PER\n"
        "b x I-PER I-PER\n"
        "-DOCSTART- -X- O O\n"
        "c x I-PER I-PER\n"
        "d x O O\n"
        "\n"
        "-DOCSTART- -X- O O\n"
        "e x B-MISC I-MISC\n"
        "\n"
        "f x I-MISC I-MISC\n",
        encoding="utf-8",
    )
    return path


def write_random(folder: Path, seed: int) -> Path:
    """Random labels of two types in documents of several sentences, about half of the
    predictions changed: prefixes B, I and O for seeds 0-3, B, I, E and O (no scheme, but
    conlleval reads them) for seeds 4-7."""
    rng = random.Random(seed)
    prefixes = "BI" if seed < 4 else "BIE"
    labels = ["O"] + [f"{p}-{t}" for t in ("X", "Y") for p in prefixes]
    weights = [len(labels) - 1] + [1] * (len(labels) - 1)
    sentences = []
    for _ in range(rng.randint(8, 20)):
        gold = rng.choices(labels, weights, k=rng.randint(1, 8))
        pred = [t if rng.random() < 0.5 else rng.choices(labels, weights)[0] for t in gold]
        sentences.append((gold, pred))
    path = folder / f"random_{seed}.txt"
    _write_docs(path, _docs(sentences, per_doc=rng.randint(1, 4)), docstart=bool(seed % 2))
    return path


def dev_documents(data_dir: Path) -> list[Document]:
    """The first DEV_DOCS documents of CoNLL-2003 dev, predictions (``columns["pred"]``) from the
    gold by a fixed perturbation that also runs entities on across sentence breaks."""
    docs = read_conll(data_dir / "conll2003" / "dev.txt", "conll2003", max_docs=DEV_DOCS)
    types = ["LOC", "MISC", "ORG", "PER"]
    k = 0
    for doc in docs:
        gold = doc.tags
        pred = list(gold)
        for start, end, typ in sorted(chunk_spans(gold)):
            k += 1
            if k % 11 == 0:  # missed entity
                pred[start:end] = ["O"] * (end - start)
            elif k % 7 == 0:  # wrong type
                pred[start:end] = [
                    t[:2] + types[(types.index(typ) + 1) % 4] for t in gold[start:end]
                ]
            elif k % 13 == 0 and end < len(gold) and gold[end] == "O":  # one token too long
                pred[end] = "I-" + typ
        for n, s in enumerate(doc.sentence_starts[1:], 1):
            # an entity or an O before the break runs on into the next sentence's first token
            if pred[s - 1] != "O" and n % 2:
                pred[s] = "I-" + pred[s - 1][2:]
            elif pred[s] != "O" and n % 3 == 0:
                pred[s] = "I-" + pred[s][2:]
        doc.columns["pred"] = pred
    return docs


def write_dev_slice(folder: Path, data_dir: Path) -> Path:
    path = folder / "conll2003_dev_slice.txt"
    _write_docs(path, dev_documents(data_dir), docstart=True)
    return path


SYNTHETIC: dict[str, Callable[[Path], Path]] = {
    "cross_sentence_iob1": lambda f: write_cross_sentence(f, "iob1"),
    "cross_sentence_iob2": lambda f: write_cross_sentence(f, "iob2"),
    "cross_sentence_ioe": lambda f: write_cross_sentence(f, "ioe"),
    "blank_lines": write_blank_lines,
    "docstart": write_docstart,
    **{f"random_{s}": (lambda f, s=s: write_random(f, s)) for s in range(8)},
}


def write_case(name: str, folder: Path, data_dir: Path | None = None) -> Path:
    """Write case ``name`` into ``folder``; the real-data case needs ``data_dir``."""
    if name == "conll2003_dev_slice":
        if data_dir is None:
            raise ValueError("the conll2003_dev_slice case needs the data folder")
        return write_dev_slice(folder, data_dir)
    return SYNTHETIC[name](folder)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_conlleval(script: Path, path: Path) -> str:
    """conlleval.pl's report of ``path`` (its standard output)."""
    with open(path, "rb") as f:
        done = subprocess.run(["perl", str(script)], stdin=f, capture_output=True, check=True)
    return done.stdout.decode("utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conlleval", type=Path, required=True, help="path to conlleval.pl")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--folder", type=Path, default=Path("/tmp/conlleval_cases"))
    args = parser.parse_args(argv)
    args.folder.mkdir(parents=True, exist_ok=True)
    cases = {}
    for name in [*SYNTHETIC, "conll2003_dev_slice"]:
        path = write_case(name, args.folder, args.data)
        cases[name] = {"sha256": sha256(path), "report": run_conlleval(args.conlleval, path)}
    script = {
        "version": "2004-01-26",
        "sha256": sha256(args.conlleval),
        "perl": subprocess.run(["perl", "-e", "print $]"], capture_output=True, text=True).stdout,
    }
    EXPECTED.write_text(json.dumps({"conlleval": script, "cases": cases}, indent=1) + "\n")
    print(f"wrote {EXPECTED} ({len(cases)} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
