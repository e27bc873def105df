"""The tagchunk task's jackknifed training POS: no sentence tagged by a tagger that saw it."""

from __future__ import annotations

import pytest

import structperc.tasks.tagchunk as tagchunk
from structperc.data.document import Document
from structperc.features.pipeline import LocalFeatures
from structperc.learn.perceptron import Perceptron
from structperc.tasks.labeler import LabelerSettings, has_chunks, score_predictions, train_labeler
from structperc.tasks.tagchunk import TagchunkSettings
from structperc.tasks.training import FitSettings


def sentences(n: int) -> list[Document]:
    """``n`` one-word sentences whose POS is their index, so a tag names its sentence."""
    return [
        Document([f"w{i}"], columns={"pos": [f"T{i}"]}, tags=["B-NP"], source=f"s:{i}")
        for i in range(n)
    ]


@pytest.mark.parametrize(("count", "folds"), [(10, 2), (11, 3), (7, 7)])
def test_folds_are_contiguous_blocks_of_nearly_equal_size(count, folds):
    blocks = [tagchunk.fold_of(i, count, folds) for i in range(count)]
    assert blocks == sorted(blocks) and set(blocks) == set(range(folds))
    sizes = [blocks.count(k) for k in range(folds)]
    assert max(sizes) - min(sizes) <= 1


def test_each_block_is_tagged_by_a_tagger_trained_on_the_others(monkeypatch):
    """The fold taggers are stand-ins that tag a word with the POS tags they trained on:
    no sentence's own tag may come back, and every other sentence's must."""
    trained_on: dict = {}

    def fake_train_labeler(settings, out_dir):
        trained_on[out_dir] = {d.tags[0] for d in settings.corpus["train"]}  # POS task: tags = POS

    def fake_predict(model, docs, batch_size, device):
        return [["|".join(sorted(model))] for _ in docs]

    monkeypatch.setattr(tagchunk, "train_labeler", fake_train_labeler)
    monkeypatch.setattr(tagchunk, "load_tagger", lambda out: trained_on[out])
    monkeypatch.setattr(tagchunk, "predict_labels", fake_predict)
    train = sentences(9)
    out = tagchunk.jackknife_pos(
        train,
        folds=3,
        pos_features=LocalFeatures(gazetteer="none"),
        pos_learner=Perceptron(average=True),
        settings=FitSettings(max_epochs=1, progress=False),
        batch_size=4,
    )
    assert len(trained_on) == 3
    for i, (before, after) in enumerate(zip(train, out, strict=True)):
        seen = set(after.columns["pos"][0].split("|"))
        block = {f"T{j}" for j in range(9) if j // 3 == i // 3}
        assert seen == {f"T{j}" for j in range(9)} - block
        assert after.tokens == before.tokens and after.tags == before.tags
        assert before.columns["pos"] == [f"T{i}"]  # the input is not changed


def test_jackknife_pos_tags_real_sentences_with_the_taggers_labels():
    words = "the cat sat on a mat".split()
    pos = "DT NN VBD IN DT NN".split()
    train = [
        Document(words, columns={"pos": list(pos)}, tags=["B-NP"] * 6, source=f"s:{i}")
        for i in range(6)
    ]
    out = tagchunk.jackknife_pos(
        train,
        folds=2,
        pos_features=LocalFeatures(
            attributes=["w", "wl"], bigram_attributes=[], gazetteer="none", min_count=1, edges=False
        ),
        pos_learner=Perceptron(average=True),
        settings=FitSettings(max_epochs=3, progress=False),
        batch_size=4,
    )
    assert [d.columns["pos"] for d in out] == [pos] * 6  # learnable: every block gets it right


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="pos_folds"):
        tagchunk.jackknife_pos(
            sentences(3), folds=1, pos_features=None, pos_learner=None,
            settings=FitSettings(), batch_size=4,
        )  # fmt: skip
    unset = dict(corpus={}, pos_features=None, chunk_features=None, pos_learner=None,
                 chunk_learner=None, fit=FitSettings(), dev_sentences=1)  # fmt: skip
    with pytest.raises(ValueError, match="chunk_train_pos"):
        TagchunkSettings(**unset, chunk_train_pos="gold")
    with pytest.raises(ValueError, match="chunk_encoding"):
        TagchunkSettings(**unset, chunk_encoding="bioul")


def test_iobes_chunks_are_copies():
    docs = [Document(["a", "b", "c"], tags=["B-NP", "I-NP", "B-VP"], source="s:0")]
    assert tagchunk.encode_chunks(docs, "iob2") is docs
    out = tagchunk.encode_chunks(docs, "iobes")
    assert out[0].tags == ["B-NP", "E-NP", "S-VP"] and docs[0].tags == ["B-NP", "I-NP", "B-VP"]


def test_a_chain_trained_on_iobes_is_scored_in_iob2():
    labels = ["O", "B-NP", "E-NP", "S-NP"]
    docs = tagchunk.encode_chunks(
        [Document(["a", "b", "c"], tags=["B-NP", "I-NP", "B-NP"], source="s:0")], "iobes"
    )
    scores, pred = score_predictions(labels, docs, [[1, 2, 3]])
    assert pred == [["B-NP", "I-NP", "B-NP"]] and scores.f1 == 100.0
    scores, _ = score_predictions(labels, docs, [[3, 3, 3]])  # three one-word chunks: 1 of 3 right
    assert scores.precision == pytest.approx(100 / 3) and scores.recall == 50.0


def test_dev_sentences_zero_is_the_final_fit_on_every_sentence():
    corpus = {"train": sentences(5), "test": sentences(2)}
    assert tagchunk.split_dev(corpus, 0) == corpus
    split = tagchunk.split_dev(corpus, 2)
    assert [len(split[s]) for s in ("train", "dev", "test")] == [3, 2, 2]
    with pytest.raises(ValueError, match="dev_sentences must be in 0..4"):
        tagchunk.split_dev(corpus, 5)


def train_words(tmp_path, corpus, *, eval_every=0, write_predictions=False) -> dict:
    """``train_labeler`` of a word-only averaged perceptron, 3 epochs, on a tiny ``corpus``."""
    settings = LabelerSettings(
        corpus=corpus,
        features=LocalFeatures(
            attributes=["w"], bigram_attributes=[], gazetteer="none", min_count=1, edges=False
        ),
        learner=Perceptron(average=True),
        fit=FitSettings(max_epochs=3, progress=False),
        eval_every=eval_every,
        batch_size=4,
        save=False,
        write_predictions=write_predictions,
        checkpoint=False,
    )
    return train_labeler(settings, tmp_path)


def test_an_iobes_chunker_writes_iob2_gold_and_predictions(tmp_path):
    words = "the cat sat on a mat".split()
    tags = ["B-NP", "I-NP", "B-VP", "B-PP", "B-NP", "I-NP"]
    docs = [Document(words, columns={}, tags=list(tags), source=f"s:{i}") for i in range(4)]
    iobes = tagchunk.encode_chunks(docs, "iobes")
    train_words(tmp_path, {"train": iobes, "test": iobes[:1]}, write_predictions=True)
    rows = [line.split() for line in (tmp_path / "test.pred.txt").read_text().splitlines()]
    rows = [r for r in rows if r and r[0] != "-DOCSTART-"]
    assert [r[-2] for r in rows] == tags and [r[-1] for r in rows] == tags


def test_a_pos_chain_reports_token_accuracy_not_a_chunk_f1(tmp_path, caplog):
    assert has_chunks(["O", "B-NP"]) and has_chunks(["I-PER", "O"]) and has_chunks(["S-NP"])
    assert not has_chunks(["DT", "NN", "VBD", "-LRB-", "O"])
    words = "the cat sat on a mat".split()
    pos = ["DT", "NN", "VBD", "IN", "DT", "NN"]
    docs = [Document(words, columns={}, tags=list(pos), source=f"s:{i}") for i in range(4)]
    with caplog.at_level("INFO", logger="structperc"):
        corpus = {"train": docs, "dev": docs[:1], "test": docs[:1]}
        results = train_words(tmp_path, corpus, eval_every=1)
    assert results["test"]["accuracy"] == 100.0
    assert [h["dev_accuracy"] for h in results["history"]][-1] == 100.0
    assert "dev_f1" not in results["history"][-1]
    assert "test: accuracy 100.00%" in caplog.text and "F1" not in caplog.text


def test_the_jackknifed_column_is_cached_by_what_decides_it(tmp_path):
    train, calls = sentences(4), []

    def compute(tag="X"):
        calls.append(tag)
        return [tagchunk.with_columns(d, pos=[tag]) for d in train]

    key = {"pos_folds": 2, "pos_tagger": {"seed": 0}}
    out, hit = tagchunk.cached_jackknife(tmp_path, key, train, compute)
    assert not hit and [d.columns["pos"] for d in out] == [["X"]] * 4
    again, hit = tagchunk.cached_jackknife(tmp_path, key, train, lambda: compute("Y"))
    assert hit and calls == ["X"] and [d.columns["pos"] for d in again] == [["X"]] * 4
    assert [d.tokens for d in again] == [d.tokens for d in train]
    assert train[0].columns["pos"] == ["T0"]  # copies: the training sentences are not changed
    other, hit = tagchunk.cached_jackknife(tmp_path, key | {"pos_folds": 3}, train, compute)
    assert not hit and calls == ["X", "X"]
    out, hit = tagchunk.cached_jackknife(None, key, train, compute)  # no cache folder
    assert not hit and calls == ["X", "X", "X"]
    out, hit = tagchunk.cached_jackknife(tmp_path, None, train, compute)  # no key: given POS
    assert not hit and calls == ["X", "X", "X", "X"]
    with pytest.raises(ValueError, match="jackknife cache .*pos.json: 4 sentences .* the 3"):
        tagchunk.cached_jackknife(tmp_path, key, train[:3], compute)
