"""The code space of the non-local features: (family, c, c') with classes 1..K and 0 = "O".

With K entity classes (K1 = K + 1 with "O") every feature is a code

    code = (family * K1 + c) * K1 + c'        family = ``FAMILIES.index(name)``

in a closed space of 6 K1^2 codes, so Φ^g of n candidates is an integer matrix [n, 6 K1^2].
Not every code can fire: the unordered families (``phrase``, ``conj``) only produce c <= c',
only ``phrase`` pairs a class with "O" (c' = 0), and no family fires for c = 0.  That leaves
88 reachable codes for CoNLL's K = 4 (four ordered families of K^2, ``conj`` with K(K+1)/2,
``phrase`` with K(K+1)/2 + K).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from structperc.data.tags import OUTSIDE, split_tag
from structperc.features.non_local.notation import FAMILIES, feature

UNORDERED = ("phrase", "conj")


def label_classes(labels: Sequence[str]) -> list[str]:
    """The entity classes of a label list, sorted (index 0 of the code space is "O")."""
    return sorted({split_tag(t)[1] for t in labels if t != OUTSIDE})


def reachable_codes(families: Sequence[str], num_classes: int) -> np.ndarray:
    """Sorted codes the enabled families can produce (``family * K1^2 + c * K1 + c'``)."""
    k1 = num_classes + 1
    out = []
    for name in families:
        f = FAMILIES.index(name)
        for c in range(1, k1):
            for d in range(1, k1):
                if name not in UNORDERED or c <= d:
                    out.append((f * k1 + c) * k1 + d)
            if name == "phrase":
                out.append((f * k1 + c) * k1)
    return np.array(sorted(out), dtype=np.int64)


def code_names(classes: Sequence[str]) -> list[str]:
    """The feature string of every code of the space (index = code)."""
    names = [OUTSIDE, *classes]
    return [feature(f, a, b) for f in FAMILIES for a in names for b in names]
