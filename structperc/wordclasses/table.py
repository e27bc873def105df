"""Word classes as token attributes: a word's class in each family, and the columns of a text.

A *family* maps words to class values:

- ``wc<k>``: the k-means cluster (``"0"`` .. ``"k-1"``) of the word's vector (Guo et al. 2014);
- ``bc``: the word's Brown-cluster path, a bit string from the root of the merge tree (Brown et
  al. 1992; Liang 2005).  Its attributes are prefixes, ``bc<p>`` the first p bits (the whole
  path when it is shorter), so that one word gets classes from coarse to fine (Miller et al.
  2004; Turian et al. 2010 and Ratinov & Roth 2009 use p = 4, 6, 10, 20).

Lookup: a token's class is that of its exact form, else of its lower-cased form, else of its
title-cased form (CoNLL-2003's all-capital headlines: ``BRUSSELS`` -> ``Brussels``).  A token
found under none of them has no class: the attribute does not fire (no "unknown" value, which
would fire at every rare word and act as a second, noisier capitalisation flag).
"""

from __future__ import annotations

from collections.abc import Sequence

BROWN = "bc"
MISSING = "_"  # in a saved state: the family has no class for this word


def attribute_names(kmeans: Sequence[int], brown: bool, prefixes: Sequence[int]) -> list[str]:
    """The attributes of the families built: ``wc<k>`` per cluster count, ``bc<p>`` per prefix."""
    names = [f"wc{k}" for k in kmeans]
    if brown:
        names += [f"{BROWN}{p}" for p in prefixes]
    return names


class WordClasses:
    """Word classes of one or more families, and the token attributes they make.

    Args:
        families: family name (``wc100``, ``bc``) -> {word: class value}.
        attributes: the attribute names, ``wc<k>`` (a family) or ``bc<p>`` (a prefix of ``bc``).
        identity: what the classes were built from (settings, file digests, library versions):
            recorded with a model, and part of the feature cache's key.
    """

    def __init__(
        self, families: dict[str, dict[str, str]], attributes: Sequence[str], identity: dict
    ):
        self.families = families
        self.attributes = tuple(attributes)
        self.identity = identity
        self._getters = [self._getter(a) for a in self.attributes]

    def _getter(self, name: str):
        if name in self.families:
            table = self.families[name]
            return lambda w: table.get(w)
        if name.startswith(BROWN) and name[len(BROWN) :].isdigit() and BROWN in self.families:
            table, p = self.families[BROWN], int(name[len(BROWN) :])
            return lambda w: None if (c := table.get(w)) is None else c[:p]
        raise ValueError(
            f"word-class attribute {name!r} has no family; built: {sorted(self.families)}"
        )

    @staticmethod
    def _forms(word: str) -> tuple[str, ...]:
        return (word, word.lower(), word.title())

    def classes(self, word: str) -> dict[str, str | None]:
        """The value of every attribute at one word (None: no class)."""
        return {a: v for a, v in zip(self.attributes, self._values(word), strict=True)}

    def _values(self, word: str) -> list[str | None]:
        out = []
        for get in self._getters:
            value = None
            for form in self._forms(word):
                value = get(form)
                if value is not None:
                    break
            out.append(value)
        return out

    def columns(self, tokens: Sequence[str]) -> dict[str, list[str | None]]:
        """The attribute columns of a token sequence: name -> one value (or None) per token."""
        rows = [self._values(w) for w in tokens]
        return {a: [r[i] for r in rows] for i, a in enumerate(self.attributes)}

    # --------------------------------------------------------------------------------------
    def state(self) -> dict:
        """A JSON-able form (a model's metadata), compact under any indentation: the words of
        all families once, space-separated (a token never holds whitespace), and each family's
        classes in the same order, ``_`` where the family has no class for the word."""
        vocabulary = list(dict.fromkeys(w for table in self.families.values() for w in table))
        return {
            "attributes": list(self.attributes),
            "identity": self.identity,
            "words": " ".join(vocabulary),
            "families": {
                name: " ".join(table.get(w, MISSING) for w in vocabulary)
                for name, table in self.families.items()
            },
        }

    @classmethod
    def from_state(cls, state: dict) -> WordClasses:
        """From ``state()``'s form, or from the first one (each family's ``words`` and
        ``values`` as JSON lists), which the first models with word classes have."""
        if "words" not in state:
            families = {
                name: dict(zip(f["words"], f["values"], strict=True))
                for name, f in state["families"].items()
            }
            return cls(families, state["attributes"], state["identity"])
        words = state["words"].split()
        families = {
            name: {w: c for w, c in zip(words, joined.split(), strict=True) if c != MISSING}
            for name, joined in state["families"].items()
        }
        return cls(families, state["attributes"], state["identity"])
