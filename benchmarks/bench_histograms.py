"""Benchmark: histogram publishing (LPA, FPA, SPA, EFPA, P-HP) — utility and speed.

Utility: KL divergence (add-1 smoothing, see `jaxdp.histogram.kl_divergence`) and the MSE of range-count
queries (sizes 2^i, averaged over sizes), the mean absolute error per bin, and both after `histogram.clamp`
(negative counts → 0) for ε ∈ {0.01, 0.1, 1}, R repetitions
vmapped over keys, on the bundled histograms (Census AGI, EIA log-TOTSALES, EIA RESSALES over fixed public
ranges, 1,024 bins) and seeded synthetic ones; FPA, SPA and EFPA both with the defaults (exact DFT sensitivity,
consistent penalties) and as printed in the paper ("paper": √z / L2 = 1 sensitivities, printed penalties) (4,096 bins: smooth and step with 10⁶ records, sparse with 1,600 ≈ 0.4 per bin). FPA keeps
a fixed k = 32 coordinates. Speed: EFPA and P-HP at 65,536 bins, compile and run time separated
(`block_until_ready`), against plain NumPy implementations of the same algorithms (P-HP: the paper's FIFO
queue as a host loop, every bisection of a partition scored with one vectorized O(|C|²) pass).

First-call latency (``--first-call``): each method's `publish` at 4,096 bins in a fresh Python process with
JAX's persistent compilation cache off (first call = trace + compile or load + run; then a second call with
another key), with jaxdp's program cache (`jaxdp.programs`) off, empty (the first run on a machine) and warm
(any later process), interleaved with the same measurement on another checkout (``--against DIR``: a
worktree of an earlier commit, cache off) so that the machine's noise hits all alike.

Usage: python benchmarks/bench_histograms.py [--reps 100] [--speed-bins 65536]
       python benchmarks/bench_histograms.py --first-call [--rounds 3] [--against DIR]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import histogram as H

EPSILONS = (0.01, 0.1, 1.0)


# ------------------------------------------------------------------ NumPy references (same algorithms)
def numpy_efpa(rng, h, eps):
    n = h.size
    f = np.fft.rfft(h, norm="ortho")
    half = (n - 1) // 2
    c = np.concatenate([[f[0].real], np.stack([f[1 : half + 1].real, f[1 : half + 1].imag], -1).ravel() * np.sqrt(2)]
                       + ([[f[n // 2].real]] if n % 2 == 0 else []))
    tail = np.sqrt(np.concatenate([np.cumsum((c * c)[::-1])[::-1], [0.0]]))
    k = np.arange(1, n // 2 + 2)
    z = np.minimum(2 * k - 1, n)
    u = tail[z] + np.sqrt(2) * z / eps
    logits = -eps * u / 4
    p = np.exp(logits - logits.max())
    j = rng.choice(k.size, p=p / p.sum())
    zz = z[j]
    c2 = np.zeros(n)
    c2[:zz] = c[:zz] + rng.laplace(size=zz) * 2 * np.sqrt(zz) / eps
    g = np.zeros(n // 2 + 1, complex)
    g[0] = c2[0]
    g[1 : half + 1] = (c2[1 : 2 * half + 1 : 2] + 1j * c2[2 : 2 * half + 1 : 2]) / np.sqrt(2)
    if n % 2 == 0:
        g[n // 2] = c2[n - 1]
    return np.fft.irfft(g, n=n, norm="ortho")


def _split_errors(x, chunk=2048):
    """RE(left) + RE(right) for every cut 1..m−1 of segment x, and RE(x): O(m²) vectorized."""
    m = x.size
    pre = np.concatenate([[0.0], np.cumsum(x)])
    out = np.empty(m - 1)
    for s in range(1, m, chunk):
        cuts = np.arange(s, min(m, s + chunk))
        mu_l = pre[cuts] / cuts
        mu_r = (pre[m] - pre[cuts]) / (m - cuts)
        left = np.arange(m)[None, :] < cuts[:, None]
        dev = np.where(left, np.abs(x[None, :] - mu_l[:, None]), np.abs(x[None, :] - mu_r[:, None]))
        out[cuts - 1] = dev.sum(axis=1)
    return out, np.abs(x - x.mean()).sum()


def _final_choice_and_release(rng, h, eps, saved):
    """Algorithm 4 lines 21–22 on the host: pick a saved configuration ∝ exp(−ε·err/16), ReleaseHistogram at ε/2."""
    errs = np.array([e for e, _ in saved])
    logits = -eps * errs / 16
    p = np.exp(logits - logits.max())
    final = saved[rng.choice(len(saved), p=p / p.sum())][1]
    edges = [0, *sorted(final), h.size]
    out = np.empty(h.size)
    for a, b in zip(edges[:-1], edges[1:]):
        out[a:b] = (h[a:b].sum() + rng.laplace() * 2 / eps) / (b - a)
    return out


def _fifo_php(rng, h, eps, candidates):
    """Algorithm 4 as the paper's FIFO queue on the host. ``candidates(a, b, lam)`` returns the errors of
    the |C| = b − a candidates of partition [a, b) (index 0: keep it whole, i: cut at a + i).
    Returns the release and the number of queue steps."""
    n = h.size
    d = H.php_depth(n)
    lam = 2 / eps
    queue = [(0, n, 0, n == 1)]  # (start, end, depth, leaf), FIFO
    err = float(np.abs(h - h.mean()).sum()) + lam
    saved, cuts = [(err, ())], []
    while True:
        pos = next((i for i, q in enumerate(queue) if not q[3]), None)
        if pos is None:
            break
        a, b, dep, _ = queue.pop(pos)
        cand = candidates(a, b, lam)
        logits = -eps * cand / (16 * d)
        p = np.exp(logits - logits.max())
        i = rng.choice(cand.size, p=p / p.sum())
        err += float(cand[i] - cand[0])
        if i == 0:
            queue.append((a, b, dep, True))
        else:
            c = a + i
            cuts.append(c)
            queue += [(a, c, dep + 1, c - a == 1 or dep + 1 == d), (c, b, dep + 1, b - c == 1 or dep + 1 == d)]
        saved.append((err, tuple(cuts)))
    return _final_choice_and_release(rng, h, eps, saved), len(saved) - 1


def numpy_php(rng, h, eps):
    """P-HP in plain NumPy: each partition's candidate errors by prefix sums (`_split_errors`)."""

    def candidates(a, b, lam):
        split, whole = _split_errors(h[a:b])
        return np.concatenate([[whole + lam], split + 2 * lam])

    return _fifo_php(rng, h, eps, candidates)[0]


@jax.jit
def _candidate_errors(tree, a, b, size_mask, lam):
    """Errors of all |C| candidates of partition [a, b) (padded to a power of two): one jitted step."""
    pos = a + jnp.arange(size_mask.shape[0])
    pos = jnp.where(size_mask, pos, a)
    q = H.abs_deviation(tree, jnp.concatenate([jnp.full_like(pos, a), jnp.full_like(pos, a), pos]),
                   jnp.concatenate([jnp.full_like(pos, b), pos, jnp.full_like(pos, b)]))
    n = pos.shape[0]
    whole, split = q[:n] + lam, q[n : 2 * n] + q[2 * n :] + 2 * lam
    return jnp.where(pos == a, whole, split)


def host_loop_php(rng, h, eps):
    """P-HP as the paper's FIFO queue: a host loop over queue items, each scored by one jitted step (the
    same merge-sort-tree kernel; partitions padded to powers of two to bound recompilation)."""
    tree = H.prefix_tree(jnp.asarray(h, jnp.float32))

    def candidates(a, b, lam):
        width = 1 << max(0, (b - a - 1).bit_length())
        mask = np.arange(width) < (b - a)
        return np.asarray(_candidate_errors(tree, a, b, jnp.asarray(mask), jnp.float32(lam)))[: b - a]

    return _fifo_php(rng, h, eps, candidates)


def queue_strategies(bins_list=(1024, 4096, 16384)):
    print("\nP-HP execution strategies (synthetic sparse, ε = 0.1): level-parallel scan vs host FIFO loop over jitted steps\n")
    print("| bins | queue steps (host loop) | level scan s | host loop s | host / scan |")
    print("|---|---|---|---|---|")
    for bins in bins_list:
        h = H.synthetic_histogram(5, n=bins, kind="sparse", total=max(bins // 2, 100))
        hj = jnp.asarray(h, jnp.float32)
        eps = jnp.asarray(0.1, jnp.float32)
        key = jax.random.key(4)
        jax.block_until_ready(H.php_core(key, hj, eps))
        scan = _time(lambda: H.php_core(key, hj, eps)[0])
        rng = np.random.default_rng(0)
        host_loop_php(rng, h.astype(np.float64), 0.1)  # compile the padded sizes
        t0 = time.perf_counter()
        _, steps = host_loop_php(rng, h.astype(np.float64), 0.1)
        host = time.perf_counter() - t0
        print(f"| {bins:,} | {steps:,} | {scan:.3f} | {host:.3f} | {host / scan:.1f}× |", flush=True)


# ------------------------------------------------------------------ utility
VARIANTS = (  # label, method, keywords: the new defaults beside the paper's versions
    ("LPA", "lpa", {}),
    ("FPA", "fpa", {"k": 32}),
    ("FPA paper", "fpa", {"k": 32, "accounting": "paper"}),
    ("SPA", "spa", {}),
    ("SPA paper", "spa", {"penalty": "paper", "accounting": "paper"}),
    ("EFPA", "efpa", {}),
    ("EFPA √z, consistent penalty", "efpa", {"accounting": "paper"}),
    ("EFPA paper", "efpa", {"penalty": "paper", "accounting": "paper"}),
    ("PHP", "php", {}),
)


def utility(reps):
    keys = jax.random.split(jax.random.key(1), reps)
    data = {name: H.bundled_histogram(name, bins=1024) for name in ("census-agi", "eia-totsales-log", "eia-ressales")}
    for kind, total in (("smooth", 1_000_000), ("sparse", 1_600), ("step", 1_000_000)):
        # sparse: ≈ 0.4 records per bin like the paper's NetTrace (mean 0.39)
        data[f"synthetic-{kind}"] = H.synthetic_histogram(11, n=4096, kind=kind, total=total)
    rows = []
    labels = [v[0] for v in VARIANTS]
    for name, h in data.items():
        print(f"\n**{name}** ({h.size} bins, {int(h.sum()):,} records, {int((h > 0).sum())} non-zero)\n")
        print("| ε | metric | " + " | ".join(labels) + " | best |")
        print("|---|---|" + "---|" * (len(labels) + 1))
        for eps in EPSILONS:
            res = {m: {} for m in ("KL", "range MSE", "MAE", "MAE clamped", "range MSE clamped")}
            for label, method, kw in VARIANTS:
                out = np.asarray(H.publish(keys, h, method=method, epsilon=eps, **kw).counts)  # a key array [R]
                clamped = H.clamp(out)
                res["KL"][label] = H.kl_divergence(h, out).mean()
                res["range MSE"][label] = H.range_query_mse(h, out)[1].mean()
                res["MAE"][label] = np.abs(out - h).mean()
                res["MAE clamped"][label] = np.abs(clamped - h).mean()
                res["range MSE clamped"][label] = H.range_query_mse(h, clamped)[1].mean()
                rows.append((name, eps, label, {m: float(v[label]) for m, v in res.items()}))
            for metric, vals in res.items():
                best = min(vals, key=vals.get)
                print(f"| {eps:g} | {metric} | " + " | ".join(f"{vals[m]:.3g}" for m in labels) + f" | {best} |",
                      flush=True)
    return rows


# ------------------------------------------------------------------ speed
def _time(fn, repeat=3):
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - t0)
    return best


def speed(bins):
    """The public EFPA (paper preset: the peer's √z sensitivity) and P-HP — float64 arithmetic, as every histogram
    release computes — against float64 NumPy versions, one histogram per call."""
    h = H.synthetic_histogram(5, n=bins, kind="sparse", total=1_000_000)
    key = jax.random.key(3)
    rng = np.random.default_rng(0)
    hf = h.astype(np.float64)
    print(f"\nspeed at {bins:,} bins (synthetic sparse, ε = 0.1); best of 3 runs, one histogram per call\n")
    print("| method | JAX compile s | JAX run s | NumPy s | NumPy / JAX |")
    print("|---|---|---|---|---|")
    for name, jfn, nfn, repeat in (
        ("EFPA", lambda: H.efpa(key, h, epsilon=0.1, penalty="paper", accounting="paper").counts,
         lambda: numpy_efpa(rng, hf, 0.1), 3),
        ("P-HP", lambda: H.php(key, h, epsilon=0.1).counts, lambda: numpy_php(rng, hf, 0.1), 1),
    ):
        t0 = time.perf_counter()
        jax.block_until_ready(jfn())
        first = time.perf_counter() - t0
        run = _time(jfn)
        compile_s = max(first - run, 0.0)
        ns = _time(nfn, repeat)
        print(f"| {name} | {compile_s:.2f} | {run:.4f} | {ns:.3f} | {ns / run:.1f}× |", flush=True)
    keys = jax.random.split(key, 10)
    jax.block_until_ready(H.php(keys, h, epsilon=0.1).counts)  # a key array: one vmapped program
    t = _time(lambda: H.php(keys, h, epsilon=0.1).counts, 2)
    print(f"\nP-HP, 10 repetitions vmapped at {bins:,} bins: {t:.2f} s ({t / 10:.3f} s per histogram)")


_FIRST_CALL = '''
import time, sys
t0 = time.perf_counter()
import jax, numpy as np
from jaxdp import histogram as H
t1 = time.perf_counter()
h = H.synthetic_histogram(5, n=4096, kind="sparse", total=1_000_000)
kw = {"k": 32} if sys.argv[1] == "fpa" else {}
t2 = time.perf_counter()
jax.block_until_ready(H.publish(jax.random.key(1), h, method=sys.argv[1], epsilon=0.1, **kw).counts)
t3 = time.perf_counter()
jax.block_until_ready(H.publish(jax.random.key(2), h, method=sys.argv[1], epsilon=0.1, **kw).counts)
print(t1 - t0, t3 - t2, time.perf_counter() - t3)
'''


def first_call(rounds, against):
    """First-call latency of every method in fresh processes, with jaxdp's program cache off, empty (the
    first run on a machine: compile and store) and warm (every later process); optionally A/B (cache off)."""
    import subprocess
    import sys
    import tempfile

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = [("this checkout", here)] + ([("against", os.path.abspath(against))] if against else [])
    methods = ("lpa", "fpa", "spa", "efpa", "php")
    cases = [(name, root, "off") for name, root in trees] + [("this checkout", here, "empty"), ("this checkout", here, "warm")]
    got = {(c, m): [] for c in cases for m in methods}
    for _ in range(rounds):
        for m in methods:
            with tempfile.TemporaryDirectory() as folder:
                for case in cases:
                    name, root, state = case
                    env = dict(os.environ, PYTHONPATH=root, JAX_ENABLE_COMPILATION_CACHE="false",
                               JAXDP_PROGRAM_CACHE="off" if state == "off" else folder)  # fmt: skip
                    env.pop("JAX_COMPILATION_CACHE_DIR", None)
                    out = subprocess.run([sys.executable, "-c", _FIRST_CALL, m], env=env, cwd=root, check=True,
                                         capture_output=True, text=True).stdout.split()
                    got[(case, m)].append([float(v) for v in out])
    print(f"\nfirst call at 4,096 bins (synthetic sparse, ε = 0.1), fresh process, JAX's persistent cache off; "
          f"jaxdp's program cache off / empty / warm; {rounds} rounds interleaved; s, min–max over rounds\n")
    print("| method | checkout | program cache | import s | first call s | second call s |")
    print("|---|---|---|---|---|---|")
    for m in methods:
        for case in cases:
            name, root, state = case
            v = np.asarray(got[(case, m)])
            cells = " | ".join(f"{v[:, i].min():.2f}–{v[:, i].max():.2f}" for i in range(2))
            label = name if name == "this checkout" else os.path.basename(root)
            print(f"| {m} | {label} | {state} | {cells} | {v[:, 2].min():.3f}–{v[:, 2].max():.3f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--speed-bins", type=int, default=65536)
    parser.add_argument("--skip-utility", action="store_true")
    parser.add_argument("--strategies-only", action="store_true")
    parser.add_argument("--first-call", action="store_true", help="only the first-call latency table")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", default=None, help="another checkout to measure side by side")
    args = parser.parse_args()
    print(f"machine: {platform.machine()} | {os.cpu_count()} CPUs | JAX {jax.__version__} | {args.reps} repetitions")
    if args.strategies_only:
        queue_strategies()
        return
    if args.first_call:
        first_call(args.rounds, args.against)
        return
    if not args.skip_utility:
        utility(args.reps)
    speed(args.speed_bins)
    queue_strategies()


if __name__ == "__main__":
    main()
