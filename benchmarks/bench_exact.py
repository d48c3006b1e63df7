"""Speed cost of the exact samplers (noise="grid") beside the float ones, in one run.

* samples/s of the exact discrete Laplace (`jaxdp.mechanisms.exact.discrete_laplace`) at several scales, beside
  `jax.random.laplace` (float32) and, when it is installed (`pip install opendp`; not a dependency),
  OpenDP's exact discrete Laplace (`then_laplace` on integers) — the peer a sceptic would try;
* draws/s of the exponential mechanism over C candidates: the float two-stage sampler vs the exact one;
* records/s of the codec (`jaxdp.anonymize`, n = 8, d = 13) with noise="float" and noise="grid".

Compile time (first call) is reported apart from the steady state (median of `--repeats` calls).

Usage: python benchmarks/bench_exact.py [--samples 4000000] [--records 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxdp
from jaxdp import datasets, mechanisms
from jaxdp.mechanisms import exact


def _timed(fn, repeats):
    t0 = time.perf_counter()
    jax.block_until_ready(fn(0))
    first = time.perf_counter() - t0
    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(r + 1))
        times.append(time.perf_counter() - t0)
    return first, float(np.median(times))


def samplers(n, repeats):
    rows = []
    f = jax.jit(lambda k: jax.random.laplace(k, (n,), jnp.float32))
    first, t = _timed(lambda s: f(jax.random.key(s)), repeats)
    rows.append(("float32 Laplace (`jax.random.laplace`)", "-", first, n / t))
    g = jax.jit(lambda k: mechanisms.standard_laplace(k, (n,), jnp.float32))  # the same draws, unrolled Threefry
    first, t = _timed(lambda s: g(jax.random.key(s)), repeats)
    rows.append(("float32 Laplace (jaxdp `mechanisms.standard_laplace`, same draws)", "-", first, n / t))
    for scale in (1.5, 100.0, 1e4, 1e6):
        first, t = _timed(lambda s, sc=scale: exact.discrete_laplace(jax.random.key(s), sc, (n,)), repeats)
        rows.append(("exact discrete Laplace (jaxdp)", f"{scale:g}", first, n / t))
    try:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        m = 200_000
        for scale in (1.5, 100.0, 1e4, 1e6):
            meas = (dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int)) >> dp.m.then_laplace(scale=scale)
            zeros = [0] * m
            t0 = time.perf_counter()
            meas(zeros)
            rows.append(("exact discrete Laplace (OpenDP)", f"{scale:g}", 0.0, m / (time.perf_counter() - t0)))
    except ImportError:
        rows.append(("OpenDP not installed", "-", 0.0, float("nan")))
    return rows


def exponential(draws, candidates, repeats):
    rng = np.random.default_rng(0)
    scores = jnp.asarray(-np.abs(rng.normal(0, 30, (draws, candidates))), jnp.float32)
    eps, sens = 1.0, 1.0
    fl = jax.jit(jax.vmap(lambda k, s: mechanisms.exponential_drawn(
        mechanisms.exponential_uniforms(k), s[None, :], epsilon=eps, sensitivity=sens)[1]))  # fmt: skip
    ex = jax.jit(jax.vmap(lambda k, s: mechanisms.exponential_exact_core(k, s, eps, sens)))
    rows = []
    for name, fn in (("float two-stage", fl), ("exact (integer scores)", ex)):
        first, t = _timed(lambda s, fn=fn: fn(jax.random.split(jax.random.key(s), draws), scores), repeats)
        rows.append((name, candidates, first, draws / t))
    return rows


def codec(records, repeats):
    data = datasets.load_census().astype(np.float64)
    rng = np.random.default_rng(0)
    stream = data[rng.integers(0, data.shape[0], records)] * rng.uniform(0.99, 1.01, (records, data.shape[1]))
    bounds = (np.zeros(13), 1.5 * data.max(axis=0))
    rows = []
    for noise in ("float", "grid"):
        cfg = jaxdp.HVCConfig(8, 12, noise=noise)
        first, t = _timed(lambda s, c=cfg: jaxdp.anonymize(jax.random.key(s), stream, c, epsilon=3.0, bounds=bounds).records, repeats)
        rows.append((noise, records, first, records / t))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=4_000_000)
    parser.add_argument("--draws", type=int, default=10_000)
    parser.add_argument("--candidates", type=int, default=315)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"machine: {platform.machine()} | {os.cpu_count()} CPUs | JAX {jax.__version__} | {jax.devices()[0].platform}")
    print(f"\n### Samplers ({args.samples:,} samples per call; OpenDP, where installed (not a dependency: pip install "
          "opendp): 200,000)\n")
    print("| sampler | scale | first call s | samples/s |")
    print("|---|---|---|---|")
    for name, scale, first, rate in samplers(args.samples, args.repeats):
        print(f"| {name} | {scale} | {first:.2f} | {rate:,.0f} |", flush=True)
    print(f"\n### Exponential mechanism ({args.draws:,} vmapped draws over C candidates)\n")
    print("| sampler | C | first call s | draws/s |")
    print("|---|---|---|---|")
    for name, c, first, rate in exponential(args.draws, args.candidates, args.repeats):
        print(f"| {name} | {c} | {first:.2f} | {rate:,.0f} |", flush=True)
    print(f"\n### Codec (n = 8, δ = 96, ε = 3, Census resampled to {args.records:,} records)\n")
    print("| noise | records | first call s | records/s |")
    print("|---|---|---|---|")
    for noise, n, first, rate in codec(args.records, args.repeats):
        print(f"| {noise} | {n:,} | {first:.2f} | {rate:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
