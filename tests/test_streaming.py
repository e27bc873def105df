"""Training from disk (``data.stream``): the same documents, features and model as in memory.

Each piece against the in-memory path it stands for: document stores read back as the
documents they hold; ``stream_corpus`` against ``ColumnCorpus.load`` (held-out dev, cuts,
scheme detection); ``extract_chunked`` against ``fit`` + ``transform`` (ids bit for bit, with
the gazetteer jackknife, feature templates and boundary values, chunks small enough that
every document boundary and jackknife fold crosses one); memory-mapped matrices and their
released pages; and a whole run with ``data.stream=true`` against ``data.stream=false``:
the same model files and predictions.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hydra_runs import run_main

from structperc.data.column_corpus import ColumnCorpus, ColumnFormat
from structperc.data.conll import write_conll
from structperc.data.corpus_stream import stream_corpus, training_tokens
from structperc.data.document import Document, MappedDocuments, runs_of
from structperc.data.document_store import DocumentStore, StoredDocuments
from structperc.data.partial import is_partial
from structperc.data.synthetic import make_corpus
from structperc.features import store
from structperc.features.chunked_extraction import extract_chunked
from structperc.features.pipeline import LocalFeatures


def same_documents(a, b) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert (x.tokens, x.tags, x.columns, x.sentence_starts, x.source) == (
            y.tokens,
            y.tags,
            y.columns,
            y.sentence_starts,
            y.source,
        )


def test_a_document_store_reads_back_what_it_holds(tmp_path):
    docs = make_corpus(25, seed=3)
    docs[4].tags = None
    docs[5].tokens[0] = 'quote " and \\ and ü and \u2028'
    stored = DocumentStore.write(tmp_path / "d.docs", docs)
    same_documents(docs, list(stored))
    same_documents([docs[7], docs[0], docs[24]], [stored[7], stored[0], stored[-1]])
    assert len(stored) == 25 and stored.num_tokens == sum(len(d) for d in docs)
    assert list(stored.lengths) == [len(d) for d in docs]
    with pytest.raises(IndexError):
        stored[25]
    assert StoredDocuments(tmp_path / "d.docs")[3].tokens == docs[3].tokens  # opened again
    upper = MappedDocuments(stored, lambda d: Document([t.upper() for t in d.tokens]))
    assert len(upper) == 25 and upper[1].tokens == [t.upper() for t in docs[1].tokens]
    (tmp_path / "d.docs").write_bytes(b"{}\n")
    with pytest.raises(ValueError, match="does not match"):
        StoredDocuments(tmp_path / "d.docs")


def test_runs_of_whole_documents():
    docs = [Document(["w"] * n) for n in (3, 4, 10, 1, 1, 2)]
    runs = list(runs_of(docs, 5))
    assert [(s, [len(d) for d in r]) for s, r in runs] == [
        (0, [3]),
        (1, [4]),
        (2, [10]),
        (3, [1, 1, 2]),
    ]


@pytest.mark.parametrize(
    "settings",
    [
        dict(columns=("token", "pos", "chunk", "ner"), documents="docstart", dev_holdout=0.2),
        dict(columns=("token", "pos", "chunk", "ner"), dev_holdout=5, train_docs=20),
        dict(columns=("token", "_", "_", "ner"), documents="docstart", scheme="iob2"),
    ],
)
def test_stream_corpus_reads_what_load_reads(tmp_path, settings):
    write_conll(tmp_path / "train.txt", make_corpus(40, seed=1))
    write_conll(tmp_path / "test.txt", make_corpus(10, seed=2))
    fmt_keys = ("columns", "documents", "scheme")
    fmt = ColumnFormat(**{k: v for k, v in settings.items() if k in fmt_keys})
    rest = {k: v for k, v in settings.items() if k not in fmt_keys}
    spec = ColumnCorpus(fmt, str(tmp_path / "train.txt"), test=str(tmp_path / "test.txt"), **rest)
    in_memory, told = spec.load(None)
    stored, told_too = stream_corpus(spec, None, tmp_path / "stores")
    assert told == told_too and list(stored) == list(in_memory)
    for split, docs in in_memory.items():
        assert isinstance(stored[split], StoredDocuments)
        same_documents(docs, stored[split])
    assert abs(training_tokens(spec, None) - sum(len(d) for d in make_corpus(40, seed=1))) <= 80


def test_stream_corpus_reads_the_partial_marks_load_reads(tmp_path):
    docs = make_corpus(40, seed=1)
    for doc in docs[::3]:
        doc.tags[0] = "UNK"
    write_conll(tmp_path / "train.txt", docs)
    write_conll(tmp_path / "test.txt", make_corpus(10, seed=2))
    fmt = ColumnFormat(("token", "pos", "chunk", "ner"), scheme="iob2", unknown="UNK")
    spec = ColumnCorpus(fmt, str(tmp_path / "train.txt"), test=str(tmp_path / "test.txt"))
    in_memory, _ = spec.load(None)
    stored, _ = stream_corpus(spec, None, tmp_path / "stores")
    assert any(is_partial(t) for d in in_memory["train"] for t in d.tags)
    for split, docs in in_memory.items():
        same_documents(docs, stored[split])


FEATURE_SETTINGS = [
    dict(gazetteer="none"),
    dict(gazetteer="none", template_file="kazama", boundary=True),
    dict(
        gazetteer="none",
        min_count=3,
        attributes=["w", "wl", "pos", "s3"],
        bigram_attributes=["pos"],
    ),
]


@pytest.mark.parametrize("settings", FEATURE_SETTINGS)
def test_chunked_extraction_gives_the_ids_of_one_fit(tmp_path, settings):
    corpus = {"train": make_corpus(60, seed=4), "dev": make_corpus(10, seed=5)}
    whole, chunked = LocalFeatures(**settings), LocalFeatures(**settings)
    whole.fit(corpus["train"])
    want = {s: whole.transform(d, training=(s == "train")) for s, d in corpus.items()}
    stored = {s: DocumentStore.write(tmp_path / f"{s}.docs", d) for s, d in corpus.items()}
    got = extract_chunked(chunked, stored, tmp_path / "features", chunk_tokens=97, progress=False)
    assert np.array_equal(whole.vocab.keys, chunked.vocab.keys)
    assert whole.vocab.values == chunked.vocab.values
    for split in corpus:
        assert got[split].mapped
        for part in ("ids", "offsets", "doc_offsets"):
            assert torch.equal(getattr(want[split], part), getattr(got[split], part)), part
    assert not (tmp_path / "features" / "spill").exists()


@pytest.mark.realdata
def test_chunked_extraction_with_the_gazetteer_jackknife(data_dir, tmp_path):
    """CoNLL-2003's eng.list jackknifed over ten folds: each training document's gazetteer
    columns see the entities of the other folds of the whole set, not of its chunk."""
    from structperc.data.loading import load_corpus

    corpus = load_corpus("conll2003", data_dir, max_docs=60)
    settings = dict(gazetteer="jackknife", gazetteer_path=str(data_dir / "conll2003/eng.list"))
    whole, chunked = LocalFeatures(**settings), LocalFeatures(**settings)
    whole.fit(corpus["train"])
    want = whole.transform(corpus["train"], training=True)
    got = extract_chunked(chunked, corpus, tmp_path, chunk_tokens=2000, progress=False)["train"]
    assert np.array_equal(whole.vocab.keys, chunked.vocab.keys)
    assert torch.equal(want.ids, got.ids) and torch.equal(want.offsets, got.offsets)


def resident_mb() -> float:
    """This process's resident memory now (VmRSS), MB."""
    with open("/proc/self/status") as f:
        line = next(line for line in f if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def test_mapped_matrices_release_their_pages(tmp_path):
    """A pass over a 160 MB mapped matrix, its pages released after each 8 MB piece: the
    process grows by about a piece, not by the matrix."""
    writer = store.MatrixWriter(tmp_path, "m")
    rng = np.random.default_rng(0)
    n = 1 << 19  # tokens a piece, 4 ids each: 8 MB of ids
    firsts = []
    for _ in range(20):
        ids = rng.integers(0, 1000, size=4 * n, dtype=np.int32)
        writer.add(ids, np.arange(0, 4 * n + 1, 4, dtype=np.int64), np.array([n]))
        firsts.append(int(ids[:8].sum()))
    matrix = writer.close()
    assert matrix.mapped and matrix.num_docs == 20 and matrix.num_tokens == 20 * n
    store.release_pages()
    before, grown = resident_mb(), 0.0
    for d in range(20):
        lo = int(matrix.offsets[int(matrix.doc_offsets[d])])
        piece = matrix.ids[lo : lo + 4 * n]
        assert int(piece[:8].sum()) == firsts[d] and int(piece.max()) < 1000
        grown = max(grown, resident_mb() - before)
        store.release_pages()
    assert grown < 40, grown  # MB: a piece or two at a time, not the 160 MB


def test_a_document_read_from_the_files_is_the_mapped_document(tmp_path):
    """``document_batch`` over a matrix on disk reads its rows by ``pread``
    (``store.MatrixFiles``), not through the maps (their tensors emptied here), and gives the
    batch of the same matrix in memory, in this process and in an unpickled copy."""
    import pickle
    from dataclasses import replace

    from structperc.features.extract import FeatureMatrix
    from structperc.model.batch import document_batch

    rng = np.random.default_rng(1)
    writer = store.MatrixWriter(tmp_path, "m")
    lengths = [3, 1, 5, 2]
    counts = rng.integers(0, 4, size=sum(lengths))  # a token may have no feature
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    ids = rng.integers(0, 50, size=int(offsets[-1]), dtype=np.int32)
    writer.add(ids[: offsets[4]], offsets[:5], np.array(lengths[:2]))
    writer.add(ids[offsets[4] :], offsets[4:] - offsets[4], np.array(lengths[2:]))
    mapped = writer.close()
    in_memory = FeatureMatrix(
        torch.from_numpy(ids), torch.from_numpy(offsets), torch.tensor([0, 3, 4, 9, 11])
    )
    empty = torch.zeros(0, dtype=torch.long)
    files_only = replace(mapped, ids=empty.int(), offsets=empty, doc_offsets=empty)
    copied = replace(files_only, files=pickle.loads(pickle.dumps(mapped.files)))
    for d in range(len(lengths)):
        expected = document_batch(in_memory, d)
        for matrix in (files_only, copied):
            got = document_batch(matrix, d)
            assert torch.equal(got.ids, expected.ids) and got.ids.dtype == expected.ids.dtype
            for name in ("offsets", "lengths", "first_token", "flat_positions"):
                assert torch.equal(getattr(got, name), getattr(expected, name)), name


def test_a_run_from_disk_is_the_run_in_memory(tmp_path, monkeypatch):
    """``data.stream=true`` and ``false`` on the same corpus: identical model files, results
    and predictions (the same documents, ids and order of steps).  The compiled epoch works in
    chunks of 7 documents, so from disk each next chunk is read while one is trained on
    (``features/read_ahead.py``)."""
    from structperc.native import online

    monkeypatch.setattr(online, "CHUNK", 7)
    data = tmp_path / "data"
    data.mkdir()
    write_conll(data / "train.txt", make_corpus(60, seed=1))
    common = [
        "+experiment=conll03_local",
        "data=columns",
        f"data.train={data / 'train.txt'}",
        "data.columns=[token,pos,chunk,ner]",
        "data.documents=docstart",
        "features.gazetteer=none",
        "trainer.max_epochs=3",
    ]
    runs = {}
    for mode in ("false", "true"):
        out = tmp_path / mode
        _, results = run_main(
            [*common, f"data.stream={mode}", f"cache_dir={tmp_path / ('cache' + mode)}"],
            data,
            out,
            monkeypatch,
        )
        runs[mode] = (out, results)
    (a, ra), (b, rb) = runs["false"], runs["true"]
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    assert (a / "dev.pred.txt").read_text() == (b / "dev.pred.txt").read_text()
    assert (
        ra["dev"]["f1"] == rb["dev"]["f1"]
        and ra["history"]
        == [{**h, "seconds": rb["history"][k]["seconds"]} for k, h in enumerate(rb["history"])]
        or [h["word_error"] for h in ra["history"]] == [h["word_error"] for h in rb["history"]]
    )
    assert (tmp_path / "cachetrue" / "corpus").is_dir()  # the document stores
    # again from the cached stores (the corpus has no test split: none is looked for)
    again = tmp_path / "again"
    run_main(
        [*common, "data.stream=true", f"cache_dir={tmp_path / 'cachetrue'}"],
        data,
        again,
        monkeypatch,
    )
    assert (again / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()


def test_the_crf_from_disk_is_the_crf_in_memory(tmp_path, monkeypatch):
    """L-BFGS over the compiled objective (``features.edges=false``), its documents read in
    blocks from the mapped matrix: the model of the run in memory, bit for bit."""
    pytest.importorskip("numba")
    from structperc.crf import compiled
    from structperc.features import store as feature_store

    monkeypatch.setattr(feature_store, "RELEASE_EVERY", 7)  # blocks of 7 documents
    monkeypatch.setattr(compiled, "RELEASE_EVERY", 7)
    data = tmp_path / "data"
    data.mkdir()
    write_conll(data / "train.txt", make_corpus(50, seed=2))
    common = [
        "+experiment=conll03_crf",
        "data=columns",
        f"data.train={data / 'train.txt'}",
        "data.columns=[token,pos,chunk,ner]",
        "features.gazetteer=none",
        "features.edges=false",
        "learner.scan=compiled",
        "trainer.max_epochs=8",
    ]
    models = []
    for mode in ("false", "true"):
        out = tmp_path / mode
        run_main([*common, f"data.stream={mode}"], data, out, monkeypatch)
        models.append((out / "model.safetensors").read_bytes())
    assert models[0] == models[1]


@pytest.mark.parametrize("edges", [True, False])
def test_a_shuffled_epoch_over_mapped_features_releases_their_pages_often(
    tmp_path, monkeypatch, edges
):
    """A fault maps a whole large folio, ~0.5 MB a document visited at random, so an epoch in a
    shuffled order through the maps releases the pages every ``SHUFFLED_RELEASE_EVERY``
    documents (the compiled epoch of one transition matrix); the compiled epoch with edge
    features reads each chunk's documents by ``pread`` instead, and maps nothing."""
    pytest.importorskip("numba")
    import structperc.native.online as online
    import structperc.trainer as trainer
    from structperc.learn.fitting import FitSettings
    from structperc.learn.perceptron import Perceptron
    from structperc.model.updates import Updater
    from structperc.model.weights import ChainWeights
    from structperc.structures.chain import ChainData, ChainStructure

    D, rng = 300, np.random.default_rng(0)
    writer = store.MatrixWriter(tmp_path, "m")
    ids = rng.integers(0, 20, size=3 * 2 * D, dtype=np.int32)  # documents of 2 tokens, 3 ids each
    writer.add(ids, np.arange(0, 3 * 2 * D + 1, 3, dtype=np.int64), np.full(D, 2))
    features = writer.close()
    assert features.mapped
    data = ChainData(features, torch.from_numpy(rng.integers(0, 3, size=2 * D)))
    calls = []
    monkeypatch.setattr(trainer, "release_pages", lambda: calls.append(1))
    monkeypatch.setattr(online, "release_pages", lambda: calls.append(1))
    weights = ChainWeights(20, ["a", "b", "c"], edges=edges)
    learner = Perceptron(average=True)
    structure, updater = ChainStructure(weights), Updater(weights, average=True)
    learner.start(updater)
    settings = FitSettings(max_epochs=1, progress=False, compiled=True, tol=0)
    reads = []
    tokens = store.MatrixFiles.tokens
    monkeypatch.setattr(
        store.MatrixFiles, "tokens", lambda self, a, b: reads.append(a) or tokens(self, a, b)
    )
    trainer.run_epochs(learner, structure, updater, data, settings)
    if edges:  # every document read by pread, no page of the maps touched
        assert sorted(reads) == list(range(0, 2 * D, 2)) and not calls
        return
    assert len(calls) >= D // 64  # at most 64 documents (~32 MB of faulted pages) between two
