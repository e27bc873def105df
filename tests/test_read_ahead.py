"""``prefetched``: every item in order, the next ones made on another thread, a bounded number
ahead; and ``huge_pages.zeros``: zeroed tables, whatever pages the system gives them."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from structperc.features.read_ahead import prefetched
from structperc.model import huge_pages
from structperc.model.weights import ChainWeights


def test_every_item_comes_in_order_made_on_the_read_ahead_thread():
    made_on = []

    def made(items):
        for x in items:
            made_on.append(threading.current_thread().name)
            yield x * 10

    assert list(prefetched(made([1, 2, 3]), depth=1)) == [10, 20, 30]
    assert made_on == ["read-ahead"] * 3
    assert list(prefetched(made([]), depth=1)) == []


def test_the_next_items_are_made_while_one_is_worked_on_and_no_further():
    started = []
    third = threading.Event()

    def made():
        for k in range(10):
            started.append(k)
            if k == 2:
                third.set()
            yield k

    work = prefetched(made(), depth=1)
    assert next(work) == 0
    assert third.wait(5)  # items 1 and 2 are made while item 0 is in the caller's hands
    time.sleep(0.3)
    assert started == [0, 1, 2]  # one waiting, one made and blocked: no further
    assert list(work) == list(range(1, 10))


def test_an_error_of_the_maker_is_raised_at_its_item():
    def made():
        yield 0
        yield 1
        raise OSError("short read")

    work = prefetched(made(), depth=1)
    assert next(work) == 0 and next(work) == 1
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
