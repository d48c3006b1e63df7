"""Orthonormal transforms and scans shared by the systems.

* `jaxdp.transforms.bases` — the paper's DCT-II / DST-I / DHT / identity block transforms (Section 4.2),
  the orthonormal real DFT (histograms) and the Haar matrix (compressive mechanism);
* `jaxdp.transforms.orders` — zig-zag and diagonal coefficient scans (Fig. 3);
* `jaxdp.transforms.cumsum` — prefix and suffix sums as small GEMMs (the quantizer's MSE tables).
"""

from __future__ import annotations

from jaxdp.transforms import cumsum, orders
from jaxdp.transforms.bases import (
    KINDS,
    forward,
    haar_matrix,
    inverse,
    irdft,
    matrix,
    rdft,
    rdft_size,
)

__all__ = ["KINDS", "cumsum", "forward", "haar_matrix", "inverse", "irdft", "matrix", "orders", "rdft", "rdft_size"]
