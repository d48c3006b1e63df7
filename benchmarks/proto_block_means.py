"""Prototype (not part of the library): a block-mean layer beside the frame-mean layer, measured against the
baselines of `bench_utility.py` (issue 17: where DP microaggregation beats the default).

Frame f of r records, budget ε_f (the same frames, budgets and bounds as `bench_utility.py`): a share s of ε_f
goes to the frame's noisy column means, 1 − s to the noisy column means of its blocks of n = 8 consecutive
records (disjoint records: parallel composition), both with Theorem 1's column split (ε_j ∝ Λ_j^{2/3}) and float
Laplace noise (NumPy). Post-processing: the frame estimate is the inverse-variance combination of the frame query
and the blocks' weighted average, averaged over frames so far (inverse-variance weights) and replaced by its
truncated-normal posterior mean (as the library's layer); each block is released as the frame estimate plus an
empirical-Bayes share λ = τ̂²/(τ̂² + σ²) of its noisy deviation from it, clipped to the domain, where σ² is the
block mean's public noise variance and τ̂² the between-block variance estimated from all blocks so far (mean
squared deviation minus σ², less z standard errors of that mean under τ = 0: Laplace² has variance 5σ⁴;
z = 0 is the plain positive-part rule). s = 1 is the frame-mean layer alone.

Prints, per cell, the mean SSE over the midpoint's of each variant divided by the better of the library's running
frame mean and microaggregation (g = 8) on the same repetitions' keys. 30 repetitions by default.

Usage: python benchmarks/proto_block_means.py [--reps 30] [--data census,census-public,weather,diabetes,wine]
(needs `pip install -e ".[bench]"`)
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time

import jax
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_utility import load, settings  # noqa: E402

import jaxdp  # noqa: E402
from jaxdp import metrics  # noqa: E402
from jaxdp.hvc import baselines  # noqa: E402
from jaxdp.hvc.stream import truncated_normal_mean  # noqa: E402


def release(x, lo, hi, *, eps, n, delay, k1, share, z, reps, rng):
    """The prototype's release ``[R, N, d]`` (see the module notes)."""
    N, d = x.shape
    width = hi - lo
    xs = np.clip(x, lo, hi) - lo
    m = n * max(delay // n, 1)
    g = width ** (2 / 3)
    unit = width / (g / g.sum())  # column j's Laplace scale is unit_j/(rows·ε)
    out = np.zeros((reps, N, d))
    s_sum, s_w = np.zeros((reps, d)), np.zeros(d)
    dev_sum, dev_count, sig4 = np.zeros((reps, d)), 0, np.zeros(d)
    for f0 in range(0, N, m):
        xf = xs[f0:f0 + m]
        r = len(xf)
        eps_f = eps if k1 else eps * r / N
        parts, precs = [], []
        if share > 0:
            scale = unit / (r * share * eps_f)
            parts.append(xf.mean(0) + rng.laplace(size=(reps, d)) * scale)
            precs.append(1 / (2 * scale**2))
        if share < 1:
            sizes = np.minimum(n, r - n * np.arange(-(-r // n)))
            means = np.stack([xf[i * n:(i + 1) * n].mean(0) for i in range(len(sizes))])
            bscale = unit[None, :] / (sizes[:, None] * (1 - share) * eps_f)
            noisy = means + rng.laplace(size=(reps, *means.shape)) * bscale
            sig2 = 2 * bscale**2
            parts.append(np.sum(sizes[:, None] * noisy, axis=1) / r)
            precs.append(1 / (np.sum(sizes[:, None] ** 2 * sig2, axis=0) / r**2))
        prec = sum(precs)
        s_sum += sum(p * v for p, v in zip(precs, parts))
        s_w = s_w + prec
        est = truncated_normal_mean(s_sum / s_w, np.sqrt(1 / s_w), width)  # [R, d]
        if share < 1:
            dev = noisy - est[:, None, :]
            dev_sum += np.sum(dev**2 - sig2[None], axis=1)
            dev_count += len(sizes)
            sig4 += np.sum(sig2**2, axis=0)
            tau2 = np.maximum(dev_sum / dev_count - z * np.sqrt(5 * sig4) / dev_count, 0)[:, None, :]
            blocks = np.clip(est[:, None, :] + tau2 / (tau2 + sig2[None]) * dev, 0, width)
            rows = np.repeat(blocks, sizes, axis=1)
        else:
            rows = np.repeat(est[:, None, :], r, axis=1)
        out[:, f0:f0 + r] = rows + lo
    return out


def rel_sse(y, x, lo, hi):
    return float(np.mean([metrics.relative_sse(yi, x, lo, hi) for yi in y]))


VARIANTS = [(1.0, 0.0), (0.5, 0.0), (0.5, 2.0), (0.0, 0.0), (0.0, 2.0)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--data", default="census,census-public,weather,diabetes,wine")
    args = ap.parse_args()
    keys = jax.random.split(jax.random.key(0), args.reps)
    t0 = time.time()
    print("| data | ε | δ | accounting | " + " | ".join(f"s = {s:g}, z = {z:g}" for s, z in VARIANTS) + " |")
    print("|---|---|---|---|" + "---|" * len(VARIANTS))
    for name in args.data.split(","):
        x, lo, hi = load(name)
        for (eps, n, delay), k1 in itertools.product(settings(name, True), (False, True)):
            cfg = jaxdp.HVCConfig(n, max(delay // n, 1), **(dict(records_per_subject=1) if k1 else {}))
            base = [baselines.frame_mean(keys, x, cfg, epsilon=eps, bounds=(lo, hi)),
                    baselines.microaggregate(keys, x, cfg, group=8, epsilon=eps, bounds=(lo, hi))]
            best = min(rel_sse(np.asarray(b.records, np.float64), x[b.index], lo, hi) for b in base)
            cells = []
            for share, z in VARIANTS:
                y = release(x, lo, hi, eps=eps, n=n, delay=delay, k1=k1, share=share, z=z, reps=args.reps,
                            rng=np.random.default_rng(1))
                cells.append(rel_sse(y, x, lo, hi) / best)
            print(f"| {name} | {eps:g} | {delay} | {'k=1' if k1 else 'paper'} | "
                  + " | ".join(f"{c:.3f}" for c in cells) + " |", flush=True)
    print(f"\n{args.reps} repetitions, {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
