"""User plugins: a feature function registered in a module outside the package trains (the
``plugins=`` setting), and the model records the module, so tagging through the command line,
serving and loading import it again before the model loads; the face records its plugins in
its model and imports them when it is unpickled."""

from __future__ import annotations

import asyncio
import json
import pickle
import sys

import pytest
from hydra_runs import run_main, tag_cli, write_synthetic_conll2003

from structperc.features.functions import unregister_attribute
from structperc.inference.files import TaggerSettings
from structperc.inference.tagger import Tagger
from structperc.plugins import forget_plugin, import_plugins, plugin_names, recorded_plugins

PLUGIN = "my_vowels_plugin"
SOURCE = '''"""A user's feature function, outside structperc."""
from structperc.features.functions import register_attribute

LOADS = []  # one entry per import of this module


@register_attribute("vowel_skeleton")
def vowel_skeleton(value):
    return "".join(c for c in value.lower() if c in "aeiou") or None


LOADS.append(1)
'''


def unload() -> None:
    """As in a new process: the module not imported, its function not registered."""
    forget_plugin(PLUGIN)
    unregister_attribute("vowel_skeleton")


@pytest.fixture(scope="module")
def plugin_run(tmp_path_factory):
    """A run whose templates use the plugin's function (1 epoch on synthetic documents)."""
    root = tmp_path_factory.mktemp("plugin")
    (root / "code").mkdir()
    (root / "code" / f"{PLUGIN}.py").write_text(SOURCE)
    sys.path.insert(0, str(root / "code"))
    (root / "data").mkdir()
    data = write_synthetic_conll2003(root / "data", {"train": 12, "dev": 3, "test": 3})
    overrides = [
        "+experiment=conll03_local",
        "features=templates",
        'features.templates=["w[0]","vowel_skeleton(w[0])","vowel_skeleton(w[-1])/w[0]"]',
        "features.min_count=1",
        f"plugins=[{PLUGIN}]",
        "trainer.max_epochs=1",
        f"cache_dir={root / 'cache'}",
    ]
    mp = pytest.MonkeyPatch()
    try:
        _, results = run_main(overrides, data, root / "run", mp)
    finally:
        mp.undo()
    yield root / "run", data, results
    unload()
    sys.path.remove(str(root / "code"))


def test_the_model_records_the_plugin(plugin_run):
    run, _, results = plugin_run
    meta = json.loads((run / "model.json").read_text())
    assert meta["plugins"] == [PLUGIN]
    assert "vowel_skeleton(w[0])" in meta["features"]["feature_templates"]["lines"]
    assert results["test"]["f1"] > 0


def test_tagging_through_the_command_line_imports_it(plugin_run, tmp_path):
    run, data, results = plugin_run
    unload()
    out = tmp_path / "tagged.txt"
    test = data / "conll2003" / "test.txt"
    done = tag_cli(f"model={run}", f"input={test}", f"output={out}")
    assert done.returncode == 0, done.stderr
    assert PLUGIN in sys.modules and out.read_text().count("\n") > 10
    assert f"{results['test']['f1']:.2f}" in done.stdout


def test_serving_imports_it(plugin_run):
    pytest.importorskip("starlette")
    from structperc.inference.model_card import model_card
    from structperc.inference.service import make_app

    run, _, _ = plugin_run
    unload()
    tagger = TaggerSettings(model=str(run)).load()  # as structperc-serve loads it
    assert PLUGIN in sys.modules
    tokens = "John Smith lives in Paris .".split()
    status, body = asyncio.run(post(make_app(tagger, model_card(tagger, None)), "/tag", tokens))
    assert status == 200 and body == {"tags": tagger.tag(tokens)}


async def post(app, path: str, tokens: list[str]) -> tuple[int, dict]:
    """One JSON request to the ASGI ``app`` inside its lifespan: (status, body)."""
    sent: list[dict] = []
    body = json.dumps({"tokens": tokens}).encode()

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"host", b"test")],
        "client": ("127.0.0.1", 1),
        "server": ("test", 80),
    }
    async with app.router.lifespan_context(app):
        await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    answer = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(answer)


def test_loading_imports_it_and_a_missing_one_is_named(plugin_run, tmp_path):
    run, _, _ = plugin_run
    unload()
    assert Tagger.load(run).tag(["Paris", "is", "big"])
    assert PLUGIN in sys.modules
    meta = json.loads((run / "model.json").read_text())
    (tmp_path / "model.json").write_text(json.dumps({**meta, "plugins": ["no_such_plugin_x"]}))
    (tmp_path / "model.safetensors").write_bytes((run / "model.safetensors").read_bytes())
    with pytest.raises(ValueError, match=r"model.json: plugin 'no_such_plugin_x' cannot be"):
        Tagger.load(tmp_path)


def test_the_face_records_its_plugins_and_imports_them_when_unpickled(plugin_run):
    pytest.importorskip("sklearn")
    import structperc

    X = [[{"w": "Paris"}, {"w": "is"}], [{"w": "Rome"}]]
    y = [["B-LOC", "O"], ["B-LOC"]]
    crf = structperc.CRF(algorithm="ap", max_iterations=2, plugins=[PLUGIN]).fit(X, y)
    assert PLUGIN in crf.model_.info["plugins"]
    stored = pickle.dumps(crf)
    unload()
    loaded = pickle.loads(stored)
    assert PLUGIN in sys.modules
    assert loaded.predict(X).tolist() == crf.predict(X).tolist()


def test_plugin_names_and_what_a_model_records():
    assert plugin_names(None) == [] and plugin_names("a.b,c") == ["a.b", "c"]
    assert plugin_names("[a, b]") == ["a", "b"] and plugin_names(["x"]) == ["x"]
    with pytest.raises(ValueError, match="expected a list of module names"):
        plugin_names(3)
    with pytest.raises(ValueError, match="plugins: plugin 'no_such_plugin_y' cannot be imported"):
        import_plugins(["no_such_plugin_y"])
    assert "__main__" not in recorded_plugins(["__main__", "structperc.features.functions"])
    assert "structperc.features.functions" not in recorded_plugins()
