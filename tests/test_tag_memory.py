"""Tagging long input in bounded memory, with the labels of before: a saved model's feature
table without its zero rows and columns (``CompactTable``), features extracted in pieces and
windows, the column tagger a group of sentences at a time, the n-best a byte a label, the
non-local scores a group of candidates at a time (``experiments/bench/tag_memory.py`` measures
the processes)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
import torch

from structperc.data.conll import read_conll
from structperc.data.document import Document
from structperc.data.synthetic import make_corpus
from structperc.data.tags import valid_iob2
from structperc.decode import nbest as nbest_module
from structperc.features import document as document_features
from structperc.features import pipeline
from structperc.features.extract import doc_index
from structperc.features.pipeline import LocalFeatures
from structperc.inference import column_tagger
from structperc.inference.column_tagger import ColumnTagger
from structperc.inference.loading import structure_from_model
from structperc.inference.tagger import Tagger
from structperc.model import compact_table
from structperc.model.batch import length_sorted_batches
from structperc.model.files import load_model
from structperc.structures import rescoring
from structperc.structures.chain import ChainData

TOKEN_ATTRIBUTES = ["w", "wl", "p1", "p2", "p3", "s1", "s2", "s3", "ic", "ac", "l", "cp"]


def one_long_document(n_docs: int, seed: int = 3) -> Document:
    """Synthetic documents joined into one, their sentences kept."""
    docs, tokens, starts, columns = make_corpus(n_docs, seed=seed), [], [], {"pos": [], "chunk": []}
    for d in docs:
        starts += [len(tokens) + s for s in d.sentence_starts]
        tokens += d.tokens
        for name in columns:
            columns[name] += d.columns[name]
    return Document(tokens=tokens, columns=columns, sentence_starts=starts, source="long")


def models(token_model, column_model, nonlocal_model, synthetic_tagger) -> list[Path]:
    """Edge features (joint tables), a transition matrix (the POS tagger), non-local weights."""
    tagger = synthetic_tagger
    return [token_model, column_model, nonlocal_model, tagger / "pos", tagger / "chunk"]


def same_scores(full, compact, fm, start: int, end: int) -> bool:
    """Whether two weights give tokens start..end-1 of ``fm`` equal node and edge scores."""
    lo = int(fm.offsets[start])
    ids, offsets = fm.ids[lo : int(fm.offsets[end])], fm.offsets[start : end + 1] - lo
    a, b = full.csr_scores(ids, offsets), compact.csr_scores(ids, offsets)
    return torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_a_compact_table_sums_what_the_full_table_sums(
    token_model, column_model, nonlocal_model, synthetic_tagger, synthetic_dir, monkeypatch
):
    docs = read_conll(synthetic_dir / "conll2003" / "test.txt")
    for path in models(token_model, column_model, nonlocal_model, synthetic_tagger):
        full, features, _ = load_model(path)
        compact, _, _ = load_model(path, compact=True)
        table = compact.joint if compact.edges else compact.node
        assert isinstance(table, compact_table.CompactTable), path
        dense = (full.joint if full.edges else full.node).weight
        assert table.table.numel() < dense.numel(), path  # all-zero rows (and columns) left out
        with pytest.raises(TypeError, match="read-only compact table"):
            compact.tables()
        fm = features.transform(docs)
        bounds = fm.doc_offsets.tolist()
        for s, e in [(0, bounds[-1]), *zip(bounds[:-1], bounds[1:], strict=True)]:
            assert same_scores(full, compact, fm, s, e), path  # bit for bit
        monkeypatch.setattr(compact_table, "LOOKUP_ROWS", 7)  # a lookup in pieces: the same
        assert same_scores(full, compact, fm, 0, bounds[-1]), path
        monkeypatch.undo()


def test_predictions_with_compact_tables_are_the_full_tables(
    token_model, nonlocal_model, synthetic_dir
):
    docs = read_conll(synthetic_dir / "conll2003" / "test.txt")
    for path in (token_model, nonlocal_model):
        weights, features, info = load_model(path)  # the tables training wrote, in full
        full = structure_from_model(weights, info)
        data = ChainData(features.transform(docs), documents=docs)
        expected = [[weights.labels[i] for i in p] for p in full.predict(data)]
        expected = [valid_iob2(t, d.sentence_spans()) for d, t in zip(docs, expected, strict=True)]
        assert Tagger.load(path).tag_documents(docs) == expected


def test_prediction_features_in_pieces_and_windows_are_the_whole_inputs(tmp_path, monkeypatch):
    """Windows of a long document see their neighbours and the gazetteer matches of the whole
    document, also those across a window's edge."""
    train = make_corpus(30, seed=1)
    long = one_long_document(3)
    entries = {" ".join(long.tokens[s : s + 3]) for s in range(0, len(long) - 3, 4)}
    gazetteer = tmp_path / "list.txt"
    gazetteer.write_text("".join(f"ORG {e}\n" for e in sorted(entries)))
    features = LocalFeatures(
        attributes=[*TOKEN_ATTRIBUTES, "pos", "go"], bigram_attributes=["wl", "pos", "go"],
        gazetteer="naive",
        gazetteer_path=str(gazetteer), gazetteer_types={"go": "ORG"},
    ).fit(train)  # fmt: skip
    docs = [*make_corpus(5, seed=4), long, Document(tokens=[]), *make_corpus(3, seed=5)]
    whole = features.vocab.transform(features._columns(docs, False), doc_index(docs))
    for piece in (2, 7, 64, len(long) - 1):
        monkeypatch.setattr(pipeline, "PIECE_TOKENS", piece)
        got = features.transform(docs)
        assert got.ids.numpy().tolist() == whole[0].tolist(), piece
        assert got.offsets.numpy().tolist() == whole[1].tolist(), piece
        assert got.doc_offsets[-1] == sum(map(len, docs))


def test_features_of_a_long_document_take_a_bounded_memory():
    """Extraction of one 22,753-token document: its peak (NumPy and Python, traced) stays
    within 4 times its output (2.7 times; extracting it at once: 6.4 times)."""
    train = make_corpus(30, seed=1)
    features = LocalFeatures(
        attributes=TOKEN_ATTRIBUTES, bigram_attributes=["wl"], gazetteer="none"
    ).fit(train)
    long = one_long_document(400)
    tracemalloc.start()
    try:
        fm = features.transform([long])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    output = fm.ids.numel() * fm.ids.element_size() + fm.offsets.numel() * 8
    assert peak < 4 * output, (peak, output)


@pytest.mark.parametrize(("batch", "n"), [(1, 1), (1, 2), (1, 9), (3, 9), (1, 70), (3, 70)])
def test_the_n_best_in_a_byte_a_label_is_the_n_best(batch, n):
    torch.manual_seed(batch * 100 + n)
    potentials = torch.randn(batch, 12, 5, 5)
    lengths = torch.tensor([12, 7, 1][:batch])
    paths, scores = nbest_module.nbest(potentials, lengths, n)
    small, small_scores = nbest_module.nbest(potentials, lengths, n, dtype=torch.int8)
    assert small.dtype == torch.int8 and torch.equal(small.long(), paths)
    assert torch.equal(small_scores, scores)
    assert nbest_module.path_dtype(9) == torch.int8 and nbest_module.path_dtype(200) == torch.int16


def test_the_non_local_model_decodes_long_input_in_small_pieces_with_the_same_labels(
    nonlocal_model, synthetic_dir, monkeypatch
):
    docs = [*read_conll(synthetic_dir / "conll2003" / "test.txt"), one_long_document(20)]
    tagger = Tagger.load(nonlocal_model, compiled=False)  # the torch path's pieces
    expected = tagger.tag_documents(docs)
    seen = []
    batched = nbest_module.nbest_batched

    def spy(potentials, lengths, n, memory_budget=512 * 2**20, dtype=torch.long):
        seen.append((dtype, len(lengths)))
        return batched(potentials, lengths, n, memory_budget, dtype)

    monkeypatch.setattr(rescoring, "nbest_batched", spy)
    monkeypatch.setattr(rescoring, "BATCH_TOKENS", 600)  # the long document: a batch alone
    monkeypatch.setattr(document_features, "MAX_CELLS", 500)  # a candidate or two at a time
    monkeypatch.setattr(pipeline, "PIECE_TOKENS", 50)
    monkeypatch.setattr(compact_table, "LOOKUP_ROWS", 64)
    assert tagger.tag_documents(docs) == expected
    assert {dtype for dtype, _ in seen} == {torch.int8} and (torch.int8, 1) in seen


def test_length_sorted_batches_end_at_a_padded_size():
    lengths = [5, 1, 40, 3, 9, 2]
    assert length_sorted_batches(lengths, 2) == [[1, 5], [3, 0], [4, 2]]
    assert length_sorted_batches(lengths, 2, max_tokens=10**6) == [[1, 5], [3, 0], [4, 2]]
    assert length_sorted_batches(lengths, 4, max_tokens=12) == [[1, 5, 3], [0], [4], [2]]
    assert length_sorted_batches([], 4, max_tokens=12) == []


def test_the_column_tagger_tags_groups_of_sentences_as_all_at_once(synthetic_tagger, monkeypatch):
    docs = [one_long_document(8), *make_corpus(4, seed=6)]
    for d in docs:
        d.columns = {}
    expected = ColumnTagger.load(synthetic_tagger).fill(docs)
    monkeypatch.setattr(column_tagger, "FILL_SENTENCES", 3)
    got = ColumnTagger.load(synthetic_tagger, batch_size=2).fill(docs)
    assert [d.columns for d in got] == [d.columns for d in expected]
