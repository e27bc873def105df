"""Tests for structperc.features.document: the non-local feature families and their vectorisation.

Every family is checked on small hand-made documents whose feature multisets are worked out by
hand; the vectorised path (``NonLocalFeatures``) is checked against the reference functions on
random documents and candidates, and on slices of CoNLL-2003.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracles.non_local import document_features

from structperc.data.document import Document
from structperc.data.tags import spans
from structperc.features.document import NonLocalFeatures
from structperc.features.non_local.codes import reachable_codes
from structperc.features.non_local.conjunction import conjunction_consistency
from structperc.features.non_local.majority import (
    entity_majority,
    superentity_majority,
    token_majority,
)
from structperc.features.non_local.notation import FAMILIES
from structperc.features.non_local.phrase import phrase_consistency
from structperc.features.non_local.subphrase import subphrase_consistency

LABELS = ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER"]


def doc(text: str, tags: str, sentence_starts: tuple[int, ...] = (0,)) -> Document:
    tokens, tag_list = text.split(), tags.split()
    assert len(tokens) == len(tag_list)
    return Document(tokens=tokens, tags=tag_list, sentence_starts=list(sentence_starts))


def phi(d: Document, **kw) -> Counter:
    return document_features(d.tokens, d.tags, sentence_starts=d.sentence_starts, **kw)


def family(d: Document, fn) -> Counter:
    return fn(d.tokens, spans(d.tags))


def ids(d: Document) -> np.ndarray:
    return np.array([[LABELS.index(t) for t in d.tags]])


# --- each family on hand-made documents -------------------------------------------------------
def test_phrase_pairs_and_unlabeled_occurrences():
    d = doc("Jordan beat Jordan in Jordan", "B-PER O B-LOC O O")
    assert family(d, phrase_consistency) == Counter(
        {"phrase=LOC|PER": 1, "phrase=PER|O": 1, "phrase=LOC|O": 1}
    )


def test_phrase_repeated_mentions_count_each_pair_once():
    d = doc("Clinton a Clinton b Clinton", "B-PER O B-PER O B-ORG")
    assert family(d, phrase_consistency) == Counter({"phrase=PER|PER": 1, "phrase=ORG|PER": 2})
    three = doc("Clinton Clinton Clinton", "B-PER B-PER B-PER")
    assert family(three, phrase_consistency) == Counter({"phrase=PER|PER": 3})


def test_phrase_ignores_partly_labeled_occurrences():
    # "Clinton" inside "Bill Clinton" is labeled: it is sub-phrase business, not phrase=|O.
    d = doc("Bill Clinton said Clinton", "B-PER I-PER O B-PER")
    assert family(d, phrase_consistency) == Counter()


def test_phrase_multi_token_strings():
    d = doc("New York is New York not New Jersey", "B-LOC I-LOC O O O O B-LOC I-LOC")
    assert family(d, phrase_consistency) == Counter({"phrase=LOC|O": 1})


def test_subphrase():
    d = doc("Bill Clinton said Clinton", "B-PER I-PER O B-PER")
    assert family(d, subphrase_consistency) == Counter({"subphrase=PER|PER": 1})
    d = doc("Bank of England and England", "B-ORG I-ORG I-ORG O B-LOC")
    assert family(d, subphrase_consistency) == Counter({"subphrase=LOC|ORG": 1})


def test_subphrase_needs_a_proper_substring():
    d = doc("Bill Clinton and Bill Clinton", "B-PER I-PER O B-PER I-PER")
    assert family(d, subphrase_consistency) == Counter()


def test_token_majority_with_tie_kept_by_own_class():
    d = doc("Clinton a Clinton b Clinton", "B-PER O B-PER O B-ORG")
    assert family(d, token_majority) == Counter({"tokmaj=PER|PER": 2, "tokmaj=ORG|PER": 1})


def test_token_majority_ignores_unlabeled_occurrences_and_singletons():
    d = doc("Bank of England and England then England", "B-ORG I-ORG I-ORG O B-LOC O O")
    assert family(d, token_majority) == Counter({"tokmaj=ORG|LOC": 1, "tokmaj=LOC|ORG": 1})


def test_token_majority_tie_without_own_class_goes_alphabetically_first():
    d = doc("X Y Y X X", "B-PER O O B-ORG B-LOC")
    # PER at 0 sees ORG, LOC: tie -> LOC.  ORG sees PER, LOC -> LOC.  LOC sees PER, ORG -> ORG.
    assert family(d, token_majority) == Counter(
        {"tokmaj=PER|LOC": 1, "tokmaj=ORG|LOC": 1, "tokmaj=LOC|ORG": 1}
    )


def test_entity_majority():
    d = doc("Jordan a Jordan b Jordan", "B-LOC O B-LOC O B-PER")
    assert family(d, entity_majority) == Counter({"entmaj=LOC|LOC": 2, "entmaj=PER|LOC": 1})


def test_superentity_majority():
    d = doc("Bank of England and England", "B-ORG I-ORG I-ORG O B-LOC")
    assert family(d, superentity_majority) == Counter({"supmaj=LOC|ORG": 1})
    d = doc(
        "Bank of England , England Rovers and England",
        "B-ORG I-ORG I-ORG O B-ORG I-ORG O B-LOC",
    )
    assert family(d, superentity_majority) == Counter({"supmaj=LOC|ORG": 1})


def test_conjunction_lists():
    d = doc("in U.S. , EU , and Japan", "O B-LOC O B-ORG O O B-LOC")
    assert family(d, conjunction_consistency) == Counter({"conj=LOC|LOC": 1, "conj=LOC|ORG": 2})
    d = doc("Smith or Jones", "B-PER O B-PER")
    assert family(d, conjunction_consistency) == Counter({"conj=PER|PER": 1})
    d = doc("Smith AND Reuters", "B-PER O B-ORG")
    assert family(d, conjunction_consistency) == Counter({"conj=ORG|PER": 1})


def test_conjunction_needs_and_or_and_adjacency():
    assert family(doc("Paris , France", "B-LOC O B-LOC"), conjunction_consistency) == Counter()
    assert family(doc("Paris and the France", "B-LOC O O B-LOC"), conjunction_consistency) == {}
    d = doc("A , B said C and D", "B-PER O B-PER O B-LOC O B-LOC")
    assert family(d, conjunction_consistency) == Counter({"conj=LOC|LOC": 1})


def test_conjunction_stays_in_one_sentence():
    d = doc("Smith and Jones left", "B-PER O B-PER O", sentence_starts=(0, 2))
    got = conjunction_consistency(d.tokens, spans(d.tags), d.sentence_starts)
    assert got == Counter()
    assert conjunction_consistency(d.tokens, spans(d.tags), (0,)) == Counter({"conj=PER|PER": 1})


def test_whole_document_multiset():
    d = doc("Bill Clinton said Clinton", "B-PER I-PER O B-PER")
    assert phi(d) == Counter({"subphrase=PER|PER": 1, "tokmaj=PER|PER": 2, "supmaj=PER|PER": 1})


def test_empty_labeling_and_single_mention():
    assert phi(doc("a b c", "O O O")) == Counter()
    assert phi(doc("Obama spoke", "B-PER O")) == Counter()
    assert phi(doc("", "")) == Counter()


def test_casefold():
    d = doc("Obama met OBAMA", "B-PER O O")
    assert phi(d) == Counter()
    assert phi(d, casefold=True) == Counter({"phrase=PER|O": 1})


def test_switches_select_families():
    d = doc("Clinton a Clinton b Clinton", "B-PER O B-PER O B-ORG")
    full = phi(d)
    for name in FAMILIES:
        only = phi(d, families=[name])
        assert only == Counter({k: v for k, v in full.items() if k.startswith(name + "=")})
    assert phi(d, families=[]) == Counter()
    with pytest.raises(ValueError, match="unknown non-local families"):
        phi(d, families=["bogus"])


def test_label_ids_equal_tag_strings():
    d = doc("Bank of England and England", "B-ORG I-ORG I-ORG O B-LOC")
    assert document_features(d.tokens, ids(d)[0].tolist(), LABELS) == phi(d)


def test_invalid_iob2_read_with_the_conlleval_rule():
    # I-PER after O starts a mention, as conlleval reads it.
    d = doc("Smith and Jones", "I-PER O I-PER")
    assert phi(d) == Counter({"conj=PER|PER": 1})


# --- the vectorised path ----------------------------------------------------------------------
HAND = [
    doc("Jordan beat Jordan in Jordan", "B-PER O B-LOC O O"),
    doc("Clinton a Clinton b Clinton", "B-PER O B-PER O B-ORG"),
    doc("Bill Clinton said Clinton", "B-PER I-PER O B-PER"),
    doc("Bank of England , England Rovers and England", "B-ORG I-ORG I-ORG O B-ORG I-ORG O B-LOC"),
    doc("in U.S. , EU , and Japan", "O B-LOC O B-ORG O O B-LOC"),
    doc("Smith and Jones left", "B-PER O B-PER O", sentence_starts=(0, 2)),
    doc("X Y Y X X", "B-PER O O B-ORG B-LOC"),
    doc("a b c", "O O O"),
    doc("Obama spoke", "B-PER O"),
]


@pytest.mark.parametrize("d", HAND, ids=lambda d: " ".join(d.tokens))
def test_fast_path_equals_reference_on_hand_documents(d):
    nl = NonLocalFeatures(labels=LABELS)
    assert nl.features(d, ids(d)) == [phi(d)]


def random_document(rng: np.random.Generator, length: int) -> tuple[Document, np.ndarray]:
    words = ["A", "B", "C", "a", "b", ",", "and", "or", "Or", "."]
    tokens = [str(w) for w in rng.choice(words, length)]
    starts = sorted({0, *rng.integers(0, length, 2).tolist()})
    d = Document(tokens=tokens, sentence_starts=starts)
    probs = np.array([4, 1, 1, 1, 1, 1, 1, 1, 1], dtype=float)
    cands = rng.choice(len(LABELS), size=(6, length), p=probs / probs.sum())
    return d, cands


@pytest.mark.parametrize("casefold", [False, True])
def test_fast_path_equals_reference_on_random_candidates(casefold):
    rng = np.random.default_rng(7)
    nl = NonLocalFeatures(labels=LABELS, casefold=casefold)
    for _ in range(40):
        d, cands = random_document(rng, int(rng.integers(1, 30)))
        fast = nl.features(d, cands)
        for row, got in zip(cands, fast, strict=True):
            want = document_features(
                d.tokens, row.tolist(), LABELS, casefold=casefold, sentence_starts=d.sentence_starts
            )
            assert got == want


def test_fast_path_respects_switches():
    rng = np.random.default_rng(3)
    d, cands = random_document(rng, 25)
    for name in FAMILIES:
        nl = NonLocalFeatures(families=[name], labels=LABELS)
        want = [
            document_features(d.tokens, r.tolist(), LABELS, [name], False, d.sentence_starts)
            for r in cands
        ]
        assert nl.features(d, cands) == want


def test_vectorize_all_equals_each_alone_and_scores():
    rng = np.random.default_rng(11)
    d, cands = random_document(rng, 40)
    cands[2, 5] = -1  # a missing n-best entry: no features
    nl = NonLocalFeatures(labels=LABELS, max_batch=4)  # two chunks
    ids_all, off_all = nl.vectorize(d, torch.from_numpy(cands))
    assert off_all.tolist()[0] == 0 and len(off_all) == len(cands) + 1
    assert off_all[3] == off_all[2]
    for r in range(len(cands)):
        one_ids, one_off = nl.vectorize(d, cands[r])
        assert one_ids.tolist() == ids_all[off_all[r] : off_all[r + 1]].tolist()
        assert one_off.tolist() == [0, len(one_ids)]
    weight = torch.randint(-9, 10, (nl.num_features, 1)).float()
    scores = F.embedding_bag(ids_all, weight, off_all, mode="sum", include_last_offset=True)
    names = nl.feature_names()
    feats = nl.features(d, cands)
    for r, counts in enumerate(feats):
        want = sum(weight[names.index(f), 0].item() * k for f, k in counts.items())
        assert scores[r, 0].item() == want


def test_vectorize_zero_candidates_and_empty_document():
    nl = NonLocalFeatures(labels=LABELS)
    d = HAND[0]
    got_ids, got_off = nl.vectorize(d, np.zeros((0, len(d)), dtype=np.int64))
    assert got_ids.numel() == 0 and got_off.tolist() == [0]
    empty = Document(tokens=[])
    got_ids, got_off = nl.vectorize(empty, np.zeros((3, 0), dtype=np.int64))
    assert got_ids.numel() == 0 and got_off.tolist() == [0, 0, 0, 0]


def test_document_index_cache_follows_the_document():
    nl = NonLocalFeatures(labels=LABELS)
    a, b = HAND[0], HAND[1]
    assert nl.index(a) is nl.index(a)
    assert nl.index(a) is not nl.index(b)


# --- vocabularies and state -------------------------------------------------------------------
def test_all_vocabulary_is_every_reachable_code():
    nl = NonLocalFeatures().fit(HAND)
    assert nl.labels[0] == "O" and nl.classes == ["LOC", "ORG", "PER"]
    assert nl.num_features == len(reachable_codes(FAMILIES, 3))
    assert "phrase=LOC|O" in nl.feature_names() and "phrase=PER|LOC" not in nl.feature_names()
    assert len(set(nl.feature_names())) == nl.num_features


def test_gold_vocabulary_and_min_count():
    nl = NonLocalFeatures(vocabulary="gold", labels=LABELS).fit(HAND)
    seen = Counter()
    for d in HAND:
        seen.update(phi(d))
    assert sorted(nl.feature_names()) == sorted(seen)
    nl2 = NonLocalFeatures(vocabulary="gold", labels=LABELS, min_count=2).fit(HAND)
    assert sorted(nl2.feature_names()) == sorted(f for f, k in seen.items() if k >= 2)
    # Unknown features do not fire.
    d = doc("Jordan x Jordan", "B-MISC O B-MISC")
    assert nl.vectorize(d, ids(d))[0].numel() == 0


def test_grow_vocabulary_appends_ids():
    nl = NonLocalFeatures(vocabulary="grow", labels=LABELS, min_count=2).fit(HAND[:2])
    before = nl.feature_names()
    assert before == ["phrase=ORG|PER", "tokmaj=PER|PER", "entmaj=PER|PER"]
    d = doc("Jordan x Jordan", "B-MISC O B-MISC")
    # tokmaj and entmaj fire twice here (min_count reached): admitted; phrase fires once: pending.
    got, _ = nl.vectorize(d, ids(d), admit=True)
    assert nl.feature_names() == [*before, "tokmaj=MISC|MISC", "entmaj=MISC|MISC"]
    assert got.tolist() == [3, 3, 4, 4]
    assert nl.vectorize(d, ids(d))[0].tolist() == [3, 3, 4, 4]  # no admit: nothing new
    got, _ = nl.vectorize(d, ids(d), admit=True)
    assert nl.feature_names()[-1] == "phrase=MISC|MISC"
    assert sorted(got.tolist()) == [3, 3, 4, 4, 5]


def test_hash_vocabulary():
    nl = NonLocalFeatures(vocabulary="hash", num_buckets=64, labels=LABELS)
    d = HAND[1]
    got, off = nl.vectorize(d, ids(d))
    assert nl.num_features == 64 and got.max() < 64 and off[-1] == sum(phi(d).values())
    with pytest.raises(ValueError):
        nl.feature_names()


@pytest.mark.parametrize("vocabulary", ["all", "gold", "grow", "hash"])
def test_state_round_trip(vocabulary):
    nl = NonLocalFeatures(
        families=["phrase", "tokmaj", "conj"], casefold=True, vocabulary=vocabulary, labels=LABELS
    ).fit(HAND)
    if vocabulary == "grow":
        d = doc("Jordan x Jordan", "B-MISC O B-MISC")
        nl.vectorize(d, np.array([[0, 0, 2]]), admit=True)
    meta, tensors = nl.state()
    meta = json.loads(json.dumps(meta))
    back = NonLocalFeatures.from_state(meta, tensors)
    assert back.state()[0] == meta
    rng = np.random.default_rng(5)
    d, cands = random_document(rng, 30)
    for x, y in zip(nl.vectorize(d, cands), back.vectorize(d, cands), strict=True):
        assert torch.equal(x, y)


def test_bad_input_is_refused():
    with pytest.raises(RuntimeError, match="no labels"):
        NonLocalFeatures().vectorize(HAND[0], ids(HAND[0]))
    with pytest.raises(ValueError, match="label id"):
        NonLocalFeatures(labels=LABELS[:3]).vectorize(HAND[0], ids(HAND[0]))
    with pytest.raises(ValueError, match="vocabulary"):
        NonLocalFeatures(vocabulary="bogus")


# --- real data --------------------------------------------------------------------------------
@pytest.mark.realdata
def test_fast_path_equals_reference_on_conll(data_dir):
    from structperc.data.conll import read_conll

    docs = read_conll(data_dir / "conll2003" / "train.txt", max_docs=4)
    nl = NonLocalFeatures(labels=LABELS)
    rng = np.random.default_rng(0)
    for d in docs:
        gold = np.array([LABELS.index(t) for t in d.tags])
        cands = np.repeat(gold[None], 4, axis=0)
        for r in range(1, 4):
            where = rng.integers(0, len(d), 3)
            cands[r, where] = rng.integers(0, len(LABELS), 3)
        want = [
            document_features(d.tokens, r.tolist(), LABELS, sentence_starts=d.sentence_starts)
            for r in cands
        ]
        assert nl.features(d, cands) == want
