"""structperc: structured prediction with sparse linear models in PyTorch.

The few names a user needs, importable from here:

    Tagger              a trained model, to tag text, tokens or documents (``inference.tagger``)
    train               a training run from Python, with the command line's overrides (``run``)
    CRF                 the scikit-learn face, a drop-in for ``sklearn_crfsuite.CRF`` (``sklearn``)
    register_attribute  a feature function of your own for templates (``features.functions``)

Each is imported when first used, so ``import structperc`` (and the console scripts, which
import the package first) stays quick: torch and scikit-learn load with the first name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from structperc.lazy import lazy_attributes

__all__ = ["CRF", "Tagger", "register_attribute", "train"]

# name -> the module that defines it (imported on first use: PEP 562)
_WHERE = {
    "Tagger": "structperc.inference.tagger",
    "train": "structperc.run",
    "CRF": "structperc.sklearn.estimator",
    "register_attribute": "structperc.features.functions",
}

if TYPE_CHECKING:
    from structperc.features.functions import register_attribute
    from structperc.inference.tagger import Tagger
    from structperc.run import train
    from structperc.sklearn.estimator import CRF


__getattr__, __dir__ = lazy_attributes(globals(), _WHERE, __all__)
