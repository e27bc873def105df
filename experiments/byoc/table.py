"""Bring your own corpus: CoNLL-2000 chunking through ``data=columns`` and a template file beside
the tagchunk chunker, CoNLL-2000 POS tagging as a plain tagging task beside the tagchunk POS
tagger, and the made-up Spanish example, from the runs' own files.

    python experiments/byoc/table.py --readme experiments/byoc/README.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import sections  # noqa: E402

HERE = Path(__file__).resolve().parent
RUNS = HERE / "runs"
TAGCHUNK = HERE.parent / "tagchunk" / "runs" / "conll00_tagchunk_compact_edges"
TAGCHUNK_SP = HERE.parent / "tagchunk" / "runs" / "conll00_tagchunk_sp_edges"


def results(run: Path) -> dict:
    return json.loads((run / "results.json").read_text())


def command(run: Path) -> str:
    """The run's command line, from the overrides Hydra recorded (``hydra.run.dir`` added)."""
    overrides = yaml.safe_load((run / ".hydra" / "overrides.yaml").read_text())
    where = run.relative_to(HERE.parents[1])
    return " ".join(["python -m structperc.run", *quoted(overrides), f"hydra.run.dir={where}"])


def pos() -> str:
    ours, theirs = results(RUNS / "conll2000_pos"), results(TAGCHUNK)
    lines = [
        "| tagger | dev | epochs | training s | dev accuracy | test accuracy |",
        "|---|---|---:|---:|---:|---:|",
        f"| plain tagging task through `data=columns` (`runs/conll2000_pos`) | 1,000 training "
        f"sentences held out (seed 0) | {ours['epochs']} | {ours['train_seconds']:.0f} | "
        f"{ours['dev']['accuracy']:.2f} | {ours['test']['accuracy']:.2f} |",
        f"| the tagchunk POS tagger (`../tagchunk/runs/{TAGCHUNK.name}/pos`) | the last 1,000 "
        f"training sentences | {theirs['pos_epochs']} | {theirs['train_seconds']['pos']:.0f} | "
        f"{theirs['dev']['pos_accuracy']:.2f} | {theirs['test']['pos_accuracy']:.2f} |",
        "",
        f"Command: `{command(RUNS / 'conll2000_pos')}`",
        "",
        f"The tagchunk tagger: `{command(TAGCHUNK)}` (its `pos/` chain).",
    ]
    return "\n".join(lines) + "\n"


def chunk() -> str:
    run = RUNS / "conll2000_chunk"
    ours = results(run)
    lines = [
        "| chunker | trained on POS | dev | epochs | training s | dev F1 | test F1 |",
        "|---|---|---|---:|---:|---:|---:|",
        f"| `data=columns` + `chunking.tpl` (`runs/{run.name}`) | the data's | 1,000 training "
        f"sentences held out (seed 0) | {ours['epochs']} | {ours['train_seconds']:.0f} | "
        f"{ours['dev']['f1']:.2f} | {ours['test']['f1']:.2f} |",
    ]
    for tagchunk, what in ((TAGCHUNK, "its default templates"), (TAGCHUNK_SP, "words and POS")):
        r = results(tagchunk)
        lines.append(
            f"| the tagchunk chunker, {what} (`../tagchunk/runs/{tagchunk.name}/chunk`) | "
            f"jackknifed (5 folds) | the last 1,000 training sentences | {r['chunk_epochs']} | "
            f"{r['train_seconds']['chunk']:.0f} | {r['dev']['chunk_f1_gold_pos']:.2f} | "
            f"{r['test']['chunk_f1_gold_pos']:.2f} |"
        )
    types = ", ".join(f"{t} {f:.1f}" for t, f in ours["test"]["per_type"].items())
    lines += [
        "",
        f"Every chunk type ({len(ours['labels'])} labels); test F1 per type: {types}. "
        f"{ours['num_features']:,} features; the run's job took {ours['job_seconds']:.0f} s.",
        "",
        f"Command: `{command(run)}`",
        "",
        f"The tagchunk chunkers: `{command(TAGCHUNK)}`, `{command(TAGCHUNK_SP)}` (their "
        "`chunk/` chains; F1 with the data's POS at dev and test).",
    ]
    return "\n".join(lines) + "\n"


def pos_labels() -> str:
    test = results(RUNS / "conll2000_pos")["test"]
    labels = sorted(test["per_label"].items(), key=lambda kv: -kv[1]["n_gold"])
    lines = [
        f"Test, {test['n_tokens']:,} tokens: accuracy {test['accuracy']:.2f}, macro F1 over "
        f"{len(labels)} labels {test['macro_f1']:.2f}; the twelve most frequent labels:",
        "",
        "| label | tokens | precision | recall | F1 |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, s in labels[:12]:
        lines.append(
            f"| `{label}` | {s['n_gold']:,} | {s['precision']:.2f} | {s['recall']:.2f} | "
            f"{s['f1']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def quoted(overrides: list[str]) -> list[str]:
    return [f"'{o}'" if any(c in o for c in "[]<>,${}") else o for o in overrides]


def learners() -> str:
    """The Spanish example through re-ranking, two torchrun ranks and a Hydra sweep."""
    lines = [
        "| run | what | ranks | epochs | test F1 |",
        "|---|---|---:|---:|---:|",
    ]
    rerank, ranks = RUNS / "spanish_rerank1", RUNS / "spanish_2ranks"
    r = results(rerank)
    lines.append(
        f"| `runs/{rerank.name}` | re-ranking 1: the margin perceptron's n-best lists (5-fold "
        f"jackknife), reranked with the non-local features | 1 | {r['epochs']} | "
        f"{r['test']['f1']:.2f} (first model {r['test']['base_f1']:.2f}) |"
    )
    r = results(ranks)
    lines.append(
        f"| `runs/{ranks.name}` | the margin perceptron, `distributed=torch` under torchrun | "
        f"{r['world_size']} | {r['epochs']} | {r['test']['f1']:.2f} |"
    )
    sweep = RUNS / "spanish_sweep"
    for job in sorted(p for p in sweep.iterdir() if p.is_dir()):
        r = results(job)
        job_overrides = yaml.safe_load((job / ".hydra" / "overrides.yaml").read_text())
        learner = next(o for o in job_overrides if o.startswith("learner="))
        lines.append(
            f"| `runs/{sweep.name}/{job.name}` | sweep job {job.name}: `{learner}` | "
            f"{r['world_size']} | {r['epochs']} | {r['test']['f1']:.2f} |"
        )
    overrides = yaml.safe_load((sweep / "multirun.yaml").read_text())["hydra"]["overrides"]
    hydra = [o for o in overrides["hydra"] if o != "hydra.mode=MULTIRUN"]
    torchrun = command(ranks).replace(
        "python -m structperc.run", "torchrun --standalone --nproc-per-node=2 -m structperc.run"
    )
    lines += [
        "",
        f"Re-ranking: `{command(rerank)}`",
        "",
        f"Two ranks: `{torchrun}`",
        "",
        "The sweep: `python -m structperc.run -m "
        + " ".join(quoted([*overrides["task"], *hydra]))
        + "`",
    ]
    return "\n".join(lines) + "\n"


def main_job() -> str:
    """The main job with Table 1 written as templates (the ``kazama_templates`` preset) beside
    the main job with the named attributes: every figure of the two results.json files."""
    named_run, tpl_run = (
        HERE.parent / "kazama2007" / "runs" / "main_job",
        RUNS / "main_job_templates",
    )
    named, tpl = results(named_run), results(tpl_run)
    keys = ("epoch", "word_error", "updates", "updates_a", "updates_b", "dev_f1")
    same_history = [{k: e.get(k) for k in keys} for e in named["history"]] == [
        {k: e.get(k) for k in keys} for e in tpl["history"]
    ]
    lines = [
        "| features | features (count) | epochs | dev F1 | test F1 |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, r in (
        ("named attributes (`../kazama2007/runs/main_job`)", named),
        ("Table 1 as templates (`runs/main_job_templates`)", tpl),
    ):
        lines.append(
            f"| {label} | {r['num_features']:,} | {r['epochs']} | {r['dev']['f1']:.2f} | "
            f"{r['test']['f1']:.2f} |"
        )
    lines += [
        "",
        f"Every epoch's word error, updates (of kinds A and B) and dev F1 the same: "
        f"{'yes' if same_history else 'no'}; test F1 equal to the last digit: "
        f"{'yes' if named['test']['f1'] == tpl['test']['f1'] else 'no'}.",
        "",
        f"Commands: `{command(tpl_run)}`; the named attributes': "
        f"`python -m structperc.run +experiment=conll03_nonlocal`.",
    ]
    return "\n".join(lines) + "\n"


def example() -> str:
    run = RUNS / "spanish_example"
    r = results(run)
    types = ", ".join(f"{t} {f:.1f}" for t, f in r["test"]["per_type"].items())
    lines = [
        f"Test F1 {r['test']['f1']:.2f} ({r['test']['n_gold']} entities; per type: {types}); "
        f"{r['epochs']} epochs, labels {', '.join(r['labels'])}.",
        "",
        f"Command: `{command(run)}`",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sections.main(
        __doc__,
        {
            "chunk": chunk,
            "pos": pos,
            "pos_labels": pos_labels,
            "example": example,
            "learners": learners,
            "main_job": main_job,
        },
    )
