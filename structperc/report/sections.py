"""The sections of a run's report page, each built from the run folder's own files.

Settings and data (``.hydra``, results.json, the prediction files); the scores per type
(conlleval's, ``eval/chunks.py``, recomputed from the prediction files); the error classes per
type (``eval/errors.py``); the learning curves (the run's TensorBoard scalars, else results.json's
history); the model's top features per label, its transitions and non-local weights
(``explain/weights.py``); the most frequent error patterns; the errors one by one, their spans
marked in the sentence, each with the explanation of its first wrong tokens
(``explain/tokens.py``); timing and memory.  A plain tagging run (POS tags) gets per-label
accuracy and a confusion matrix instead of the chunk sections.
"""

from __future__ import annotations

from collections import Counter

import structperc.report.plots as plots
from structperc.eval.chunks import evaluate
from structperc.eval.errors import CLASSES, ChunkError, chunk_errors, error_counts
from structperc.eval.tokens import token_scores
from structperc.report.html import number, table, text
from structperc.report.run_folder import SPLITS, RunFolder

PATTERNS = 100  # the most frequent error patterns listed
FOCUS_TOKENS = 2  # wrong tokens of an error explained


def is_chunking(labels: list[str]) -> bool:
    return any(t[:2] in ("B-", "I-", "E-", "S-") for t in labels)


# -- settings and data ----------------------------------------------------------------------------
def settings_section(run: RunFolder) -> str:
    hparams = run.results.get("hparams") or {}
    groups: dict[str, list[str]] = {}
    for key, value in hparams.items():
        group, _, name = key.partition(".")
        groups.setdefault(group, []).append(f"{name}={value}" if name else str(value))
    rows = [[group, ", ".join(items)] for group, items in groups.items()]
    header = (
        f"<p>Command (from <code>.hydra/overrides.yaml</code>):</p><pre>{text(run.command)}</pre>"
        if run.overrides
        else "<p class='small'>No .hydra/overrides.yaml: the command is not recorded.</p>"
    )
    body = header
    if rows:
        body += table(["group", "settings (results.json's hparams)"], rows, left=2)
    if run.config:
        body += (
            "<details><summary>The composed settings (.hydra/config.yaml)</summary>"
            f"<pre>{text(_yaml(run.config))}</pre></details>"
        )
    return body


def _yaml(obj) -> str:
    import yaml

    return yaml.safe_dump(obj, sort_keys=False, default_flow_style=False)


def data_section(run: RunFolder) -> str:
    data = run.config.get("data", {})
    rows = []
    for split, items in run.predictions.items():
        docs = [p.doc for p in items]
        sentences = sum(len(d.sentence_spans()) for d in docs)
        tokens = sum(len(d) for d in docs)
        gold = Counter(t[2:] for d in docs for t in d.tags if t.startswith("B-"))
        entities = ", ".join(f"{k} {v}" for k, v in sorted(gold.items()))
        rows.append([split, len(docs), sentences, tokens, entities or "–"])
    where = data.get("dir") or "?"
    body = (
        f"<p>Corpus <b>{text(data.get('name', run.corpus.get('name', '?')))}</b> from "
        f"<code>{text(where)}</code>; labels: {text(' '.join(run.labels))}; "
        f"{number(run.results.get('num_features'))} local features.</p>"
    )
    if rows:
        header = ["split", "documents", "sentences", "tokens", "gold chunks (B- tags) by type"]
        body += table(header, rows, left=1) + table_note("from the run's prediction files")
    else:
        body += "<p class='small'>No prediction files in the run folder.</p>"
    return body


def table_note(note: str) -> str:
    return f"<p class='small'>{text(note)}</p>"


# -- scores ---------------------------------------------------------------------------------------
def chunk_scores(run: RunFolder) -> dict:
    """split -> ``ChunkScores`` of its prediction file."""
    out = {}
    for split, items in run.predictions.items():
        gold, pred = [p.doc.tags for p in items], [p.pred for p in items]
        out[split] = evaluate(gold, pred, [p.doc.sentence_starts for p in items])
    return out


def scores_section(run: RunFolder, scores: dict) -> str:
    if not scores:
        rows = [
            [
                s,
                run.results[s].get("f1"),
                run.results[s].get("precision"),
                run.results[s].get("recall"),
            ]
            for s in SPLITS
            if isinstance(run.results.get(s), dict)
        ]
        return table(["split", "F1", "precision", "recall"], rows) + table_note(
            "results.json (no prediction files: no per-type precision and recall)"
        )
    body = ""
    for split, s in scores.items():
        rows = [["overall", s.precision, s.recall, s.f1, s.n_gold, s.n_pred, s.n_correct]]
        rows += [
            [t, x.precision, x.recall, x.f1, x.n_gold, x.n_pred, x.n_correct]
            for t, x in s.per_type.items()
        ]
        header = ["type", "precision", "recall", "F1", "gold", "found", "correct"]
        body += f"<h3>{text(split)}: accuracy {s.accuracy:.2f}%</h3>" + table(header, rows)
    types = sorted({t for s in scores.values() for t in s.per_type})
    series = {
        sp: [s.per_type[t].f1 if t in s.per_type else 0.0 for t in types]
        for sp, s in scores.items()
    }
    body += plots.grouped_bars(types, series, "F1 (conlleval)")
    return body + table_note(
        "conlleval's counts over the prediction files: a chunk ends at every sentence end"
    )


# -- error classes and patterns -------------------------------------------------------------------
def all_errors(run: RunFolder) -> dict[str, list[ChunkError]]:
    out = {}
    for split, items in run.predictions.items():
        gold, pred = [p.doc.tags for p in items], [p.pred for p in items]
        out[split] = chunk_errors(gold, pred, [p.doc.sentence_starts for p in items])
    return out


def error_classes_section(errors: dict[str, list[ChunkError]]) -> str:
    body = (
        "<p class='small'>Each gold chunk not found is a <b>type</b> error (a predicted chunk "
        "has its span, another type), a <b>boundary</b> error (an overlapping predicted chunk "
        "of its type), <b>type and boundary</b> (overlapping chunks of other types and spans) "
        "or <b>missed</b>; a wrong predicted chunk that overlaps no gold chunk is "
        "<b>spurious</b> (<code>structperc/eval/errors.py</code>).</p>"
    )
    for split, errs in errors.items():
        if not errs:
            body += f"<h3>{text(split)}</h3><p>No errors: every chunk is right.</p>"
            continue
        counts = error_counts(errs)
        rows = [[t, *[c[k] for k in CLASSES], sum(c.values())] for t, c in counts.items()]
        totals = [sum(r[1 + i] for r in rows) for i in range(len(CLASSES) + 1)]
        rows.append(["all", *totals])
        body += f"<h3>{text(split)}</h3><div class='grid'>"
        body += table(["entity type", *CLASSES, "errors"], rows)
        body += plots.stacked_errors(counts, CLASSES) + "</div>"
    return body


def patterns_section(run: RunFolder, errors: dict[str, list[ChunkError]], split: str) -> str:
    items = run.predictions[split]
    found = Counter(e.pattern(items[e.doc].doc.tokens) for e in errors[split])
    rows = [[n, kind, gold, pred] for (kind, gold, pred), n in found.most_common(PATTERNS)]
    note = (
        f"The {len(rows)} most frequent of {len(found)} distinct error patterns on {split} "
        f"({len(errors[split])} errors): the class and both sides' types and words."
    )
    return table_note(note) + table(["count", "class", "gold", "predicted"], rows, left=4)


# -- learning curves ------------------------------------------------------------------------------
def curves_section(run: RunFolder) -> str:
    sc = run.scalars
    panels = []
    evals = {t: p for t, p in sc.items() if t.endswith("/f1") and t.count("/") == 1}
    if evals:
        panels.append(("F1 during training", evals))
    per_type = {t.split("/")[-1]: p for t, p in sc.items() if "/f1/" in t}
    if per_type:
        panels.append(("F1 per type", per_type))
    for tag, title in (
        ("train/word_error", "training error per word"),
        ("train/updates", "updates per epoch"),
        ("train/objective", "objective (loss)"),
        ("train/loss", "loss"),
    ):
        if tag in sc:
            panels.append((title, {tag: sc[tag]}))
    classes = {t.split("/")[-1]: p for t, p in sc.items() if t.count("/") == 2 and "/errors/" in t}
    if classes:
        panels.append(("errors by class", classes))
    source = "the run's TensorBoard events (tb/)"
    if not panels and run.results.get("history"):
        hist = run.results["history"]
        numeric = [k for k in hist[0] if k != "epoch" and isinstance(hist[0][k], int | float)]
        panels = [(k, {k: [(h["epoch"], h[k]) for h in hist if k in h]}) for k in numeric[:4]]
        source = "results.json's history (no TensorBoard events)"
    if not panels:
        return "<p class='small'>No TensorBoard events and no history in results.json.</p>"
    rows_of = [panels[i : i + 3] for i in range(0, len(panels), 3)]
    return table_note(f"From {source}, per epoch.") + "".join(
        plots.curves(chunk, "epoch") for chunk in rows_of
    )


# -- features -------------------------------------------------------------------------------------
def features_section(weights: dict | None, top: int = 10) -> str:
    if weights is None:
        return "<p class='small'>The run folder holds no model (save_model=false).</p>"
    body = "<div class='grid'>"
    for label, ranked in weights["per_label"].items():
        rows = [[x["feature"], x["weight"]] for x in ranked["positive"][:top]]
        rows += [[x["feature"], x["weight"]] for x in ranked["negative"][:top]]
        body += f"<div><h3>{text(label)}</h3>" + table(["feature", "weight"], rows) + "</div>"
    body += "</div>"
    labels = weights["labels"]
    if weights.get("transitions") is not None:
        body += "<h3>Transitions (the edge weights every token shares)</h3>"
        body += plots.heatmap(weights["transitions"], labels, labels, "from -> to", "from", "to")
    for family, items in (weights.get("non_local") or {}).items():
        rows = [[x["feature"], x["weight"]] for x in items]
        body += f"<h3>Non-local family {text(family)}</h3>" + table(["feature", "weight"], rows)
    return (
        table_note(
            f"The {top} largest and {top} most negative node weights of each label "
            "(structperc/explain/weights.py)."
        )
        + body
    )


# -- the errors one by one ------------------------------------------------------------------------
def focus_tokens(error: ChunkError, gold: list[str], pred: list[str]) -> list[int]:
    """The first ``FOCUS_TOKENS`` tokens of the error's region whose labels are wrong."""
    s, e = error.region()
    return [t for t in range(s, e) if gold[t] != pred[t]][:FOCUS_TOKENS]


def marked_sentence(doc, error: ChunkError, pred: list[str]) -> str:
    """The sentence of the error, gold chunks underlined, predicted ones shaded, types above."""
    from structperc.eval.errors import document_chunks

    s, e = error.region()
    lo, hi = next((a, b) for a, b in doc.sentence_spans() if a <= s < b)
    gold = {x for x in document_chunks(doc.tags, doc.sentence_starts) if lo <= x[0] < hi}
    found = {x for x in document_chunks(pred, doc.sentence_starts) if lo <= x[0] < hi}
    out = []
    for t in range(lo, hi):
        classes = ["tok"]
        marks = ""
        for a, b, typ in sorted(gold):
            if a <= t < b:
                classes.append("g")
            if a == t:
                marks += f"<span class='tag gt'>{text(typ)}</span>"
        for a, b, typ in sorted(found):
            if a <= t < b:
                classes.append("p")
            if a == t:
                marks += f"<span class='tag pt'>{text(typ)}</span>"
        if s <= t < e:
            classes.append("focus")
        out.append(f"{marks}<span class='{' '.join(classes)}'>{text(doc.tokens[t])}</span>")
    return "<div class='sent'>" + " ".join(out) + "</div>"


def explanation_html(item) -> str:
    if item.runner_up is None:
        return f"<p class='small'>{text(item.token)}: no other label possible.</p>"
    where = "" if item.in_candidates else " (not among the n' candidates)"
    head = (
        f"<p><b>{text(item.token)}</b> (token {item.position}): predicted "
        f"<b>{text(item.predicted)}</b>, runner-up <b>{text(item.runner_up)}</b>{where}, "
        f"margin {item.margin:.3f}</p>"
    )
    rows = []
    for c in item.contributions[:8]:
        terms = "; ".join(f"{t.target or '·'} {t.value:+g}×{t.weight:.3g}" for t in c.terms[:4])
        cls = "pos" if c.contribution > 0 else "neg"
        rows.append(
            [
                text(c.table),
                text(c.feature),
                text(terms),
                f"<span class='{cls}'>{c.contribution:+.3f}</span>",
            ]
        )
    rest = item.contributions[8:]
    if rest:
        total = sum(c.contribution for c in rest)
        rows.append(["", f"{len(rest)} other features", "", f"{total:+.3f}"])
    return head + table(
        ["table", "feature", "terms (label value×weight)", "contribution"], rows, left=3, raw=True
    )


def error_list_section(
    run: RunFolder, errors: list[ChunkError], split: str, explained: dict, limit: int
) -> str:
    items = run.predictions[split]
    types = sorted({e.entity_type for e in errors})
    options = "".join(f"<option>{text(k)}</option>" for k in CLASSES)
    type_options = "".join(f"<option>{text(t)}</option>" for t in types)
    shown = errors[:limit]
    body = (
        "<p>Class <select id='kind' onchange='filterErrors()'><option value=''>all</option>"
        f"{options}</select> type <select id='etype' onchange='filterErrors()'>"
        f"<option value=''>all</option>{type_options}</select> "
        f"<span id='shown'>{len(shown)}</span> shown of {len(errors)} errors on {split}.</p>"
        "<p class='small'>Gold chunks underlined (type in green), predicted chunks shaded (type "
        "in orange); the error's tokens outlined.  Each error explains its first wrong tokens: "
        "the runner-up labeling (the best one with another label there), the margin, and the "
        "features whose contributions add up to it.</p><div id='error-list'>"
    )
    for k, err in enumerate(shown):
        p = items[err.doc]
        kind, gold, pred = err.pattern(p.doc.tokens)
        parts = [
            explanation_html(explained[(err.doc, t)])
            for t in focus_tokens(err, p.doc.tags, p.pred)
            if (err.doc, t) in explained
        ]
        body += (
            f"<div class='err' data-kind='{text(err.kind)}' data-type='{text(err.entity_type)}'>"
            f"<b>#{k + 1} {text(kind)}</b> {text(gold)} → {text(pred)} "
            f"<span class='small'>({text(p.doc.source)})</span>"
            + marked_sentence(p.doc, err, p.pred)
            + (
                f"<details><summary>explanation</summary>{''.join(parts)}</details>"
                if parts
                else ""
            )
            + "</div>"
        )
    return body + "</div>"


# -- plain tagging (POS) --------------------------------------------------------------------------
def token_labels_section(run: RunFolder) -> str:
    body = ""
    for split, items in run.predictions.items():
        s = token_scores([p.doc.tags for p in items], [p.pred for p in items])
        rows = [[label, x.recall, x.precision, x.f1, x.n_gold] for label, x in s.per_label.items()]
        rows.sort(key=lambda r: -r[4])
        body += f"<h3>{text(split)}: accuracy {s.accuracy:.2f}% (macro F1 {s.macro_f1:.2f})</h3>"
        body += table(["label", "accuracy (recall)", "precision", "F1", "tokens"], rows)
    if not body:  # no prediction files: results.json's per-label scores
        for split in SPLITS:
            res = run.results.get(split) or {}
            if "per_label" in res:
                rows = [
                    [label, x["recall"], x["precision"], x["f1"], x["n_gold"]]
                    for label, x in res["per_label"].items()
                ]
                body += f"<h3>{text(split)}: accuracy {res['accuracy']:.2f}%</h3>"
                body += table(["label", "accuracy (recall)", "precision", "F1", "tokens"], rows)
    return body or "<p class='small'>No predictions or per-label scores in the run folder.</p>"


def confusion_section(run: RunFolder, most: int = 20) -> str:
    if not run.predictions:
        return "<p class='small'>No prediction files (write_predictions=false): no confusions.</p>"
    split = "test" if "test" in run.predictions else next(iter(run.predictions))
    pairs = Counter(
        (g, p)
        for item in run.predictions[split]
        for g, p in zip(item.doc.tags, item.pred, strict=True)
    )
    freq = Counter()
    for (g, _), n in pairs.items():
        freq[g] += n
    labels = [label for label, _ in freq.most_common(most)]
    matrix = [[pairs.get((g, p), 0) for p in labels] for g in labels]
    confused = [[n, g, p] for (g, p), n in pairs.most_common() if g != p][:30]
    return (
        table_note(
            f"{split}: the {len(labels)} most frequent gold labels; rows gold, columns predicted."
        )
        + plots.heatmap(
            matrix, labels, labels, "confusion matrix", "gold", "predicted", integer=True
        )
        + "<h3>Most frequent confusions</h3>"
        + table(["tokens", "gold", "predicted"], confused, left=1)
    )


# -- timing and memory ----------------------------------------------------------------------------
def timing_section(run: RunFolder) -> str:
    r = run.results
    rows = []
    for key, name in (
        ("feature_seconds", "features (extraction or cache)"),
        ("bpm_seconds", "BPM initialization"),
        ("train_seconds", "training"),
        ("job_seconds", "the whole job"),
    ):
        if isinstance(r.get(key), int | float):
            rows.append([name, r[key]])
    for split in SPLITS:
        if isinstance(r.get(split), dict) and "decode_seconds" in r[split]:
            rows.append([f"decoding {split}", r[split]["decode_seconds"]])
    body = table(["step", "seconds"], rows, left=1) if rows else ""
    facts = [
        ["epochs", r.get("epochs")],
        ["stopped by", r.get("stopped_by")],
        ["processes (world size)", r.get("world_size")],
    ]
    memory = r.get("memory")
    if isinstance(memory, dict):
        names = {"process_mb": "this process", "children_mb": "its largest child process"}
        facts += [[f"peak resident memory, {names.get(k, k)} (MB)", v] for k, v in memory.items()]
    else:
        facts.append(["peak resident memory", "not recorded by this run (older results.json)"])
    model = run.path / "model.safetensors"
    if model.is_file():
        facts.append(["model.safetensors (MB)", model.stat().st_size / 2**20])
    body += table(["", ""], facts, left=2)
    hist = r.get("history") or []
    if hist and "seconds" in hist[0]:
        body += plots.curves(
            [("seconds per epoch", {"epoch": [(h["epoch"], h["seconds"]) for h in hist]})], "epoch"
        )
    return body
