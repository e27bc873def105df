"""Partial annotation and constraints where a user meets them: the label column's unknown mark
and any-of cells, ``Constraints``, the chain's prediction under them (against brute force),
``Tagger.tag(..., constraints=)``, the CLI's constraint column, the scikit-learn face's partial
``y``, ``class_weight`` and ``predict(X, constraints=)``, and a partially labelled training file
through a whole run."""

from __future__ import annotations

import itertools

import pytest
import torch
from hydra_runs import run_main, write_synthetic_conll2003

from structperc.data.conll import ConllFormatError, read_conll
from structperc.data.constraints import Constraints, encode_constraints
from structperc.data.partial import cell_labels, is_partial
from structperc.data.tags import encode_labels, label_set, spans
from structperc.features.extract import FeatureMatrix
from structperc.model.batch import make_batch
from structperc.model.weights import ChainWeights
from structperc.predict import tag_file
from structperc.structures.chain import ChainData, ChainStructure
from structperc.tagger import Tagger

LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def cells(tags):
    return [sorted(cell_labels(t) or {"*"}) if is_partial(t) else t for t in tags]


def test_the_label_column_reads_unknown_marks_and_any_of_cells(tmp_path):
    path = tmp_path / "part.txt"
    path.write_text(
        "-DOCSTART- -X- -X- O\n\n"
        "John NNP B-NP I-PER\nlives VBZ B-VP ?\nin IN B-PP O\nNew NNP B-NP ?\nYork NNP I-NP I-LOC\n"
        ". . O O|B-MISC\n\n"
    )
    (doc,) = read_conll(path, any_of="|")
    assert cells(doc.tags[:2]) == ["B-PER", ["*"]]
    # IOB1: "? I-LOC" leaves I-LOC either the start or the inside of a LOC
    assert cells(doc.tags[3:6]) == [["*"], ["B-LOC", "I-LOC"], ["B-MISC", "O"]]
    (iob2,) = read_conll(path, any_of="|", scheme="iob2")
    # IOB2 marks every start: I-LOC goes on a chunk, which the open token before must be
    assert cells(iob2.tags[3:5]) == [["B-LOC", "I-LOC"], "I-LOC"]
    other = tmp_path / "mark.txt"
    other.write_text("John NNP B-NP UNK\nlives VBZ B-VP O\n\n")
    (doc,) = read_conll(other, documents="sentence", unknown="UNK")
    assert cells(doc.tags) == [["*"], "O"]
    with pytest.raises(ConllFormatError, match=r"mark.txt:1: .*UNK"):
        read_conll(other, documents="sentence", unknown=None)
    bad = tmp_path / "bad.txt"
    bad.write_text("John NNP B-NP ?\nlives VBZ B-VP X-PER\n\n")
    with pytest.raises(ConllFormatError, match=r"bad.txt:2"):
        read_conll(bad, documents="sentence")


def test_partial_labels_enter_the_label_set_but_not_the_scored_encodings(tmp_path):
    path = tmp_path / "part.txt"
    path.write_text("a NN B-NP B-PER\nb NN I-NP ?\nc NN I-NP O|B-LOC\n\n")
    docs = read_conll(path, documents="sentence", any_of="|", scheme="iob2")
    assert label_set(docs) == ["O", "B-LOC", "B-PER"]
    with pytest.raises(ValueError, match="leave tokens open"):
        encode_labels(docs, label_set(docs))


def test_constraints_give_allowed_rows_and_forbidden_spans():
    c = Constraints(
        labels={0: "PER", 1: {"O", "B-LOC"}}, not_labels={3: ["O"]}, spans=[(2, 3, "LOC")]
    )
    allowed = c.allowed(5, LABELS)
    assert allowed[0].tolist() == [False, False, False, True, True]
    assert allowed[1].tolist() == [True, True, False, False, False]
    assert allowed[2].tolist() == [False, True, False, False, False]
    assert allowed[3].tolist() == [False, True, False, True, True]  # not O, not I-LOC (span end)
    forbid = Constraints(forbidden=[(1, 3, None), (0, 1, "PER")]).forbidden_spans(5, LABELS)
    assert forbid == [(1, 3, 1, 2), (1, 3, 3, 4), (0, 1, 3, 4)]
    with pytest.raises(ValueError, match="token 7 is outside"):
        Constraints(labels={7: "O"}).allowed(5, LABELS)
    with pytest.raises(ValueError, match="'ORG' is no label"):
        Constraints(labels={0: "ORG"}).allowed(5, LABELS)
    with pytest.raises(ValueError, match="leave it no label"):
        Constraints(labels={0: "O"}, not_labels={0: ["O"]}).allowed(5, LABELS)
    per_token = Constraints.from_cells([None, "?", "B-PER", "O|B-LOC"])
    assert per_token.labels == {2: "B-PER", 3: {"O", "B-LOC"}}


def test_the_chain_predicts_the_best_labeling_that_keeps_the_constraints():
    gen = torch.Generator().manual_seed(3)
    lengths = [4, 3, 2]
    N = sum(lengths)
    ids = torch.randint(0, 6, (N,), generator=gen, dtype=torch.int32)
    features = FeatureMatrix(ids, torch.arange(N + 1), torch.tensor([0, 4, 7, 9]))
    weights = ChainWeights(6, LABELS)
    for t in weights.tables().values():
        t.copy_(torch.randn(t.shape, generator=gen))
    structure = ChainStructure(weights)
    cons = [
        Constraints(labels={1: "LOC"}, forbidden=[(1, 3, "LOC")]),
        Constraints(spans=[(0, 2, "PER")]),
        Constraints(forbidden=[(0, 1, None)], not_labels={1: ["O"]}),
    ]
    data = ChainData(features)
    data.allowed, data.forbidden = encode_constraints(cons, lengths, LABELS)
    for batch_size in (1, 64):
        pred = structure.predict(data, batch_size=batch_size)
        for d, n in enumerate(lengths):
            pot = structure.potentials(make_batch(features, [d]))[0]
            rows = data.allowed_rows(d)
            bad = {(s, e, LABELS[b][2:]) for s, e, b, _ in (data.forbidden or {}).get(d, [])}
            best, arg = -float("inf"), None
            for path in itertools.product(range(5), repeat=n):
                if not all(rows[t, y] for t, y in enumerate(path)):
                    continue
                if set(spans([LABELS[y] for y in path])) & bad:
                    continue
                s = float(pot[0, 0, path[0]]) + sum(
                    float(pot[t, path[t - 1], path[t]]) for t in range(1, n)
                )
                if s > best:
                    best, arg = s, list(path)
            assert pred[d] == arg


def test_tagger_and_cli_keep_the_constraints(token_model, synthetic_dir, tmp_path):
    tagger = Tagger.load(token_model)
    (doc,) = read_conll(synthetic_dir / "conll2003" / "test.txt", max_docs=1)
    tokens = doc.tokens[:12]
    free = tagger.tag(tokens)
    target = "B-PER" if free[3] != "B-PER" else "B-LOC"
    held = tagger.tag(tokens, constraints=[None, None, None, target])
    assert held[3] == target
    spanned = tagger.tag(tokens, constraints=Constraints(spans=[(5, 7, "ORG")]))
    assert spanned[5:7] == ["B-ORG", "I-ORG"] and (len(tokens) == 7 or spanned[7] != "I-ORG")
    # the CLI's constraint column: "?" free, a label fixed
    lines = [f"{t} {target if i == 3 else '?'}" for i, t in enumerate(tokens)]
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n\n")
    out = tmp_path / "out.txt"
    tag_file(
        token_model, src, out, columns=["token", "fixed"], documents="sentence",
        constraint_column="fixed", score=False,
    )  # fmt: skip
    written = [line.split()[-1] for line in out.read_text().splitlines() if line.strip()]
    assert written == held
    with pytest.raises(ValueError, match="no column 'other'"):
        tag_file(token_model, src, out, columns=["token", "fixed"], constraint_column="other")


def test_the_face_trains_on_partial_y_and_predicts_under_constraints():
    sklearn = pytest.importorskip("sklearn")  # noqa: F841
    from structperc.sklearn import CRF

    X = [
        [{"w": w} for w in s.split()]
        for s in ["john lives here", "mary lives there", "john met mary"]
    ] * 4
    y = [["B-PER", "O", "O"], ["B-PER", "O", "O"], ["B-PER", "O", "B-PER"]] * 4
    partial = [list(s) for s in y]
    for s in partial[::2]:
        s[1] = None  # unknown
        s[2] = {"O", "B-PER"}  # one of two
    for algorithm in ("lbfgs", "ap"):
        crf = CRF(algorithm=algorithm, max_iterations=30).fit(X, partial)
        assert [list(p) for p in crf.predict(X[:3])] == y[:3]
    crf = CRF(algorithm="lbfgs", max_iterations=30).fit(X, y)
    fixed = crf.predict(X[:2], constraints=[[None, "B-PER", None], None])
    assert list(fixed[0]) == ["B-PER", "B-PER", "O"] and list(fixed[1]) == y[1]
    weighted = CRF(algorithm="lbfgs", max_iterations=30, class_weight={"PER": 3.0}).fit(X, y)
    assert [list(p) for p in weighted.predict(X[:3])] == y[:3]
    with pytest.raises(ValueError, match="a label must be a str, None"):
        CRF().fit(X[:1], [["B-PER", 3, "O"]])


def test_a_partially_labelled_training_file_trains_a_run(tmp_path):
    (tmp_path / "data").mkdir()
    data = write_synthetic_conll2003(tmp_path / "data", {"train": 20, "dev": 5, "test": 5})
    train = data / "conll2003" / "train.txt"
    lines = train.read_text().splitlines()
    hidden = [
        (
            " ".join(line.split()[:-1] + ["?"])
            if k % 2 and line and not line.startswith("-DOC")
            else line
        )
        for k, line in enumerate(lines)
    ]
    train.write_text("\n".join(hidden) + "\n")
    out = tmp_path / "run"
    mp = pytest.MonkeyPatch()
    try:
        _, results = run_main(
            ["+experiment=conll03_local", "trainer.max_epochs=2", "features.gazetteer=none"],
            data, out, mp,
        )  # fmt: skip
    finally:
        mp.undo()
    assert results["epochs"] == 2 and results["test"]["f1"] > 0


def test_iobes_open_tokens_take_what_their_neighbours_promise_and_files_write_them_back(tmp_path):
    from structperc.data.conll import write_conll
    from structperc.data.partial import cells_to_iob2

    got = cells_to_iob2(["B-PER", "\x1f", "E-PER", "\x1f", "S-LOC"], "iobes")
    assert cells(got) == ["B-PER", "I-PER", "I-PER", ["*"], "B-LOC"]
    path = tmp_path / "in.txt"
    path.write_text("a NN B-NP B-PER\nb NN I-NP ?\nc NN I-NP O|B-LOC\n\n")
    docs = read_conll(path, documents="sentence", any_of="|", scheme="iob2")
    out = tmp_path / "out.txt"
    write_conll(out, docs)
    assert [line.split()[-1] for line in out.read_text().splitlines() if line] == [
        "B-PER",
        "?",
        "B-LOC|O",
    ]


def test_the_rescoring_structure_predicts_under_constraints_exactly():
    """With every labeling a candidate, the non-local model's constrained prediction is the
    labeling of best total score among those the constraints allow."""
    from test_structures import NER, RescoringCase

    case = RescoringCase()
    structure, data = case.build(seed=8)
    cons = [
        Constraints(labels={0: "PER"}, forbidden=[(3, 4, None)]),
        None,
        Constraints(spans=[(1, 2, "LOC")]),
    ]
    data.allowed, data.forbidden = encode_constraints(cons, case.lengths, NER)
    pred = structure.predict(data)
    for d, n in enumerate(case.lengths):
        rows = data.allowed_rows(d)
        bad = {(s, e, NER[b][2:]) for s, e, b, _ in (data.forbidden or {}).get(d, [])}
        ok = [
            y
            for y in case.labelings(structure, data, d)
            if all(rows[t, y[t]] for t in range(n)) and not set(spans([NER[i] for i in y])) & bad
        ]
        best = max(case.oracle(structure, data, d, y) for y in ok)
        assert case.oracle(structure, data, d, torch.tensor(pred[d])) == pytest.approx(best)
