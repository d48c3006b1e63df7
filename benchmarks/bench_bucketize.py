"""Benchmark: F′-privacy bucketization (TwoSize, MultiSize, the exact MILP "Optimal", Anatomy).

Utility vs the privacy coefficient θ ∈ {2, 4, 8, 16, 32} with f′_i = min{1, θ·f_i + 0.02}, M = min_i ⌈1/f′_i⌉,
M′ = 50 (the paper's Section 7 settings): MSE (Definition 3.9) and the mean relative error of random
count queries (Section 7.2.2, selectivity 1 %). Data: seeded synthetic tables like the paper's OCC (|SA| = 50)
and EDU (|SA| = 14), min frequency 0.18 %, 100,000 records, 4 QI attributes; and the bundled EIA (SA = STATE).
Anatomy uses ℓ = ⌈1/min_i f′_i⌉ and is reported "not eligible" where max_i f_i > 1/ℓ (Remark 3.8).
Runtime: TwoSize and MultiSize vs |T| ∈ {100k … 500k} and vs |SA| scaled by γ ∈ {2 … 64} (Section 7.3:
value v of record r becomes γ·v + (r mod γ)).

Usage: python benchmarks/bench_bucketize.py [--records 100000] [--queries 300]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from jaxdp import bucketize as B

THETAS = (2, 4, 8, 16, 32)


def _spec(sa, theta):
    vals, o = B.value_counts(sa)
    return dict(zip(vals, B.fprime_linear(o / o.sum(), theta=theta))), o


def utility(records, queries):
    tables = {
        "OCC-like (|SA| = 50)": B.synthetic_table(1, n=records, m=50),
        "EDU-like (|SA| = 14)": B.synthetic_table(2, n=records, m=14),
        "EIA (SA = STATE)": B.eia_table(),
    }
    for name, (qi, sa) in tables.items():
        print(f"\n**{name}**, {sa.size:,} records\n")
        print("| θ | method | buckets (sizes) | MSE | RE | seconds |")
        print("|---|---|---|---|---|---|")
        for theta in THETAS:
            fp, o = _spec(sa, theta)
            ell = int(np.ceil(1 / min(fp.values()) - 1e-9))
            runs = {
                "TwoSize": lambda: B.two_size(sa, fp),
                "MultiSize": lambda: B.multi_size_bucketing(sa, fp),
                "Optimal (MILP)": lambda: B.optimal(sa, fp, time_limit=120),
                f"Anatomy (ℓ = {ell})": lambda: B.anatomy(sa, ell=ell),
            }
            for method, fn in runs.items():
                t0 = time.perf_counter()
                try:
                    bk = fn()
                except (ValueError, RuntimeError) as e:
                    print(f"| {theta} | {method} | — ({str(e).split(':')[0]}) | | | {time.perf_counter() - t0:.2f} |")
                    continue
                secs = time.perf_counter() - t0
                assert B.is_fprime_private(sa, bk.bucket, fp) or method.startswith("Anatomy")
                nsizes = len(bk.setting)
                re = B.relative_error(qi, sa, bk.bucket, queries=queries, seed=theta)
                print(f"| {theta} | {method} | {sum(b for _, b in bk.setting):,} ({nsizes} sizes, max {bk.setting[-1][0]}) | "
                      f"{B.mse(bk.bucket):.3g} | {100 * re:.2f} % | {secs:.2f} |", flush=True)


def _time_two_and_multi(sa, fp):
    """Seconds for TwoSizeBucketing and for MultiSizeBucketing on the same table and F′."""
    t0 = time.perf_counter()
    B.two_size(sa, fp)
    t1 = time.perf_counter()
    B.multi_size_bucketing(sa, fp)
    return t1 - t0, time.perf_counter() - t1


def runtime():
    print("\nruntime vs |T| (OCC-like, θ = 8)\n")
    print("| records | TwoSize s | MultiSize s |")
    print("|---|---|---|")
    for n in (100_000, 200_000, 300_000, 400_000, 500_000):
        _, sa = B.synthetic_table(3, n=n, m=50)
        fp, _ = _spec(sa, 8)
        two, multi = _time_two_and_multi(sa, fp)
        print(f"| {n:,} | {two:.2f} | {multi:.2f} |", flush=True)
    print("\nruntime vs |SA| scale-up γ (OCC-like, 500,000 records, θ = 8)\n")
    print("| γ | |SA| | TwoSize s | MultiSize s |")
    print("|---|---|---|---|")
    _, sa0 = B.synthetic_table(4, n=500_000, m=50)
    for gamma in (2, 4, 8, 16, 32, 64):
        sa = gamma * sa0 + np.arange(sa0.size) % gamma
        fp, _ = _spec(sa, 8)
        two, multi = _time_two_and_multi(sa, fp)
        print(f"| {gamma} | {len(fp)} | {two:.2f} | {multi:.2f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000,
                        help="records of the utility tables' synthetic tables (the runtime part always runs at "
                             "100k–500k records; --skip-runtime skips it)")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--skip-runtime", action="store_true")
    args = parser.parse_args()
    print(f"machine: {platform.machine()} | {os.cpu_count()} CPUs | NumPy {np.__version__}")
    utility(args.records, args.queries)
    if not args.skip_runtime:
        runtime()


if __name__ == "__main__":
    main()
