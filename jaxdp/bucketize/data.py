"""Tables to test on: seeded synthetic, the bundled EIA table, a CSV loader."""

from __future__ import annotations

import numpy as np

from jaxdp import _validate

__all__ = ['synthetic_table', 'eia_table', 'load_table']


# --------------------------------------------------------------------------------------- data
def synthetic_table(seed: int, *, n: int = 10_000, m: int = 50, qi_attributes: int = 4, qi_domain: int = 20,
                    min_freq: float = 0.0018) -> tuple[np.ndarray, np.ndarray]:
    """A seeded categorical table with skewed SA frequencies like the paper's OCC (m = 50) / EDU (m = 14):
    a Zipf-like profile rescaled so the rarest value has frequency ≈ `min_freq`; QI attributes weakly
    correlated with SA. Returns ``(qi [n, d] int, sa [n] int)``."""
    n, qi_attributes = _validate.generated({"n": n, "qi_attributes": qi_attributes})
    m, qi_domain = _validate.size("m", m), _validate.size("qi_domain", qi_domain)
    if m < 2:
        raise ValueError("m must be at least 2 SA values (the profile is rescaled between the rarest and the rest).")
    if not 0 < min_freq * m < 1:
        raise ValueError(f"min_freq must lie in (0, 1/m) = (0, {1 / m:.4g}), got {min_freq!r}.")
    rng = np.random.default_rng(_validate.seed("seed", seed))
    w = 1.0 / np.arange(1, m + 1) ** 1.1
    w = w / w.sum()
    w = min_freq + (1 - m * min_freq) * (w - w.min()) / (w - w.min()).sum()
    sa = rng.choice(m, size=n, p=w / w.sum())
    qi = (rng.integers(0, qi_domain, size=(n, qi_attributes)) + (sa[:, None] % 3) * rng.integers(0, 2, (n, 1))) % qi_domain
    return qi.astype(np.int64), sa.astype(np.int64)


def eia_table() -> tuple[np.ndarray, np.ndarray]:
    """The bundled EIA records as categorical microdata: SA = STATE (51 values); QI = MONTH and the deciles
    of RESSALES, COMSALES and INDSALES (public decile edges would be needed for a real release; these are
    for experiments). Returns ``(qi [4092, 4] int, sa [4092] str)``."""
    from jaxdp import datasets

    e = datasets.load_eia()
    cols = [e["MONTH"]]
    for c in ("RESSALES", "COMSALES", "INDSALES"):
        edges = np.quantile(e[c], np.linspace(0, 1, 11)[1:-1])
        cols.append(np.searchsorted(edges, e[c], side="right"))
    return np.stack(cols, axis=1).astype(np.int64), np.asarray(e["STATE"])


def load_table(path: str, *, sensitive: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Read a CSV with a header; `sensitive` names the SA column. Returns (QI names, qi [N, d] str, sa [N] str).

    Every field is stripped of surrounding white space (found in review: in a file written as ``30, flu``, " flu" and
    "flu" were two SA values, each with its own f′, and a bucket of only flu passed the F′ check)."""
    import csv

    with open(path, newline="", encoding="utf-8-sig") as f:  # (found in review: Excel's BOM stuck to the first name)
        rows = list(csv.reader(f))
    if len(rows) < 2:
        raise ValueError(f"{path} has no records.")
    header = [h.strip() for h in rows[0]]
    if "" in header:  # (found in review: a trailing comma's empty name was reported as a repeated name)
        raise ValueError(f"{path}: the header has an empty column name (column {header.index('') + 1}; a trailing "
                         "delimiter?): name every column, or remove the empty one.")
    repeated = sorted({h for h in header if header.count(h) > 1})
    if repeated:  # found in review: "disease, disease" (or "disease, disease" after stripping) dropped only the first
        # copy of the SA column, and the second was published as a QI column, next to every record
        raise ValueError(f"{path}: the header repeats the column name(s) {repeated} (after stripping white space): give "
                         "every column its own name.")
    if sensitive not in header:
        raise ValueError(f"sensitive column {sensitive!r} not in the header {header}.")
    j = header.index(sensitive)
    body = [[v.strip() for v in r] for r in rows[1:] if r]
    if any(len(r) != len(header) for r in body):
        raise ValueError(f"{path}: ragged rows (every row needs {len(header)} fields).")
    empty = next((i for i, r in enumerate(body) if r[j] == ""), None)
    if empty is not None:  # found in review: an empty SA cell became an SA value "" with its own f′ and buckets
        raise ValueError(f"{path}: record {empty + 1} (after the header) has no value in the sensitive column "
                         f"{sensitive!r}: every record needs its SA value (drop the record or fill it in).")
    data = np.asarray(body, dtype=str)
    names = [h for k, h in enumerate(header) if k != j]
    return names, np.delete(data, j, axis=1), data[:, j]
