"""Tagging new input: the Python API, every input layout and plain text through the CLI, and the
CLI's failures: one line naming what is wrong, exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra_runs import console, one_line_failure, run_main
from hydra_runs import tag_cli as cli
from hydra_runs import trained_run as _trained

from structperc.data.conll import read_conll
from structperc.data.tags import valid_iob2
from structperc.inference.tagger import MissingColumns, Tagger


def test_the_api_tags_tokens_like_the_file_tagger(token_model, synthetic_dir):
    tagger = Tagger.load(token_model)
    docs = read_conll(synthetic_dir / "conll2003" / "test.txt")
    expected = tagger.tag_documents(docs)  # valid IOB2 sentence by sentence: a chunk the
    # decoder ran over a sentence end is cut there, which one sequence of tokens has not
    assert [valid_iob2(tagger.tag(d.tokens), d.sentence_spans()) for d in docs] == expected
    assert tagger.needed_columns() == set()


def test_a_model_that_reads_pos_and_chunk_says_what_it_needs(column_model):
    tagger = Tagger.load(column_model)
    assert tagger.needed_columns() == {"pos", "chunk"}
    with pytest.raises(MissingColumns, match="read the chunk and pos column"):
        tagger.tag(["John", "smiles"])


def test_entities_of_plain_text_carry_character_offsets(token_model, synthetic_dir):
    docs = read_conll(synthetic_dir / "conll2003" / "test.txt")
    text = "\n\n".join(" ".join(d.tokens) for d in docs[:3])
    tagger = Tagger.load(token_model)
    entities = tagger.entities(text)
    assert entities, "the synthetic model finds entities in synthetic text"
    for e in entities:
        assert text[e["start"] : e["end"]] == e["text"] and e["type"] in (
            "PER",
            "LOC",
            "ORG",
            "MISC",
        )
    # the same tokens give the same tags as column input
    tokens = [t for d in docs[:3] for t in d.tokens]
    assert len(tokens) == sum(len(d) for d in docs[:3])


def layouts(synthetic_dir: Path, tmp_path: Path) -> dict[str, tuple[Path, list[str]]]:
    """The synthetic test set in other layouts (a sentence per block): file, CLI arguments."""
    docs = read_conll(synthetic_dir / "conll2003" / "test.txt", documents="sentence")
    one = "\n\n".join("\n".join(d.tokens) for d in docs) + "\n"
    io = "\n\n".join(
        "\n".join(
            f"{w} {t[2:] if t != 'O' else 'O'}" for w, t in zip(d.tokens, d.tags, strict=True)
        )
        for d in docs
    )
    placeholder = "\n\n".join(
        "\n".join(
            f"{w} {p} - {t}" for w, p, t in zip(d.tokens, d.columns["pos"], d.tags, strict=True)
        )
        for d in docs
    )
    out = {}
    for name, text, args in (
        ("one_column", one, ["columns=[token]", "documents=sentence"]),
        ("token_io", io, ["columns=[token,ner]", "scheme=io", "documents=sentence"]),
        ("placeholder", placeholder, ["columns=[token,pos,_,ner]", "documents=sentence"]),
    ):
        path = tmp_path / f"{name}.txt"
        path.write_text(text + "\n")
        out[name] = (path, args)
    return out


def test_every_input_layout_tags_through_the_cli(token_model, synthetic_dir, tmp_path):
    reference = Tagger.load(token_model).tag_documents(
        read_conll(synthetic_dir / "conll2003" / "test.txt", documents="sentence")
    )
    for name, (path, args) in layouts(synthetic_dir, tmp_path).items():
        out = tmp_path / f"{name}.out"
        done = cli(f"model={token_model}", f"input={path}", f"output={out}", *args)
        assert done.returncode == 0, (name, done.stderr)
        tagged = [line.split()[-1] for line in out.read_text().splitlines() if line]
        assert tagged == [t for doc in reference for t in doc], name
        if name != "one_column":  # gold tags present: scores printed
            assert "F1" in done.stdout or "FB1" in done.stdout or "f1" in done.stdout.lower()


def test_raw_text_to_entity_lines(token_model, synthetic_dir, tmp_path):
    docs = read_conll(synthetic_dir / "conll2003" / "test.txt")
    text = "\n\n".join(" ".join(d.tokens) for d in docs[:4]) + "\n"
    (tmp_path / "in.txt").write_text(text)
    out = tmp_path / "out.jsonl"
    done = cli(
        f"model={token_model}",
        f"input={tmp_path / 'in.txt'}",
        f"output={out}",
        "input_format=text",
        "output_format=jsonl",
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 4
    assert lines == [{"source": s["source"], "entities": s["entities"]} for s in lines]
    expected = Tagger.load(token_model).entities(text)
    assert [e for line in lines for e in line["entities"]] == expected
    for e in expected:
        assert text[e["start"] : e["end"]] == e["text"]


def test_cli_fails_in_one_line(token_model, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("John NNP B-NP B-PER\nSmith NNP\n")
    one_line_failure(
        cli(f"model={token_model}", f"input={bad}", f"output={tmp_path / 'o'}"),
        "structperc-tag: error:",
        f"{bad}:2: expected 4 columns",
    )
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"John NNP B-NP O\nM\xfcller NNP I-NP O\n")
    one_line_failure(
        cli(f"model={token_model}", f"input={binary}", f"output={tmp_path / 'o'}"),
        f"{binary}:2: expected UTF-8 text",
    )
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    for name in ("model.json", "model.safetensors"):
        (damaged / name).write_bytes((token_model / name).read_bytes())
    blob = damaged / "model.safetensors"
    blob.write_bytes(blob.read_bytes()[:-100])
    one_line_failure(
        cli(f"model={damaged}", f"input={bad}", f"output={tmp_path / 'o'}"),
        "model.safetensors",
        "truncated or damaged",
    )


def test_training_with_a_missing_gazetteer_fails_in_one_line(synthetic_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("STRUCTPERC_DATA", raising=False)
    done = console(
        "structperc-train", "+experiment=conll03_local", f"data.dir={synthetic_dir}",
        "features.gazetteer=naive", f"features.gazetteer_path={tmp_path / 'nowhere.list'}",
        f"hydra.run.dir={tmp_path / 'run'}",
    )  # fmt: skip
    one_line_failure(done, "structperc-train: error:", "nowhere.list")


@pytest.fixture(scope="module")
def tagchunk_run(tmp_path_factory, synthetic_dir) -> Path:
    """A small column tagger trained on a slice of the real CoNLL-2000 (skips without it)."""
    from structperc.data.loading import resolve_data_dir

    real = resolve_data_dir(None)
    if real is None or not (real / "conll2000" / "train.txt").is_file():
        pytest.skip("needs the CoNLL-2000 files (STRUCTPERC_DATA)")
    overrides = [
        "+experiment=conll00_tagchunk",
        "data.max_docs=300",
        "task.dev_sentences=50",
        "trainer.max_epochs=2",
        "task.chunk_train_pos=jackknife",  # the chunker trains on held-out taggers' POS
        "task.pos_folds=2",
        "task.chunk_encoding=iobes",  # trained on IOBES, its output is IOB2
        "cache_dir={out}_cache",
    ]
    return _trained(tmp_path_factory, real, "tagchunk", overrides)


@pytest.mark.realdata
def test_the_column_tagger_fills_pos_and_chunk_columns(tagchunk_run, synthetic_dir):
    from structperc.inference.column_tagger import ColumnTagger

    r = json.loads((tagchunk_run / "results.json").read_text())
    assert r["test"]["pos_accuracy"] > 70 and r["test"]["chunk_f1"] > 50, r["test"]
    assert r["chunk_train_pos"] == "jackknife" and 50 < r["jackknife_pos_accuracy"] < 100
    chunk_labels = json.loads((tagchunk_run / "chunk" / "model.json").read_text())["labels"]
    assert r["chunk_encoding"] == "iobes" and {"S-NP", "E-NP"} <= set(chunk_labels)
    docs = read_conll(synthetic_dir / "conll2003" / "test.txt")
    filled = ColumnTagger.load(tagchunk_run).fill(docs)
    for before, after in zip(docs, filled, strict=True):
        assert after.tokens == before.tokens and after.tags == before.tags
        assert len(after.columns["pos"]) == len(after.columns["chunk"]) == len(after)
        assert all(t == "O" or t[:2] in ("B-", "I-") for t in after.columns["chunk"])


@pytest.mark.realdata
def test_a_second_run_that_changes_only_the_chunker_reuses_the_fold_taggers_column(
    tagchunk_run, tmp_path_factory
):
    from structperc.data.loading import resolve_data_dir

    first = json.loads((tagchunk_run / "results.json").read_text())
    assert first["jackknife_cache_hit"] is False
    overrides = [
        "+experiment=conll00_tagchunk",
        "data.max_docs=300",
        "task.dev_sentences=50",
        "trainer.max_epochs=2",
        "task.pos_folds=2",
        "task.chunk_edges=true",  # the chunker's weights change, not the fold taggers
        f"cache_dir={tagchunk_run}_cache",
    ]
    again = _trained(tmp_path_factory, resolve_data_dir(None), "tagchunk_edges", overrides)
    r = json.loads((again / "results.json").read_text())
    assert r["jackknife_cache_hit"] is True
    assert r["jackknife_pos_accuracy"] == first["jackknife_pos_accuracy"]
    assert json.loads((again / "chunk" / "model.json").read_text())["edges"] is True
    assert json.loads((again / "pos" / "model.json").read_text())["edges"] is False


@pytest.mark.realdata
def test_the_column_tagger_reads_brackets_and_quotes_as_the_treebank_writes_them(tagchunk_run):
    from structperc.data import Document
    from structperc.inference.column_tagger import ColumnTagger

    raw = ["He", "said", "(", "in", "Bonn", ")", '"', "no", '"', "."]
    penn = ["He", "said", "-LRB-", "in", "Bonn", "-RRB-", "``", "no", "''", "."]
    tagger = ColumnTagger.load(tagchunk_run)
    filled_raw, filled_penn = tagger.fill([Document(tokens=raw), Document(tokens=penn)])
    assert filled_raw.tokens == raw and filled_penn.tokens == penn
    assert filled_raw.columns == filled_penn.columns


def test_the_column_tagger_gives_its_chains_one_sentence_at_a_time(monkeypatch):
    """The chains learned from sentences: a document's sentences are tagged apart and joined."""
    from structperc.data import Document
    from structperc.inference import column_tagger as loading

    seen = []

    def fake_labels(model, docs, batch_size, device):  # a tag naming its sentence and position
        seen.append((model, [d.tokens for d in docs], [d.sentence_starts for d in docs]))
        return [[f"{model}{d.tokens[0]}{i}" for i in range(len(d))] for d in docs]

    monkeypatch.setattr(loading, "predict_labels", fake_labels)
    doc = Document(tokens=["(", "a", "b", ".", "c", '"', "d"], sentence_starts=[0, 4, 4])
    (filled,) = loading.ColumnTagger("P", "B-").fill([doc, Document(tokens=[])])[:1]
    sentences = [["-LRB-", "a", "b", "."], ["c", "``", "d"]]  # the empty sentence is skipped
    assert seen[0] == ("P", sentences, [[0], [0]]) and seen[1][1] == sentences
    assert filled.tokens == doc.tokens and filled.sentence_starts == [0, 4, 4]
    assert filled.columns["pos"] == [
        "P-LRB-0",
        "P-LRB-1",
        "P-LRB-2",
        "P-LRB-3",
        "Pc0",
        "Pc1",
        "Pc2",
    ]
    assert filled.columns["chunk"][3:5] == ["B--LRB-3", "B-c0"]


@pytest.mark.realdata
def test_the_final_fit_trains_on_every_sentence(tmp_path_factory, synthetic_dir):
    from structperc.data.loading import resolve_data_dir
    from structperc.inference.column_tagger import ColumnTagger

    real = resolve_data_dir(None)
    if real is None or not (real / "conll2000" / "train.txt").is_file():
        pytest.skip("needs the CoNLL-2000 files (STRUCTPERC_DATA)")
    overrides = ["+experiment=conll00_tagchunk", "data.max_docs=120", "task.dev_sentences=0"]
    overrides += ["trainer.max_epochs=1", "task.chunk_train_pos=given", "cache_dir=null"]
    run = _trained(tmp_path_factory, real, "final", overrides)
    r = json.loads((run / "results.json").read_text())
    assert "dev" not in r and r["train_sentences"] == 120 and r["test"]["chunk_f1"] > 0
    docs = read_conll(synthetic_dir / "conll2003" / "test.txt")
    assert len(ColumnTagger.load(run).fill(docs)) == len(docs)


@pytest.mark.realdata
def test_a_model_on_automatic_tags_carries_its_tagger(
    tagchunk_run, synthetic_dir, tmp_path, monkeypatch
):
    out = tmp_path / "auto"
    run_main(
        [
            "+experiment=conll03_local",
            "trainer.max_epochs=2",
            "features.gazetteer=none",
            "features.tags=auto",
            f"features.tagger={tagchunk_run}",
            f"cache_dir={tmp_path / 'cache'}",
        ],
        synthetic_dir,
        out,
        monkeypatch,
    )
    assert (out / "tagger" / "pos" / "model.json").is_file()
    tagger = Tagger.load(out)  # fills POS and chunks from the carried copy
    docs = read_conll(synthetic_dir / "conll2003" / "test.txt")
    tags = tagger.tag(docs[0].tokens)
    assert len(tags) == len(docs[0]) and tagger.tag_documents(docs)[0] == tags


def test_standard_input_and_output(token_model, column_model, synthetic_dir, tmp_path):
    """``input=- output=-``: the data alone on stdout, the log and the scores on stderr; the
    same result as through files; a bad byte on stdin is reported as ``<stdin>:LINE``."""
    path = synthetic_dir / "conll2003" / "test.txt"
    to_file = cli(f"model={column_model}", f"input={path}", f"output={tmp_path / 'out.txt'}")
    assert to_file.returncode == 0, to_file.stderr
    piped = cli(f"model={column_model}", "input=-", "output=-", stdin=path.read_text())
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == (tmp_path / "out.txt").read_text()
    assert "FB1" in piped.stderr and "FB1" in to_file.stdout
    text = "John Smith lives in Paris .\n\nAcme Corp hired Mary .\n"
    lines = cli(
        f"model={token_model}", "input=-", "output=-", "input_format=text",
        "output_format=jsonl", stdin=text,
    )  # fmt: skip
    assert lines.returncode == 0, lines.stderr
    docs = [json.loads(line) for line in lines.stdout.splitlines()]
    assert [d["source"] for d in docs] == ["<stdin>:1", "<stdin>:3"]
    bad = cli(f"model={column_model}", "input=-", "output=-", stdin=b"EU NNP B-NP B-ORG\n\xff\n")
    assert bad.returncode == 2 and bad.stderr.strip().endswith(
        "<stdin>:2: expected UTF-8 text, found byte 0xff (invalid start byte)"
    )
