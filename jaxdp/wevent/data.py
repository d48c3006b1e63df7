"""Seeded synthetic count streams and a CSV loader."""

from __future__ import annotations

import numpy as np

from jaxdp import _validate
from jaxdp.wevent.methods import check_counts

__all__ = ['synthetic_counts', 'load_counts']


def synthetic_counts(seed: int, *, timestamps: int = 1000, columns: int = 100, kind: str = "bursty") -> np.ndarray:
    """Seeded count streams with the character of the paper's data.

    ``"bursty"``: many columns of slowly varying counts (a random walk around a heavy-tailed base) with
    occasional bursts; ``"daily"``: a periodic daily pattern (period 24) times a per-column popularity;
    ``"sparse"``: rare events (Poisson rate 0.05 per column and timestamp: most counts are 0).
    """
    # found in review: a negative or huge size, a float or a string seed ended in NumPy's own errors
    kind = _validate.option("kind", kind, ("bursty", "daily", "sparse"))
    timestamps, columns = _validate.generated({"timestamps": timestamps, "columns": columns})
    rng = np.random.default_rng(_validate.seed("seed", seed))
    base = rng.pareto(1.5, size=columns) * 20 + 1
    if kind == "daily":
        phase = 2 * np.pi * np.arange(timestamps)[:, None] / 24.0
        rate = base[None, :] * (1.2 + np.sin(phase + rng.uniform(0, 2 * np.pi, size=columns)))
    elif kind == "sparse":
        rate = np.full((timestamps, columns), 0.05)
    elif kind == "bursty":
        walk = np.exp(np.cumsum(rng.normal(0, 0.02, size=(timestamps, columns)), axis=0))
        bursts = 1 + 4 * (rng.random((timestamps, columns)) < 0.002).cumsum(axis=0) % 2
        rate = base[None, :] * walk * bursts
    else:
        raise ValueError(f"kind must be 'bursty', 'daily' or 'sparse', got {kind!r}.")
    return rng.poisson(rate).astype(np.float64)


def load_counts(path: str) -> np.ndarray:
    """A user's count stream from CSV (one row per timestamp, one column per count; header optional: a first row
    none of whose cells is a number. Found in review: a first row with one bad cell, e.g. a missing first count,
    was dropped as a header, shifting every timestamp by one)."""
    numbered = [(i, ln.strip()) for i, ln in enumerate(_validate.text_lines(path), 1) if ln.strip()]
    if not numbered:
        raise ValueError(f"{path} is empty.")
    rows = [(i, ln.split(",")) for i, ln in numbered]
    if not any(_is_float(v) for v in rows[0][1]):
        rows = rows[1:]  # header
    if not rows:
        raise ValueError(f"{path} has a header but no rows of counts.")
    widths = {len(r) for _, r in rows}
    if len(widths) != 1:
        raise ValueError(f"{path}: rows have different numbers of columns {sorted(widths)} (ragged rows).")
    values = []
    for i, r in rows:
        try:
            values.append([_validate.csv_float(v) for v in r])
        except ValueError:  # found in review: float()'s message quoted the cell
            col = next(j for j, v in enumerate(r) if not _is_float(v))
            raise ValueError(f"{path}:{i}, column {col + 1}: not a number.") from None
    try:
        return check_counts(values)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def _is_float(text: str) -> bool:
    try:
        _validate.csv_float(text)
    except ValueError:
        return False
    return True
