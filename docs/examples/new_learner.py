"""A new learner: the perceptron with each update scaled by the tokens it got wrong.

A learner is an update rule written against the structure interface: ``step`` sees the
structure, the ``Updater`` that writes into the weight tables, and one training instance.  It
never sees the tables' layout, so this one trains every structure with an ``argmax`` (the chain,
the label-chunk DP, the document rescoring).

Run it with ``python docs/examples/new_learner.py``: it trains on synthetic documents twice,
once through the Python API and once through the command line's settings, naming the class by
``learner._target_`` and this module by ``plugins``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from structperc.learn import FitSettings, Learner, StepStats


class HammingPerceptron(Learner):
    """The structured perceptron whose update is scaled by the Hamming loss of the prediction:
    w += errors(y*, y') * (Φ(x, y*) − Φ(x, y')).

    Args:
        average: predict with the averaged weights (the ``Updater`` keeps the sums).
        bpm_runs, label_costs: accepted as every learner's (``conf/learner/perceptron.yaml``).
    """

    requires = frozenset({"argmax"})  # what it needs of a structure: its decoder's best labeling

    def __init__(self, average: bool = True, bpm_runs: int = 0, label_costs=None):
        self.average = average  # constructors only store: Hydra builds the learner first
        self.bpm_runs = bpm_runs
        self.label_costs = label_costs

    def step(self, structure, updater, batch, gold) -> StepStats:
        """One update on one instance; ``gold`` is its labeling."""
        pred = structure.argmax(batch)
        errors = structure.errors(gold, pred)
        if errors:
            updater.apply(structure.delta(batch, gold, pred), scale=float(errors))
        return StepStats(tokens=len(gold), errors=errors, updates=int(errors > 0))


def train_in_python() -> float:
    """The pieces without Hydra: features, weights, structure, updater, ``trainer.fit``; the
    token accuracy on held-out synthetic documents."""
    from structperc.data.synthetic import make_corpus
    from structperc.data.tags import encode_labels, label_set
    from structperc.features import LocalFeatures
    from structperc.model import ChainWeights, Updater
    from structperc.structures import ChainData, ChainStructure
    from structperc.trainer import fit

    train, test = make_corpus(30, seed=1), make_corpus(10, seed=2)
    features = LocalFeatures(gazetteer="none").fit(train)
    labels = label_set(train)
    data = ChainData(features.transform(train, training=True), encode_labels(train, labels))
    weights = ChainWeights(features.num_features, labels)
    structure, updater = ChainStructure(weights), Updater(weights, average=True)
    fit(HammingPerceptron(), structure, updater, data, FitSettings(max_epochs=3, progress=False))
    updater.finalize()  # the averaged weights
    predicted = structure.predict(ChainData(features.transform(test)))
    pairs = [
        (gold, labels[p])
        for doc, path in zip(test, predicted, strict=True)
        for gold, p in zip(doc.tags, path, strict=True)
    ]
    return 100.0 * sum(g == p for g, p in pairs) / len(pairs)


def train_by_config(folder: Path) -> float:
    """The same learner chosen by the command line's settings (``structperc.train``): the
    dev F1 of a run on a synthetic CoNLL-2003 folder."""
    import structperc
    from structperc.data.conll import write_conll
    from structperc.data.synthetic import make_corpus

    for seed, (split, n) in enumerate({"train": 30, "dev": 8, "test": 8}.items(), start=1):
        write_conll(folder / f"{split}.txt", make_corpus(n, seed=seed))
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # where this module is imported from
    run = structperc.train(
        "+experiment=conll03_local",
        "data=columns",
        f"data.train={folder / 'train.txt'}",
        f"data.dev={folder / 'dev.txt'}",
        f"data.test={folder / 'test.txt'}",
        "data.columns=[token,pos,chunk,ner]",
        "plugins=[new_learner]",
        "learner._target_=new_learner.HammingPerceptron",
        "trainer.max_epochs=3",
        "trainer.progress=false",
        f"cache_dir={folder / 'cache'}",
        folder=folder / "run",
    )
    return run.results["dev"]["f1"]


if __name__ == "__main__":
    print(f"token accuracy, Python API: {train_in_python():.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        print(f"dev F1, by config: {train_by_config(Path(tmp)):.1f}")
