"""Continuing a saved model on new data: ``trainer.init_from=RUN`` (the tagging task).

``InitialModel.load(RUN)`` reads the run folder's model (``model/files.py``).  The new run then

1. fits its features inheriting the saved ones (``LocalFeatures.inherit``: every feature of the
   saved model is kept, beside the new data's features that pass the cutoff; the settings that
   give the features their meaning must match, else an error naming the difference), in memory
   or chunked alike, and its feature cache key holds the saved model's digest;
2. takes the union of the saved labels and the new data's, "O" first then sorted
   (``grown_labels``): a new entity type gets its columns;
3. writes the saved weights into its zero tables (``start_from``): feature rows paired key by
   key (``Vocabulary.carried_rows``), label columns by name, the non-local table of the proposed
   algorithm's ``DocumentWeights`` by feature name (``NonLocalFeatures.carried_ids``; what cannot
   be paired, or a table one of the two models lacks, is logged);
4. trains from there: the online learners (perceptron, margin, PA, AROW) step from the saved
   weights, the CRF's L-BFGS starts from them (its observed support holding them too), and BPM
   initialisation, which would start from zero, is not run (``FitSettings.warm``).

**The averaged perceptron's average continues.**  The saved model holds the averaged weights
w_old and the number of instances ``seen_old`` its average is over (``info["seen"]``).  The new
training restarts the raw weights at w = w_old and counts the saved model as ``seen_old`` steps
at w_old: ``Updater.seen = seen_old``, sums u = 0.  After n new instances with updates d_k made
at the k-th (w_k = w_old + Σ_{i<=k} d_i) the lazy average w − u/c, u = Σ_k (seen_old + k − 1) d_k,
c = seen_old + n, is

    w_old + Σ_k (n − k + 1) d_k / (seen_old + n)
        = (seen_old · w_old + Σ_{k=1..n} w_k) / (seen_old + n),

the average of seen_old copies of the saved model and every new weight vector: it needs nothing
but the saved model, and a model continued on no data is the saved model.  A model saved
without ``seen`` (before it was recorded) counts as 0 steps: the average is then over the new
steps alone, which start from w_old (logged).

That is ``trainer.init_average=continue``.  ``restart`` counts the saved model as 0 steps (the
raw weights still start at w_old; the average is over the new steps alone), and ``auto`` (the
default) continues unless the new data brings new labels, where it restarts: the saved model
then labelled the new type's entities as something else (MISC as O) for seen_old steps, and
those votes outweigh the new data's for about seen_old / n epochs of n instances (measured on
CoNLL-2003: the MISC test F1 of a model trained 30 epochs with MISC tagged O, continued with
MISC, is 0 after 8 epochs with ``continue``; ``experiments/warm_start/README_pipeline.md``).

**Lineage.**  ``info["training"]`` of every saved model says what it was trained on (corpus,
training files, documents, tokens, epochs), and ``info["lineage"]`` lists the runs it was
continued from, oldest first: each one's folder, model digest (sha256 of its
``model.safetensors``) and ``training``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from structperc.data.tags import ordered_labels
from structperc.features.document import NonLocalFeatures
from structperc.features.pipeline import LocalFeatures
from structperc.io import read_json
from structperc.model.carry import carry_chain, carry_global
from structperc.model.document_weights import DocumentWeights
from structperc.model.files import load_model, model_digest
from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class InitialModel:
    """A saved model that a run continues: its folder, weights, fitted features, info and
    digest (sha256 of its tensor file)."""

    folder: Path
    weights: ChainWeights
    features: LocalFeatures
    info: dict
    digest: str

    @classmethod
    def load(cls, folder: str | Path) -> InitialModel:
        """The model saved in the run folder ``folder``."""
        folder = Path(folder).resolve()
        if not (folder / "model.json").is_file():
            raise FileNotFoundError(
                f"trainer.init_from={folder}: no model.json there (a run folder of the tagging "
                "task saved with save_model=true)"
            )
        weights, features, info = load_model(folder)
        return cls(folder, weights, features, info, model_digest(folder))

    @property
    def doc_features(self) -> NonLocalFeatures | None:
        """The fitted non-local features of a model of the proposed algorithm, else None."""
        return self.info.get("document_features")

    def lineage(self) -> list[dict]:
        """The lineage of a model continued from this one: this one's, then this one."""
        training = self.info.get("training") or self._training_of_older_model()
        entry = {"folder": str(self.folder), "model_sha256": self.digest, **training}
        return [*self.info.get("lineage", []), entry]

    def _training_of_older_model(self) -> dict:
        """``info["training"]`` of a model saved before it was recorded: its corpus's name and
        the epochs of its results.json, where there."""
        results = self.folder / "results.json"
        epochs = read_json(results).get("epochs") if results.is_file() else None
        return {"corpus": (self.info.get("corpus") or {}).get("name"), "epochs": epochs}


def grown_labels(train_labels: list[str], init: InitialModel | None) -> list[str]:
    """The labels of a model trained on data with ``train_labels``: with an initial model, the
    union with its labels, "O" first then sorted (``tags.label_set``'s order)."""
    if init is None:
        return train_labels
    grown = ordered_labels({*train_labels, *init.weights.labels})
    new = [label for label in grown if label not in init.weights.labels]
    if new:
        old = len(grown) - len(new)
        log.info("warm start: new labels %s beside the saved model's %d", new, old)
    return grown


AVERAGES = ("auto", "continue", "restart")  # trainer.init_average


def check_average(average: str) -> str:
    """``average`` when it is one of ``AVERAGES``; else ValueError naming the setting."""
    if average not in AVERAGES:
        raise ValueError(f"trainer.init_average must be one of {AVERAGES}, got {average!r}")
    return average


def start_from(
    init: InitialModel,
    weights: ChainWeights,
    features: LocalFeatures,
    updater: Updater,
    doc_features: NonLocalFeatures | None = None,
    average: str = "auto",
) -> dict:
    """Write ``init``'s weights into the new zero ``weights`` (over the fitted ``features``,
    which inherited ``init``'s, and with the rescoring structure's ``doc_features``), and start
    ``updater``'s count at the saved model's or at 0 as ``average`` says (module docstring);
    returns what was carried."""
    rows = features.vocab.carried_rows(init.features.vocab)
    if len(rows[0]) != len(init.features.vocab):
        raise ValueError(
            f"trainer.init_from={init.folder}: {len(init.features.vocab) - len(rows[0])} of the "
            "saved model's features are not in this run's vocabulary (a feature cache built "
            "without them?)"
        )
    carried = carry_chain(init.weights, weights, rows)
    carried["global_rows"] = carry_non_local(init, weights, doc_features)
    if check_average(average) == "auto":
        average = "restart" if carried["new_labels"] else "continue"
    seen = int(init.info.get("seen", 0)) if average == "continue" else 0
    if updater.average and average == "continue" and "seen" not in init.info:
        log.warning(
            "warm start: %s records no count of averaged instances (saved before it was kept): "
            "the average restarts at its weights, over the new instances alone",
            init.folder,
        )
    updater.seen = seen
    carried.update(average=average, seen=seen)
    log.info(
        "warm start from %s: %d feature rows carried, %d new; %d new labels; the average %ss "
        "(over %d saved instances)",
        init.folder,
        carried["rows"],
        carried["new_rows"],
        carried["new_labels"],
        average,
        seen,
    )
    return carried


def carry_non_local(
    init: InitialModel, weights: ChainWeights, doc_features: NonLocalFeatures | None
) -> int:
    """The non-local table of the proposed algorithm's models, paired by feature name; what is
    not carried is logged.  Returns the rows written."""
    old = init.weights.tables().get("global")
    new = weights.tables().get("global") if isinstance(weights, DocumentWeights) else None
    if old is None and new is None:
        return 0
    if new is None:
        log.warning(
            "warm start: the saved model's %d non-local weights are not carried: this run's "
            "learner uses no non-local features",
            int(old.count_nonzero()),
        )
        return 0
    if old is None or init.doc_features is None:
        log.warning("warm start: the saved model has no non-local features: they start at zero")
        return 0
    there, here, lost = doc_features.carried_ids(init.doc_features)
    if lost:
        log.warning(
            "warm start: %d non-local features of the saved model are not in this run's "
            "vocabulary and are not carried, e.g. %s",
            len(lost),
            lost[:5],
        )
    return carry_global(old, new, (there, here))
