"""Benchmark: batched quantizer scoring + Algorithm 1 (jaxdp) vs a plain float64 NumPy loop.

Both sides do the same work per block: clamp to the domain, three transforms (DCT, DST, DHT),
scan order, ω_1 scores for all (σ, t) via prefix/suffix sums, the Lemma 3 sensitivity, an
exponential-mechanism draw (Gumbel-max), Laplace noise on the first t coefficients, inverse
transform. Public tables (Lemma 1, Theorem 1 prefix sums) are precomputed for both.

Data: blocks of n records resampled (seeded) from the bundled Census set, d = 13; bounds
1.5 × max (the paper's rule; not private, which does not matter for timing).

Usage: python benchmarks/bench_kernels.py [--blocks 10000] [--sizes 8 16 32 48] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import datasets
from jaxdp.hvc import quantize


def numpy_algorithm1(rng, blocks, x_hat, tab, eps_l, eps_s):
    """Straightforward float64 NumPy loop over blocks: the same computation as jaxdp's kernel."""
    an, ad, order = tab.an, tab.ad, tab.order
    lo, hi = tab.lo, tab.hi
    lap = tab.laplace_mse / eps_l**2
    n, d = blocks.shape[1:]
    nd = n * d
    out = np.empty_like(blocks)
    ts = np.empty(len(blocks), np.int64)
    far = np.maximum(np.abs(hi - x_hat), np.abs(x_hat - lo))
    sens = 2.0 * float(tab.gs_frobenius) * np.sqrt(np.sum(far**2))
    for b, x in enumerate(blocks):
        x = np.clip(x, lo, hi)
        e = x - x_hat
        c = np.stack([(an[s] @ e @ ad[s].T).reshape(-1)[order] for s in range(an.shape[0])])
        tail = np.concatenate([np.cumsum((c**2)[:, ::-1], axis=1)[:, ::-1], np.zeros((c.shape[0], 1))], axis=1)
        score = -(lap + tail)
        logits = (eps_s / (2 * sens)) * score.reshape(-1)
        idx = int(np.argmax(logits + rng.gumbel(size=logits.shape)))
        s, t = divmod(idx, nd + 1)
        scale = tab.cbrt_gs[s] * tab.prefix[s, t] * tab.rho[s, t] / eps_l
        noisy = np.where(np.arange(nd) < t, c[s] + rng.laplace(size=nd) * scale, 0.0)
        cm = np.zeros(nd)
        cm[order] = noisy
        out[b] = x_hat + an[s].T @ cm.reshape(n, d) @ ad[s]
        ts[b] = t
    return out, ts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=10_000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 16, 32, 48])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--numpy-blocks", type=int, default=None, help="blocks for the NumPy loop (default: all)")
    args = parser.parse_args()

    census = datasets.load_census().astype(np.float64)
    widths = datasets.bounds_from_data(census, 1.5)
    rng = np.random.default_rng(0)
    dev = jax.devices()[0]
    print(f"machine: {platform.machine()} {platform.processor() or ''} | {os.cpu_count()} CPUs | "
          f"JAX {jax.__version__} on {dev.platform.upper()} ({dev.device_kind}) | NumPy {np.__version__}")
    print(f"data: {args.blocks} blocks of n x 13 resampled from Census (seed 0); eps_laplace = eps_select = 0.5, "
          "theta = 1, kinds = dct/dst/dht, zigzag, accounting = paper; float32 (JAX) vs float64 (NumPy)")
    header = (f"{'n':>3} {'blocks':>7} {'compile s':>10} {'jax run s':>10} {'jax blk/s':>11} "
              f"{'numpy s':>9} {'numpy blk/s':>12} {'speedup':>8}")
    print(header)
    rows = []
    for n in args.sizes:
        blocks = census[rng.integers(0, census.shape[0], size=(args.blocks, n))]
        x_hat = np.broadcast_to(widths / 2, (n, 13))
        kw = dict(eps_laplace=0.5, eps_select=0.5, theta=1.0)
        key = jax.random.key(n)
        xb = jnp.asarray(blocks, jnp.float32)
        t0 = time.perf_counter()
        quantize.tables(n, widths)  # public tables, once per configuration
        out, _ = quantize.quantize(key, xb, x_hat, widths, **kw)
        out.block_until_ready()
        compile_s = time.perf_counter() - t0
        times = []
        for r in range(args.repeats):
            k = jax.random.fold_in(key, r + 1)
            t0 = time.perf_counter()
            out, info = quantize.quantize(k, xb, x_hat, widths, **kw)
            out.block_until_ready()
            times.append(time.perf_counter() - t0)
        jax_s = statistics.median(times)
        nb = args.numpy_blocks or args.blocks
        tab = quantize.tables(n, widths)
        t0 = time.perf_counter()
        numpy_algorithm1(np.random.default_rng(1), blocks[:nb], x_hat, tab, 0.5, 0.5)
        np_s = (time.perf_counter() - t0) * args.blocks / nb
        row = (n, args.blocks, compile_s, jax_s, args.blocks / jax_s, np_s, args.blocks / np_s, np_s / jax_s)
        rows.append(row)
        print(f"{row[0]:>3} {row[1]:>7} {row[2]:>10.2f} {row[3]:>10.4f} {row[4]:>11.0f} {row[5]:>9.3f} "
              f"{row[6]:>12.0f} {row[7]:>7.1f}x", flush=True)
    print("\nmarkdown:")
    print("| n | blocks | compile s | jaxdp run s | jaxdp blocks/s | NumPy s | NumPy blocks/s | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3]:.4f} | {r[4]:,.0f} | {r[5]:.3f} | {r[6]:,.0f} | {r[7]:.1f}× |")


if __name__ == "__main__":
    main()
