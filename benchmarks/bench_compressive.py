"""Benchmark: the compressive mechanism (CM) vs the Laplace mechanism (LM); CMCO vs the continual mechanism.

1. ‖D − D*‖₂ vs ε ∈ {0.01, 0.03, 0.1, 0.3, 1} for CM (Haar basis, S chosen privately with 0.1ε, defaults
   C₂ = C₄ = 1, C₅ computed, c_k = 4) and LM, on seeded compressible vectors (power-law Haar coefficients,
   p = 0.5, scale 1000) of n ∈ {1024, 4096, 16384} and on the bundled vectors (n = 1024); R repetitions.
2. CMCO (k counters, public S, jointly calibrated) vs the continual mechanism (ContM, differences of one
   binary-tree counter): ‖D_t − D*_t‖₂ at t = 64 … T on a compressible stream of length T = 1024.
   Repetitions run as vmapped programs (`compressive` with a key array `[R]` groups the runs by the privately chosen S).
3. Speed of one CM release (projection, noise, 100 NIHT iterations + 30 CG steps) at n = 65,536 with a
   public S, compile and run separated, against a NumPy implementation of the same NIHT.

Usage: python benchmarks/bench_compressive.py [--reps 100] [--cmco-reps 100] [--speed-only]
(the speed part always runs at n = 65,536: a 256 MB Φ)
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import compressive as C

EPSILONS = (0.01, 0.03, 0.1, 0.3, 1.0)


def accuracy(reps):
    keys = jax.random.split(jax.random.key(0), reps)
    vectors = {f"synthetic n={n}": C.synthetic_compressible(1, n=n) for n in (1024, 4096, 16384)}
    for name in C.BUNDLED:
        vectors[name] = C.bundled_vector(name, n=1024)
    print("\n| vector | ε | CM ‖D−D*‖₂ | LM ‖D−D*‖₂ | CM / LM | median S | median k |")
    print("|---|---|---|---|---|---|---|")
    for name, d in vectors.items():
        for eps in EPSILONS:
            r = C.compressive(keys, d, epsilon=eps)  # keys [R]: grouped by S, one vmapped program per group
            cm = np.linalg.norm(r.release - d, axis=1)
            s, k = r.sparsity, r.k
            lm = np.linalg.norm(np.asarray(jax.vmap(lambda kk: C.laplace_identity(kk, d, epsilon=eps))(keys)) - d, axis=1)
            print(f"| {name} | {eps:g} | {np.mean(cm):.4g} | {lm.mean():.4g} | {np.mean(cm) / lm.mean():.3g} | "
                  f"{int(np.median(s))} | {int(np.median(k))} |", flush=True)


def continual(reps, t_max=1024, k=64, sparsity=16, eps=1.0):
    d = C.synthetic_compressible(2, n=t_max, scale=2000.0)
    times = [64, 128, 256, 512, 1024]
    keys = jax.random.split(jax.random.key(1), reps)
    k1 = jax.vmap(lambda kk: jax.random.split(kk)[0])(keys)
    k2 = jax.vmap(lambda kk: jax.random.split(kk)[1])(keys)
    outs = C.cmco(k1, d, epsilon=eps, k=k, sparsity=sparsity, times=times)  # R repetitions, one program
    cm = np.stack([np.linalg.norm(np.asarray(o) - d[: o.shape[1]], axis=1) for o in outs], axis=1)
    base = np.zeros((reps, len(times)))
    for r in range(reps):
        cont = np.asarray(C.continual_identity(k2[r], d, epsilon=eps))
        base[r] = [np.linalg.norm(cont[:t] - d[:t]) for t in times]
    print(f"\nCMCO (k = {k}, S = {sparsity}, jointly calibrated) vs ContM, ε = {eps}, T = {t_max}, {reps} repetitions\n")
    print("| t | CMCO ‖D_t−D*_t‖₂ | ContM ‖D_t−D*_t‖₂ | CMCO / ContM |")
    print("|---|---|---|---|")
    for j, t in enumerate(times):
        print(f"| {t} | {cm[:, j].mean():.4g} | {base[:, j].mean():.4g} | {cm[:, j].mean() / base[:, j].mean():.3g} |")


def numpy_niht(phi, y, s, n, iterations=100, refit=30):
    """The same NIHT + CG refit in NumPy, kept in Φ's dtype (float32: a mixed product would convert Φ)."""
    dt = phi.dtype.type
    r2 = dt(np.sqrt(2.0))
    tiny = dt(np.finfo(phi.dtype).tiny)

    def haar_t(d):
        parts, cur = [], d
        while cur.size > 1:
            a, b = cur[0::2], cur[1::2]
            parts.insert(0, (a - b) / r2)
            cur = (a + b) / r2
        return np.concatenate([cur, *parts])

    def haar(x):
        cur, pos, w = x[:1], 1, 1
        while w < n:
            diff = x[pos : pos + w]
            cur = np.stack([(cur + diff) / r2, (cur - diff) / r2], -1).ravel()
            pos, w = pos + w, 2 * w
        return cur

    def top(v):
        thr = np.partition(np.abs(v), n - s)[n - s]  # the S-th largest |v| (a partition, not a full sort)
        return np.where(np.abs(v) >= thr, v, dt(0))

    x = top(haar_t(y @ phi))
    for _ in range(iterations):
        g = haar_t((y - phi @ haar(x)) @ phi)
        gs = np.where(x != 0, g, dt(0))
        ag = phi @ haar(gs)
        x = top(x + dt((gs @ gs) / max(ag @ ag, tiny)) * g)
    mask = x != 0
    r = np.where(mask, haar_t((y - phi @ haar(x)) @ phi), dt(0))
    p, z, rr = r.copy(), x.copy(), r @ r
    for _ in range(refit):
        ap = np.where(mask, haar_t((phi @ haar(p)) @ phi), dt(0))
        alpha = dt(rr / max(p @ ap, tiny))
        z, r = z + alpha * p, r - alpha * ap
        rr_new = r @ r
        p, rr = r + dt(rr_new / max(rr, tiny)) * p, rr_new
    out = haar(z)
    assert out.dtype == phi.dtype, out.dtype
    return out


def _timed_once(fn):
    t0 = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - t0


def speed(n=65536, s=32):
    d = C.synthetic_compressible(3, n=n)
    key = jax.random.key(2)
    k = C.measurements(n, s, 4.0)
    t0 = time.perf_counter()
    jax.block_until_ready(C.compressive(key, d, epsilon=0.1, sparsity=s).release)
    first = time.perf_counter() - t0
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        jax.block_until_ready(C.compressive(key, d, epsilon=0.1, sparsity=s).release)
        runs.append(time.perf_counter() - t0)
    run = min(runs)
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()  # like jaxdp's run: draw Φ, measure, add noise, recover
    phi = rng.integers(0, 2, size=(k, n), dtype=np.int8).astype(np.float32)
    phi *= np.float32(2.0 / np.sqrt(k))
    phi -= np.float32(1.0 / np.sqrt(k))  # ±1/√k, float32 as jaxdp's
    y = (phi @ d.astype(np.float32) + rng.laplace(size=k) * np.sqrt(k) / 0.1).astype(np.float32)
    numpy_niht(phi, y, s, n)
    nps = time.perf_counter() - t0
    # the memory-bandwidth floor: every NIHT iteration reads Φ three times (ΦΨx, rᵀΦ, ΦΨg), every CG step twice
    passes = 3 * 100 + 2 * 30 + 3
    pj, xj = jnp.asarray(phi), jnp.asarray(rng.normal(size=n), jnp.float32)
    mv = jax.jit(lambda p, v: p @ v)
    jax.block_until_ready(mv(pj, xj))
    t_mv = min(_timed_once(lambda: mv(pj, xj)) for _ in range(5))
    t_np = min(_timed_once(lambda: phi @ np.asarray(xj)) for _ in range(5))
    print(f"\nspeed at n = {n:,}, S = {s}, k = {k} (one release; 100 NIHT iterations + 30 CG steps)\n")
    print("| | compile s | run s | NumPy s | NumPy / JAX |")
    print("|---|---|---|---|---|")
    print(f"| CM (Haar) | {max(first - run, 0):.2f} | {run:.3f} | {nps:.3f} | {nps / run:.1f}× |")
    print(f"\nΦ is {phi.nbytes / 1e6:.0f} MB (float32); one ΦΨx pass: JAX {t_mv * 1e3:.1f} ms "
          f"({phi.nbytes / t_mv / 1e9:.0f} GB/s), NumPy {t_np * 1e3:.1f} ms ({phi.nbytes / t_np / 1e9:.0f} GB/s); "
          f"{passes} passes × JAX's pass = {passes * t_mv:.2f} s (the floor for a dense Φ on this machine)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--cmco-reps", type=int, default=100)
    parser.add_argument("--speed-only", action="store_true", help="only the speed table")
    parser.add_argument("--speed-n", type=int, default=65536,
                        help="vector length of the speed table (a power of two, default 65,536; smaller for a quick run)")
    args = parser.parse_args()
    if args.speed_n < 64 or args.speed_n & (args.speed_n - 1):
        parser.error(f"--speed-n must be a power of two ≥ 64 (the Haar basis), got {args.speed_n}")
    print(f"machine: {platform.machine()} | {os.cpu_count()} CPUs | JAX {jax.__version__} | {args.reps} repetitions")
    if not args.speed_only:
        accuracy(args.reps)
        continual(args.cmco_reps)
    speed(n=args.speed_n)


if __name__ == "__main__":
    main()
