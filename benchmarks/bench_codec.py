"""Benchmark: the HVC stream anonymizer on Census: utility (SSE) grid and speed.

Utility: Census (l = 1080 records, 13 attributes), bounds 1.5 × max (the paper's rule, Sec. 5.4;
not private, used here only to match the paper's setting), ε ∈ {1, 2, 3}, n ∈ {8, 16, 48},
δ ∈ {96, 216, 432} (frame m = n·⌊δ/n⌋ ≤ δ), R repetitions as one vmapped program (explicit keys).
Mean SSE of: the default HVC (θ = ½, joint accounting, pruning, clipped output), the default with
θ = 1, with Theorem 1 ("paper") accounting, and without pruning (ablations), the paper preset (θ = 1, Theorem 1 accounting, no pruning, no clipping), PLN (Laplace per
record, same per-frame budget) and the zero-budget midpoint. The paper preset is shown without
reordering (R reps) and with Algorithm 2's reordering at c_R = ⌊n²/2⌋/2 (the paper's Sec. 5.5
setting; not DP; solved on the host, so only `--reorder-reps` repetitions).

Speed: records/s of one stream and of R vmapped repetitions (compile excluded, `block_until_ready`),
n = 8 and 48; and a 150,000-record stream built from Census (records resampled with a seeded
generator, ±1 % multiplicative jitter) at n = 8 with the default configuration.

Usage: python benchmarks/bench_codec.py [--reps 100] [--quick] [--skip-utility] [--skip-speed] [--reorder-reps 10]
       [--big 150000]
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import time

import jax
import numpy as np

import jaxdp
from jaxdp import datasets


def variants(n, b):
    return {
        "HVC default (θ=½, joint)": jaxdp.HVCConfig(n, b),
        "HVC θ=1, joint": jaxdp.HVCConfig(n, b, theta=1.0),
        "HVC θ=½, paper accounting": jaxdp.HVCConfig(n, b, accounting="paper"),
        "HVC θ=½, joint, no pruning": jaxdp.HVCConfig(n, b, prune=False),
        "HVC paper preset, no reorder": jaxdp.HVCConfig.paper(n, b, reorder="none"),
    }


def paper_reorder(n, b):
    """The paper preset with Algorithm 2's reordering, c_R = ⌊n²/2⌋/2 (NOT DP; host LAP callback)."""
    return jaxdp.HVCConfig.paper(n, b)


def utility(reps: int, quick: bool, reorder_reps: int):
    data = datasets.load_census()
    bounds = (np.zeros(13), datasets.bounds_from_data(data))
    keys = jax.random.split(jax.random.key(0), reps)
    eps_grid = (1.0, 3.0) if quick else (1.0, 2.0, 3.0)
    rows = []
    for eps, n, delay in itertools.product(eps_grid, (8, 16, 48), (96, 216, 432)):
        b = delay // n
        mid = jaxdp.midpoint(data, jaxdp.HVCConfig(n, b), bounds=bounds).sse(data)
        pln = jaxdp.pln(keys, data, jaxdp.HVCConfig(n, b), epsilon=eps, bounds=bounds).sse(data).mean()
        row = {"eps": eps, "n": n, "delay": delay, "m": n * b, "midpoint": mid, "PLN": pln}
        for name, cfg in variants(n, b).items():
            row[name] = jaxdp.anonymize(keys, data, cfg, epsilon=eps, bounds=bounds).sse(data).mean()
        if reorder_reps:
            res = jaxdp.anonymize(keys[:reorder_reps], data, paper_reorder(n, b), epsilon=eps, bounds=bounds)
            row[f"HVC paper preset + reorder (not DP, {reorder_reps} reps)"] = res.sse(data).mean()
        rows.append(row)
        print(
            f"eps={eps} n={n:2d} δ={delay} m={n * b}: "
            + ", ".join(f"{k}={v / mid:.3g}×mid" for k, v in row.items() if k not in ("eps", "n", "delay", "m")),
            flush=True,
        )
    return rows


def noise_cost(reps: int):
    """Utility cost of the float-safe samplers: mean SSE / midpoint for noise float32, float64, grid."""
    data = datasets.load_census()
    bounds = (np.zeros(13), datasets.bounds_from_data(data))
    keys = jax.random.split(jax.random.key(5), reps)
    rows = []
    for eps, n, delay in ((3.0, 48, 432), (3.0, 16, 432), (2.0, 48, 216), (30.0, 8, 96)):
        mid = jaxdp.midpoint(data, jaxdp.HVCConfig(n, delay // n), bounds=bounds).sse(data)
        row = [eps, n, delay]
        for noise in ("float", "float64", "grid"):
            cfg = jaxdp.HVCConfig(n, delay // n, noise=noise)
            row.append(jaxdp.anonymize(keys, data, cfg, epsilon=eps, bounds=bounds).sse(data).mean() / mid)
        rows.append(row)
    return rows


def _time(fn, repeats=3):
    fn()  # compile
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def speed(reps: int, big: int):
    data = datasets.load_census()
    bounds = (np.zeros(13), datasets.bounds_from_data(data))
    out = []
    for n in (8, 48):
        cfg = jaxdp.HVCConfig(n, 96 // n if n == 8 else 2)
        one = _time(lambda cfg=cfg: jax.block_until_ready(jaxdp.anonymize(jax.random.key(1), data, cfg, epsilon=3.0, bounds=bounds).records))
        keys = jax.random.split(jax.random.key(2), reps)
        many = _time(lambda cfg=cfg: jax.block_until_ready(jaxdp.anonymize(keys, data, cfg, epsilon=3.0, bounds=bounds).records), repeats=1)
        out.append((n, data.shape[0], one, reps, many))
    rng = np.random.default_rng(0)
    stream = data[rng.integers(0, data.shape[0], size=big)] * rng.uniform(0.99, 1.01, size=(big, 13))
    cfg, public = jaxdp.HVCConfig(8, 12), (np.zeros(13), 1.5 * data.max(axis=0))
    t0 = time.perf_counter()
    res = jaxdp.anonymize(jax.random.key(3), stream, cfg, epsilon=3.0, bounds=public)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = jaxdp.anonymize(jax.random.key(4), stream, cfg, epsilon=3.0, bounds=public)
    second = time.perf_counter() - t0
    return out, (big, first, second, res.records.shape[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--big", type=int, default=150_000)
    parser.add_argument("--quick", action="store_true", help="ε ∈ {1, 3} only")
    parser.add_argument("--skip-utility", action="store_true")
    parser.add_argument("--skip-noise-cost", action="store_true", help="skip the float32/float64/grid utility table "
                        "(it runs whatever --skip-utility says)")
    parser.add_argument("--skip-speed", action="store_true", help="the utility tables only (no timing)")
    parser.add_argument("--reorder-reps", type=int, default=10, help="repetitions for the (slow, host) reordering")
    args = parser.parse_args()
    dev = jax.devices()[0]
    print(f"machine: {platform.machine()} | {os.cpu_count()} CPUs | JAX {jax.__version__} on {dev.platform.upper()} | "
          f"jaxdp {jaxdp.__version__}")
    if not args.skip_utility:
        rows = utility(args.reps, args.quick, args.reorder_reps)
        names = [k for k in rows[0] if k not in ("eps", "n", "delay", "m", "midpoint")]
        print(f"\nMean SSE over {args.reps} repetitions, as a multiple of the zero-budget midpoint's SSE "
              "(< 1: better than releasing nothing):\n")
        print("| ε | n | δ (m) | midpoint SSE | " + " | ".join(names) + " |")
        print("|---|---|---|---|" + "---|" * len(names))
        for r in rows:
            cells = " | ".join(f"{r[k] / r['midpoint']:.3g}" for k in names)
            print(f"| {r['eps']:g} | {r['n']} | {r['delay']} ({r['m']}) | {r['midpoint']:.3e} | {cells} |")
    if not args.skip_noise_cost:
        print("\n| ε | n | δ | float32 | float64 | grid (float-safe) |  (mean SSE / midpoint SSE)")
        print("|---|---|---|---|---|---|")
        for eps, n, delay, a, b, c in noise_cost(args.reps):
            print(f"| {eps:g} | {n} | {delay} | {a:.4f} | {b:.4f} | {c:.4f} |", flush=True)
    if args.skip_speed:
        return
    out, big = speed(args.reps, args.big)
    print("\n| n | records | one stream s | records/s | reps | reps total s | records/s (all reps) |")
    print("|---|---|---|---|---|---|---|")
    for n, recs, one, reps, many in out:
        print(f"| {n} | {recs} | {one:.3f} | {recs / one:,.0f} | {reps} | {many:.3f} | {recs * reps / many:,.0f} |")
    n_big, first, second, n_out = big
    print(f"\n{n_big:,}-record stream: {n_big} records x 13, n = 8, δ = 96, default config: {first:.1f} s first call (incl. compile), "
          f"{second:.1f} s second call; {n_out} records released; {n_big / second:,.0f} records/s")


if __name__ == "__main__":
    main()
