"""The documentation cannot rot: every code block of the docs and the README runs here or says
why it is illustrative, every extending example runs, every public name has a docstring and a
place in the API reference, every capability has its guide page, and (where MkDocs is
installed) the site builds with no warning.

Code blocks: a ``python`` block runs, in the order of its page, in one namespace per page and in
a fresh working folder (the examples make their own small data).  Any other code block (shell,
an unnamed language) is preceded by a line ``<!-- illustrative: REASON -->``, which a ``python``
block may carry too; a ``python`` block that includes a file of ``docs/examples/``
(``--8<-- "docs/examples/NAME.py"``) is that file, which runs as a script; blocks of data
(``text``, ``yaml``, ``json``, ``mermaid``, ``conll``, ``tpl``) are shown, not run.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted([*DOCS.rglob("*.md"), ROOT / "README.md"])
EXAMPLES = sorted((DOCS / "examples").glob("*.py"))
RUN = {"python", "py"}
DATA = {"text", "yaml", "json", "mermaid", "conll", "tpl"}
ILLUSTRATIVE = re.compile(r"^\s*<!-- illustrative: (?P<reason>\S.*?) -->\s*$")
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)")

# The capabilities of the guide, each with its page (docs/guide/)
CAPABILITIES = {
    "your own data": "your-own-data.md",
    "feature templates": "feature-templates.md",
    "word classes": "word-classes.md",
    "learners and their settings": "learners.md",
    "the CRF": "crf.md",
    "non-local features and n-best": "non-local-features.md",
    "joint tagging and chunking": "joint-tagging-chunking.md",
    "reranking": "reranking.md",
    "sweeps and TensorBoard": "sweeps-tensorboard.md",
    "distributed training": "distributed.md",
    "GPU": "gpu.md",
    "the scikit-learn face": "sklearn-face.md",
    "explanations and the report": "explanations-report.md",
    "serving": "serving.md",
    "scaling and warm starts": "scaling-warm-starts.md",
    "partial labels": "partial-labels.md",
}


@dataclass(frozen=True)
class Block:
    """A fenced code block: its page, first line, language, code and illustrative reason."""

    page: Path
    line: int
    lang: str
    code: str
    reason: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of ``page``, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out, i, previous = [], 0, ""
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                previous = lines[i]
            i += 1
            continue
        indent, fence, start = len(m["indent"]), m["fence"], i
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        reason = ILLUSTRATIVE.match(previous)
        out.append(
            Block(page, start + 1, m["lang"].lower(), "\n".join(body), reason and reason["reason"])
        )
        previous, i = "", i + 1
    return out


def runnable(page: Path) -> list[Block]:
    """The python blocks of ``page`` that run here: not illustrative, and not the include of
    an example file (``--8<-- "docs/examples/..."``: those run as scripts, below)."""
    return [
        b
        for b in blocks(page)
        if b.lang in RUN and b.reason is None and not b.code.startswith("--8<--")
    ]


def test_every_code_block_runs_or_says_why_not():
    unmarked = [
        b.where for page in PAGES for b in blocks(page) if b.lang not in RUN | DATA and not b.reason
    ]
    assert unmarked == [], "mark these <!-- illustrative: REASON --> or make them python"


def test_the_block_reader(tmp_path):
    page = tmp_path / "probe.md"
    page.write_text(
        "a\n\n<!-- illustrative: needs a GPU -->\n```bash\nmake x\n```\n\n"
        "- item\n\n  ```py\n  x = 1\n  ```\n"
    )
    found = blocks(page)
    assert [(b.lang, b.code, b.reason) for b in found] == [
        ("bash", "make x", "needs a GPU"),
        ("py", "x = 1", None),
    ]


@pytest.mark.parametrize(
    "page", [p for p in PAGES if runnable(p)], ids=lambda p: str(p.relative_to(ROOT))
)
def test_the_python_examples_of_a_page_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STRUCTPERC_DATA", str(tmp_path))  # the examples bring their data
    namespace: dict = {"__name__": "__docs__"}
    for block in runnable(page):
        try:
            exec(compile(block.code, block.where, "exec"), namespace)
        except Exception as err:
            raise AssertionError(f"{block.where}: {type(err).__name__}: {err}") from err


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_an_extending_example_runs_as_a_script(example, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("STRUCTPERC_DATA", None)
    done = subprocess.run(
        [sys.executable, str(example)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip()


def test_every_extending_example_is_shown_on_its_page():
    shown = "\n".join(p.read_text() for p in (DOCS / "extending").glob("*.md"))
    for example in EXAMPLES:
        assert f'--8<-- "docs/examples/{example.name}"' in shown, example.name


# -- the API reference -------------------------------------------------------------------------
def public_packages() -> list[str]:
    """``structperc`` and every package under it."""
    names = ["structperc"]
    for init in sorted((ROOT / "structperc").rglob("__init__.py")):
        parts = init.parent.relative_to(ROOT).parts
        if "__pycache__" not in parts and len(parts) > 1:
            names.append(".".join(parts))
    return names


def reference_text() -> str:
    return "\n".join(p.read_text() for p in sorted((DOCS / "reference").glob("*.md")))


def attribute_docstring(package: str, name: str) -> str | None:
    """The docstring of the module-level assignment ``name = ...`` in ``package``'s files (a
    string right after it: what the reference shows of a constant), or None."""
    folder = ROOT / Path(*package.split("."))
    for path in sorted(folder.rglob("*.py")):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        for node, after in zip(body, body[1:], strict=False):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", 0)]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                    return after.value.value
    return None


def docstring(package: str, name: str, value) -> str | None:
    """A public name's docstring: its own (a module, class or function), else its assignment's."""
    if inspect.ismodule(value) or inspect.isclass(value) or inspect.isroutine(value):
        return inspect.getdoc(value)
    return attribute_docstring(package, name)


def documented() -> set[str]:
    """What the reference pages render: the ``::: name`` lines."""
    return set(re.findall(r"^::: ([\w.]+)", reference_text(), re.MULTILINE))


@pytest.mark.parametrize("package", public_packages())
def test_a_package_states_its_public_names_each_documented(package):
    module = importlib.import_module(package)
    assert module.__doc__ and module.__doc__.strip(), f"{package}: no module docstring"
    names = getattr(module, "__all__", None)
    assert names, f"{package}: no __all__"
    shown = documented()
    for name in names:
        value = getattr(module, name)
        assert docstring(package, name, value), f"{package}.{name}: no docstring"
        if inspect.ismodule(value):  # a package whose public names are its modules (decode)
            assert value.__name__ in shown, f"{value.__name__} is on no reference page"
    assert package in shown, f"{package} is on no reference page (docs/reference/)"


def test_every_capability_has_its_guide_page():
    nav = yaml.safe_load(
        (ROOT / "mkdocs.yml").read_text().replace("!!python/name:", "")
    )  # (the tag is the build's)
    listed = re.findall(r"guide/[\w-]+\.md", str(nav["nav"]))
    for capability, page in CAPABILITIES.items():
        path = DOCS / "guide" / page
        assert path.is_file(), f"{capability}: no page {path}"
        assert f"guide/{page}" in listed, f"{capability}: guide/{page} is not in mkdocs.yml's nav"
        assert len(path.read_text().split()) > 80, f"{capability}: {page} is a stub"


def test_the_includes_of_the_pages_resolve():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from docs_hooks import INCLUDE, included, section_of
    finally:
        sys.path.remove(str(ROOT / "tools"))
    for page in DOCS.rglob("*.md"):
        text = page.read_text()
        for m in INCLUDE.finditer(text):
            assert section_of(m["path"], m["section"]).strip(), m[0]
        assert "<!-- include:" not in included(text)
    with pytest.raises(ValueError, match="has no section 'nothing'"):
        section_of("experiments/kazama2007/README.md", "nothing")


def test_the_readme_is_short_and_its_figures_are_the_experiments():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= 12 * 1024
    rows = [line for line in readme.splitlines() if line.startswith("|") and "](" in line]
    assert rows, "the README's headline table"
    for row in rows:
        source = ROOT / re.search(r"\]\(([^)#]+)", row)[1]
        text = source.read_text(encoding="utf-8")
        for figure in re.findall(r"\b\d+\.\d+\b", row.split("](")[0]):
            assert figure in text, f"{figure} of the README is not in {source.relative_to(ROOT)}"


# -- the site ----------------------------------------------------------------------------------
def test_the_site_builds_with_no_warning(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or "mkdocs"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [mkdocs, "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0 and "WARNING" not in log, log[-3000:]
    inventory = (tmp_path / "site" / "objects.inv").read_bytes()
    body = zlib.decompress(inventory.split(b"\n", 4)[4]).decode()
    objects = {line.split(" ", 1)[0] for line in body.splitlines()}
    for package in public_packages():
        module = importlib.import_module(package)
        for name in module.__all__:
            value = getattr(module, name)
            full = value.__name__ if inspect.ismodule(value) else f"{package}.{name}"
            assert full in objects, f"{full} is not in the built API reference"
