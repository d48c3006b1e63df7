import numpy as np
import pytest
import reference as ref
from hypothesis import given
from hypothesis import strategies as st

from jaxdp.transforms import orders


def pairs(order, d):
    r, c = orders.rows_cols(order, d)
    return list(zip(r.tolist(), c.tolist()))


def test_zigzag_starts_as_in_the_paper():
    # Issue/paper (1-based): (1,1),(1,2),(2,1),(3,1),(2,2),(1,3), ...
    got = [(r + 1, c + 1) for r, c in pairs(orders.zigzag(4, 4), 4)[:6]]
    assert got == [(1, 1), (1, 2), (2, 1), (3, 1), (2, 2), (1, 3)]


def test_zigzag_4x4_is_the_jpeg_scan():
    want = [0, 1, 4, 8, 5, 2, 3, 6, 9, 12, 13, 10, 7, 11, 14, 15]
    assert orders.zigzag(4, 4).tolist() == want


def test_diagonal_4x4_is_the_hevc_up_right_scan():
    want = [(0, 0), (1, 0), (0, 1), (2, 0), (1, 1), (0, 2), (3, 0), (2, 1), (1, 2), (0, 3),
            (3, 1), (2, 2), (1, 3), (3, 2), (2, 3), (3, 3)]  # fmt: skip
    assert pairs(orders.diagonal(4, 4), 4) == want


@given(st.integers(1, 40), st.integers(1, 40))
def test_zigzag_matches_cursor_simulation(n, d):
    assert pairs(orders.zigzag(n, d), d) == ref.zigzag_pairs(n, d)


@given(st.integers(1, 40), st.integers(1, 40), st.sampled_from(["zigzag", "diagonal"]))
def test_orders_are_permutations_by_antidiagonal(n, d, name):
    order = orders.get(name, n, d)
    assert order.dtype == np.int32 and order.shape == (n * d,)
    assert sorted(order.tolist()) == list(range(n * d))
    r, c = orders.rows_cols(order, d)
    assert np.all(np.diff(r + c) >= 0)  # lower frequencies first
    assert order[0] == 0


def test_bad_order_name():
    with pytest.raises(ValueError, match="order"):
        orders.get("hilbert", 4, 4)


def test_orders_refuse_sizes_beyond_the_limit():
    # found in review: zigzag(10**5, 10**5) ran a Python loop over 10¹⁰ cells
    with pytest.raises(ValueError, match="more than"):
        orders.zigzag(10**5, 10**5)
    with pytest.raises(ValueError, match="more than"):
        orders.get("diagonal", 2048, 16384)
    assert orders.zigzag(1024, 4).shape == (4096,)
