"""Collins's (2002) global features on his section 3.1 running example."""

from __future__ import annotations

from structperc.features.collins import LowercaseLexicon, collapsed_type, collins_features

# Whether/N you/N 're/N an/N aging/N flower/N child/N or/N a/N clueless/N Gen/S Xer/C ,/N "/N
# The/S Day/C They/C Shot/C John/C Lennon/C ,/N "/N playing/N at/N the/N Dougherty/S Arts/C
# Center/C ,/N entertains/N the/N imagination/N ./N
TAGGED = (
    "Whether/N you/N 're/N an/N aging/N flower/N child/N or/N a/N clueless/N Gen/S Xer/C ,/N "
    '"/N The/S Day/C They/C Shot/C John/C Lennon/C ,/N "/N playing/N at/N the/N Dougherty/S '
    "Arts/C Center/C ,/N entertains/N the/N imagination/N ./N"
)
IOB = {"S": "B-ENT", "C": "I-ENT", "N": "O"}


def example() -> tuple[list[str], list[str]]:
    pairs = [item.rsplit("/", 1) for item in TAGGED.split()]
    return [w for w, _ in pairs], [IOB[t] for _, t in pairs]


def lexicon() -> LowercaseLexicon:
    # "the" is seen lower-cased more often than capitalized; "Lennon" never lower-cased
    return LowercaseLexicon.from_tokens("the the The Lennon animal Animal animal".split())


def test_collapsed_character_types():
    assert collapsed_type("Animal") == "Aa"
    assert collapsed_type("G.M.") == "A.A."
    assert collapsed_type("1996") == "0"
    assert collapsed_type("B-52s") == "A-0a"


def test_lexicon_holds_words_seen_more_often_lower_cased():
    lex = lexicon()
    assert "The" in lex and "animal" in lex and "Animal" in lex
    assert "Lennon" not in lex and "Xer" not in lex


def test_the_running_example_gives_collins_features():
    tokens, tags = example()
    feats = collins_features(tokens, tags, lexicon(), typed=False)
    for expected in (
        "WE=Gen_Xer",
        "WE=The_Day_They_Shot_John_Lennon",
        "WE=Dougherty_Arts_Center",
        "QF=1.7.0.Aa1.Aa0",
        "QF2=1.1.Aa1.Aa0",
        "LW=Xer",
        "LWLC=0",
        "FF=Aa_Aa",
        "BO00=clueless_Gen",
        "BE01=Xer_,0",
        "PF=Aa",
        "SF2=Aa0_Aa0_Aa0",
    ):
        assert expected in feats, expected
    # exactly one WE per entity, and nothing entity-anchored for a candidate without entities
    assert sum(f.startswith("WE=") for f in feats) == 3
    bare = collins_features(tokens, ["O"] * len(tokens), lexicon(), typed=False)
    assert not any(f.startswith(("WE", "FF", "LW")) for f in bare)
    assert "QF=0.7.0.Aa1.Aa0" in bare  # the quote features still fire, with F2 = 0


def test_typed_features_name_the_entity_type():
    tokens, tags = example()
    tags = [t.replace("ENT", "ORG") for t in tags]
    feats = collins_features(tokens, tags, lexicon())
    assert "WE:ORG=Gen_Xer" in feats and "WE=Gen_Xer" not in feats
    assert "QF=1.7.0.Aa1.Aa0" in feats


def test_boundary_words_outside_the_sentence_are_null():
    feats = collins_features(["Paris", "wins"], ["B-LOC", "O"], lexicon())
    assert "BO00:LOC=NULL_Paris" in feats and "TO000:LOC=NULL_NULL_Paris" in feats
