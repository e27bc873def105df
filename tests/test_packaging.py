"""Packaging: the console scripts find their configs, and a wheel carries the package and conf/.

Hydra reads a relative ``config_path`` as a Python package when the decorated function is not
in ``__main__``, which is how a console script (``structperc-train``, ``structperc-tag``) calls
it; ``python -m`` hid that.  These run the entry points the way the scripts do.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from structperc.cli import config_dir

ROOT = Path(__file__).resolve().parents[1]


def _as_console_script(
    module: str, *args: str, cwd: Path, function: str = "main"
) -> subprocess.CompletedProcess:
    """Call ``module.function`` from a plain import, as the generated console script does."""
    code = f"import sys; from {module} import {function} as run; sys.argv[0] = 'x'; run()"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "module, header",
    [("structperc.run", "structperc-train — "), ("structperc.predict", "structperc-tag — ")],
)
def test_console_scripts_find_their_configs_from_any_folder(module, header, tmp_path):
    done = _as_console_script(module, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(header)  # our help text (conf/hydra/help/), from conf/


def _console_scripts() -> dict[str, str]:
    """pyproject.toml's ``[project.scripts]``: name -> "module:function"."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^\[project\.scripts\]\n(.*?)\n\n", text, re.S | re.M)
    assert block, "pyproject.toml: [project.scripts] not found"
    return dict(re.findall(r'^([\w-]+) = "([\w.:]+)"$', block.group(1), re.M))


def test_the_installed_console_scripts_show_their_help(tmp_path):
    scripts = _console_scripts()
    assert set(scripts) == {
        "structperc-train",
        "structperc-tag",
        "structperc-serve",
        "structperc-explain",
        "structperc-report",
    }
    for name, target in scripts.items():
        module, function = target.split(":")
        done = _as_console_script(module, "--help", cwd=tmp_path, function=function)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"{name} — ")


def test_config_dir_prefers_the_packaged_copy(tmp_path):
    package = tmp_path / "site" / "structperc"
    (package / "conf").mkdir(parents=True)
    (tmp_path / "site" / "conf").mkdir()
    for folder in (package / "conf", tmp_path / "site" / "conf"):
        (folder / "config.yaml").write_text("{}\n")
    assert config_dir(package) == str(package / "conf")  # a wheel
    (package / "conf" / "config.yaml").unlink()
    assert config_dir(package) == str(tmp_path / "site" / "conf")  # a checkout
    assert Path(config_dir(), "config.yaml").is_file()  # this one


def _listed_packages() -> set[str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^packages = \[(.*?)\]", text, re.S | re.M)
    assert block, "pyproject.toml: [tool.setuptools] packages = [...] not found"
    return set(re.findall(r'"([\w.]+)"', block.group(1)))


def test_pyproject_lists_every_package():
    on_disk = {
        ".".join(d.relative_to(ROOT).parts)
        for d in (ROOT / "structperc").rglob("*")
        if d.is_dir() and d.name != "__pycache__" and any(d.glob("*.py"))
    } | {"structperc"}
    assert _listed_packages() == on_disk | {"structperc.conf"}


def test_wheel_holds_every_module_and_config(tmp_path):
    pytest.importorskip("setuptools", reason="building the wheel offline needs setuptools")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("structperc-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {str(p.relative_to(ROOT)) for p in (ROOT / "structperc").rglob("*.py")}
    conf = ROOT / "conf"
    configs = {f"structperc/conf/{p.relative_to(conf)}" for p in conf.rglob("*.yaml")}
    assert modules <= names, sorted(modules - names)[:5]
    assert configs <= names, sorted(configs - names)[:5]
