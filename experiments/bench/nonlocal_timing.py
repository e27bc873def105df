"""Timing of ``NonLocalFeatures.vectorize`` on fake n-best lists of a CoNLL document.

    python experiments/bench/nonlocal_timing.py TRAIN.txt [N ...]

The candidates are the
gold labeling and n - 1 copies with 1-3 labels changed near its entities (``fake_candidates``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from structperc.data.tags import spans


def fake_candidates(gold: np.ndarray, n: int, num_labels: int, seed: int = 0) -> np.ndarray:
    """[n, T]: the gold labeling, then n - 1 copies with 1-3 labels changed near entities."""
    rng = np.random.default_rng(seed)
    out = np.repeat(gold[None], n, axis=0)
    near = np.flatnonzero(gold > 0)
    near = near if len(near) else np.arange(len(gold))
    for r in range(1, n):
        k = int(rng.integers(1, 4))
        where = np.clip(rng.choice(near, k) + rng.integers(-2, 3, k), 0, len(gold) - 1)
        out[r, where] = rng.integers(0, num_labels, k)
    return out


def time_vectorize(path: str, sizes: Sequence[int], length: int = 250, repeats: int = 200) -> None:
    """Print the time of ``vectorize`` + ``embedding_bag`` for n = each of ``sizes`` candidates."""
    import time

    from structperc.data.conll import read_conll
    from structperc.features.document import NonLocalFeatures

    torch.set_num_threads(1)
    docs = read_conll(path, max_docs=50)
    doc = min(docs, key=lambda d: abs(len(d) - length))
    mentions = len(spans(doc.tags))
    print(f"document {doc.source}: {len(doc)} tokens, {mentions} gold mentions")
    for n in sizes:
        nl = NonLocalFeatures().fit(docs)
        gold = np.array([nl.labels.index(t) for t in doc.tags])
        cands = torch.from_numpy(fake_candidates(gold, n, len(nl.labels)))
        weight = torch.zeros(nl.num_features, 1)
        times = []
        for _ in range(repeats + 1):
            t0 = time.perf_counter()
            ids, offsets = nl.vectorize(doc, cands)
            F.embedding_bag(ids, weight, offsets, mode="sum", include_last_offset=True)
            times.append((time.perf_counter() - t0) * 1e3)
        cold, warm = times[0], np.array(times[1:])
        print(
            f"n={n}: vectorize + embedding_bag median {np.median(warm):.2f} ms, "
            f"min {warm.min():.2f} ms; first call (new document) {cold:.2f} ms; nnz {len(ids)}"
        )


def main(argv: Sequence[str]) -> None:
    """``TRAIN.txt [N ...]`` (default N: 20 100)."""
    time_vectorize(argv[0], [int(a) for a in argv[1:]] or [20, 100])


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
