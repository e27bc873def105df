"""How much of each CoNLL-2003 split the external gazetteers cover (``features/external``).

The lists come from installable packages (GeoNames, ISO 3166, the US Census name files,
``nam_dict``, Unicode CLDR, company legal forms), not from CoNLL, so unlike ``eng.list``
(``gazetteer_coverage.py``) they see train, dev and test alike.  For every source and split:

- **entities in the list**, per type: the share of gold entities whose exact token string is an
  entry of one of the source's attributes (any attribute: a source's attributes are not CoNLL
  types);
- **every token matched**: the share of gold entities (all types) whose every token lies inside
  a match of the source's attributes, matched greedily, longest first, per attribute, as the
  features see it (``John Smith``: ``John`` by ``x_first``, ``Smith`` by ``x_last``);
- **matches**, and the share of them that are exactly a gold entity (of any type) and that lie
  inside one.

``eng.list`` is in the table for comparison (the jackknifed list on train, the whole list on dev
and test, as in ``gazetteer_coverage.py``, here with its types ignored as the sources' are)::

    python experiments/kazama2007/external_gazetteers.py --readme experiments/kazama2007/README.md
"""

from __future__ import annotations

import sys
from pathlib import Path

from structperc.data.conll import read_conll
from structperc.data.tags import spans
from structperc.features.external import SOURCES, external_entries, source_versions
from structperc.features.gazetteer import EntryIndex, jackknife_entries, read_gazetteer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gazetteer_coverage import coverage_cli  # noqa: E402

TYPES = ("LOC", "MISC", "ORG", "PER")
SPLITS = ("train", "dev", "test")


def match_spans(index: EntryIndex, tokens: list[str]) -> list[tuple[int, int]]:
    """(start, end) of the greedy longest matches of ``index`` in ``tokens``."""
    tags = index.match(tokens)
    return [(s, e) for s, e, _ in spans([t if t == "O" else f"{t}-G" for t in tags])]


def coverage(docs, lists) -> dict:
    """The table's figures for ``docs``; ``lists[i]``: attribute -> entries of document i."""
    per_type = {t: [0, 0] for t in TYPES}  # type -> [entities, in the list]
    tokens_covered = matches = exact = inside = 0
    indexes: dict[int, dict[str, EntryIndex]] = {}  # one index per distinct list (fold)
    for doc, entries in zip(docs, lists, strict=True):
        if id(entries) not in indexes:
            indexes[id(entries)] = {a: EntryIndex(e) for a, e in entries.items()}
        index = indexes[id(entries)]
        gold = list(spans(doc.tags))
        found = [m for idx in index.values() for m in match_spans(idx, doc.tokens)]
        matched = set()
        for s, e in found:
            matched.update(range(s, e))
        gold_spans = {(s, e) for s, e, _ in gold}
        entity_of = [-1] * len(doc.tokens)  # token -> the gold entity it is in
        for k, (s, e, _) in enumerate(gold):
            entity_of[s:e] = [k] * (e - s)
        matches += len(found)
        exact += sum(m in gold_spans for m in found)
        inside += sum(entity_of[s] >= 0 and entity_of[s] == entity_of[e - 1] for s, e in found)
        for s, e, typ in gold:
            name = tuple(doc.tokens[s:e])
            per_type[typ][0] += 1
            per_type[typ][1] += any(name in es for es in entries.values())
            tokens_covered += all(t in matched for t in range(s, e))
    entities = sum(n for n, _ in per_type.values())
    return {
        "entities": entities,
        "in_list": {t: 100.0 * c / max(n, 1) for t, (n, c) in per_type.items()},
        "in_list_all": 100.0 * sum(c for _, c in per_type.values()) / max(entities, 1),
        "tokens_matched": 100.0 * tokens_covered / max(entities, 1),
        "matches": matches,
        "exact": 100.0 * exact / max(matches, 1),
        "inside": 100.0 * inside / max(matches, 1),
    }


def measure(data_dir: Path, folds: int) -> list[dict]:
    splits = {s: read_conll(data_dir / "conll2003" / f"{s}.txt") for s in SPLITS}
    rows = []
    sources = {n: [n] for n in SOURCES} | {"all six": list(SOURCES)}
    for label, names in sources.items():
        entries = external_entries(names)
        size = sum(len(e) for e in entries.values())
        versions = ", ".join(f"{n} {v}" for n, v in source_versions(names).items())
        for split, docs in splits.items():
            row = coverage(docs, [entries] * len(docs))
            row.update(source=label, versions=versions, split=split, size=size)
            rows.append(row)
    eng = read_gazetteer(data_dir / "conll2003" / "eng.list")
    train = splits["train"]
    jack = jackknife_entries(train, eng, folds)
    for split, docs in splits.items():
        if split == "train":  # document i is in fold i % folds (jackknife_entries)
            lists = [jack[i % folds] for i in range(len(docs))]
        else:
            lists = [eng] * len(docs)
        label = f"eng.list ({'jackknife' if split == 'train' else 'whole list'})"
        size = sum(len(e) for e in eng.values())
        row = coverage(docs, lists)
        row.update(source=label, versions="CoNLL-2003", split=split, size=size)
        rows.append(row)
    return rows


def render(rows: list[dict]) -> str:
    types = " | ".join(TYPES)
    lines = [
        f"| source | split | entries | {types} | all | every token matched | matches "
        "| matches = gold entity | matches inside one |",
        "|---|---|---:|" + "---:|" * len(TYPES) + "---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        cells = " | ".join(f"{r['in_list'][t]:.1f}%" for t in TYPES)
        lines.append(
            f"| {r['source']} | {r['split']} | {r['size']:,} | {cells} | {r['in_list_all']:.1f}% "
            f"| {r['tokens_matched']:.1f}% | {r['matches']:,} | {r['exact']:.1f}% "
            f"| {r['inside']:.1f}% |"
        )
    versions = sorted({r["versions"] for r in rows if r["source"] == "all six"})
    lines += ["", f"Package versions: {'; '.join(versions)}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    json_path = Path(__file__).parent / "external_gazetteers.json"
    coverage_cli(__doc__, measure, render, json_path, "external_coverage")


if __name__ == "__main__":
    main()
