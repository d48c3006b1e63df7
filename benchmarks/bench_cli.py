"""End-to-end CLI on a large file: records/s (parse + codec + write) and peak memory, CSV and Parquet.

Generates a stream of `--rows` × 13 records by resampling the bundled Census records with ±1 % jitter
(not committed; written to `--workdir`), then runs `jaxdp anonymize` on it as a subprocess under
`/usr/bin/time -v` (peak RSS of the whole process) with public bounds (1.5 × the Census maximum,
fixed constants) and a reproducible seed (timing only). Reports wall time including JAX start-up and
compilation, and the CLI's own records/s (reading, coding, writing).

Usage: python benchmarks/bench_cli.py [--rows 10000000] [--workdir DIR (default: jaxdp-bench in the temporary directory)] [--formats csv,parquet]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.csv as pc
import pyarrow.parquet as pq

from jaxdp import datasets


def make_table(rows: int, seed: int = 0) -> pa.Table:
    data = datasets.load_census().astype(np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, data.shape[0], rows)
    x = np.round(data[idx] * rng.uniform(0.99, 1.01, (rows, data.shape[1])), 2)
    return pa.table({c: x[:, j] for j, c in enumerate(datasets.CENSUS_COLUMNS)})


def run_cli(src: str, out: str, bounds: str, chunk: int) -> dict:
    report = out + ".json"
    cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "jaxdp", "anonymize", src, "-o", out, "--bounds", bounds,
           "--seed", "1", "--quiet", "--report", report, "--chunk", str(chunk)]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    with open(report) as f:
        rep = json.load(f)
    return {"wall_s": wall, "peak_rss_gb": rss_kb / 1e6, "cli_records_per_s": rep["timing_curator_only"]["records_per_second"],
            "records_out": rep["records_out"], "end_to_end_records_per_s": rep["records_in"] / wall}  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "jaxdp-bench"))
    parser.add_argument("--formats", default="csv,parquet")
    parser.add_argument("--chunk", type=int, default=131_072)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    width = 1.5 * datasets.load_census().max(axis=0)
    bounds = ",".join(f"{w:g}" for w in width)
    print(f"machine: {platform.machine()} | {os.cpu_count()} CPUs | {args.rows:,} rows x 13 | chunk {args.chunk:,}")
    table = None
    print("\n| input | file size | wall s | peak RSS GB | records/s (CLI) | records/s (wall, incl. start-up) |")
    print("|---|---|---|---|---|---|")
    for fmt in args.formats.split(","):
        src = os.path.join(args.workdir, f"stream_{args.rows}.{'csv' if fmt == 'csv' else 'parquet'}")
        if not os.path.exists(src):
            table = table if table is not None else make_table(args.rows)
            if fmt == "csv":
                pc.write_csv(table, src)
            else:
                pq.write_table(table, src, row_group_size=131_072)
        out = os.path.join(args.workdir, f"out.{'csv' if fmt == 'csv' else 'parquet'}")
        r = run_cli(src, out, bounds, args.chunk)
        size = os.path.getsize(src) / 1e9
        print(f"| {fmt} | {size:.2f} GB | {r['wall_s']:.1f} | {r['peak_rss_gb']:.2f} | {r['cli_records_per_s']:,.0f} | "
              f"{r['end_to_end_records_per_s']:,.0f} |", flush=True)  # fmt: skip
        os.remove(out)


if __name__ == "__main__":
    main()
