"""Feature hashing (``features.hash_bits``, ``features/hashing.py``): the kept feature keys in
2^N rows by splitmix64's finaliser, the same in every process; collisions counted; the chunked
fit's ids the in-memory fit's; a model whose rows do not collide predicts what the unhashed one
predicts, through a run and through ``structperc-tag``; a saved model's rows carried into a
hashed one (shared rows: the mean of the old rows that meet there).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hydra_runs import run_main, tag_cli

from structperc.data.document_store import DocumentStore
from structperc.data.synthetic import make_corpus
from structperc.features.chunked_extraction import extract_chunked
from structperc.features.hashing import check_bits, collisions, hashed_rows, mix64
from structperc.features.pipeline import LocalFeatures
from structperc.model.carry import carry_rows
from structperc.model.files import load_model

MASK = (1 << 64) - 1


def splitmix64(key: int) -> int:
    """Vigna's splitmix64 step from state ``key`` (Python integers mod 2^64): the reference."""
    z = (key + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def test_the_hash_is_splitmix64():
    # splitmix64 seeded with 0: its first output (a published value)
    assert int(mix64(np.array([0]))[0]) == 0xE220A8397B1DCDAF
    keys = np.random.default_rng(0).integers(0, 1 << 62, size=200, dtype=np.int64)
    keys[:3] = [0, (7 << 42) | 12345, (1 << 62) - 1]
    assert [int(z) for z in mix64(keys)] == [splitmix64(int(k)) for k in keys]
    rows = hashed_rows(keys, 20)
    assert rows.tolist() == [splitmix64(int(k)) >> 44 for k in keys]
    assert rows.min() >= 0 and rows.max() < 1 << 20


def test_hash_bits_are_checked():
    assert check_bits(None) is None and check_bits(18) == 18
    for bad in (0, 31, 2.5, True, "18"):
        with pytest.raises(ValueError, match="features.hash_bits must be an integer from 1"):
            check_bits(bad)


def test_hashed_ids_are_the_rows_of_the_kept_keys_and_collisions_are_counted(tmp_path):
    train, test = make_corpus(30, seed=1), make_corpus(5, seed=2)
    plain = LocalFeatures(gazetteer="none").fit(train)
    hashed = LocalFeatures(gazetteer="none", hash_bits=8).fit(train)
    assert np.array_equal(plain.vocab.keys, hashed.vocab.keys)  # min_count keeps the same keys
    assert hashed.num_features == 256 and len(hashed.vocab) == len(plain.vocab) > 256
    rows = hashed_rows(plain.vocab.keys, 8)
    assert hashed.vocab.collisions() == len(rows) - len(set(rows.tolist())) > 0
    assert collisions(np.array([3, 3, 3, 5])) == 2 and plain.vocab.collisions() == 0
    for docs, training in ((train, True), (test, False)):
        a, b = plain.transform(docs, training), hashed.transform(docs, training)
        assert torch.equal(a.offsets, b.offsets)
        assert np.array_equal(b.ids.numpy(), rows[a.ids.numpy()])
    stored = {"train": DocumentStore.write(tmp_path / "train.docs", train)}
    chunked = LocalFeatures(gazetteer="none", hash_bits=8)
    got = extract_chunked(chunked, stored, tmp_path / "f", chunk_tokens=97, progress=False)
    assert torch.equal(got["train"].ids, hashed.transform(train, True).ids)
    assert chunked.num_features == 256
    names = hashed.vocab.feature_string(int(rows[0]))
    assert plain.vocab.feature_string(0) in names.split(" or ")


def test_a_hashed_model_without_collisions_predicts_what_the_unhashed_one_does(
    tmp_path, synthetic_dir, monkeypatch
):
    """2^16 rows for the ~150 features of the words alone: no two share a row, so every
    update lands in the row of its feature and the models are the same up to the rows'
    order."""
    words = [
        "+experiment=conll03_local",
        "features.gazetteer=none",
        "features.attributes=[w]",
        "features.window=0",
        "features.bigram_attributes=[]",
        "trainer.max_epochs=3",
        "cache_dir=null",
    ]
    plain, hashed = tmp_path / "plain", tmp_path / "hashed"
    _, a = run_main(words, synthetic_dir, plain, monkeypatch)
    _, b = run_main([*words, "features.hash_bits=16"], synthetic_dir, hashed, monkeypatch)
    assert (b["num_features"], b["feature_keys"], b["collisions"]) == (
        1 << 16,
        a["num_features"],
        0,
    )
    for split in ("dev", "test"):
        assert (plain / f"{split}.pred.txt").read_text() == (
            hashed / f"{split}.pred.txt"
        ).read_text()
    assert a["test"]["f1"] == b["test"]["f1"]
    wa, fa, _ = load_model(plain)
    wb, fb, _ = load_model(hashed)
    rows = torch.from_numpy(fb.vocab.key_rows)
    assert torch.equal(wb.joint.weight[rows], wa.joint.weight)
    assert wb.joint.weight.count_nonzero() == wa.joint.weight.count_nonzero()  # others: 0
    text = synthetic_dir / "conll2003" / "test.txt"
    tagged = [tag_cli(f"model={m}", f"input={text}", "output=-") for m in (plain, hashed)]
    assert tagged[0].returncode == tagged[1].returncode == 0, tagged[1].stderr
    assert tagged[0].stdout == tagged[1].stdout and tagged[0].stdout


def test_old_rows_that_meet_in_one_row_hold_their_mean():
    old = torch.tensor([[1.0, 2.0], [3.0, 6.0], [5.0, 0.0]])  # [3 rows, labels a, b]
    new = torch.zeros(2, 3)  # [2 rows, labels a, c, b]
    # rows 0 and 1 meet in new row 1 (1 twice: two keys of old row 1), row 2 goes to row 0
    rows = (np.array([0, 1, 1, 2]), np.array([1, 1, 1, 0]))
    carry_rows(old, new, rows, (np.array([0, 1]), np.array([0, 2])))
    assert new.tolist() == [[5.0, 0.0, 0.0], [2.0, 0.0, 4.0]]
