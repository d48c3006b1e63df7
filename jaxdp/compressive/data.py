"""Compressible vectors to test on: seeded synthetic, bundled columns, a CSV loader."""

from __future__ import annotations

import numpy as np

from jaxdp import _validate
from jaxdp.compressive.mechanism import _check_vector
from jaxdp.compressive.recovery import basis_matrix

__all__ = ['synthetic_compressible', 'BUNDLED', 'bundled_vector', 'load_vector']


# --------------------------------------------------------------------------------------- data
def synthetic_compressible(seed: int, *, n: int = 4096, basis="haar", p: float = 0.5, scale: float = 1000.0,
                           offset: float = 0.0) -> np.ndarray:
    """A seeded compressible vector D = Ψx: sorted coefficient magnitudes ``scale·i^(−1/p)`` (power law,
    p ∈ (0, 1)), random signs and positions, plus a constant `offset`. float64 ``[n]``."""
    if not 0 < p < 1:
        raise ValueError(f"p must lie in (0, 1) for a compressible vector, got {p}.")
    (n,) = _validate.generated({"n": n})
    rng = np.random.default_rng(_validate.seed("seed", seed))
    mags = scale * np.arange(1, n + 1, dtype=np.float64) ** (-1.0 / p)
    x = np.zeros(n)
    x[rng.permutation(n)] = mags * rng.choice([-1.0, 1.0], n)
    return _synthesize64(basis, x) + offset


def _synthesize64(basis, x: np.ndarray) -> np.ndarray:
    """Ψx in float64 NumPy without building Ψ for the named bases (Haar: O(n); DCT: SciPy's FFT-based idct)."""
    import scipy.fft

    n = x.size
    if isinstance(basis, str) and basis == "haar":
        if n & (n - 1):
            raise ValueError(f"the Haar basis needs n to be a power of two, got n = {n}; pad the vector.")
        cur, pos, width = x[:1], 1, 1
        while width < n:
            diff = x[pos : pos + width]
            cur = np.stack([(cur + diff), (cur - diff)], axis=-1).reshape(2 * width) / np.sqrt(2.0)
            pos, width = pos + width, 2 * width
        return cur
    if isinstance(basis, str) and basis == "dct":
        return scipy.fft.idct(x, type=2, norm="ortho")
    return basis_matrix(basis, n) @ x


BUNDLED = ("census-afnlwgt-sorted", "eia-totsales-by-utility")


def bundled_vector(name: str, *, n: int = 1024) -> np.ndarray:
    """Vectors from the bundled data (float64 ``[n]``; padded with zeros or truncated to n).

    ``census-afnlwgt-sorted``: the AFNLWGT column of Census sorted ascending (a smooth ramp);
    ``eia-totsales-by-utility``: annual TOTSALES per utility (sum over the 12 months), in file order.
    Neighbours at L1 distance 1 mean one unit of these values: set `l1_sensitivity` to the public bound
    of one person's contribution for a record-level guarantee.
    """
    from jaxdp import datasets

    name = _validate.option("name", name, BUNDLED)
    n = _validate.size("n", n)
    if name == "census-afnlwgt-sorted":
        v = np.sort(datasets.load_census()[:, 0].astype(np.float64))
    else:
        e = datasets.load_eia()
        _, inv = np.unique(e["UTILITYID"], return_inverse=True)
        v = np.bincount(inv, weights=e["TOTSALES"].astype(np.float64))
    out = np.zeros(n)
    out[: min(n, v.size)] = v[:n]
    return out


def load_vector(path: str) -> np.ndarray:
    """A user's vector: one number per line (or the last field of CSV rows; a header line is skipped)."""
    return _check_vector(_validate.read_number_column(path), "vector")
