"""The package's shape, read from its source with ``ast``: imports flow one way, no module imports
itself back through others, and only the entry points import the config libraries (a task's
builder reads the composed config that ``run.ComposedConfig`` lends it)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "structperc"
ENTRY_POINTS = {"structperc.run", "structperc.predict"}  # the Hydra entries
CONSOLE = "structperc.console"  # the console scripts: they import the entry points
CONFIG_LIBRARIES = ("hydra", "omegaconf")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runtime_imports(path: Path) -> set[str]:
    """The modules ``path`` imports when it runs (``if TYPE_CHECKING:`` blocks left out)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else None
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from .x import y
                anchor = (package or module_name(path)).split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """Module -> the structperc modules it imports."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    out = {}
    for name, path in files.items():
        out[name] = {m for m in runtime_imports(path) if m in files and m != name}
    return out


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_is_read(graph):
    assert "structperc.trainer" in graph["structperc.tasks.training"]
    assert "structperc.learn.base" in graph["structperc.trainer"]
    # a TYPE_CHECKING import is not a runtime edge
    assert "structperc.model.updates" not in graph["structperc.learn.base"]


def test_the_fitting_vocabulary_is_a_leaf(graph):
    """Every learner, online or not, is written against ``learn/fitting.py``, which stands on
    nothing of the package but the process groups: no learner needs the training loop."""
    assert graph["structperc.learn.fitting"] <= {"structperc.distributed"}
    for module, imports in graph.items():
        if module.startswith(("structperc.learn", "structperc.crf", "structperc.rerank")):
            assert "structperc.trainer" not in imports, module


def test_no_import_cycles(graph):
    assert strongly_connected(graph) == []


def test_the_cycle_finder_finds_cycles():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(g) == [["a", "b", "c"]]


def test_only_the_entry_points_import_the_config_libraries():
    readers = sorted(
        module_name(p)
        for p in PACKAGE.rglob("*.py")
        if any(m.split(".")[0] in CONFIG_LIBRARIES for m in runtime_imports(p))
    )
    assert set(readers) <= ENTRY_POINTS, readers


def test_nothing_below_imports_an_entry_point(graph):
    for module, imports in graph.items():
        if module != CONSOLE:  # the console scripts, above them
            assert not (imports & ENTRY_POINTS), f"{module} imports {imports & ENTRY_POINTS}"


LAYERS = [  # lower layers never import higher ones
    {
        "structperc.io",
        "structperc.lazy",
        "structperc.plugins",
        "structperc.monitor",
        "structperc.progress",
        "structperc.cli",
        "structperc.forking",
    },
    {"structperc.distributed"},
    {"structperc.data", "structperc.eval"},
    {"structperc.wordclasses"},
    {"structperc.features"},
    {"structperc.model", "structperc.decode", "structperc.checkpoint"},
    {"structperc.structures"},
    {"structperc.learn", "structperc.explain"},
    {"structperc.trainer", "structperc.crf", "structperc.rerank", "structperc.native"},
    {"structperc.inference"},
    {"structperc.tasks", "structperc.sklearn"},
    {
        "structperc.run",
        "structperc.predict",
        "structperc.serve",
        "structperc.explaining",
        "structperc.report",
        "structperc.tagger",
    },
    {CONSOLE},
]


def layer_of(module: str) -> int:
    for i, layer in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in layer):
            return i
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS")


def test_imports_flow_one_way(graph):
    # model and decode sit side by side: the label-chunk weights build the DP's potentials
    upward = [
        (m, i)
        for m, imports in graph.items()
        if m != "structperc"
        for i in imports
        if layer_of(i) > layer_of(m)
    ]
    assert upward == []


DIAGRAM_ROOMS = {  # the architecture page's boxes -> the package's modules they stand for
    "data": ("structperc.data",),
    "features": ("structperc.features",),
    "decode": ("structperc.decode",),
    "model": ("structperc.model",),
    "structures": ("structperc.structures",),
    "learn": ("structperc.learn",),
    "train": ("structperc.trainer",),
    "crf": ("structperc.crf",),
    "rerank": ("structperc.rerank",),
    "tasks": ("structperc.tasks",),
    "sklearn": ("structperc.sklearn",),
    "inference": ("structperc.inference",),
    "run": ("structperc.run", "structperc.predict", "structperc.serve"),
}
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def room_of(module: str) -> str | None:
    for room, prefixes in DIAGRAM_ROOMS.items():
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return room
    return None


def drawn_arrows(readme: str) -> set[tuple[str, str]]:
    """The solid arrows ``a --> b`` of a page's mermaid diagram (b imports a)."""
    block = readme.split("```mermaid", 1)[1].split("```", 1)[0]
    return set(re.findall(r"(\w+)(?:\[[^\]]*\])?\s*-->\s*(\w+)", block))


def closure(arrows: set[tuple[str, str]]) -> set[tuple[str, str]]:
    out = set(arrows)
    while True:
        more = {(a, d) for a, b in out for c, d in out if b == c} - out
        if not more:
            return out
        out |= more


def test_the_architecture_diagram_is_the_import_graph(graph):
    """Every arrow drawn is an import, and every import between the drawn rooms follows the
    arrows (the diagram may leave out what a path of arrows already says)."""
    real = {
        (room_of(imported), room_of(module))
        for module, imports in graph.items()
        for imported in imports
        if room_of(imported) and room_of(module) and room_of(imported) != room_of(module)
    }
    drawn = drawn_arrows(ARCHITECTURE.read_text())
    assert {a for arrow in drawn for a in arrow} <= set(DIAGRAM_ROOMS), drawn
    assert drawn - real == set(), "drawn, not imported"
    assert real - closure(drawn) == set(), "imported, not drawn"


def test_the_diagram_check_sees_a_missing_arrow():
    drawn = drawn_arrows('x\n```mermaid\nflowchart LR\n  a["A"] --> b\n  b --> c\n```\n')
    assert drawn == {("a", "b"), ("b", "c")}
    assert ("a", "c") in closure(drawn)
    assert {("c", "a")} - closure(drawn) == {("c", "a")}


def test_no_compiled_kernel_calls_another_modules(graph):
    """numba's cache of a compiled function is keyed by its own file: a kernel calling one of
    another module would keep a stale copy of it when only that module changes (and crash on a
    changed signature).  So the kernel modules of native/ import none of each other."""
    kernels = [m for m in graph if m.startswith("structperc.native.") and m.endswith("_kernels")]
    assert len(kernels) >= 6
    for module in kernels:
        assert not [m for m in graph[module] if m in kernels], module
