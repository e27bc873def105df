"""The column corpus (``data/column_corpus.py``, ``data=columns``): every reader option
(encodings, separators, schemes both ways, document boundaries, comments, label sets with and
without chunk prefixes, the held-out dev split, globs), bad input as one ``FILE:LINE`` error, any
column layout read -> written -> read unchanged (hypothesis), and the CoNLL presets giving the
old loader's Documents."""

from __future__ import annotations

import codecs
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structperc.data.column_corpus import ColumnCorpus, ColumnFormat, hold_out, resolve_files
from structperc.data.conll import ConllFormatError, has_docstart
from structperc.data.schemes import from_iob2

SPANISH = (
    "El DA O\nBanco NC B-ORG\nde SP I-ORG\nEspaña NP I-ORG\nsube VMI O\n.\tFp O\n\n"
    "Juan NP B-PER\nvive VMI O\nen SP O\nSevilla NP B-LOC\n. Fp O\n"
)
SPANISH_IOB2 = [["O", "B-ORG", "I-ORG", "I-ORG", "O", "O"], ["B-PER", "O", "O", "B-LOC", "O"]]


def put(tmp_path: Path, text: str | bytes, name: str = "data.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def fmt(columns=("token", "pos", "ner"), **kw) -> ColumnFormat:
    return ColumnFormat(columns=tuple(columns), **kw)


def tags(docs):
    return [d.tags for d in docs]


def test_the_label_is_the_last_named_column_and_the_others_are_kept(tmp_path):
    path = put(tmp_path, SPANISH)
    f = fmt(scheme="iob2")
    assert f.label == "ner"
    docs = f.read(path)
    assert tags(docs) == SPANISH_IOB2 and docs[0].columns["pos"][:2] == ["DA", "NC"]
    pos = fmt(("token", "pos", "_"), scheme="plain").read(path)  # POS as a plain tagging task
    assert pos[1].tags == ["NP", "VMI", "SP", "NP", "Fp"] and pos[1].columns == {}
    assert fmt(("token", "lemma", "ner"), label="lemma", scheme="plain").read(path)[0].columns == {
        "ner": SPANISH_IOB2[0][:1] + ["B-ORG", "I-ORG", "I-ORG", "O", "O"]
    }
    with pytest.raises(ValueError, match=r"data\.label='token'"):
        fmt(label="token")
    with pytest.raises(ValueError, match="expected one 'token'"):
        fmt(("word", "ner"))


@pytest.mark.parametrize("scheme", ["iob1", "iob2", "ioe1", "ioe2", "iobes", "bilou", "io"])
def test_every_scheme_is_read_as_iob2_and_written_back_in_itself(tmp_path, scheme):
    lines = SPANISH.splitlines()
    written = [t for s in SPANISH_IOB2 for t in [*from_iob2(s, scheme), None]][:-1]
    pairs = zip(lines, written, strict=True)
    text = "\n".join(f"{line.rsplit(maxsplit=1)[0]} {tag}" if line else "" for line, tag in pairs)
    path = put(tmp_path, text + "\n")
    for named in (scheme, "auto"):
        f = fmt(scheme=named)
        docs = f.read(path)
        if named == "auto":  # ColumnCorpus.load tells the scheme: one that writes the file
            corpus, told = ColumnCorpus(f, train=str(path), dev_holdout=0).load(None)
            assert tags(corpus["train"]) == SPANISH_IOB2  # (I- alone reads as IOB1)
            assert [from_iob2(s, told.scheme) for s in SPANISH_IOB2] == [
                from_iob2(s, scheme) for s in SPANISH_IOB2
            ]
            continue
        assert tags(docs) == SPANISH_IOB2
        out = tmp_path / f"{scheme}.out"
        f.write(out, docs, tags(docs))  # gold and prediction in the corpus's scheme
        back = out.read_text().splitlines()
        assert [line.split()[-2:] for line in back if line] == [
            [t, t] for t in written if t is not None
        ]


def test_encodings_and_byte_order_marks(tmp_path):
    latin = put(tmp_path, "Peña NP B-PER\nrió VMI O\n".encode("latin-1"), "latin.txt")
    (doc,) = fmt(encoding="latin-1").read(latin)
    assert doc.tokens == ["Peña", "rió"] and doc.tags == ["B-PER", "O"]
    with pytest.raises(ConllFormatError, match=r"latin\.txt:1: expected UTF-8 text, found byte"):
        fmt().read(latin)
    bom = put(tmp_path, codecs.BOM_UTF8 + "Peña NP B-PER\n".encode(), "bom.txt")
    assert fmt().read(bom)[0].tokens == ["Peña"]
    with pytest.raises(ConllFormatError, match=r"bom\.txt:1: .*UTF-8 byte-order mark"):
        fmt(encoding="cp1252").read(bom)
    wide = put(tmp_path, "Peña NP B-PER\n".encode("utf-16"), "wide.txt")
    assert fmt(encoding="utf-16").read(wide)[0].tokens == ["Peña"]
    with pytest.raises(ValueError, match="unknown encoding 'klingon'"):
        fmt(encoding="klingon")


def test_separators_tabs_keep_spaces_in_tokens_and_whitespace_keeps_nbsp(tmp_path):
    tabbed = put(tmp_path, "New York\tNP\tB-LOC\nvive\tVMI\tO\n", "tab.txt")
    f = fmt(separator="tab")
    (doc,) = f.read(tabbed)
    assert doc.tokens == ["New York", "vive"] and doc.tags == ["B-LOC", "O"]
    f.write(tmp_path / "tab.out", [doc])
    assert (tmp_path / "tab.out").read_text() == "New York\tNP\tB-LOC\nvive\tVMI\tO\n\n"
    with pytest.raises(ConllFormatError, match=r"tab\.txt:1: expected 3 columns"):
        fmt().read(tabbed)  # whitespace: "New" "York" NP B-LOC are four
    empty = put(tmp_path, "a\t\tO\n", "empty.txt")
    with pytest.raises(ConllFormatError, match=r"empty\.txt:1: column 2 is empty"):
        f.read(empty)
    nbsp = put(tmp_path, "10\u00a0000 Z O\n", "nbsp.txt")
    assert fmt().read(nbsp)[0].tokens == ["10\u00a0000"]


def test_document_boundaries_docstart_sentence_and_a_line_of_ones_own(tmp_path):
    text = "<doc>\nA NP B-PER\n\nB NP O\n<doc>\nC NP O\n"
    path = put(tmp_path, text)
    docs = fmt(documents="<doc>").read(path)
    assert [d.tokens for d in docs] == [["A", "B"], ["C"]] and docs[0].sentence_starts == [0, 1]
    fmt(documents="<doc>").write(tmp_path / "out.txt", docs)
    assert (
        tmp_path / "out.txt"
    ).read_text() == "<doc>\n\nA NP B-PER\n\nB NP O\n\n<doc>\n\nC NP O\n\n"
    conll = put(tmp_path, "-DOCSTART- -X- O\n\nA NP B-PER\n\nB NP O\n", "d.txt")
    (doc,) = fmt(documents="docstart").read(conll)
    assert doc.tokens == ["A", "B"] and has_docstart(doc)
    assert len(fmt(documents="sentence").read(conll)) == 2
    with pytest.raises(ConllFormatError, match=r"d\.txt:1: documents='</doc>': no such line"):
        fmt(documents="</doc>").read(conll)


def test_comment_lines_are_skipped_when_asked(tmp_path):
    path = put(tmp_path, "# sent_id = 1\nA NP B-PER\n# text: A\nB NP O\n")
    docs = fmt(comments=True).read(path)
    assert [d.tokens for d in docs] == [["A"], ["B"]]  # a comment ends a sentence, like a blank
    with pytest.raises(ConllFormatError, match=r"data\.txt:1: expected 3 columns"):
        fmt().read(path)


def test_bad_input_is_one_error_naming_the_file_and_line(tmp_path):
    cases = [
        ("A NP B-PER\nB NP\n", r":2: expected 3 columns like line 1"),
        ("A NP B-PER\nB NP E-PER\n", r":2: column 3 \(ner\): unknown tag 'E-PER'"),
        ("\n\n", r":2: expected at least one token line"),
        ("A NP B-PER\x00\n", r":1: column 3: control character U\+0000"),
    ]
    for k, (text, message) in enumerate(cases):
        path = put(tmp_path, text, f"bad{k}.txt")
        with pytest.raises(ConllFormatError, match=rf"bad{k}\.txt{message}"):
            fmt(scheme="iob2").read(path)
    bilou = put(tmp_path, "A NP B-PER\n\nB NP B-PER\nC NP L-PER\n", "bilou.txt")
    with pytest.raises(ConllFormatError, match=r"bilou\.txt:4: ner: label 'L-PER' is not IOBES"):
        fmt(scheme="iobes").read(bilou)  # (converted after reading: the line is the token's)
    mixed = put(tmp_path, "A NP B-PER\nB NP NN\n", "mixed.txt")
    with pytest.raises(ConllFormatError, match=r"mixed\.txt:2: 'NN' has no chunk prefix"):
        ColumnCorpus(fmt(), train=str(mixed), dev_holdout=0).load(None)
    with pytest.raises(FileNotFoundError, match=r"data\.train=.*nowhere\.txt: no such file"):
        ColumnCorpus(fmt(), train=str(tmp_path / "nowhere.txt")).load(None)
    unlabeled = put(tmp_path, "A NP\nB NP\n", "unlabeled.txt")
    with pytest.raises(ConllFormatError, match=r"unlabeled\.txt:1: expected 3 columns \(token"):
        ColumnCorpus(fmt(), train=str(unlabeled), dev_holdout=0).load(None)


def test_globs_a_seeded_held_out_dev_and_the_data_folder(tmp_path, monkeypatch):
    folder = tmp_path / "corpus"
    folder.mkdir()
    for k in range(3):
        put(folder, "".join(f"w{k}{j} NP B-PER\n\n" for j in range(10)), f"part{k}.txt")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STRUCTPERC_DATA", raising=False)
    spec = ColumnCorpus(fmt(), train="corpus/part*.txt", test="part2.txt", dev_holdout=0.2)
    corpus, told = spec.load(str(folder))  # test is found in the data folder
    assert len(corpus["train"]) == 24 and len(corpus["dev"]) == 6 and len(corpus["test"]) == 10
    assert told.scheme == "iob2"
    again, _ = spec.load(str(folder))
    assert again["dev"] == corpus["dev"]  # the same seed, the same slice
    other, _ = ColumnCorpus(fmt(), train="corpus/*.txt", dev_seed=1, dev_holdout=6).load(None)
    assert len(other["dev"]) == 6 and other["dev"] != corpus["dev"]
    assert [p.name for p in resolve_files("corpus/*.txt", None, "data.train")] == [
        "part0.txt",
        "part1.txt",
        "part2.txt",
    ]
    with pytest.raises(ValueError, match="dev_holdout must be a fraction.*got 1.5"):
        hold_out(corpus["train"], 1.5, 0)


def test_a_format_round_trips_through_json():
    f = fmt(scheme="iobes", separator="tab", documents="<doc>", tag_columns={"pos": "iob1"})
    assert ColumnFormat.from_json(f.to_json()) == f
    with pytest.raises(ValueError, match="wrong shape"):
        ColumnFormat.from_json({"label": "ner"})


NAMES = ["pos", "chunk", "lemma", "morph", "cluster"]
SCHEMES = ["iob1", "iob2", "ioe1", "ioe2", "iobes", "bilou", "plain"]
VALUES = ["a", "Bé", "x\u00a0y", "10,5", "-", "NN", "O"]
FUZZ = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,  # the same examples every run: a test, not a search
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@st.composite
def corpora(draw):
    """A column layout, a format (encoding too) and the text of a file in it."""
    others = draw(st.lists(st.sampled_from([*NAMES, "_"]), max_size=3))
    named = [c for c in others if c != "_"]
    if len(set(named)) < len(named):
        others = [c for c in others if c == "_"] + sorted(set(named))
    layout = others + ["ner"]
    layout.insert(draw(st.integers(0, len(layout) - 1)), "token")
    scheme = draw(st.sampled_from(SCHEMES))
    separator = draw(st.sampled_from(["whitespace", "tab"]))
    documents = draw(st.sampled_from(["sentence", "docstart", "<doc>"]))
    encoding = draw(st.sampled_from(["utf-8", "latin-1", "utf-16"]))
    f = ColumnFormat(
        tuple(layout), scheme=scheme, separator=separator, documents=documents, encoding=encoding
    )
    types = ["PER", "LOC"] if scheme != "plain" else ["NN", "VB", "DT"]
    docs = []
    for _ in range(draw(st.integers(1, 3))):
        sentences = []
        for _ in range(draw(st.integers(1, 3))):
            n = draw(st.integers(1, 5))
            if scheme == "plain":
                labels = [draw(st.sampled_from(types)) for _ in range(n)]
            else:
                picks = [draw(st.sampled_from(["O", "B", "I"])) for _ in range(n)]
                kinds = [draw(st.sampled_from(types)) for _ in range(n)]
                iob2, prev = [], ""
                for p, k in zip(picks, kinds, strict=True):
                    tag = "O" if p == "O" else ("I-" + prev if p == "I" and prev else "B-" + k)
                    iob2.append(tag)
                    prev = "" if tag == "O" else tag[2:]
                labels = from_iob2(iob2, scheme)
            rows = []
            for label in labels:
                row = [label if c == "ner" else draw(st.sampled_from(VALUES)) for c in layout]
                rows.append(row)
            sentences.append(rows)
        docs.append(sentences)
    sep = "\t" if separator == "tab" else " "
    head = {"sentence": "", "docstart": "-DOCSTART-\n\n", "<doc>": "<doc>\n"}[documents]
    text = "".join(
        head + "".join("".join(sep.join(r) + "\n" for r in s) + "\n" for s in sentences)
        for sentences in docs
    )
    return f, text


@FUZZ
@given(case=corpora())
def test_any_column_layout_round_trips_read_write_read(tmp_path, case):
    f, text = case
    path = put(tmp_path, text.encode(f.encoding), "in.txt")
    docs = f.read(path)
    f.write(tmp_path / "out.txt", docs)  # in the format's encoding
    again = f.read(tmp_path / "out.txt")
    assert [replace(d, source="") for d in again] == [replace(d, source="") for d in docs]
    if "_" not in f.columns and f.documents != "docstart":  # the file as it was, to the byte
        expected = text.replace("<doc>\n", "<doc>\n\n").encode(f.encoding)
        assert (tmp_path / "out.txt").read_bytes() == expected


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["conll2003", "conll2000"])
def test_the_presets_read_the_old_loaders_documents(data_dir, name):
    from hydra_runs import compose_config

    from structperc.data.loading import load_corpus
    from structperc.run import ComposedConfig
    from structperc.tasks.inputs import load_columns

    experiment = "conll03_local" if name == "conll2003" else "conll00_tagchunk"
    cfg = compose_config([f"+experiment={experiment}", "data.max_docs=30"])
    new, told = load_columns(ComposedConfig(cfg, data_dir))
    old = load_corpus(name, data_dir, max_docs=30)
    assert new == old and told.scheme == ("iob1" if name == "conll2003" else "iob2")
    for split in old:
        assert [has_docstart(d) for d in new[split]] == [has_docstart(d) for d in old[split]]


def test_the_shipped_spanish_example_reads_as_the_readme_says():
    folder = Path(__file__).resolve().parents[1] / "experiments" / "byoc" / "spanish"
    spec = ColumnCorpus(fmt(), train=str(folder / "train.txt"), test=str(folder / "test.txt"))
    corpus, told = spec.load(None)
    assert told.scheme == "iobes" and told.label == "ner"
    assert (len(corpus["train"]), len(corpus["dev"]), len(corpus["test"])) == (14, 2, 4)
    kinds = {t[2:] for d in corpus["train"] for t in d.tags if t != "O"}
    assert kinds == {"PERSONA", "LUGAR", "ORGANIZACION", "OBRA", "EVENTO"}


def test_a_missing_file_named_over_a_preset_is_an_error_not_the_presets_corpus(tmp_path):
    from hydra_runs import compose_config

    from structperc.run import ComposedConfig
    from structperc.tasks.inputs import load_columns

    missing = tmp_path / "mine.txt"
    cfg = compose_config(["+experiment=conll03_local", f"data.train={missing}"])
    with pytest.raises(FileNotFoundError, match=r"data\.train=.*mine\.txt: no such file"):
        load_columns(ComposedConfig(cfg, tmp_path))
