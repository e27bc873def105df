"""Zeroed tables in memory the kernel may back by 2 MB pages (Linux ``MADV_HUGEPAGE``).

A training step reads and writes rows of the weight tables at random: a token's ~95 features
name rows scattered over tables of hundreds of MB to GBs.  With 4 KB pages almost every such row
misses the TLB, and the page walk it costs grows with the table (the page tables themselves fall
out of the caches).  A 2 MB page covers 512 times as much, so the TLB holds a few GB of table.
Measured here (random 360-byte rows of float32 tables, 2M reads, a 2-core VM):

    table     4 KB pages   2 MB pages
    236 MB    0.53 s       0.40 s
    2.28 GB   0.84 s       0.55 s

Linux backs a mapping by huge pages on its first touch when the mapping asks for them
(``madvise(MADV_HUGEPAGE)``) and the system allows it
(``/sys/kernel/mm/transparent_hugepage/enabled`` ``always`` or ``madvise``); elsewhere the advice
is ignored, or unavailable, and these are ordinary zeroed tensors.  An anonymous mapping starts
zeroed, so ``zeros`` touches no page itself: each is faulted in, huge where it can be, by its
first write.  Small tables (below ``MIN_BYTES``) take ``torch.zeros``.

The cost is memory: a table written sparsely becomes resident 2 MB at a time, up to its whole
size, where 4 KB pages would hold only the rows written.  Measured on the averaged perceptron at
1x CoNLL-2003's size (82 MB of weights, 74 MB of edge sums): a peak of 1,023 MB against 873.
"""

from __future__ import annotations

import math
import mmap

import torch
from torch import Tensor

MIN_BYTES = 32 << 20  # smaller tables fit the TLB's reach anyway


def zeros(shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> Tensor:
    """A zeroed CPU tensor of ``shape``, in an anonymous mapping advised to take huge pages
    when it holds ``MIN_BYTES`` or more (else ``torch.zeros``)."""
    count = math.prod(shape)
    nbytes = count * torch.empty(0, dtype=dtype).element_size()
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if nbytes < MIN_BYTES or advice is None:
        return torch.zeros(shape, dtype=dtype)
    region = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        region.madvise(advice)
    except OSError:  # THP compiled out or disabled for this process: ordinary pages
        pass
    # the tensor holds the mapping alive (frombuffer keeps a reference to its buffer)
    return torch.frombuffer(region, dtype=dtype, count=count).view(shape)


def zeros_like(table: Tensor) -> Tensor:
    """``zeros(table.shape, table.dtype)`` on ``table``'s device (contiguous)."""
    if table.device.type != "cpu":
        return torch.zeros(table.shape, dtype=table.dtype, device=table.device)
    return zeros(tuple(table.shape), table.dtype)
