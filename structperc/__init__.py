"""structperc: structured prediction with sparse linear models in PyTorch.

Importing the package asks PyTorch's CPU allocator for transparent huge pages on its large
tensors (``THP_MEM_ALLOC_ENABLE=1``, unless the variable is set already).  The weight tables and
the CRF's per-token tensors are hundreds of MB read at random (sparse lookups, their transposed
gradient); with 2 MB pages their TLB misses and first-touch page faults mostly go away
(``experiments/bench/README.md`` has the figures).  PyTorch reads the variable at its
first allocation, so it takes effect when structperc is imported before torch, as in every
entry point (``python -m structperc.run``, ``structperc-train``, ``structperc-tag``); set it to 0
to opt out.
"""

import os

os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
