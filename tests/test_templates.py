"""Feature templates from config: the grammar, its functions, per-template options, errors, the
registry of users' functions, and Kazama & Torisawa's Table 1 as a preset equal to the named
attributes (real CoNLL-2003 slices)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from structperc.data.document import Document
from structperc.features.functions import (
    TemplateError,
    register_attribute,
    short_word_shape,
    unregister_attribute,
    word_shape,
)
from structperc.features.pipeline import LocalFeatures
from structperc.features.template_features import CompiledTemplates, read_template_specs
from structperc.features.template_language import expand, parse_template, parse_templates
from structperc.model.batch import make_batch
from structperc.model.updates import path_delta
from structperc.model.weights import ChainWeights
from structperc.structures.chain import ChainStructure


def doc(words, pos=None, **columns) -> Document:
    cols = {"pos": pos or ["NN"] * len(words), **columns}
    return Document(tokens=list(words), columns=cols, tags=["O"] * len(words))


def lines(text: str, columns=("w", "pos")) -> list[str]:
    return [s.line() for s in expand([parse_template(text, "t")], list(columns))]


def strings(features: LocalFeatures, docs: list[Document]) -> list[list[str]]:
    """Per token, its feature strings."""
    fm = features.transform(docs)
    ids, off = fm.ids.tolist(), fm.offsets.tolist()
    vocab = features.vocab
    return [[vocab.feature_string(f) for f in ids[a:b]] for a, b in zip(off, off[1:], strict=False)]


# -- grammar ----------------------------------------------------------------------------------
def test_grammar_expands_ranges_globs_and_keeps_options():
    assert lines("w[-1..1]") == ["w[-1]", "w[0]", "w[1]"]
    assert lines("token[+1]") == ["w[1]"]
    assert lines("lower(w[-2..0])/lower(w[-1..1])") == [
        "lower(w[-2])/lower(w[-1])",
        "lower(w[-1])/lower(w[0])",
        "lower(w[0])/lower(w[1])",
    ]
    assert lines("w[-1..0]/pos[0]") == ["w[-1]/pos[0]", "w[0]/pos[0]"]
    assert lines("x_*[0]/x_*[1]", ["w", "x_a", "pos", "x_b"]) == ["x_a[0]/x_a[1]", "x_b[0]/x_b[1]"]
    assert lines("nothing*[0]") == []
    assert lines("cluster[0][:4]  min_count=1", ["w", "cluster"]) == ["cluster[0][:4] min_count=1"]
    assert lines("shape(w[0])[-2:] edges=false") == ["shape(w[0])[-2:] edges=false"]
    assert lines("gl[0] optional=true") == []
    assert lines("bias # the bias") == ["bias"]
    spec = parse_template("suffix3(lower(w[-1]))", "t")
    assert [p.attribute() for p in spec.parts] == ["suffix3(lower(w))"]
    # a written line parses back to itself
    for line in ["cluster[0][:4] min_count=1", "pos[-1]/pos[0]", "shape(w[0]) edges=false"]:
        assert parse_template(line).line() == line


@pytest.mark.parametrize(
    "text, message",
    [
        ("w[0", "f.tpl:3: template 'w[0': expected ']' at the end"),
        ("w", "expected '[offset]' after a column or '(' after a function"),
        ("w[0]/", "expected a column or function name at the end"),
        ("w[x]", "expected an integer offset at 'x]'"),
        ("w[1..-1]", "expected a range from low to high (got 1..-1)"),
        ("w[0][:0]", "expected a slice of at least one character"),
        ("w[0][2]", "expected a slice '[:N]' or '[-N:]'"),
        ("w[-1..1]/pos[0..1]", "must be as long in every part (got [3, 2] offsets)"),
        ("w[0] min_count=two", "min_count='two', expected a count"),
        ("w[0] edges=maybe", "edges='maybe', expected true or false"),
        ("w[0] colour=red", "unknown option 'colour'"),
        ("nosuch(w[0])", "unknown template function 'nosuch'; known: lower, shape"),
        ("a*[0]/b*[0]", "one glob pattern a template"),
    ],
)
def test_parse_errors_name_the_template_and_what_was_expected(text, message):
    with pytest.raises(TemplateError, match="^f.tpl:3: ") as err:
        parse_template(text, "f.tpl:3")
    assert message in str(err.value)


def test_a_missing_column_is_named_with_the_present_ones(tmp_path):
    path = tmp_path / "my.tpl"
    path.write_text("# comment\nw[0]\n\nlemma[-1]/w[0]\n")
    specs = read_template_specs(None, str(path))
    with pytest.raises(TemplateError) as err:
        expand(specs, ["w", "pos", "chunk"])
    assert str(err.value) == (
        f"{path}:4: template 'lemma[-1]/w[0]' names the column 'lemma', which the corpus and "
        "features lack; present: w, pos, chunk"
    )
    features = LocalFeatures(gazetteer="none", templates=["lemma[0]"])
    with pytest.raises(TemplateError, match=r"features.templates\[0\]: .*'lemma'.*present: w, pos"):
        features.fit([doc(["a", "b"])])
    with pytest.raises(FileNotFoundError, match="a preset: kazama"):
        read_template_specs(None, str(tmp_path / "absent.tpl"))


# -- functions ----------------------------------------------------------------------------------
def test_functions_prefixes_and_flags_give_their_values():
    assert word_shape("Mr.-2x") == "Xx.-dx" and short_word_shape("Paris") == "Xx"
    words = ["Paris", "1996", "A8", "12-3", "1/2", "1,000", "1.5", "123", "EU", "the", "J.", "96"]
    templates = [
        "lower(w[0])",
        "shape(w[0])",
        "short_shape(w[0])",
        "length(w[0])",
        "prefix3(w[0])",
        "suffix2(w[0])",
        "w[0][:2]",
        "w[0][-3:]",
        *(
            f"{f}(w[0])"
            for f in "twodigits fourdigits digit_alpha digit_dash digit_slash digit_comma "
            "digit_period number initcap allcaps alllower capperiod".split()
        ),
    ]
    compiled = CompiledTemplates(parse_templates(templates, "features.templates"))
    cols = compiled.columns({"w": words}, [(0, len(words))], flag_off="0")
    assert cols["lower(w)"][0] == "paris" and cols["shape(w)"][3] == "dd-d"
    assert cols["short_shape(w)"][0] == "Xx" and cols["length(w)"][2] == "2"
    assert cols["prefix3(w)"][:3] == ["Par", "199", None]  # only words of >= 3 characters
    assert cols["suffix2(w)"][:3] == ["is", "96", "A8"]
    assert cols["w[:2]"][:3] == ["Pa", "19", "A8"] and cols["w[-3:]"][2] == "A8"  # all if shorter
    on = {n: [w for w, v in zip(words, vs, strict=True) if v == "1"] for n, vs in cols.items()}
    assert on["twodigits(w)"] == ["96"] and on["fourdigits(w)"] == ["1996"]
    assert on["digit_alpha(w)"] == ["A8"] and on["digit_dash(w)"] == ["12-3"]
    assert on["digit_slash(w)"] == ["1/2"] and on["digit_comma(w)"] == ["1,000"]
    assert on["digit_period(w)"] == ["1.5"] and on["number(w)"] == ["123"]
    assert on["initcap(w)"] == ["Paris", "A8", "EU", "J."]
    assert on["allcaps(w)"] == ["A8", "EU", "J."]
    assert on["alllower(w)"] == ["the"] and on["capperiod(w)"] == ["J."]
    assert cols["capperiod(w)"][0] == "0"  # flag_off where a flag does not hold


def test_brown_prefixes_of_any_column_and_min_count_per_template():
    train = [
        doc(["a", "b", "c"], cluster=["0110", "0111", "10"]),
        doc(["a", "d"], cluster=["0110", "11"]),
    ]
    features = LocalFeatures(
        gazetteer="none",
        templates=["cluster[0][:2]", "w[0] min_count=1", "w[-1]/w[0]"],
    ).fit(train)
    got = sorted(features.vocab.feature_string(f) for f in range(features.num_features))
    # cluster prefixes: 01 x3, 10, 11 -> only 01 seen twice; words: every word (min_count=1);
    # word bigrams: none seen twice
    assert got == ["cluster[:2][0]=01", "w[0]=a", "w[0]=b", "w[0]=c", "w[0]=d"]
    assert features.vocab.min_counts == [2, 1, 2]


# -- node-only templates ------------------------------------------------------------------------
def test_node_only_templates_have_no_edge_entries_in_the_update():
    train = [doc(["a", "b", "a", "b"])] * 2
    features = LocalFeatures(gazetteer="none", templates=["w[0]", "pos[0] edges=false"]).fit(train)
    mask = features.node_only_mask()
    names = [features.vocab.feature_string(f) for f in range(features.num_features)]
    assert names == ["w[0]=a", "w[0]=b", "pos[0]=NN"] and mask.tolist() == [False, False, True]
    fm = features.transform(train[:1])
    batch = make_batch(fm, [0])
    gold, pred = torch.tensor([0, 1, 0, 1]), torch.tensor([0, 0, 0, 1])
    L = 2
    delta = path_delta(batch, gold, pred, L, True, torch.from_numpy(mask))
    edge_rows = (delta.parts["edge"][0] // (L * L)).tolist()
    node_rows = (delta.parts["node"][0] // L).tolist()
    assert 2 in node_rows and 2 not in edge_rows  # pos: node entries, no edge entries
    full = path_delta(batch, gold, pred, L, True)
    assert 2 in (full.parts["edge"][0] // (L * L)).tolist()
    # closed form: token 1 (b, pos NN) gold 1 vs 0; tokens 1, 2 change their label pairs
    assert sorted(zip(node_rows, delta.parts["node"][1].tolist(), strict=True)) == [
        (1, -1.0),
        (1, 1.0),
        (2, -1.0),
        (2, 1.0),
    ]
    assert sorted(set(edge_rows)) == [0, 1]


# -- the registry -------------------------------------------------------------------------------
def test_registered_functions_are_used_by_name_and_required_when_loading():
    @register_attribute("vowels_of")
    def vowels(value):
        return "".join(c for c in value if c in "aeiou") or None

    @register_attribute("first_in_doc", scope="document")
    def first(values):
        return ["1" if i == 0 else None for i in range(len(values))]

    try:
        train = [doc(["paris", "rome", "xyz"]), doc(["paris", "oslo"])]
        features = LocalFeatures(
            gazetteer="none", min_count=1, templates=["vowels_of(w[0])", "first_in_doc(w[0])"]
        ).fit(train)
        assert strings(features, train[:1]) == [
            ["vowels_of(w)[0]=ai", "first_in_doc(w)[0]=1"],
            ["vowels_of(w)[0]=oe"],
            [],
        ]
        meta, tensors = features.state()
        assert meta["feature_templates"]["lines"] == ["vowels_of(w[0])", "first_in_doc(w[0])"]
        loaded = LocalFeatures.from_state(meta, tensors)
        assert torch.equal(loaded.transform(train).ids, features.transform(train).ids)
    finally:
        unregister_attribute("vowels_of")
        unregister_attribute("first_in_doc")
    with pytest.raises(TemplateError, match="unknown template function 'vowels_of'.*register"):
        LocalFeatures.from_state(meta, tensors)


def test_a_template_model_keeps_its_templates_and_the_columns_it_reads():
    train = [doc(["New", "York", "is"], lemma=["new", "york", "be"])] * 2
    features = LocalFeatures(
        gazetteer="none", templates=["lemma[-1..0]", "suffix2(w[0])/pos[0]"]
    ).fit(train)
    assert features.input_columns() == {"lemma", "pos"}
    meta, tensors = features.state()
    loaded = LocalFeatures.from_state(meta, tensors)
    assert loaded.input_columns() == {"lemma", "pos"}
    assert strings(loaded, train[:1]) == strings(features, train[:1])
    assert strings(features, train[:1])[1] == [
        "lemma[-1]=new",
        "lemma[0]=york",
        "suffix2(w)[0]|pos[0]=rk|NN",
    ]
    # prediction input without the column: the tokens still get the features they can
    bare = Document(tokens=["New", "York"], columns={"pos": ["NN", "NN"]})
    assert strings(loaded, [bare])[1] == ["lemma[-1]=new", "suffix2(w)[0]|pos[0]=rk|NN"][1:]


# -- Table 1 as a preset ------------------------------------------------------------------------
NAMED = {"wl": "lower(w)", "chk": "chunk", "2d": "twodigits(w)", "4d": "fourdigits(w)"}
NAMED.update({f"p{n}": f"prefix{n}(w)" for n in range(1, 5)})
NAMED.update({f"s{n}": f"suffix{n}(w)" for n in range(1, 5)})
NAMED.update({"d&a": "digit_alpha(w)", "d&-": "digit_dash(w)", "d&/": "digit_slash(w)"})
NAMED.update({"d&,": "digit_comma(w)", "d&.": "digit_period(w)", "n": "number(w)"})
NAMED.update({"ic": "initcap(w)", "ac": "allcaps(w)", "l": "alllower(w)", "cp": "capperiod(w)"})


def renamed(feature: str) -> str:
    """A named-attribute feature string in the templates' names (``wl[0]`` -> ``lower(w)[0]``)."""
    name, _, value = feature.partition("=")
    if "[" not in name:
        return feature
    parts = []
    for part in name.split("|"):
        attr, _, rest = part.partition("[")
        parts.append(f"{NAMED.get(attr, attr)}[{rest}")
    return "|".join(parts) + ("=" + value if value else "")


@pytest.mark.realdata
def test_table1_preset_gives_the_named_attributes_features(data_dir):
    from structperc.data.conll import read_conll

    folder = data_dir / "conll2003"
    corpus = {s: read_conll(folder / f"{s}.txt", max_docs=8) for s in ("train", "dev")}
    gaz = str(data_dir / "conll2003" / "eng.list")
    named = LocalFeatures(gazetteer_path=gaz).fit(corpus["train"])
    preset = LocalFeatures(gazetteer_path=gaz, template_file="kazama").fit(corpus["train"])
    assert len(preset.templates) == len(named.templates) == 162
    assert np.array_equal(named.vocab.keys, preset.vocab.keys)
    for split in ("train", "dev"):
        a = named.transform(corpus[split], training=split == "train")
        b = preset.transform(corpus[split], training=split == "train")
        assert torch.equal(a.ids, b.ids) and torch.equal(a.offsets, b.offsets)
    docs = corpus["dev"][:3]
    want = [[renamed(s) for s in token] for token in strings(named, docs)]
    assert strings(preset, docs) == want
    seen = {s.partition("=")[0] for t in want for s in t}
    assert {"lower(w)[-1]|lower(w)[0]", "suffix3(w)[1]", "go[0]|go[1]", "initcap(w)[0]"} <= seen
    without = LocalFeatures(gazetteer="none", template_file="kazama").fit(corpus["train"][:2])
    assert len(without.templates) == 162 - 4 * 5 - 4 * 3  # the optional gazetteer templates


def test_the_feature_cache_key_holds_the_templates_and_their_file(tmp_path):
    from structperc.features.cache import feature_cache_key
    from structperc.tasks.inputs import extraction_settings, feature_files

    path = tmp_path / "my.tpl"
    path.write_text("w[0]\n")
    fcfg = {"template_file": str(path), "templates": ["pos[0]"], "gazetteer_files": []}

    def key():
        features = LocalFeatures(gazetteer="none", template_file=str(path), templates=["pos[0]"])
        return feature_cache_key(extraction_settings(fcfg), feature_files(features), None)

    first = key()
    assert first["features"] == {"template_file": str(path), "templates": ["pos[0]"]}
    path.write_text("w[-1..0]\n")  # the same path, other templates: another key
    assert key()["files"] != first["files"]
    # settings without templates keep the key they had before templates existed
    assert extraction_settings({"min_count": 2, "templates": None, "template_file": None}) == {
        "min_count": 2
    }


def test_a_run_from_config_alone_trains_saves_and_tags_with_its_templates(tmp_path, monkeypatch):
    from hydra_runs import run_main, write_synthetic_conll2003

    from structperc.model.files import load_model
    from structperc.predict import tag_file

    (tmp_path / "data").mkdir()
    data = write_synthetic_conll2003(tmp_path / "data", {"train": 10, "dev": 3, "test": 3})
    (data / "my.tpl").write_text("bias\nw[-1..1]\nshape(w[0]) edges=false\nlist.*[0]\n")
    (data / "names.txt").write_text("Smith\nJones\n")
    overrides = [
        "+experiment=conll03_local",
        "features=templates",
        "features.template_file=my.tpl",  # a relative path: from the data folder
        "features.gazetteer_files=[{path: names.txt, format: per_type, type: PER, name: list}]",
        "trainer.max_epochs=1",
        "write_predictions=false",
        f"cache_dir={tmp_path / 'cache'}",
    ]
    _, results = run_main(overrides, data, tmp_path / "run", monkeypatch)
    weights, features, _ = load_model(tmp_path / "run")
    assert features.compiled.lines() == [
        "bias",
        "w[-1]",
        "w[0]",
        "w[1]",
        "shape(w[0]) edges=false",
        "list.PER[0]",
    ]
    mask = torch.from_numpy(features.node_only_mask())
    edge = weights.tables()["edge"]
    assert mask.any() and edge[mask].abs().sum() == 0 and edge[~mask].abs().sum() > 0
    scores = tag_file(tmp_path / "run", data / "conll2003" / "test.txt", tmp_path / "tagged.txt")
    assert scores.f1 == pytest.approx(results["test"]["f1"])
    (data / "my.tpl").write_text("bias\nw[0]\n")  # the same path, other templates
    _, edited = run_main(overrides, data, tmp_path / "edited", monkeypatch)
    assert edited["feature_cache_hit"] is False  # (a cache hit would mismatch: fewer features)
    assert edited["num_features"] < results["num_features"]


def test_tagging_input_without_a_templates_column_is_a_one_line_error():
    from structperc.inference.tagger import MissingColumns, Tagger

    features = LocalFeatures(gazetteer="none", templates=["lemma[0]"]).fit(
        [doc(["a", "b"], lemma=["a", "b"])]
    )
    structure = ChainStructure(ChainWeights(features.num_features, ["O"]))
    tagger = Tagger(structure, features, column_tagger="runs/never_loaded")
    bare = Document(tokens=["a"], columns={}, source="in.txt:1")
    with pytest.raises(MissingColumns, match=r"^in.txt:1: .* read the lemma column\(s\), .*"):
        tagger._with_columns([bare])
