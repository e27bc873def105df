"""The report page of a run (``structperc-report``): every section from the run's own files, on
small synthetic runs; and the page in a real headless browser (Debian's chromium), where it
renders every section with no console error, requests nothing but itself, filters its error
list, and is saved as a screenshot.
"""

from __future__ import annotations

import os
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hydra_runs import console, trained_run

from structperc.eval.errors import chunk_errors, error_counts
from structperc.report.browser import Page, chromium_path
from structperc.report.build import CHUNK_SECTIONS, TOKEN_SECTIONS, build_report
from structperc.report.predictions import read_predictions


class Sections(HTMLParser):
    """The ids of the page's sections, the error entries' classes, the URLs it refers to."""

    def __init__(self):
        super().__init__()
        self.sections: list[str] = []
        self.errors: list[str] = []
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self.sections.append(attrs["id"])
        if attrs.get("class") == "err":
            self.errors.append(attrs["data-kind"])
        self.urls += [
            v for k, v in attrs.items() if k in ("src", "href") and v and not v.startswith("#")
        ]


def parsed(html: str) -> Sections:
    p = Sections()
    p.feed(html)
    return p


@pytest.fixture(scope="module")
def pos_run(tmp_path_factory, synthetic_dir) -> Path:
    """A plain tagging run (POS tags of the synthetic corpus), with its prediction files."""
    d = synthetic_dir / "conll2003"
    overrides = [
        "+experiment=conll03_local",
        "data=columns",
        f"data.train={d}/train.txt",
        f"data.dev={d}/dev.txt",
        f"data.test={d}/test.txt",
        "data.columns=[token,pos,_,_]",
        "data.documents=docstart",
        "features=token_tagger",
        "trainer.max_epochs=2",
    ]
    return trained_run(tmp_path_factory, synthetic_dir, "pos", overrides)


def test_a_chunking_run_gets_every_section_from_its_own_files(token_model):
    html = build_report(token_model, limit=50)
    page = parsed(html)
    assert page.sections == list(CHUNK_SECTIONS)
    assert page.urls == []  # nothing to load: style, script and figures are inline
    items = read_predictions(token_model / "test.pred.txt")
    errors = chunk_errors(
        [p.doc.tags for p in items], [p.pred for p in items], [p.doc.sentence_starts for p in items]
    )
    assert page.errors == [e.kind for e in errors[:50]] and len(page.errors) > 0
    for typ, classes in error_counts(errors).items():  # the test table's rows, as counted
        row = [typ, *map(str, classes.values()), str(sum(classes.values()))]
        assert '<tr><td class="l">' + "</td><td>".join(row) + "</td></tr>" in html
    assert html.count("<details><summary>explanation</summary>") == len(page.errors)
    assert html.count("<svg") >= 4  # F1 per type, error classes (dev, test), curves, transitions


def test_a_plain_tagging_run_gets_accuracy_per_label_and_a_confusion_matrix(pos_run):
    html = build_report(pos_run)
    assert parsed(html).sections == list(TOKEN_SECTIONS)
    assert "confusion matrix" in html and "NNP" in html and "accuracy (recall)" in html


def test_the_command_writes_the_page_into_the_run_folder(token_model, tmp_path):
    out = tmp_path / "page.html"
    done = console("structperc-report", f"run={token_model}", f"output={out}", "limit=5")
    assert done.returncode == 0, done.stderr
    assert parsed(out.read_text()).sections == list(CHUNK_SECTIONS)
    missing = console("structperc-report", f"run={tmp_path}")
    assert missing.returncode == 2 and "no results.json" in missing.stderr


@pytest.mark.chromium
def test_the_page_renders_in_a_headless_browser(token_model, tmp_path):
    if chromium_path() is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install -y chromium)")
    page_file = tmp_path / "report.html"
    page_file.write_text(build_report(token_model, limit=40), encoding="utf-8")
    with Page.open(page_file) as page:
        shown = page.evaluate(
            "[...document.querySelectorAll('section')].map(s => [s.id, s.offsetHeight,"
            " s.innerText.trim().length, s.querySelectorAll('svg, table').length])"
        )
        assert [s[0] for s in shown] == list(CHUNK_SECTIONS)
        for key, height, text_length, figures in shown:
            assert height > 40 and text_length > 20 and figures > 0, key
        page.evaluate("document.getElementById('kind').value = 'missed'; filterErrors()")
        visible = page.evaluate(
            "[...document.querySelectorAll('#error-list .err')]"
            ".filter(e => e.style.display !== 'none').map(e => e.dataset.kind)"
        )
        assert visible and set(visible) == {"missed"}
        assert page.evaluate("document.getElementById('shown').textContent") == str(len(visible))
        page.evaluate("document.querySelector('#error-list details').open = true")
        shot = page.screenshot(tmp_path / "report.png", max_height=3000)
        errors, requests = list(page.errors), list(page.requests)
    assert errors == []
    assert all(u == page_file.as_uri() or u.startswith("data:") for u in requests), requests
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert width == 1280 and height > 900
    keep = os.environ.get("STRUCTPERC_SCREENSHOTS")  # a folder to keep the screenshot in
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / "test_report.png").write_bytes(png)


@pytest.fixture(scope="module")
def one_epoch_model(tmp_path_factory, synthetic_dir) -> Path:
    """A chain on token attributes after one epoch on two documents: it still makes errors."""
    from hydra_runs import TOKEN_FEATURES

    overrides = ["+experiment=conll03_local", "trainer.max_epochs=1", "data.train_docs=2"]
    overrides += TOKEN_FEATURES
    return trained_run(tmp_path_factory, synthetic_dir, "one_epoch", overrides)


def test_tensorboard_gets_per_type_f1_and_the_error_classes_of_every_evaluation(one_epoch_model):
    """The last evaluation (the final averaged weights, max_epochs reached) counts what the
    dev predictions hold."""
    token_model = one_epoch_model
    from structperc.eval.chunks import evaluate
    from structperc.eval.errors import CLASSES, class_totals
    from structperc.report.run_folder import read_scalars

    scalars = read_scalars(token_model / "tb")
    items = read_predictions(token_model / "dev.pred.txt")
    gold, pred = [p.doc.tags for p in items], [p.pred for p in items]
    starts = [p.doc.sentence_starts for p in items]
    scores = evaluate(gold, pred, starts)
    epochs = len(scalars["dev/f1"])
    for typ, s in scores.per_type.items():
        assert len(scalars[f"dev/f1/{typ}"]) == epochs
        assert scalars[f"dev/f1/{typ}"][-1][1] == pytest.approx(s.f1, abs=1e-4)
    errors = chunk_errors(gold, pred, starts)
    assert errors  # something to count
    for kind, n in class_totals(errors).items():
        assert scalars[f"dev/errors/{kind.replace(' ', '_')}"][-1][1] == n
    for typ, classes in error_counts(errors).items():
        assert [scalars[f"dev/errors/{typ}/{k.replace(' ', '_')}"][-1][1] for k in CLASSES] == list(
            classes.values()
        )
