"""Bundled public data and explicit helpers for domain bounds.

`load_census()` returns the CASC "Census" set (1080 records × 13 integer attributes) used in
Figs. 4 and 5 of the hybrid-video-coding paper; `load_eia()` the CASC "EIA" set (4092 utility-month
records: names, STATE, and 10 revenue/sales columns). Provenance in ``jaxdp/data/README.md``.
"""

from __future__ import annotations

import functools
from importlib import resources

import numpy as np

__all__ = ["load_census", "CENSUS_COLUMNS", "census_bounds", "load_eia", "EIA_COLUMNS", "bounds_from_data"]

CENSUS_COLUMNS = (
    "AFNLWGT", "AGI", "EMCONTRB", "FEDTAX", "PTOTVAL", "STATETAX", "TAXINC",
    "POTHVAL", "INTVAL", "PEARNVAL", "FICA", "WSALVAL", "ERNVAL",
)  # fmt: skip


@functools.lru_cache(maxsize=1)
def _census() -> np.ndarray:
    with resources.files("jaxdp").joinpath("data/census.csv").open("r") as f:
        header = f.readline().strip().split(",")
        data = np.loadtxt(f, delimiter=",", dtype=np.int64)
    if tuple(header) != CENSUS_COLUMNS or data.shape != (1080, 13):
        raise RuntimeError("bundled census.csv is damaged: reinstall jaxdp.")
    data.flags.writeable = False
    return data


def load_census() -> np.ndarray:
    """The bundled Census records: read-only int64 array of shape ``[1080, 13]`` (columns `CENSUS_COLUMNS`)."""
    return _census()


def census_bounds() -> tuple[np.ndarray, np.ndarray]:
    """The public domain jaxdp fixes for the bundled Census: ``(lo, hi)`` float64 ``[13]`` — ``[0, 10⁶]`` for the
    survey weight AFNLWGT and ``[0, 250,000]`` for each of the twelve money amounts (US dollars a year).

    Round values set once (they are the README's example domain) and never recomputed from the records, unlike
    `bounds_from_data`; the CLI's run on the bundled data uses them, so the main job's release is private. For
    your own data, take the domain from public knowledge (a codebook, a legal limit), never from the records.
    Values outside it are clamped before coding (the released records stay in the domain).
    """
    return np.zeros(len(CENSUS_COLUMNS)), np.asarray([1e6] + [2.5e5] * (len(CENSUS_COLUMNS) - 1))


EIA_COLUMNS = (
    "UTILITYID", "UTILNAME", "STATE", "YEAR", "MONTH", "RESREVENUE", "RESSALES", "COMREVENUE", "COMSALES",
    "INDREVENUE", "INDSALES", "OTHREVENUE", "OTHRSALES", "TOTREVENUE", "TOTSALES",
)  # fmt: skip


@functools.lru_cache(maxsize=1)
def _eia() -> dict:
    import csv

    with resources.files("jaxdp").joinpath("data/eia.csv").open("r", newline="") as f:
        rows = list(csv.reader(f))
    if tuple(rows[0]) != EIA_COLUMNS or len(rows) != 4093:
        raise RuntimeError("bundled eia.csv is damaged: reinstall jaxdp.")
    cols = {}
    for j, name in enumerate(EIA_COLUMNS):
        vals = [r[j] for r in rows[1:]]
        arr = np.asarray(vals, dtype=str) if name in ("UTILNAME", "STATE") else np.asarray(vals, dtype=np.int64)
        arr.flags.writeable = False
        cols[name] = arr
    return cols


def load_eia() -> dict[str, np.ndarray]:
    """The bundled EIA records as read-only columns ``{name: array [4092]}``: UTILNAME and STATE are
    strings, the rest int64 (some revenue/sales values are negative). Keys in `EIA_COLUMNS` order."""
    return dict(_eia())


def bounds_from_data(data, factor: float = 1.5) -> np.ndarray:
    """**Not private.** The paper's rule (Section 5.4): domain ``[0, factor × max]`` per attribute.

    This reads the data, so the bounds themselves leak information about it (e.g. the largest
    value of each attribute), and a release that uses them is *not* ε-DP with respect to those
    records. It exists to reproduce the paper's experiments. For a private release, fix the
    bounds from public knowledge (a published range, a regulation, a prior public data set).

    Args:
      data: records of shape ``[N, d]`` with non-negative values.
      factor: multiplier ≥ 1.

    Returns:
      float64 widths Λ of shape ``[d]`` (domain ``[0, Λ]``); attributes whose maximum is 0 get
      width 1 so that the bounds stay valid.
    """
    data = np.asarray(data, dtype=np.float64)
    if data.ndim != 2 or data.shape[0] == 0:
        raise ValueError(f"data must have shape [N, d] with N >= 1, got {data.shape}.")
    if not np.all(np.isfinite(data)):
        raise ValueError("data contains NaN or inf.")
    if np.any(data < 0):
        raise ValueError("bounds_from_data assumes non-negative data; give explicit [lo, hi] bounds instead.")
    if not factor >= 1.0:
        raise ValueError(f"factor must be >= 1, got {factor}.")
    width = factor * data.max(axis=0)
    return np.where(width > 0, width, 1.0)
