"""One run folder -> one self-contained HTML page (``structperc-report``).

``build_report`` reads the folder (``run_folder.py``), explains the errors it lists with the
run's own model (``Tagger.explain_documents``: the model's full tables, read-only) and lays the
sections out (``sections.py``).  Section ids, in order, for a chunking run:

    settings  data  scores  error-classes  curves  features  patterns  error-list  timing

and for a plain tagging run (POS tags):

    settings  data  labels  confusion  curves  features  timing
"""

from __future__ import annotations

from pathlib import Path

import structperc.report.sections as S
from structperc.report.html import page
from structperc.report.run_folder import RunFolder, read_run

CHUNK_SECTIONS = (
    "settings",
    "data",
    "scores",
    "error-classes",
    "curves",
    "features",
    "patterns",
    "error-list",
    "timing",
)
TOKEN_SECTIONS = ("settings", "data", "labels", "confusion", "curves", "features", "timing")


def model_weights(run: RunFolder, top: int):
    """(the run's ``Tagger`` or None, its ``explain_weights`` or None) where it saved a model."""
    if not run.has_model:
        return None, None
    from structperc.inference.tagger import Tagger

    tagger = Tagger.load(run.path)
    return tagger, tagger.explain_weights(top)


def explain_errors(tagger, run: RunFolder, split: str, errors, limit: int) -> tuple[dict, int]:
    """(doc, position) -> ``TokenExplanation`` of the focus tokens of the first ``limit`` errors
    of ``split``, and how many documents the model labels otherwise than the prediction file."""
    items = run.predictions[split]
    wanted: dict[int, set[int]] = {}
    for err in errors[:limit]:
        p = items[err.doc]
        wanted.setdefault(err.doc, set()).update(S.focus_tokens(err, p.doc.tags, p.pred))
    docs = sorted(wanted)
    explained = tagger.explain_documents(
        [items[d].doc for d in docs], [sorted(wanted[d]) for d in docs]
    )
    out, differ = {}, 0
    for d, ex in zip(docs, explained, strict=True):
        differ += ex.predicted != items[d].pred
        out.update({(d, e.position): e for e in ex.explanations})
    return out, differ


def build_report(run_dir: str | Path, split: str = "test", limit: int = 1000, top: int = 10) -> str:
    """The HTML page of the run in ``run_dir``: its errors on ``split`` listed and explained
    (the first ``limit``), ``top`` features per label."""
    run = read_run(run_dir)
    tagger, weights = model_weights(run, top)
    r = run.results
    headline = ", ".join(
        f"{s} F1 {r[s]['f1']:.2f}"
        if "f1" in r.get(s, {})
        else f"{s} accuracy {r[s].get('accuracy', 0):.2f}"
        for s in ("dev", "test")
        if isinstance(r.get(s), dict)
    )
    learner = (r.get("hparams") or {}).get("learner") or r.get("task") or "?"
    title = f"structperc run {run.path.name}"
    subtitle = f"{learner}; {headline}; {run.path.resolve()}"
    parts = [
        ("settings", "Settings", S.settings_section(run)),
        ("data", "Data", S.data_section(run)),
    ]
    if S.is_chunking(run.labels):
        scores, errors = S.chunk_scores(run), S.all_errors(run)
        parts += [
            ("scores", "Scores per type (conlleval)", S.scores_section(run, scores)),
            ("error-classes", "Error classes per type", S.error_classes_section(errors)),
            ("curves", "Learning curves", S.curves_section(run)),
            ("features", "Top features per label", S.features_section(weights, top)),
        ]
        if split in run.predictions:
            explained, differ = ({}, 0)
            if tagger is not None:
                explained, differ = explain_errors(tagger, run, split, errors[split], limit)
            listing = S.error_list_section(run, errors[split], split, explained, limit)
            if differ:
                listing = (
                    S.table_note(
                        f"{differ} document(s) are labeled otherwise by the saved model than in "
                        f"{split}.pred.txt: their explanations are of the model's own labeling."
                    )
                    + listing
                )
            parts += [
                (
                    "patterns",
                    "Most frequent error patterns",
                    S.patterns_section(run, errors, split),
                ),
                ("error-list", f"Errors on {split}, explained", listing),
            ]
        else:
            note = S.table_note(f"No {split}.pred.txt in the run folder.")
            parts += [
                ("patterns", "Most frequent error patterns", note),
                ("error-list", "Errors", note),
            ]
    else:
        parts += [
            ("labels", "Accuracy per label", S.token_labels_section(run)),
            ("confusion", "Confusion matrix", S.confusion_section(run)),
            ("curves", "Learning curves", S.curves_section(run)),
            ("features", "Top features per label", S.features_section(weights, top)),
        ]
    parts.append(("timing", "Timing and memory", S.timing_section(run)))
    return page(title, subtitle, parts)
