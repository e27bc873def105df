"""``read_ahead``: every chunk with its read, in order, the next read on another thread; and
``huge_pages.zeros``: zeroed tables, whatever pages the system gives them."""

from __future__ import annotations

import threading

import pytest
import torch

from structperc.features.read_ahead import read_ahead
from structperc.model import huge_pages
from structperc.model.weights import ChainWeights


def test_every_chunk_comes_with_its_read_in_order():
    seen_on = []

    def read(chunk):
        seen_on.append(threading.current_thread().name)
        return [x * 10 for x in chunk]

    chunks = [[1, 2], [3], [4, 5, 6]]
    assert list(read_ahead(chunks, read)) == [
        ([1, 2], [10, 20]),
        ([3], [30]),
        ([4, 5, 6], [40, 50, 60]),
    ]
    assert all(name.startswith("read-ahead") for name in seen_on)
    assert list(read_ahead([], read)) == []


def test_the_next_read_runs_while_a_chunk_is_worked_on_and_no_further():
    started = []
    next_started = threading.Event()

    def read(chunk):
        started.append(chunk)
        if chunk == 1:
            next_started.set()
        return chunk

    work = read_ahead([0, 1, 2, 3], read)
    assert next(work) == (0, 0)
    assert next_started.wait(5)  # chunk 1 is read while chunk 0 is in the caller's hands
    assert started == [0, 1]  # and not chunk 2: at most two chunks at a time
    assert [c for c, _ in work] == [1, 2, 3]


def test_an_error_of_the_read_is_raised_at_its_chunk():
    def read(chunk):
        if chunk == 2:
            raise OSError("short read")
        return chunk

    work = read_ahead([0, 1, 2], read)
    assert next(work) == (0, 0) and next(work) == (1, 1)
    with pytest.raises(OSError, match="short read"):
        next(work)


@pytest.mark.parametrize("rows", [10, (huge_pages.MIN_BYTES // (4 * 90)) + 1])
def test_weight_tables_start_at_zero_and_keep_what_is_written(rows):
    weights = ChainWeights(rows, list("ABCDEFGHI"))  # 9 labels: rows of 9 + 81 weights
    table = weights.joint.weight
    assert table.shape == (rows, 90) and table.is_contiguous() and not table.requires_grad
    assert not table.any()
    table[rows - 1, 89] = 2.5
    weights.tables()["node"][0, 3] += 1.0
    assert table[rows - 1, 89] == 2.5 and table[0, 3] == 1.0 and table.sum() == 3.5
    ids, offsets = torch.tensor([0, rows - 1]), torch.tensor([0, 1, 2])
    node, edge = weights.csr_scores(ids, offsets)
    assert node[0, 3] == 1.0 and edge[1, 8, 8] == 2.5


def test_a_large_table_outlives_the_name_of_its_mapping():
    table = huge_pages.zeros((huge_pages.MIN_BYTES // 4 + 1,))
    view = table[-3:]
    del table
    view += 1.0
    assert view.tolist() == [1.0, 1.0, 1.0]
    assert huge_pages.zeros((2, 3), torch.float64).dtype == torch.float64
