"""Our scorer against the real conlleval.pl, on written prediction files (tests/conlleval_cases.py).

conlleval.pl (Tjong Kim Sang, CoNLL-2000, version 2004-01-26) is the scorer of CoNLL-2000/2002/2003
and of the papers reproduced here.  Its reports on every case are kept in
``tests/data/conlleval/expected.json`` (with the sha256 of each case's file, see
``tests/data/conlleval/README.md``); with ``STRUCTPERC_CONLLEVAL=PATH/conlleval.pl`` the script is
also run live on the same files.  Checked for every case:

- ``python -m structperc.eval FILE`` prints conlleval's report character for character;
- the in-memory score of the documents a run writes (``evaluate`` with their sentence starts,
  the figure in results.json) has conlleval's chunk counts, P, R and F1, overall and per type;
- seqeval, reading the file's sentences, agrees with it (IOB1, IOB2, IOE and random B/I/E/O);
- with the boundary rule broken (chunks running on across sentence breaks, the document-level
  score this project reported before) the comparison fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from conlleval_cases import (
    EXPECTED,
    SYNTHETIC,
    _docs,
    cross_sentence,
    dev_documents,
    run_conlleval,
    sha256,
    write_case,
)
from seqeval.metrics import classification_report

from structperc.eval import chunks
from structperc.eval.chunks import ChunkScores, evaluate
from structperc.eval.files import evaluate_file, read_tag_columns

RECORDED = json.loads(EXPECTED.read_text())["cases"]


def conlleval_script() -> Path | None:
    env = os.environ.get("STRUCTPERC_CONLLEVAL")
    return Path(env) if env else None


def written(name: str, folder: Path, data_dir: Path | None = None) -> Path:
    """Case ``name`` written into ``folder``, checked to be the file conlleval.pl was run on."""
    path = write_case(name, folder, data_dir)
    assert sha256(path) == RECORDED[name]["sha256"], (
        f"case {name} is no longer the file conlleval.pl scored: record its report again "
        "(python tests/conlleval_cases.py --conlleval PATH/conlleval.pl)"
    )
    return path


def report_of(path: Path, name: str) -> str:
    """conlleval.pl's report of case ``name``: live when the script is given, else recorded."""
    script = conlleval_script()
    if script is not None:
        live = run_conlleval(script, path)
        assert live == RECORDED[name]["report"], "the live conlleval.pl disagrees with the record"
        return live
    return RECORDED[name]["report"]


def counts(s: ChunkScores) -> dict:
    """Chunk counts, P, R and F1 overall and per type (what conlleval decides; not accuracy)."""
    per_type = {t: (v.n_gold, v.n_pred, v.n_correct, v.f1) for t, v in s.per_type.items()}
    return {"all": (s.n_gold, s.n_pred, s.n_correct, s.precision, s.recall, s.f1), **per_type}


def seqeval_counts(path: Path) -> dict:
    """Per-type gold counts and P/R/F1 (percent) of seqeval's default (conlleval) mode."""
    gold, pred = read_tag_columns(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nan macro averages when nothing is found
        report = classification_report(gold, pred, output_dict=True, zero_division=0)
    return {
        k: (v["support"], round(100 * v["precision"], 9), round(100 * v["f1-score"], 9))
        for k, v in report.items()
        if k not in ("macro avg", "weighted avg")
    }


def ours_as_seqeval(s: ChunkScores) -> dict:
    out = {t: (v.n_gold, round(v.precision, 9), round(v.f1, 9)) for t, v in s.per_type.items()}
    return out | {"micro avg": (s.n_gold, round(s.precision, 9), round(s.f1, 9))}


# ---------------------------------------------------------------- the synthetic cases


@pytest.mark.parametrize("name", list(SYNTHETIC))
def test_file_report_is_conllevals(name, tmp_path):
    path = written(name, tmp_path)
    assert evaluate_file(path).format() + "\n" == report_of(path, name)


SEQEVAL_CASES = [n for n in SYNTHETIC if n not in {f"random_{s}" for s in range(4, 8)}]


@pytest.mark.parametrize("name", SEQEVAL_CASES)
def test_seqeval_reads_the_files_alike(name, tmp_path):
    path = written(name, tmp_path)
    assert seqeval_counts(path) == ours_as_seqeval(evaluate_file(path))


def test_seqeval_differs_from_conlleval_where_e_meets_b(tmp_path):
    """Why the project keeps its own port: seqeval ends a chunk after every E-, conlleval.pl does
    not before a B- of the same type (``E-X B-X I-X`` is one chunk to conlleval, two to
    seqeval), so on labels that mix E- and B- (random_4..7) their counts differ."""
    differ = 0
    for seed in range(4, 8):
        path = written(f"random_{seed}", tmp_path)
        assert evaluate_file(path).format() + "\n" == report_of(path, f"random_{seed}")
        differ += seqeval_counts(path) != ours_as_seqeval(evaluate_file(path))
    assert differ > 0
    s = evaluate([["E-X", "B-X", "I-X"]], [["E-X", "B-X", "I-X"]])
    assert s.n_gold == 1


@pytest.mark.parametrize("scheme", ["iob1", "iob2", "ioe"])
def test_documents_in_memory_score_as_their_written_file(scheme, tmp_path):
    """What results.json reports (evaluate with sentence starts) is what conlleval.pl prints for
    the prediction file the run writes; the document-level score is not."""
    name = f"cross_sentence_{scheme}"
    path = written(name, tmp_path)
    docs = _docs(cross_sentence(scheme), per_doc=5)
    gold, pred = [d.tags for d in docs], [d.columns["pred"] for d in docs]
    s = evaluate(gold, pred, [d.sentence_starts for d in docs])
    assert counts(s) == counts(evaluate_file(path))
    assert s.f1_document is not None and s.f1_document != s.f1  # the cases cross sentences
    assert counts(evaluate(gold, pred)) != counts(evaluate_file(path))


def test_broken_boundary_rule_fails_against_conlleval(tmp_path, monkeypatch):
    """Chunks that run on across a blank line (the old document-level rule) give other reports."""
    monkeypatch.setattr(chunks, "sentences", lambda seqs, starts: list(seqs))
    docs = _docs(cross_sentence("iob2"), per_doc=5)
    gold, pred = [d.tags for d in docs], [d.columns["pred"] for d in docs]
    broken = evaluate(gold, pred, [d.sentence_starts for d in docs])
    assert counts(broken) != counts(evaluate_file(written("cross_sentence_iob2", tmp_path)))

    def joined(path):  # a reader that ignores blank lines: one sentence per file
        gold, pred = read_tag_columns(path)
        return [sum(gold, [])], [sum(pred, [])]

    import structperc.eval.files as files

    monkeypatch.setattr(files, "read_tag_columns", joined)
    for name in ("cross_sentence_iob1", "cross_sentence_ioe", "blank_lines"):
        path = written(name, tmp_path)
        assert evaluate_file(path).format() + "\n" != report_of(path, name)


def test_command_line_prints_the_report(tmp_path):
    path = written("docstart", tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "structperc.eval", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == report_of(path, "docstart")


def test_command_line_names_a_bad_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("a x O O\nb O O\n")
    done = subprocess.run(
        [sys.executable, "-m", "structperc.eval", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert f"{path}:2: 3 fields, expected 4" in done.stderr


# ---------------------------------------------------------------- real CoNLL-2003 dev


@pytest.mark.realdata
def test_conll2003_dev_slice_scores_as_conlleval(data_dir, tmp_path):
    name = "conll2003_dev_slice"
    path = written(name, tmp_path, data_dir)
    assert evaluate_file(path).format() + "\n" == report_of(path, name)
    assert seqeval_counts(path) == ours_as_seqeval(evaluate_file(path))
    docs = dev_documents(data_dir)
    gold, pred = [d.tags for d in docs], [d.columns["pred"] for d in docs]
    s = evaluate(gold, pred, [d.sentence_starts for d in docs])
    assert counts(s) == counts(evaluate_file(path))
    # whole documents count a run across a sentence break as one (wrong) chunk
    assert s.f1_document is not None and s.f1_document < s.f1
