"""What a loaded model is, as the service's ``GET /model`` answers: its labels and structure, its
features, where it comes from (its run folder, training corpus, column tagger, tensor digest),
and the scores its training run measured (``model.json``'s ``info``)."""

from __future__ import annotations

from pathlib import Path

from structperc.features.templates import template_name
from structperc.inference.tagger import Tagger
from structperc.io import read_json
from structperc.structures.rescoring import DocumentRescoring


def model_card(tagger: Tagger, column_tagger: str | Path | None = None) -> dict:
    """The card of ``tagger`` (loaded from its run folder); ``column_tagger``: the folder of the
    column tagger given for it, if any (else the one the run folder carries)."""
    meta = read_json(Path(tagger.run_dir) / "model.json") if tagger.run_dir else {}
    info = meta.get("info", {})
    features = tagger.features
    structure = tagger.structure
    carried = Path(tagger.run_dir) / "tagger" if tagger.run_dir else None
    if column_tagger is None and carried is not None and carried.is_dir():
        column_tagger = carried
    card = {
        "run": str(tagger.run_dir) if tagger.run_dir else None,
        "labels": list(tagger.labels),
        "plain": tagger.plain,
        "structure": "document rescoring" if isinstance(structure, DocumentRescoring) else "chain",
        "features": {
            "count": features.num_features,
            "templates": [template_name(t) for t in features.templates],
            "input_columns": sorted(tagger.needed_columns()),
            "gazetteers": sorted(features.gazetteer_types) if features.gazetteer != "none" else [],
            "external_gazetteers": sorted(features.external_entries),
            "word_classes": list(features.word_classes.attributes) if features.word_classes else [],
        },
        "lineage": {
            "corpus": info.get("corpus"),
            "column_tagger": str(column_tagger) if column_tagger is not None else None,
            "tensors_sha256": meta.get("tensors", {}).get("sha256"),
        },
        "scores": info.get("results"),
        "decoding": {
            "compiled": tagger.compiled is not None,
            "window": tagger.window,
            "constraints": info.get("constraints", "none"),
        },
    }
    if isinstance(structure, DocumentRescoring):
        card["decoding"]["n_best"] = structure.n
        card["non_local"] = {
            "families": list(structure.doc_features.families),
            "count": structure.doc_features.num_features,
        }
    return card
