"""Coefficient scan orders of paper Fig. 3, as integer index arrays.

An order of an ``n x d`` coefficient matrix is returned as a read-only NumPy ``int32`` array of
shape ``[n*d]`` holding *flat row-major* indices: ``c.reshape(-1)[order]`` lists the coefficients
in scan order, and ``np.unravel_index(order, (n, d))`` gives the (row, column) pairs (0-based).

* ``zigzag``: the JPEG/MPEG zig-zag scan, generalized to rectangles by skipping cells outside the
  matrix: (1,1), (1,2), (2,1), (3,1), (2,2), (1,3), (1,4), (2,3), … (1-based (row, column)).
  Anti-diagonals with an odd 0-based index run down-left, even ones up-right.
* ``diagonal``: the HEVC up-right diagonal scan: every anti-diagonal is read from its bottom-left
  cell to its top-right cell: (1,1), (2,1), (1,2), (3,1), (2,2), (1,3), …

Both start at the DC coefficient and visit lower frequencies (small i + j) first.
"""

from __future__ import annotations

import functools

import numpy as np
from jaxtyping import Int

from jaxdp import _validate

__all__ = ["ORDERS", "zigzag", "diagonal", "get", "rows_cols"]

ORDERS = _validate.ORDERS


def _antidiagonal_scan(n: int, d: int, alternate: bool) -> np.ndarray:
    out = []
    for s in range(n + d - 1):
        rows = range(max(0, s - d + 1), min(n, s + 1))  # rows of cells (r, s - r) inside the matrix
        cells = [r * d + (s - r) for r in rows]  # increasing row: top-right -> bottom-left
        if not alternate or s % 2 == 0:
            cells.reverse()  # decreasing row: bottom-left -> top-right
        out.extend(cells)
    arr = np.asarray(out, dtype=np.int32)
    arr.flags.writeable = False
    return arr


@functools.lru_cache(maxsize=256)
def _zigzag(n: int, d: int) -> np.ndarray:
    return _antidiagonal_scan(n, d, alternate=True)


@functools.lru_cache(maxsize=256)
def _diagonal(n: int, d: int) -> np.ndarray:
    return _antidiagonal_scan(n, d, alternate=False)


MAX_ENTRIES = _validate.MAX_BLOCK_SIZE * _validate.MAX_MATRIX_SIZE  # n·d of an order (built in a Python loop)


def _sizes(n, d) -> tuple[int, int]:
    n, d = _validate.size("n", n), _validate.size("d", d)
    if n * d > MAX_ENTRIES:  # found in review: n = d = 10⁵ ran a Python loop over 10¹⁰ cells
        raise ValueError(f"an order of an n × d = {n:,} × {d:,} matrix has more than {MAX_ENTRIES:,} entries "
                         "(the codec's blocks have n ≤ 1024 rows).")
    return n, d


def zigzag(n: int, d: int) -> Int[np.ndarray, " nd"]:
    """Zig-zag scan of an ``n x d`` matrix (paper Fig. 3a) as flat row-major indices, shape ``[n*d]``."""
    return _zigzag(*_sizes(n, d))


def diagonal(n: int, d: int) -> Int[np.ndarray, " nd"]:
    """Up-right diagonal scan of an ``n x d`` matrix (paper Fig. 3b) as flat indices, shape ``[n*d]``."""
    return _diagonal(*_sizes(n, d))


def get(name: str, n: int, d: int) -> Int[np.ndarray, " nd"]:
    """The order called `name` (``"zigzag"`` or ``"diagonal"``) for an ``n x d`` matrix."""
    name = _validate.option("order", name, ORDERS)
    return zigzag(n, d) if name == "zigzag" else diagonal(n, d)


def rows_cols(order: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """0-based (row, column) index arrays of a flat order over a matrix with `d` columns."""
    order = np.asarray(order)
    return order // d, order % d
