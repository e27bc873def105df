"""Trained sequence labelers back from their run folders.

``load_tagger`` rebuilds a sequence labeler saved by the tagging task (``model/files.py``): the
chain, or the document rescoring with non-local features at n' (``structures.choice``).
``check_column_tagger`` says whether a folder holds a column tagger (``column_tagger.py``).
"""

from __future__ import annotations

from pathlib import Path

from structperc.data.document import Document
from structperc.features.pipeline import LocalFeatures
from structperc.model.files import load_model
from structperc.model.weights import ChainWeights
from structperc.structures.chain import ChainData, ChainStructure
from structperc.structures.choice import structure_for
from structperc.structures.rescoring import DocumentRescoring


def structure_from_model(
    weights: ChainWeights, info: dict, *, n: int | None = None, constraints: str | None = None
) -> ChainStructure | DocumentRescoring:
    """The structure of a saved model (``model.files.load_model``'s weights and info), by
    ``structure.structure_for``.

    A model with non-local features rescores the ``n`` best (default: the n' it was saved
    with); ``constraints`` defaults to the model's own.
    """
    return structure_for(
        weights,
        info.get("document_features"),
        n=n or info.get("n_test", 100),
        constraints=constraints or info.get("constraints", "none"),
    )


def load_tagger(
    model_dir: str | Path,
    *,
    n: int | None = None,
    constraints: str | None = None,
    info: bool = False,
):
    """(structure, fitted local features) of the model in ``model_dir``, for prediction: its
    feature table read-only and compact (``model/compact_table.py``: the full table's scores);
    with ``info``, the model's info (``model.json``) too."""
    weights, features, saved = load_model(model_dir, compact=True)
    structure = structure_from_model(weights, saved, n=n, constraints=constraints)
    return (structure, features, saved) if info else (structure, features)


def predict_labels(
    model: tuple[ChainStructure | DocumentRescoring, LocalFeatures],
    docs: list[Document],
    batch_size: int = 64,
    device: str = "cpu",
) -> list[list[str]]:
    """The labels ``model`` (``load_tagger``'s structure and features) gives ``docs``."""
    structure, features = model
    ids = structure.predict(ChainData(features.transform(docs), documents=docs), batch_size, device)
    return [[structure.weights.labels[i] for i in p] for p in ids]


def check_column_tagger(run_dir: str | Path) -> Path:
    """``run_dir`` as a path when it holds a column tagger (``pos/`` and ``chunk/`` models);
    else FileNotFoundError saying how to make one (``make tagger``)."""
    run_dir = Path(run_dir)
    missing = [p for p in ("pos", "chunk") if not (run_dir / p / "model.json").is_file()]
    if missing:
        raise FileNotFoundError(
            f"{run_dir}: not a column tagger (no {missing[0]}/model.json): `make tagger` trains "
            "one into runs/tagchunk (+experiment=conll00_tagchunk)"
        )
    return run_dir
