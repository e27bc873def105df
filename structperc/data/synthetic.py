"""A small synthetic NER corpus made in code, for tests and smoke runs without the CoNLL files.

Documents look like short news stories: several sentences drawn from templates, entities of
the CoNLL-2003 types (PER, LOC, ORG, MISC) filled in from a per-document cast, so the same
entity strings recur across a document (the main person opens and closes each story, by full
name first and often by surname later), as document-level features expect.  Each entity word
belongs to one type only and is capitalised; capitalised non-entity words (sentence starts,
weekdays) keep shape alone from solving the task.  A perceptron with word and shape features
learns it to F1 well above 0.9.  Same seed, same corpus.
"""

from __future__ import annotations

import random

from .conll import mark_docstart
from .document import Document

FIRST_NAMES = ("John", "Maria", "Ahmed", "Yuki", "Pierre", "Olga", "Carlos", "Fatima", "Liam")
SURNAMES = ("Smith", "Garcia", "Khan", "Tanaka", "Dubois", "Petrova", "Silva", "Haddad", "Novak")
LOCATIONS = (
    ("Paris",),
    ("Berlin",),
    ("Nairobi",),
    ("Lima",),
    ("Oslo",),
    ("Cairo",),
    ("Kyoto",),
    ("New", "York"),
    ("Buenos", "Aires"),
    ("Cape", "Town"),
)
ORGANISATIONS = (
    ("Acme", "Corp"),
    ("Globex",),
    ("Initech",),
    ("Reuters",),
    ("Red", "Cross"),
    ("Tyrell", "Industries"),
    ("Nordic", "Air"),
    ("Vortex", "Group"),
    ("Unilink", "Bank"),
)
MISCELLANEOUS = (
    ("German",),
    ("French",),
    ("Olympic",),
    ("Japanese",),
    ("Brazilian",),
    ("World", "Cup"),
    ("Nobel", "Prize"),
)
TYPES = ("PER", "LOC", "ORG", "MISC")

# Templates: words, or {TYPE} slots.  Each word has a POS tag and a chunk type (below).
TEMPLATES = (
    "{PER} said on Monday that {ORG} would open an office in {LOC} .",
    "{ORG} shares rose 3 percent in {LOC} trading .",
    "The {MISC} team beat the hosts in {LOC} .",
    "{PER} , a spokesman for {ORG} , declined to comment .",
    "Police in {LOC} arrested {PER} on Tuesday .",
    "{PER} won the {MISC} title for the second time .",
    "It was the first such deal since 1990 .",
    "{PER} met {PER} in {LOC} on Friday .",
    "Analysts said {ORG} would report results on Thursday .",
    "The {MISC} government said the talks in {LOC} had failed .",
    "{ORG} hired {PER} as chief executive .",
    "Prices fell sharply on Wednesday .",
)
PERSON_TEMPLATES = tuple(t for t in TEMPLATES if "{PER}" in t)
WORDS: dict[str, tuple[str, str]] = {  # word -> (POS, chunk type; "" for outside any chunk)
    "said": ("VBD", "VP"),
    "on": ("IN", "PP"),
    "that": ("IN", "SBAR"),
    "would": ("MD", "VP"),
    "open": ("VB", "VP"),
    "an": ("DT", "NP"),
    "office": ("NN", "NP"),
    "in": ("IN", "PP"),
    "shares": ("NNS", "NP"),
    "rose": ("VBD", "VP"),
    "3": ("CD", "NP"),
    "percent": ("NN", "NP"),
    "trading": ("NN", "NP"),
    "The": ("DT", "NP"),
    "the": ("DT", "NP"),
    "team": ("NN", "NP"),
    "beat": ("VBD", "VP"),
    "hosts": ("NNS", "NP"),
    ",": (",", ""),
    ".": (".", ""),
    "a": ("DT", "NP"),
    "spokesman": ("NN", "NP"),
    "for": ("IN", "PP"),
    "declined": ("VBD", "VP"),
    "to": ("TO", "VP"),
    "comment": ("VB", "VP"),
    "Police": ("NNS", "NP"),
    "arrested": ("VBD", "VP"),
    "won": ("VBD", "VP"),
    "title": ("NN", "NP"),
    "second": ("JJ", "NP"),
    "time": ("NN", "NP"),
    "It": ("PRP", "NP"),
    "was": ("VBD", "VP"),
    "first": ("JJ", "NP"),
    "such": ("JJ", "NP"),
    "deal": ("NN", "NP"),
    "since": ("IN", "PP"),
    "1990": ("CD", "NP"),
    "met": ("VBD", "VP"),
    "Analysts": ("NNS", "NP"),
    "report": ("VB", "VP"),
    "results": ("NNS", "NP"),
    "government": ("NN", "NP"),
    "talks": ("NNS", "NP"),
    "had": ("VBD", "VP"),
    "failed": ("VBN", "VP"),
    "hired": ("VBD", "VP"),
    "as": ("IN", "PP"),
    "chief": ("JJ", "NP"),
    "executive": ("NN", "NP"),
    "Prices": ("NNS", "NP"),
    "fell": ("VBD", "VP"),
    "sharply": ("RB", "ADVP"),
    "Monday": ("NNP", "NP"),
    "Tuesday": ("NNP", "NP"),
    "Wednesday": ("NNP", "NP"),
    "Thursday": ("NNP", "NP"),
    "Friday": ("NNP", "NP"),
}


def _cast(rng: random.Random) -> dict[str, list[tuple[str, ...]]]:
    """The entities of one document: two people, two places, two organisations, one MISC."""
    people = []
    for first, last in zip(rng.sample(FIRST_NAMES, 2), rng.sample(SURNAMES, 2), strict=True):
        people.append((first, last))
    return {
        "PER": people,
        "LOC": rng.sample(LOCATIONS, 2),
        "ORG": rng.sample(ORGANISATIONS, 2),
        "MISC": rng.sample(MISCELLANEOUS, 1),
    }


def _sentence(
    rng: random.Random,
    cast: dict[str, list[tuple[str, ...]]],
    seen: set[tuple[str, ...]],
    lead: bool,
) -> tuple[list[str], list[str], list[str], list[str]]:
    """One sentence: tokens, POS tags, IOB2 chunk tags, IOB2 entity tags.

    With ``lead`` the sentence is about the document's main person (``cast["PER"][0]``).
    """
    tokens: list[str] = []
    pos: list[str] = []
    chunk_types: list[str] = []
    tags: list[str] = []
    used: set[tuple[str, ...]] = set()
    for word in rng.choice(PERSON_TEMPLATES if lead else TEMPLATES).split():
        if word.startswith("{"):
            kind = word[1:-1]
            choices = [e for e in cast[kind] if e not in used] or cast[kind]
            if lead and kind == "PER":
                entity, lead = cast["PER"][0], False
            else:
                entity = rng.choice(choices)
            used.add(entity)
            words = entity
            if kind == "PER" and entity in seen and rng.random() < 0.5:
                words = entity[-1:]  # a later mention by surname only
            seen.add(entity)
            for j, w in enumerate(words):
                tokens.append(w)
                pos.append("JJ" if kind == "MISC" and len(words) == 1 else "NNP")
                chunk_types.append("NP")
                tags.append(("B-" if j == 0 else "I-") + kind)
        else:
            tag, chunk = WORDS[word]
            tokens.append(word)
            pos.append(tag)
            chunk_types.append(chunk)
            tags.append("O")
    chunks = []
    for j, c in enumerate(chunk_types):
        if not c:
            chunks.append("O")
        elif j > 0 and chunk_types[j - 1] == c and c != "PP":
            chunks.append("I-" + c)
        else:
            chunks.append("B-" + c)
    return tokens, pos, chunks, tags


def make_corpus(
    n_docs: int, seed: int = 0, min_sentences: int = 3, max_sentences: int = 8
) -> list[Document]:
    """``n_docs`` synthetic documents of ``min_sentences``..``max_sentences`` sentences each.

    Documents have columns "pos" and "chunk", IOB2 tags of types PER/LOC/ORG/MISC, sentence
    boundaries, and source ``synthetic-<seed>:<index>``; they are marked as "docstart"
    documents so write_conll puts ``-DOCSTART-`` lines between them.
    """
    if n_docs < 0 or not 2 <= min_sentences <= max_sentences:
        raise ValueError("need n_docs >= 0 and 2 <= min_sentences <= max_sentences")
    rng = random.Random(seed)
    out = []
    for index in range(n_docs):
        cast = _cast(rng)
        seen: set[tuple[str, ...]] = set()
        doc = Document(tokens=[], columns={"pos": [], "chunk": []}, tags=[], sentence_starts=[])
        n_sentences = rng.randint(min_sentences, max_sentences)
        for k in range(n_sentences):
            lead = k in (0, n_sentences - 1)  # the main person opens and closes the story
            tokens, pos, chunks, tags = _sentence(rng, cast, seen, lead)
            doc.sentence_starts.append(len(doc.tokens))
            doc.tokens.extend(tokens)
            doc.columns["pos"].extend(pos)
            doc.columns["chunk"].extend(chunks)
            doc.tags.extend(tags)
        doc.source = f"synthetic-{seed}:{index}"
        out.append(mark_docstart(doc))
    return out
