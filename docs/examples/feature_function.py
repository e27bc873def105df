"""A feature function of your own: registered by name, then used in templates like a built-in.

What a template cannot say (``w[-1]``, ``suffix3(w[0])``, ``shape(w[0])/pos[0]``) is a Python
function registered with ``register_attribute``: a ``token`` function maps a value to a value
(or None: no feature), a ``document`` function a whole column of a document to a column.  Name
the module that registers them in ``plugins=[...]`` when training: the model records it, and
``structperc-tag``, ``structperc-serve`` and ``Tagger.load`` import it before the model loads.

Run it with ``python docs/examples/feature_function.py``: it trains a model whose templates use
both functions, on synthetic documents, and tags a sentence with it.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from structperc import register_attribute


@register_attribute("vowels")
def vowels(value: str) -> str | None:
    """The vowels of a word, in order ("Paris" -> "ai"); none: no feature."""
    return "".join(c for c in value.lower() if c in "aeiou") or None


@register_attribute("position", scope="document")
def position(values: list[str | None]) -> list[str | None]:
    """Each token's position in its document, 0, 1, 2, then "3+"."""
    return [str(i) if i < 3 else "3+" for i in range(len(values))]


TEMPLATES = ["w[-1..1]", "suffix3(w[0])", "shape(w[0])", "vowels(w[0])", "position(w[0])/w[0]"]


def main(folder: Path) -> list[str]:
    """Train on synthetic files in ``folder``; the tags of a sentence."""
    import structperc
    from structperc.data.conll import write_conll
    from structperc.data.synthetic import make_corpus

    for seed, (split, n) in enumerate({"train": 30, "dev": 8, "test": 8}.items(), start=1):
        write_conll(folder / f"{split}.txt", make_corpus(n, seed=seed))
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # so ``feature_function`` imports
    run = structperc.train(
        "+experiment=conll03_local",
        "data=columns",
        f"data.train={folder / 'train.txt'}",
        f"data.dev={folder / 'dev.txt'}",
        "data.columns=[token,pos,chunk,ner]",
        "features=templates",
        "features.templates=[" + ",".join(f'"{t}"' for t in TEMPLATES) + "]",
        "plugins=[feature_function]",
        "trainer.max_epochs=3",
        "trainer.progress=false",
        f"cache_dir={folder / 'cache'}",
        folder=folder / "run",
    )
    tagger = run.tagger()  # (Tagger.load: imports the recorded plugin first)
    return tagger.tag(["John", "Smith", "lives", "in", "Paris", "."])


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        print(main(Path(tmp)))
