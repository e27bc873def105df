"""Continuing a saved model on new data (``trainer.init_from``, ``tasks/warm_start.py``).

The saved model is trained on synthetic documents whose MISC entities are tagged O; it is
continued on other documents (other words: new features) with MISC (a new entity type).  The
inheriting fit keeps every saved feature, in memory and chunked alike; a continuation without
epochs is the saved model at its new ids (rows and label columns moved, new ones zero), from
memory or from disk, for the chain, the CRF's observed support and the non-local table; with
epochs it learns the new type; the average continues as ``warm_start.py`` says (a hand
computation); the lineage is written; other feature settings are an error naming them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra_runs import TOKEN_FEATURES, compose_config, run_main, trained_run

from structperc.data.conll import write_conll
from structperc.data.document import Document
from structperc.data.document_store import DocumentStore
from structperc.data.synthetic import make_corpus
from structperc.features.chunked_extraction import extract_chunked
from structperc.features.pipeline import LocalFeatures
from structperc.model.files import load_model, model_digest, save_model
from structperc.model.updates import SparseDelta, Updater
from structperc.model.weights import ChainWeights
from structperc.run import main_from_config
from structperc.tasks.warm_start import InitialModel, grown_labels, start_from

COMMON = ["+experiment=conll03_local", *TOKEN_FEATURES]


def new_words(docs: list[Document]) -> list[Document]:
    """``docs`` with every location word renamed (Paris -> Parisburg): new attribute values
    beside the old ones, whose codes and mixed-radix keys then move."""
    for doc in docs:
        pairs = zip(doc.tokens, doc.tags, strict=True)
        doc.tokens = [w + "burg" if "LOC" in t else w for w, t in pairs]
    return docs


def write_corpus(root: Path, train_seed: int, misc: bool) -> Path:
    """A synthetic CoNLL-2003 folder: 30 training documents (seed ``train_seed``; MISC tagged O
    and the old location names unless ``misc``, else ``new_words``), the same 10 dev and 10
    test documents whatever the seed."""
    folder = root / "conll2003"
    folder.mkdir(parents=True)
    for split, n, seed in (("train", 30, train_seed), ("dev", 10, 2), ("test", 10, 3)):
        docs = make_corpus(n, seed=seed)
        if misc and split == "train":
            new_words(docs)
        elif split == "train":
            for doc in docs:
                doc.tags = ["O" if t.endswith("-MISC") else t for t in doc.tags]
        write_conll(folder / f"{split}.txt", docs)
    return root


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[str, Path]:
    """ "first": MISC tagged O; "second": other training documents, with MISC."""
    root = tmp_path_factory.mktemp("warm")
    return {
        "first": write_corpus(root / "first", 1, misc=False),
        "second": write_corpus(root / "second", 11, misc=True),
    }


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, corpora) -> Path:
    """The averaged perceptron on the first corpus, 3 epochs."""
    overrides = [*COMMON, "trainer.max_epochs=3", "cache_dir=null"]
    return trained_run(tmp_path_factory, corpora["first"], "first", overrides)


def continued(first: Path, corpus: Path, out: Path, monkeypatch, *more: str) -> dict:
    """The run that continues ``first`` on ``corpus`` into ``out``; its results."""
    overrides = [*COMMON, f"trainer.init_from={first}", f"cache_dir={out}.cache", *more]
    return run_main(overrides, corpus, out, monkeypatch)[1]


def rows_by_name(features: LocalFeatures) -> dict[str, int]:
    return {features.vocab.feature_string(r): r for r in range(features.num_features)}


def assert_carried(old_dir: Path, new_dir: Path) -> None:
    """The weights of ``new_dir`` are those of ``old_dir`` at their new rows and label
    columns, and zero in the new rows and the new labels' columns."""
    old, old_features, _ = load_model(old_dir)
    new, new_features, _ = load_model(new_dir)
    assert set(old.labels) < set(new.labels)
    moved = [new.labels.index(label) for label in old.labels]
    pairs = torch.tensor([i * new.num_labels + j for i in moved for j in moved])
    there, here = old.tables(), new.tables()
    new_rows = rows_by_name(new_features)
    rows = [new_rows[old_features.vocab.feature_string(r)] for r in range(old.num_features)]
    assert torch.equal(here["node"][rows][:, moved], there["node"])
    assert torch.equal(here["edge"][rows][:, pairs], there["edge"])
    assert there["node"].abs().sum() > 0 and there["edge"].abs().sum() > 0
    # the rest is zero: the new rows, and the new labels' columns
    assert float(here["node"].abs().sum()) == pytest.approx(float(there["node"].abs().sum()))
    assert float(here["edge"].abs().sum()) == pytest.approx(float(there["edge"].abs().sum()))
    assert new.num_features > old.num_features


@pytest.mark.parametrize(
    "settings",
    [
        dict(gazetteer="none"),
        dict(gazetteer="none", template_file="kazama", boundary=True, min_count=1),
    ],
)
def test_an_inheriting_fit_keeps_every_saved_feature_in_memory_and_chunked(tmp_path, settings):
    old = LocalFeatures(**settings).fit(make_corpus(30, seed=1))
    train = new_words(make_corpus(30, seed=11))
    fresh = LocalFeatures(**settings).fit(train)
    whole, chunked = LocalFeatures(**settings), LocalFeatures(**settings)
    whole.inherit(old)
    whole.fit(train)
    chunked.inherit(old)
    stored = {"train": DocumentStore.write(tmp_path / "train.docs", train)}
    extract_chunked(chunked, stored, tmp_path / "features", chunk_tokens=97, progress=False)
    assert np.array_equal(whole.vocab.keys, chunked.vocab.keys)
    assert whole.vocab.values == chunked.vocab.values
    for new in (whole, chunked):
        there, here = new.vocab.carried_rows(old.vocab)
        assert np.array_equal(there, np.arange(old.num_features))  # every saved feature
        names = [new.vocab.feature_string(r) for r in here]
        assert names == [old.vocab.feature_string(r) for r in there]
        kept = set(rows_by_name(new))
        assert set(rows_by_name(fresh)) <= kept and set(rows_by_name(old)) <= kept
        assert len(kept) < old.num_features + fresh.num_features  # shared ones once
        assert set(new.vocab.values["w"]) == set(old.vocab.values["w"]) | set(
            fresh.vocab.values["w"]
        )
        assert len(new.vocab.values["w"]) > len(old.vocab.values["w"])


def test_other_feature_settings_are_an_error_naming_them(first_run, corpora, tmp_path):
    old = LocalFeatures(gazetteer="none").fit(make_corpus(10, seed=1))
    narrow = LocalFeatures(gazetteer="none", window=1)
    with pytest.raises(ValueError, match=r"saved model: \['2d\[-2\]', .* and 40 more"):
        narrow.inherit(old)
    with pytest.raises(ValueError, match="features.edges=True in the saved model, False here"):
        LocalFeatures(gazetteer="none", edges=False).inherit(old)
    old = LocalFeatures(gazetteer="none", templates=["w[-1..1]"]).fit(make_corpus(10, seed=1))
    templates = LocalFeatures(gazetteer="none", templates=["w[-1..0]", "pos[0]"])
    templates.inherit(old)  # templates are compared when they are expanded
    only = r"only in the saved model: \['w\[1\]'\]; templates only in this run: \['pos\[0\]'\]"
    with pytest.raises(ValueError, match=only):
        templates.fit(make_corpus(10, seed=2))
    mp = pytest.MonkeyPatch()
    try:
        with pytest.raises(ValueError, match="templates only in the saved model"):
            continued(first_run, corpora["second"], tmp_path / "x", mp, "features.window=1")
    finally:
        mp.undo()


@pytest.mark.parametrize("stream", ["false", "true"])
def test_a_continuation_starts_at_the_saved_weights_at_their_new_ids(
    first_run, corpora, tmp_path, monkeypatch, stream
):
    """No epochs: the saved model, its rows and labels moved (the average over its own
    instances and no new one is its weights), in memory and from disk alike."""
    out = tmp_path / "zero"
    results = continued(
        first_run,
        corpora["second"],
        out,
        monkeypatch,
        "trainer.max_epochs=0",
        f"data.stream={stream}",
    )
    assert results["streamed"] == (stream == "true")
    warm = results["warm_start"]
    assert (warm["new_labels"], warm["average"], warm["seen"]) == (2, "restart", 0)  # auto
    assert_carried(first_run, out)


def test_the_feature_cache_tells_a_continuation_from_a_fresh_run(
    first_run, corpora, tmp_path, monkeypatch
):
    """The same data and settings, once from zero and once continuing a saved model, into one
    cache: the continuation's vocabulary holds the saved features (its key holds the model's
    digest), not the fresh run's."""
    cache = f"cache_dir={tmp_path / 'cache'}"
    fresh = [*COMMON, "trainer.max_epochs=0", cache]
    run_main(fresh, corpora["second"], tmp_path / "fresh", monkeypatch)
    out = tmp_path / "warm"
    run_main([*fresh, f"trainer.init_from={first_run}"], corpora["second"], out, monkeypatch)
    assert_carried(first_run, out)
    assert len(list((tmp_path / "cache").iterdir())) == 2


def test_a_continuation_learns_the_new_type_and_records_its_lineage(
    first_run, corpora, tmp_path, monkeypatch
):
    second = tmp_path / "second"
    more = ["trainer.max_epochs=3", "trainer.init_average=continue"]
    results = continued(first_run, corpora["second"], second, monkeypatch, *more)
    first = json.loads((first_run / "results.json").read_text())
    assert "MISC" not in first["labels"][0] and first["test"]["per_type"].get("MISC", 0) == 0
    assert results["test"]["per_type"]["MISC"] > 0
    assert results["labels"] == sorted(results["labels"], key=lambda t: (t != "O", t))
    info = load_model(second)[2]
    assert info["seen"] == 90 + 3 * 30  # the saved model's instances and the new ones
    assert results["warm_start"]["average"] == "continue"
    lineage = info["lineage"]
    assert lineage == [
        {
            "folder": str(first_run.resolve()),
            "model_sha256": model_digest(first_run),
            "corpus": "conll2003",
            "train_files": [str(corpora["first"] / "conll2003" / "train.txt")],
            "documents": 30,
            "tokens": load_model(first_run)[2]["training"]["tokens"],
            "epochs": 3,
        }
    ]
    assert lineage[0]["tokens"] > 1000
    assert info["training"]["train_files"] == [str(corpora["second"] / "conll2003" / "train.txt")]
    third = tmp_path / "third"
    continued(second, corpora["first"], third, monkeypatch, "trainer.max_epochs=1")
    chain = load_model(third)[2]["lineage"]
    assert [e["folder"] for e in chain] == [str(first_run.resolve()), str(second.resolve())]
    assert chain[1]["model_sha256"] == model_digest(second) and chain[1]["epochs"] == 3


def test_the_crf_keeps_the_saved_weights_in_its_observed_support(
    first_run, corpora, tmp_path, monkeypatch
):
    """L-BFGS starts from the saved weights: with ``support=observed`` those the new data does
    not observe stay in the support (no iteration: the saved model at its new ids)."""
    out = tmp_path / "crf"
    more = ["learner=crf", "learner.support=observed", "trainer.max_epochs=0"]
    continued(first_run, corpora["second"], out, monkeypatch, *more)
    assert_carried(first_run, out)


def test_the_non_local_table_is_carried_by_feature_name(corpora, tmp_path, monkeypatch):
    proposed = [
        "+experiment=conll03_nonlocal",
        *TOKEN_FEATURES,
        "features.gazetteers=[]",
        "learner.n=5",
        "learner.bpm_runs=2",
        "decoder.n_test=8",
        "cache_dir=null",
    ]
    first = tmp_path / "first"
    once = ["trainer.max_epochs=1", "learner.bpm_runs=0"]
    run_main([*proposed, *once], corpora["first"], first, monkeypatch)
    out = tmp_path / "continued"
    more = [f"trainer.init_from={first}", "trainer.max_epochs=0"]
    _, results = run_main([*proposed, *more], corpora["second"], out, monkeypatch)
    assert results["bpm_seconds"] == 0  # BPM would start from zero
    old, _, old_info = load_model(first)
    new, _, new_info = load_model(out)
    there = old_info["document_features"].feature_ids()
    here = new_info["document_features"].feature_ids()
    assert set(there) <= set(here) and len(here) > len(there)  # MISC's features too
    old_global, new_global = old.global_.weight[:, 0], new.global_.weight[:, 0]
    assert old_global.abs().sum() > 0
    for name, g in there.items():
        assert new_global[here[name]] == old_global[g], name
    assert results["warm_start"]["global_rows"] == len(there)


@pytest.mark.parametrize("average", ["continue", "auto"])
def test_the_average_continues_over_the_saved_instances(tmp_path, average):
    """A saved model w_old whose average was over 4 instances, continued on 3: an update at
    the first (d1) and at the third (d3).  By hand, the average is
    (4 w_old + w1 + w2 + w3) / 7 with w1 = w2 = w_old + d1, w3 = w_old + d1 + d3; restarted
    (``auto``, a new label comes), (w1 + w2 + w3) / 3."""
    settings = dict(gazetteer="none", attributes=["w"], window=0, bigram_attributes=[])
    old_features = LocalFeatures(**settings, min_count=1, edges=False)
    old_features.fit([Document(["a", "b"], tags=["O", "B-PER"])])  # rows bias, w=a, w=b
    old = ChainWeights(old_features.num_features, ["O", "B-PER"], edges=False)
    with torch.no_grad():
        old.node.weight.copy_(torch.tensor([[0.5, 0.0], [2.0, -1.0], [-3.0, 4.0]]))
        old.edge.weight.copy_(torch.tensor([[1.0, 0.5, -2.0, 0.0]]))  # O>O O>PER PER>O PER>PER
    save_model(tmp_path / "old", old, old_features, {"seen": 4})
    init = InitialModel.load(tmp_path / "old")
    features = LocalFeatures(**settings, min_count=1, edges=False)
    features.inherit(init.features)
    features.fit([Document(["a", "c"], tags=["O", "B-LOC"])])  # rows bias, w=a, w=b, w=c
    labels = grown_labels(["O", "B-LOC"], init)
    assert labels == ["O", "B-LOC", "B-PER"]
    weights = ChainWeights(features.num_features, labels, edges=False)
    updater = Updater(weights, average=True)
    carried = start_from(init, weights, features, updater, average=average)
    assert carried["average"] == {"continue": "continue", "auto": "restart"}[average]
    node = weights.node.weight  # [4 rows, 3 labels]
    assert node.tolist() == [[0.5, 0, 0], [2, 0, -1], [-3, 0, 4], [0, 0, 0]]
    # d1: w=c scores B-LOC, not O (+1, -1); d3: w=a scores O less, B-PER more
    d1 = SparseDelta({"node": (torch.tensor([3 * 3 + 1, 3 * 3 + 0]), torch.tensor([1.0, -1.0]))})
    d3 = SparseDelta({"node": (torch.tensor([1 * 3 + 0, 1 * 3 + 2]), torch.tensor([-1.0, 1.0]))})
    updater.apply(d1)
    updater.tick()
    updater.tick()
    updater.apply(d3)
    updater.tick()
    if average == "continue":  # 4 w_old + 3 (w_old + d1) + d3 over 7: w_old + 3/7 d1 + 1/7 d3
        want = [[0.5, 0, 0], [2 - 1 / 7, 0, -1 + 1 / 7], [-3, 0, 4], [-3 / 7, 3 / 7, 0]]
    else:  # 3 (w_old + d1) + d3 over 3: w_old + d1 + 1/3 d3
        want = [[0.5, 0, 0], [2 - 1 / 3, 0, -1 + 1 / 3], [-3, 0, 4], [-1, 1, 0]]
    assert torch.allclose(updater.averaged_tables()["node"], torch.tensor(want))
    transitions = updater.averaged_tables()["edge"].view(3, 3)  # O, B-LOC, B-PER
    assert transitions.tolist() == [[1.0, 0.0, 0.5], [0.0, 0.0, 0.0], [-2.0, 0.0, 0.0]]


def test_only_the_tagging_task_continues_a_model(tmp_path):
    cfg = compose_config(["+experiment=conll00_joint", f"trainer.init_from={tmp_path}"])
    with pytest.raises(ValueError, match="task=joint does not continue models"):
        main_from_config(cfg, tmp_path / "out")
    with pytest.raises(FileNotFoundError, match="no model.json there"):
        InitialModel.load(tmp_path)
