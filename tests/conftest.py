"""Shared pytest fixtures: where the real CoNLL data lives, and the rule that what a test needs
must be there when a run says so.

Tests marked ``realdata`` take the ``data_dir`` fixture.  It points at ``$STRUCTPERC_DATA`` or,
failing that, ``../shared/data`` beside the repository, and skips with a reason when neither
holds the data.  With ``STRUCTPERC_REQUIRE_DATA=1`` (set by ``.ci/run``) a skipped ``realdata``
test is reported as a failure instead, so a missing data folder cannot pass CI silently.  Tests
marked ``cuda`` (``tests/test_gpu.py``) skip with a reason where torch sees no CUDA device; with
``STRUCTPERC_REQUIRE_CUDA=1`` (set it on a GPU machine) such a skip is a failure, so a torch
built without CUDA or a machine without a driver cannot pass for a GPU run.  Tests marked
``chromium`` (the report page in a headless browser) skip where Debian's chromium is not on
PATH; ``.ci/run`` installs it and sets ``STRUCTPERC_REQUIRE_CHROMIUM=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]  # tests/test_required_skips.py runs this conftest's rule

REPO_ROOT = Path(__file__).resolve().parent.parent
# marker -> the variable that, set to 1, makes a skipped test of that marker a failure
REQUIRE_ENV = {
    "realdata": "STRUCTPERC_REQUIRE_DATA",
    "cuda": "STRUCTPERC_REQUIRE_CUDA",
    "chromium": "STRUCTPERC_REQUIRE_CHROMIUM",
}


def _candidate_data_dirs() -> list[Path]:
    found = []
    env = os.environ.get("STRUCTPERC_DATA")
    if env:
        found.append(Path(env))
    found.append(REPO_ROOT.parent / "shared" / "data")
    return found


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The folder holding ``conll2003/`` and ``conll2000/``; skips the test when absent."""
    candidates = _candidate_data_dirs()
    for path in candidates:
        if (path / "conll2003" / "train.txt").is_file():
            return path
    tried = ", ".join(str(p) for p in candidates)
    pytest.skip(f"real CoNLL data not found (tried {tried}); set STRUCTPERC_DATA to its folder")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.skipped:
        return
    for marker, env in REQUIRE_ENV.items():
        if os.environ.get(env) == "1" and item.get_closest_marker(marker) is not None:
            reason = getattr(call.excinfo.value, "msg", call.excinfo.value) if call.excinfo else ""
            report.outcome = "failed"
            report.longrepr = f"{env}=1, so a {marker} test may not skip: {reason}"
            return


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """One intra-op thread: the tests' tensors are tiny, and on a busy 2-core machine a second
    thread makes each small op wait for the other core (milliseconds instead of microseconds)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# -- the trained models the tagging tests share (test_tag_*.py): trained once a session ---------
@pytest.fixture(scope="session")
def synthetic_dir(tmp_path_factory) -> Path:
    """A synthetic CoNLL-2003 folder: 30 training, 10 dev and 10 test documents."""
    from hydra_runs import write_synthetic_conll2003

    sizes = {"train": 30, "dev": 10, "test": 10}
    return write_synthetic_conll2003(tmp_path_factory.mktemp("data"), sizes)


@pytest.fixture(scope="session")
def token_model(tmp_path_factory, synthetic_dir) -> Path:
    """A chain on token attributes alone (it needs no POS or chunk column), 4 epochs."""
    from hydra_runs import TOKEN_FEATURES, trained_run

    overrides = ["+experiment=conll03_local", "trainer.max_epochs=4", *TOKEN_FEATURES]
    return trained_run(tmp_path_factory, synthetic_dir, "tokens", overrides)


@pytest.fixture(scope="session")
def column_model(tmp_path_factory, synthetic_dir) -> Path:
    """A chain whose features read the POS and chunk columns, 2 epochs."""
    from hydra_runs import trained_run

    overrides = ["+experiment=conll03_local", "trainer.max_epochs=2", "features.gazetteer=none"]
    return trained_run(tmp_path_factory, synthetic_dir, "columns", overrides)


@pytest.fixture(scope="session")
def nonlocal_model(tmp_path_factory, synthetic_dir) -> Path:
    """A small model with non-local features (the main job's structure), n' = 8."""
    from hydra_runs import trained_run

    overrides = ["+experiment=conll03_nonlocal", "features.gazetteer=none"]
    overrides += ["trainer.max_epochs=2", "learner.n=5", "learner.bpm_runs=2", "decoder.n_test=8"]
    return trained_run(tmp_path_factory, synthetic_dir, "nonlocal", overrides)


@pytest.fixture(scope="session")
def synthetic_tagger(tmp_path_factory) -> Path:
    """A column tagger (``+experiment=conll00_tagchunk``, 1 epoch) trained on synthetic
    CoNLL-2000 sentences: a run folder with ``pos/`` and ``chunk/`` models, in seconds."""
    from hydra_runs import trained_run

    from structperc.data.synthetic import make_corpus

    root = tmp_path_factory.mktemp("data2000")
    (root / "conll2000").mkdir()
    for split, n, seed in (("train", 30, 1), ("test", 5, 2)):
        lines = []
        for d in make_corpus(n, seed=seed):
            columns = zip(d.tokens, d.columns["pos"], d.columns["chunk"], strict=True)
            rows = [" ".join(row) for row in columns]
            lines += [line for s, e in d.sentence_spans() for line in [*rows[s:e], ""]]
        (root / "conll2000" / f"{split}.txt").write_text("\n".join(lines) + "\n")
    overrides = ["+experiment=conll00_tagchunk", "task.dev_sentences=0", "trainer.max_epochs=1"]
    overrides += ["task.chunk_train_pos=given", "cache_dir=null"]
    return trained_run(tmp_path_factory, root, "tagger", overrides)
