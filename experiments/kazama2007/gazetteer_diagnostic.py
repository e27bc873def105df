"""A diagnostic, not a result: what if the gazetteer covered test as it covers dev?

``eng.list`` is the set of training entities, so it covers 67% of the dev entities (the same
share the jackknife gives training documents) but only 52% of the test entities.  This script
writes a copy of the list with randomly chosen test entities added (distinct strings, in a
seeded random order) until the test coverage reaches the dev coverage.  Training is unchanged:
the jackknife keeps only entries that are training entities of other folds, and the added
entries are not training entities.  A model trained with this list and evaluated on test shows
how much of the dev/test gap is the list's coverage.  **It reads test labels, so its test F1 is
not a result and is never reported as one**:

    python experiments/kazama2007/gazetteer_diagnostic.py --out /tmp/eng.test-covered.list
    python -m structperc.run +experiment=conll03_local \
        features.gazetteer_path=/tmp/eng.test-covered.list \
        hydra.run.dir=experiments/kazama2007/runs/diagnostic/local_averaged_test_covered
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from structperc.data.conll import read_conll
from structperc.data.tags import spans
from structperc.features.gazetteer import read_gazetteer

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import sections  # noqa: E402
from gazetteer_coverage import entity_coverage  # noqa: E402


def coverage(docs, entries) -> float:
    """Percentage of the gold entities of ``docs`` that are same-type entries of ``entries``."""
    return entity_coverage(docs, [entries] * len(docs))[1]


def main() -> None:
    ap = sections.parser(__doc__, data=True)
    ap.add_argument("--out", type=Path, required=True, help="the augmented list to write")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    folder = sections.data_dir(ap, args, "conll2003") / "conll2003"
    entries = read_gazetteer(folder / "eng.list")
    dev, test = read_conll(folder / "dev.txt"), read_conll(folder / "test.txt")
    target = coverage(dev, entries)
    missing = sorted(
        {(typ, tuple(d.tokens[s:e])) for d in test for s, e, typ in spans(d.tags)}
        - {(typ, e) for typ, es in entries.items() for e in es}
    )
    random.Random(args.seed).shuffle(missing)
    added = 0
    while coverage(test, entries) < target and missing:
        for typ, e in missing[:50]:
            entries.setdefault(typ, set()).add(e)
            added += 1
        missing = missing[50:]
    lines = [f"{typ} {' '.join(e)}" for typ in sorted(entries) for e in sorted(entries[typ])]
    args.out.write_text("\n".join(lines) + "\n")
    print(
        f"{args.out}: {added} test entities added; coverage dev {coverage(dev, entries):.1f}% "
        f"(was {target:.1f}%), test {coverage(test, entries):.1f}%"
    )


if __name__ == "__main__":
    main()
