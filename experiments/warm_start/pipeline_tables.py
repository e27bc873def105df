"""The tables of ``README_pipeline.md`` from the runs of ``pipeline_train.py``: their own
``results.json`` (and ``half_a.json``, the scores on half A's documents), with the command of
each run read from its ``.hydra/overrides.yaml``::

    PYTHONPATH=. .venv/bin/python experiments/warm_start/pipeline_tables.py \\
        --readme experiments/warm_start/README_pipeline.md

Sections: ``pipeline_halves`` (A, then A ∪ B: test F1 against the epochs on A ∪ B, beside the
model trained on A ∪ B from zero), ``pipeline_forgetting`` (A, then B alone), ``pipeline_misc``
(MISC tagged O, then continued with MISC: per-type F1), ``pipeline_hashing`` (test F1 against
the rows of the hashed tables).  Every figure is conlleval's F1 of the written predictions.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import sections  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RUNS = HERE / "pipeline_runs"
TYPES = ("LOC", "MISC", "ORG", "PER")
WITHIN = 0.3  # the halves' criterion: test F1 within this of the model from zero
MISC_WITHIN, OTHERS_WITHIN = 2.0, 0.5  # the MISC criterion
HALF = 473  # documents of half A


def results(name: str) -> dict:
    path = RUNS / name / "results.json"
    if not path.is_file():
        raise SystemExit(f"{path}: no such run (experiments/warm_start/pipeline_train.py)")
    return json.loads(path.read_text())


def half_a(name: str) -> dict | None:
    path = RUNS / name / "half_a.json"
    return json.loads(path.read_text()) if path.is_file() else None


def stages(chain: str) -> list[tuple[int, dict]]:
    """(epochs, results) of every stage of a chain, checked to be one training: each stage
    resumed from the one before it."""
    out = []
    for folder in sorted((RUNS / chain).glob("epochs_*")):
        r = results(f"{chain}/{folder.name}")
        previous = out[-1][0] if out else None
        if r.get("resumed_from_epoch") != previous:
            raise SystemExit(
                f"{folder}: resumed from {r.get('resumed_from_epoch')}, not {previous}"
            )
        out.append((r["epochs"], r))
    return out


def command(name: str) -> str:
    """The command line of run ``name`` (its Hydra overrides; this checkout's paths relative)."""
    overrides = yaml.safe_load((RUNS / name / ".hydra" / "overrides.yaml").read_text())
    words = [o.replace(f"{ROOT}/", "") for o in overrides]
    return "python -m structperc.run " + " ".join(words) + f" hydra.run.dir={_relative(name)}"


def _relative(name: str) -> str:
    return str((RUNS / name).relative_to(ROOT))


def f(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def first_within(curve: list[tuple[int, float]], target: float, within: float) -> int | None:
    """The first epochs whose figure is at least ``target - within``."""
    return next((k for k, v in curve if v >= target - within), None)


def halves() -> str:
    zero = dict(stages("AB"))
    continued, restarted = dict(stages("A_then_AB")), dict(stages("A_then_AB_restart"))
    a = results("A")
    final = max(zero)
    target = zero[final]["test"]["f1"]
    lines = [
        f"Half A alone ({a['epochs']} epochs on A): dev F1 {f(a['dev']['f1'])}, "
        f"test F1 {f(a['test']['f1'])}.  Target: the model trained on A ∪ B from zero for "
        f"{final} epochs, test F1 {f(target)}; within {WITHIN}: ≥ {f(target - WITHIN)}.",
        "",
        "| epochs on A ∪ B | from zero: dev F1 | test F1 | A, then A ∪ B (average continued): "
        "dev F1 | test F1 | A, then A ∪ B (average restarted): dev F1 | test F1 |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k in sorted(set(zero) | set(continued) | set(restarted)):
        cells = []
        for runs in (zero, continued, restarted):
            r = runs.get(k)
            cells += [f(r["dev"]["f1"]) if r else "–", f(r["test"]["f1"]) if r else "–"]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    first = [reached(runs, target) for runs in (zero, continued, restarted)]
    warm = continued[min(continued)]["warm_start"]
    lines += [
        "",
        f"Within {WITHIN} of the model from zero after K epochs on A ∪ B: from zero "
        f"K = {first[0]}; A's model continued, its average over A's instances too (`auto` with "
        f"the same labels: `continue`) K = **{first[1]}**; with the average restarted "
        f"(`trainer.init_average=restart`) K = **{first[2]}**.  The continued models carried "
        f"{warm['rows']:,} feature rows of A's model and added {warm['new_rows']:,}; the "
        f"continued average starts over A's {warm['seen']:,} instances ({a['epochs']} epochs × "
        f"{warm['seen'] // a['epochs']} documents).",
        "",
        "```",
        command(f"A_then_AB/epochs_{max(continued):02d}"),
        command(f"A_then_AB_restart/epochs_{max(restarted):02d}"),
        command(f"AB/epochs_{final:02d}"),
        command("A"),
        "```",
    ]
    return "\n".join(lines)


def reached(runs: dict[int, dict], target: float) -> int | None:
    """The first epochs of a chain whose test F1 is within ``WITHIN`` of ``target``."""
    return first_within([(k, r["test"]["f1"]) for k, r in sorted(runs.items())], target, WITHIN)


def forgetting() -> str:
    rows = [("A from zero, 30 epochs on A", "A"), ("B from zero, 30 epochs on B", "B")]
    rows.append(("A ∪ B from zero, 30 epochs", "AB/epochs_30"))
    for k, _ in stages("A_then_B"):
        rows.append((f"A, then {k} epoch(s) on B alone", f"A_then_B/epochs_{k:02d}"))
    lines = [
        "| model | dev F1 | test F1 | F1 on A, eng.list | F1 on A, B's list | PER | LOC | ORG "
        "| MISC |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    entries = None
    for label, name in rows:
        r, on_a = results(name), half_a(name)
        whole, of_b = (on_a["whole_list"], on_a["list_of_b"]) if on_a else ({}, {})
        per = of_b.get("per_type", {})
        cells = [f(r["dev"]["f1"]), f(r["test"]["f1"]), f(whole.get("f1")), f(of_b.get("f1"))]
        cells += [f(per.get(t)) for t in ("PER", "LOC", "ORG", "MISC")]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
        entries = entries or (whole.get("entries"), of_b.get("entries"))
    lines += [
        "",
        f"F1 on A: conlleval on half A's {HALF} training documents, their gazetteer features "
        f"from the model's eng.list ({entries[0]:,} entries, which name A's own entities), and "
        f"from its entries that are entities of half B ({entries[1]:,}; the per-type F1s are "
        "these).",
        "",
        "```",
        command("A_then_B/epochs_30"),
        command("B"),
        "```",
    ]
    return "\n".join(lines)


def misc() -> str:
    start = results("AB/epochs_30")
    first = results("noMISC")
    ref = start["test"]["per_type"]
    header = "| model | average | epochs | test F1 | " + " | ".join(TYPES)
    header += " | met: no type worse by > 0.5 | met: every type within ±0.5 |"
    lines = [header, "|---|---|---:|---:|" + "---:|" * len(TYPES) + ":---:|:---:|"]

    def yes(flag: bool) -> str:
        return "yes" if flag else "no"

    def row(label: str, r: dict, average: str, check: bool) -> str:
        per = r["test"]["per_type"]
        cells = [average, str(r["epochs"]), f(r["test"]["f1"]), *(f(per.get(t)) for t in TYPES)]
        cells += [yes(_met(r, ref, strict=False)), yes(_met(r, ref))] if check else ["", ""]
        return f"| {label} | " + " | ".join(cells) + " |"

    lines.append(row("with MISC from the start (A ∪ B from zero)", start, "", False))
    lines.append(row("MISC tagged O", first, "", False))
    summary, shown = [], []
    for chain in ("noMISC_then_MISC", "noMISC_then_MISC_continue"):
        stages_ = stages(chain)
        average = stages_[0][1]["warm_start"]["average"]
        for _, r in stages_:
            lines.append(row("MISC tagged O, then with MISC", r, average, True))
        loose = [k for k, r in stages_ if _met(r, ref, strict=False)]
        tight = [k for k, r in stages_ if _met(r, ref)]
        summary.append(
            f"with the average `{average}`: met (no type worse) at K = "
            f"{', '.join(map(str, loose)) or 'none'}, met (every type within ±0.5) at K = "
            f"{', '.join(map(str, tight)) or 'none'}"
        )
        shown.append(f"{chain}/epochs_{stages_[-1][0]:02d}")
    lines += [
        "",
        f"Criterion: MISC test F1 within {MISC_WITHIN} of the model with MISC from the start "
        f"({f(ref['MISC'])}), and every other type within {OTHERS_WITHIN} of its F1 there "
        "(read two ways: no type worse by more, or none off by more either way); "
        + "; ".join(summary)
        + ".",
        "",
        "```",
        command("noMISC"),
        *(command(name) for name in shown),
        "```",
    ]
    return "\n".join(lines)


def seeds() -> str:
    """The halves' and MISC's criteria for every seed trained (``seedS/``; seed 0 at the top)."""
    prefixes = [("0", "")] + [
        (p.name[4:], f"{p.name}/") for p in sorted(RUNS.glob("seed*")) if p.is_dir()
    ]
    lines = [
        "| seed | A ∪ B from zero, 30 epochs: test F1 | within 0.3 after K epochs: from zero "
        "| A, then A ∪ B, continued | restarted | test F1 at 30: continued | restarted "
        "| MISC F1 from the start | MISC tagged O, then MISC: met at K (no type worse by > 0.5) "
        "| met at K (every type within ±0.5) | its MISC F1 at K = 3, 5, 8, 12 |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for seed, at in prefixes:
        zero = dict(stages(f"{at}AB"))
        continued = dict(stages(f"{at}A_then_AB"))
        restarted = dict(stages(f"{at}A_then_AB_restart"))
        target = zero[max(zero)]["test"]["f1"]
        ref = zero[max(zero)]["test"]["per_type"]
        misc_chain = dict(stages(f"{at}noMISC_then_MISC"))
        one_sided = [k for k, r in sorted(misc_chain.items()) if _met(r, ref, strict=False)]
        strict = [k for k, r in sorted(misc_chain.items()) if _met(r, ref)]
        at_k = [f(misc_chain[k]["test"]["per_type"]["MISC"]) for k in (3, 5, 8, 12)]
        cells = [
            seed,
            f(target),
            *(str(reached(runs, target)) for runs in (zero, continued, restarted)),
            f(continued[max(continued)]["test"]["f1"]),
            f(restarted[max(restarted)]["test"]["f1"]),
            f(ref["MISC"]),
            ", ".join(map(str, one_sided)) or "none",
            ", ".join(map(str, strict)) or "none",
            " / ".join(at_k),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if len(prefixes) > 1:
        lines += ["", "```", command("seed1/A_then_AB/epochs_30"), "```"]
    return "\n".join(lines)


def _met(r: dict, ref: dict, strict: bool = True) -> bool:
    """The MISC criterion of a model's results against the per-type F1s ``ref``: MISC at
    least ``MISC_WITHIN`` below, every other type within ``OTHERS_WITHIN`` (``strict``: on
    either side; else no type below by more)."""
    per = r["test"]["per_type"]
    misc_ok = per.get("MISC", 0.0) >= ref["MISC"] - MISC_WITHIN
    others = [per[t] - ref[t] for t in TYPES if t != "MISC"]
    if strict:
        return misc_ok and all(abs(d) <= OTHERS_WITHIN for d in others)
    return misc_ok and all(d >= -OTHERS_WITHIN for d in others)


def hashing() -> str:
    groups = [
        ("edge features (the preset)", "AB/epochs_30", "edges"),
        (
            "node features + transition matrix (features.edges=false)",
            "hashing/nodes_unhashed",
            "nodes",
        ),
    ]
    lines = [
        "| features | rows (hash_bits) | feature keys | collisions | tables in training, MB "
        "| dev F1 | test F1 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    shown = []
    for label, unhashed, prefix in groups:
        base = results(unhashed)
        named = [(f"{base['num_features']:,} (unhashed)", unhashed)]
        for folder in sorted((RUNS / "hashing").glob(f"{prefix}_bits_*")):
            bits = int(folder.name.rsplit("_", 1)[1])
            named.append((f"2^{bits} = {1 << bits:,}", f"hashing/{folder.name}"))
        for rows, name in named:
            r = results(name)
            cells = [
                label,
                rows,
                f"{r['feature_keys'] if 'feature_keys' in r else r['num_features']:,}",
                f"{r.get('collisions', 0):,}",
                f"{r['table_bytes'] / 2**20:,.0f}",
                f(r["dev"]["f1"]),
                f(r["test"]["f1"]),
            ]
            lines.append("| " + " | ".join(cells) + " |")
        shown.append(named[-1][1])
    lines += [
        "",
        "Feature keys: the features kept by `min_count=2` (the same with and without hashing); "
        "collisions: the keys less the rows they fill; tables in training: results.json's "
        "`table_bytes` (the weights, the averaging sums and the copy an evaluation makes).",
        "",
        "```",
        *(command(name) for name in shown),
        "```",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sections.main(
        __doc__,
        {
            "pipeline_halves": halves,
            "pipeline_forgetting": forgetting,
            "pipeline_misc": misc,
            "pipeline_seeds": seeds,
            "pipeline_hashing": hashing,
        },
    )
