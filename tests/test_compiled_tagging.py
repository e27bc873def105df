"""The compiled tagging path (``structperc/inference``, ``structperc/native``) against the torch
path and against brute force: the n-best lists against every labeling of tiny chains, the
non-local counts against ``vectorized.candidate_codes``, the token scores against
``embedding_bag``, and whole taggers (a chain, a chain with a transition matrix, the document
rescoring, the column tagger) label for label against ``Tagger(compiled=False)``."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("numba")

from structperc.data.conll import read_conll  # noqa: E402
from structperc.data.document import Document  # noqa: E402
from structperc.data.synthetic import make_corpus  # noqa: E402
from structperc.features.non_local.notation import CONNECTORS, sentence_ids  # noqa: E402
from structperc.inference.compiled_chain import CompiledChain, nonlocal_weights  # noqa: E402
from structperc.inference.labelings import LabelSet  # noqa: E402
from structperc.inference.tagger import Tagger  # noqa: E402
from structperc.inference.template_tables import ScoreTable, TemplateTables  # noqa: E402
from structperc.inference.token_batch import TokenBatch, windows  # noqa: E402
from structperc.inference.token_codes import TypeTable  # noqa: E402
from structperc.model.weights import table_sums  # noqa: E402
from structperc.native import template_kernels  # noqa: E402
from structperc.native.nbest_kernels import nbest_paths  # noqa: E402
from structperc.native.nonlocal_kernels import (  # noqa: E402
    candidate_score,
    longest_mention,
    scratch,
    string_ids,
)


def brute_force(pot: np.ndarray) -> list[tuple[float, tuple[int, ...]]]:
    """Every labeling of potentials [T, L, L] with its score, best first."""
    T, L, _ = pot.shape
    out = []
    for y in itertools.product(range(L), repeat=T):
        score = pot[0, 0, y[0]] + sum(pot[t, y[t - 1], y[t]] for t in range(1, T))
        out.append((score, y))
    return sorted(out, key=lambda x: -x[0])


@pytest.mark.parametrize("seed", range(40))
def test_the_n_best_are_the_best_labelings(seed):
    rng = np.random.default_rng(seed)
    T, L, n = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 40))
    pot = rng.integers(-3, 4, size=(T, L, L)).astype(np.float64)  # ties on purpose
    if seed % 3 == 0:
        pot[rng.random((T, L, L)) < 0.25] = -np.inf  # forbidden moves (constraints)
    paths, scores = np.full((n, T), -1, np.int16), np.empty(n)
    found = nbest_paths(pot, T, n, paths, scores)
    expected = [r for r in brute_force(pot) if r[0] > -np.inf][:n]
    assert found == len(expected)
    assert np.allclose(scores[:found], [s for s, _ in expected])
    got = [tuple(p) for p in paths[:found].tolist()]
    assert len(set(got)) == found  # distinct paths, each scored as it is
    for (score, _), y in zip(expected, got, strict=True):
        own = pot[0, 0, y[0]] + sum(pot[t, y[t - 1], y[t]] for t in range(1, T))
        assert own == pytest.approx(score)


def window_document(doc: Document) -> tuple:
    """``candidate_score``'s document arrays, built in Python."""
    ids: dict[str, int] = {}
    words = np.array([ids.setdefault(t, len(ids)) for t in doc.tokens], np.int64)
    low = [t.lower() for t in doc.tokens] + [""]
    T = len(doc)
    conn1 = np.array([CONNECTORS.get((w,), 0) for w in low[:T]] + [0], np.int64)
    conn2 = [CONNECTORS.get((low[i], low[i + 1]), 0) for i in range(T)] + [0]
    return words, sentence_ids(T, doc.sentence_starts), conn1, np.array(conn2, np.int64)


def test_the_non_local_counts_are_the_vectorised_ones(nonlocal_model, synthetic_dir):
    """Random candidates of synthetic documents (and of one made of repeated names, linked by
    commas and "and"): the compiled score is the counts of ``candidate_codes`` times the
    weights, candidate for candidate."""
    tagger = Tagger.load(nonlocal_model, compiled=False)
    features = tagger.structure.doc_features
    model, _ = nonlocal_weights(tagger.structure)
    weights = np.random.default_rng(0).normal(size=len(model[2]))  # every code weighs
    model = (model[0], model[1], weights, model[3])
    words = "Smith , Paris and London , Smith said Paris or Smith Paris".split()
    docs = [*read_conll(synthetic_dir / "conll2003" / "test.txt")[:4]]
    docs.append(Document(tokens=words * 4, sentence_starts=[0, 12, 24, 36]))
    rng = np.random.default_rng(1)
    L = len(tagger.labels)
    for doc in docs:
        T = len(doc)
        cands = rng.integers(0, L, size=(30, T))
        cands[:10] = np.where(rng.random((10, T)) < 0.7, 0, cands[:10])  # sparser ones
        longest = max(longest_mention(cands, len(cands), T, model[0], model[1]), 1)
        words_ = window_document(doc)
        arrays = words_ + string_ids(words_[0], T, longest)
        work = scratch(T, longest, int(model[0].max()) + 1)
        got = [candidate_score(c, T, arrays, model, work) for c in cands]
        expected = features.code_counts(doc, cands) @ weights
        assert np.allclose(got, expected)


def test_token_sums_are_the_embedding_bags(column_model, synthetic_dir):
    """The word sums and the context rows give every token the scores ``embedding_bag`` adds
    (to float rounding: float64 here, float32 there)."""
    tagger = Tagger.load(column_model)
    docs = read_conll(synthetic_dir / "conll2003" / "test.txt")
    model = CompiledChain.of(tagger.structure, tagger.features)
    types = TypeTable()
    batch = TokenBatch.of(docs, ("pos", "chunk"))
    ids = types.ids(batch.tokens)
    columns = {
        c: model.coder.value_codes({"pos": "pos", "chunk": "chk"}[c], v)
        for c, v in batch.columns.items()
    }
    codes = model.codes(ids, types, batch.documents, columns)
    unique, rows = np.unique(ids, return_inverse=True)
    sums = np.empty((len(unique), len(model.tables.offsets), model.table.shape[1]), np.float32)
    template_kernels.word_sums(
        model.coder.codes_of_types(types)[unique], model.tables.word_arrays(), model.table, sums
    )
    kernel_model = (model.tables.context_arrays(), model.table, sums, model.tables.offsets)
    out = np.empty((len(ids), model.table.shape[1]))
    scratch_rows = np.empty((len(ids), len(model.tables.n_parts)), np.int32)
    for d0, d1 in batch.documents.tolist():
        template_kernels.window_sums(
            codes, rows.astype(np.int64), d0, d1, d0, d1, kernel_model, scratch_rows, out[d0:d1]
        )
    matrix = tagger.features.transform(docs)
    weights = tagger.structure.weights
    full = table_sums(weights.joint, matrix.ids, matrix.offsets.to(matrix.ids.dtype)).numpy()
    kept = weights.joint.columns
    assert np.allclose(full if kept is None else full[:, kept.numpy()], out, atol=1e-3)


def test_template_tables_find_the_vocabulary_rows(column_model, monkeypatch):
    """Every kept feature key (template j, code c) maps to its row through the tables: a word
    template's dense map, a context template's dense map or its sorted codes."""
    from structperc.features.extract import KEY_SHIFT
    from structperc.inference import template_tables

    tagger = Tagger.load(column_model)
    vocab = tagger.features.vocab
    widest = max(len(v) for v in vocab.values.values())
    monkeypatch.setattr(template_tables, "DENSE_CODES", widest)  # bigrams of words: sparse
    scores = ScoreTable.of(tagger.structure.weights)
    tables = TemplateTables.build(vocab, scores.row_of, ["w", "wl"])
    word = [j for j, t in enumerate(vocab.templates) if len(t) == 1 and t[0][0] in ("w", "wl")]
    context = [j for j in range(len(vocab.templates)) if j not in word]
    assert len(tables.word_column) == len(word) and len(tables.n_parts) == len(context)
    assert (tables.dense_base < 0).any() and (tables.dense_base >= 0).any()
    for f, key in enumerate(vocab.keys.tolist()):
        j, code = key >> KEY_SHIFT, key & ((1 << KEY_SHIFT) - 1)
        if j in word:
            k = word.index(j)
            row = tables.word_dense[tables.word_base[k] + code]
        elif tables.dense_base[k := context.index(j)] >= 0:
            row = tables.dense[tables.dense_base[k] + code]
        else:
            codes = tables.keys[tables.lo[k] : tables.hi[k]]
            row = tables.rows[tables.lo[k] + np.searchsorted(codes, code)]
        assert row == scores.row_of[f]


@pytest.mark.parametrize("model", ["token_model", "column_model", "nonlocal_model"])
def test_compiled_labels_are_the_torch_labels(model, request, synthetic_dir):
    """A chain with edge features, one reading the POS and chunk columns, the document
    rescoring with non-local features: every label of the test split."""
    path = request.getfixturevalue(model)
    docs = read_conll(synthetic_dir / "conll2003" / "test.txt")
    compiled, torch_path = Tagger.load(path), Tagger.load(path, compiled=False)
    assert compiled.compiled is not None
    assert compiled.tag_documents(docs) == torch_path.tag_documents(docs)


def test_the_compiled_column_tagger_is_the_column_tagger(synthetic_tagger, synthetic_dir):
    from structperc.inference.column_tagger import ColumnTagger
    from structperc.inference.compiled_tagger import CompiledColumns

    docs = [Document(d.tokens, sentence_starts=d.sentence_starts) for d in make_corpus(8, seed=3)]
    docs[0].tokens[:3] = ['"', "(", '"']  # Treebank forms, straight quotes paired
    column_tagger = ColumnTagger.load(synthetic_tagger)
    expected = column_tagger.fill(docs)
    types = TypeTable()
    columns = CompiledColumns.of(column_tagger, types)
    batch = TokenBatch.of(docs)
    pos, chunk = columns.tag(types.ids(batch.tokens), batch)
    assert [columns.pos_labels[i] for i in pos] == [t for d in expected for t in d.columns["pos"]]
    got = [columns.chunk_labels[i] for i in chunk]
    assert got == [t for d in expected for t in d.columns["chunk"]]


def test_windows_are_runs_of_whole_sentences():
    doc = Document(tokens=list("abcdefghij"), sentence_starts=[0, 3, 4, 9])
    short = Document(tokens=list("xy"))
    batch = TokenBatch.of([short, doc])
    assert windows(batch, 100).tolist() == [[0, 2, 0, 2], [2, 12, 2, 12]]
    # [2, 5) [5, 6) fit; [6, 11) does not: cut after 4 tokens, its rest runs on with [11, 12)
    assert windows(batch, 4).tolist() == [[0, 2, 0, 2], [2, 6, 2, 12], [6, 10, 2, 12],
                                          [10, 12, 2, 12]]  # fmt: skip
    with pytest.raises(ValueError, match="at least one token"):
        windows(batch, 0)


def test_label_sets_repair_iob2_and_find_chunks():
    labels = LabelSet(["O", "B-LOC", "B-PER", "I-LOC", "I-PER"])
    ids = np.array([3, 3, 0, 4, 1, 4, 2, 4])  # I-LOC I-LOC O I-PER B-LOC I-PER B-PER I-PER
    starts = np.zeros(8, bool)
    starts[[0, 7]] = True  # the last I-PER starts a sentence
    valid = labels.valid(ids, starts)
    assert labels.tags(valid) == [
        "B-LOC",
        "I-LOC",
        "O",
        "B-PER",
        "B-LOC",
        "B-PER",
        "B-PER",
        "B-PER",
    ]
    begin, end, kind = labels.chunks(valid)
    assert list(zip(begin.tolist(), end.tolist(), kind.tolist(), strict=True)) == [
        (0, 2, 0), (3, 4, 1), (4, 5, 0), (5, 6, 1), (6, 7, 1), (7, 8, 1)
    ]  # fmt: skip
    plain = LabelSet(["NN", "VB"])
    assert plain.plain and plain.valid(np.array([1, 0]), starts[:2]).tolist() == [1, 0]
