"""Feature hashing: a feature key's row in a table of a fixed 2^bits rows.

``hashed_rows(keys, bits)`` mixes each int64 key (``extract.Vocabulary``'s: template and
attribute codes) with the splitmix64 finaliser (Steele, Lea & Flood 2014; the output function of
Vigna's ``splitmix64``)

    z = key + 0x9E3779B97F4A7C15
    z = (z xor (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z xor (z >> 27)) * 0x94D049BB133111EB
    z = z xor (z >> 31)                      (all mod 2^64)

and keeps its top ``bits`` bits.  It is a bijection of 64-bit words whose every output bit
depends on every input bit, computed in NumPy (unsigned arithmetic wraps mod 2^64), the same on
every machine and in every process: unlike Python's ``hash``, no per-process salt, so a model
saved by one process finds its rows in another.
"""

from __future__ import annotations

import numpy as np

MAX_BITS = 30  # rows are int32 feature ids (``FeatureMatrix.ids``)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def check_bits(bits) -> int | None:
    """``bits`` as an int in 1..``MAX_BITS`` (None: no hashing); else ValueError naming the
    setting."""
    if bits is None:
        return None
    if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= MAX_BITS:
        raise ValueError(
            f"features.hash_bits must be an integer from 1 to {MAX_BITS} (2^bits rows) or null, "
            f"got {bits!r}"
        )
    return bits


def mix64(keys: np.ndarray) -> np.ndarray:
    """[K] uint64: the splitmix64 finaliser of each int64 key (module docstring)."""
    z = np.asarray(keys, dtype=np.int64).view(np.uint64) + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def hashed_rows(keys: np.ndarray, bits: int) -> np.ndarray:
    """[K] int64: the row of each key in a table of 2^``bits`` rows (the mix's top bits)."""
    return (mix64(keys) >> np.uint64(64 - bits)).astype(np.int64)


def collisions(rows: np.ndarray) -> int:
    """Keys that share a row with an earlier key: ``len(rows)`` less the rows used."""
    return len(rows) - len(np.unique(rows))
