"""Data in and out: the bundled public data sets, explicit bound helpers, and chunked table I/O.

* `jaxdp.datasets.bundled` — the CASC Census and EIA sets shipped with jaxdp (provenance in
  ``jaxdp/data/README.md``), Census's public domain (`census_bounds`), and `bounds_from_data` (the paper's
  1.5 × max rule: not private);
* `jaxdp.datasets.io` — CSV / Parquet / Arrow IPC tables read and written in chunks (the CLI's I/O).

Importing this package does not start JAX.
"""

from __future__ import annotations

from jaxdp.datasets.bundled import (
    CENSUS_COLUMNS,
    EIA_COLUMNS,
    bounds_from_data,
    census_bounds,
    load_census,
    load_eia,
)

__all__ = ["CENSUS_COLUMNS", "EIA_COLUMNS", "bounds_from_data", "census_bounds", "load_census", "load_eia"]
