"""How much of each CoNLL-2003 split the gazetteer ``eng.list`` covers, as the features see it.

For every split: the share of gold entities whose exact token string is an entry of the same
type in the list the document is matched against (training documents: the jackknifed list of
their fold, or the whole list for ``naive``; dev and test: the whole list), and the share of
gazetteer matches (greedy longest match, per type, as ``features/gazetteer.py`` tags them) that
are gold entities of that type.  A feature is only as useful on a split as the model's training
conditions resemble it; this is the table that says how far they do:

    python experiments/kazama2007/gazetteer_coverage.py --readme experiments/kazama2007/README.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from structperc.data.conll import read_conll
from structperc.data.tags import spans
from structperc.features.gazetteer import EntryIndex, jackknife_entries, read_gazetteer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import sections  # noqa: E402

TYPES = ("LOC", "MISC", "ORG", "PER")


def entity_coverage(docs, lists) -> tuple[int, float]:
    """Gold entities, and the percentage of them that are same-type entries of the document's
    list; ``lists[i]``: type -> entries that document i is matched against."""
    entities = covered = 0
    for doc, entries in zip(docs, lists, strict=True):
        for start, end, typ in spans(doc.tags):
            entities += 1
            covered += tuple(doc.tokens[start:end]) in entries.get(typ, ())
    return entities, 100.0 * covered / entities


def coverage(docs, lists) -> dict:
    """``entity_coverage``, and how many gazetteer matches there are and how many of them are
    gold entities of the match's type."""
    entities, covered = entity_coverage(docs, lists)
    indexes: dict[int, dict[str, EntryIndex]] = {}  # one index per distinct list (fold)
    matches = correct = 0
    for doc, entries in zip(docs, lists, strict=True):
        index = indexes.setdefault(
            id(entries), {typ: EntryIndex(entries.get(typ, set())) for typ in TYPES}
        )
        gold = set(spans(doc.tags))
        for typ in TYPES:
            tags = index[typ].match(doc.tokens)
            found = {(s, e, typ) for s, e, _ in spans([t if t == "O" else f"{t}-G" for t in tags])}
            matches += len(found)
            correct += len(found & gold)
    return {
        "entities": entities,
        "covered": covered,
        "matches": matches,
        "match_precision": 100.0 * correct / max(matches, 1),
    }


def measure(data_dir: Path, folds: int) -> list[dict]:
    splits = {s: read_conll(data_dir / "conll2003" / f"{s}.txt") for s in ("train", "dev", "test")}
    entries = read_gazetteer(data_dir / "conll2003" / "eng.list")
    train = splits["train"]
    jack = jackknife_entries(train, entries, folds)
    rows = [
        {
            "split": "train",
            "list": f"jackknife ({folds} folds, the default)",
            **coverage(train, [jack[i % folds] for i in range(len(train))]),
        },
        {"split": "train", "list": "whole list (naive)", **coverage(train, [entries] * len(train))},
    ]
    for split in ("dev", "test"):
        docs = splits[split]
        rows.append({"split": split, "list": "whole list", **coverage(docs, [entries] * len(docs))})
    return rows


def render(rows: list[dict]) -> str:
    lines = [
        "| split | list matched against | gold entities | entities in the list | gazetteer "
        "matches | matches that are gold entities |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['split']} | {r['list']} | {r['entities']:,} | {r['covered']:.1f}% "
            f"| {r['matches']:,} | {r['match_precision']:.1f}% |"
        )
    return "\n".join(lines) + "\n"


def coverage_cli(doc: str, measure, render, json_path: Path, section: str) -> None:
    """The command line of a coverage script: measure on the data folder, write ``json_path``,
    print the table and put it into a README's ``section``."""
    ap = sections.parser(doc, (section,), data=True)
    ap.add_argument("--folds", type=int, default=10, help="jackknife folds (features default)")
    ap.add_argument("--json", type=Path, default=json_path)
    args = ap.parse_args()
    rows = measure(sections.data_dir(ap, args, "conll2003"), args.folds)
    args.json.write_text(json.dumps(rows, indent=2) + "\n")
    sections.publish(args.readme, {section: render(rows)})


def main() -> None:
    coverage_cli(
        __doc__, measure, render, Path(__file__).parent / "gazetteer_coverage.json", "gazetteer"
    )


if __name__ == "__main__":
    main()
