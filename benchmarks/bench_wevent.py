"""Benchmark: w-event privacy (Uniform, Sample, BD, BA) on seeded synthetic count streams.

MAE and MRE (sanity bound 1) vs w ∈ {40, 80, 120, 160, 200} at ε = 1 and vs ε at w = 120, R repetitions
vmapped over keys; speed in timestamps/s at d = 25,936 (the Rome stream's width) against a NumPy loop
of BA. No real count stream is bundled: the streams are `wevent.synthetic_counts` ("bursty": slowly
varying counts with bursts; "daily": a periodic pattern), 1,000 timestamps × 500 columns.

Usage: python benchmarks/bench_wevent.py [--reps 100] [--speed-only | --shift-only | --startup-only | --partitioning-only
       | --breakdown]

``--breakdown``: where one stream's time goes at d = 25,936 (the host pass, the noise draws, XLA's fresh output
memory), each method run in fresh processes with the default allocator and with glibc's mmap threshold raised
(``MALLOC_MMAP_THRESHOLD_``), alternately.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import mechanisms, wevent


def numpy_ba(rng, counts, w, eps):
    t, d = counts.shape
    unit = eps / (2 * w)
    last, l, eps_l2 = np.zeros(d), 0, unit
    out = np.empty_like(counts)
    for i in range(1, t + 1):
        c = counts[i - 1]
        dis = np.abs(c - last).mean() + rng.laplace() * 2 * w / (eps * d)
        to_nullify = round(eps_l2 / unit) - 1
        if i - l <= to_nullify:
            out[i - 1] = last
            continue
        e2 = unit * min(i - (l + to_nullify), w)
        if dis > 1 / e2:
            last, l, eps_l2 = c + rng.laplace(size=d) / e2, i, e2
        out[i - 1] = last
    return out


def partitioning(reps):
    """Column partitioning (Sec. 4.5) with the joint ledger: MAE vs the number of groups, w = 120, ε = 1."""
    keys = jax.random.split(jax.random.key(5), reps)
    print(f"\ncolumn partitioning (joint ledger, regroup every 50 timestamps by the RMS change of releases), "
          f"w = 120, ε = 1, {reps} repetitions: MAE\n")
    print("| stream | method | G = 1 | G = 5 | G = 20 | G = 50 | best vs G = 1 |")
    print("|---|---|---|---|---|---|---|")
    for kind in ("bursty", "daily"):
        counts = wevent.synthetic_counts(7, timestamps=1000, columns=500, kind=kind)
        for m in ("bd", "ba"):
            vals = [float(wevent.mae(wevent.run_partitioned(keys, counts, method=m, w=120, epsilon=1.0, groups=g,
                                                            regroup_every=50).releases, counts).mean())
                    for g in (1, 5, 20, 50)]
            print(f"| {kind} | {m.upper()} | " + " | ".join(f"{v:.4g}" for v in vals)
                  + f" | {100 * (min(vals) / vals[0] - 1):+.1f} % |", flush=True)


def speed():
    """Timestamps/s of one stream and of 50 vmapped repetitions, compile excluded (best of 3), and the NumPy BA
    loop at d = 25,936. A single stream draws publication noise only when it publishes (`lax.cond`); under vmap
    the cond becomes a select, so repetitions draw it at every timestamp."""
    print("\nspeed (w = 40, ε = 1, synthetic stream; compile excluded, best of 3)\n")
    print("| d | timestamps | method | publications | one stream: timestamps/s | first call s | 50 reps: timestamps/s (all reps) |")
    print("|---|---|---|---|---|---|---|")
    keys50 = jax.random.split(jax.random.key(9), 50)
    for d, t in ((1000, 4000), (25_936, 400)):
        counts = wevent.synthetic_counts(3, timestamps=t, columns=d)
        for m in wevent.METHODS:
            t0 = time.perf_counter()
            r = wevent.run(jax.random.key(1), counts, method=m, w=40, epsilon=1.0)
            r.releases.block_until_ready()
            first = time.perf_counter() - t0
            one = min(_timed(lambda k=k: wevent.run(jax.random.key(2 + k), counts, method=m, w=40, epsilon=1.0))
                      for k in range(3))  # fmt: skip
            wevent.run(keys50, counts, method=m, w=40, epsilon=1.0).releases.block_until_ready()
            many = _timed(lambda: wevent.run(keys50, counts, method=m, w=40, epsilon=1.0))
            print(f"| {d:,} | {t} | {m} | {int(np.asarray(r.published).sum())} | {t / one:,.0f} | {first:.2f} | "
                  f"{50 * t / many:,.0f} |", flush=True)
    d = 25_936
    counts = wevent.synthetic_counts(3, timestamps=200, columns=d)
    t0 = time.perf_counter()
    numpy_ba(np.random.default_rng(0), counts, 40, 1.0)
    np_s = time.perf_counter() - t0
    jax_s = min(_timed(lambda k=k: wevent.run(jax.random.key(k), counts, method="ba", w=40, epsilon=1.0)) for k in range(3))
    print(f"\nBA, d = {d}, 200 timestamps: jaxdp {200 / jax_s:,.0f} timestamps/s, NumPy loop {200 / np_s:,.0f} "
          f"timestamps/s ({np_s / jax_s:.1f}×)")


def shift_table(reps=20):
    """MAE with the Sec. 4.5 budget shift / without, BD and BA (synthetic streams, 600 timestamps)."""
    keys = jax.random.split(jax.random.key(0), reps)
    print(f"\nbudget shift: MAE(shift) / MAE(no shift), {reps} repetitions, 600 timestamps; auto = d ≥ 10·w\n")
    print("| stream | d | w | d/w | auto | ε | BD | BA |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in ("bursty", "daily"):
        for d in (100, 500, 2000):
            counts = wevent.synthetic_counts(7, timestamps=600, columns=d, kind=kind)
            for w in (10, 40, 120):
                if d <= 2 * w:
                    continue
                for eps in (0.1, 1.0):
                    cells = []
                    for m in ("bd", "ba"):
                        a = wevent.mae(wevent.run(keys, counts, method=m, w=w, epsilon=eps).releases, counts).mean()
                        b = wevent.mae(wevent.run(keys, counts, method=m, w=w, epsilon=eps, shift=True).releases,
                                       counts).mean()  # fmt: skip
                        cells.append(f"{b / a:.2f}")
                    auto = "on" if d >= wevent.SHIFT_AUTO_RATIO * w else "off"
                    print(f"| {kind} | {d} | {w} | {d / w:.0f} | {auto} | {eps:g} | " + " | ".join(cells) + " |", flush=True)


def startup_table(reps=100):
    """MAE with initial="publish" (the Java benchmark's start-up) / initial="zero" (jaxdp's default)."""
    keys = jax.random.split(jax.random.key(0), reps)
    t, d = 600, 500
    print(f"\nstart-up: MAE(initial='publish') / MAE(initial='zero'), {reps} repetitions, {t} timestamps × {d} "
          "columns; over the first w timestamps and over the whole stream\n")
    print("| stream | w | ε | BD first w | BD whole | BA first w | BA whole | MAE zero (BD, BA), first w |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in ("sparse", "bursty", "daily"):
        counts = wevent.synthetic_counts(7, timestamps=t, columns=d, kind=kind)
        for w in (10, 40, 120):
            for eps in (0.1, 1.0):
                cells, absolute = [], []
                for m in ("bd", "ba"):
                    z = wevent.run(keys, counts, method=m, w=w, epsilon=eps).releases
                    p = wevent.run(keys, counts, method=m, w=w, epsilon=eps, initial="publish").releases
                    zf, pf = wevent.mae(z[:, :w], counts[:w]).mean(), wevent.mae(p[:, :w], counts[:w]).mean()
                    cells += [f"{pf / zf:.3g}", f"{wevent.mae(p, counts).mean() / wevent.mae(z, counts).mean():.3g}"]
                    absolute.append(f"{zf:.3g}")
                print(f"| {kind} | {w} | {eps:g} | " + " | ".join(cells) + f" | {', '.join(absolute)} |", flush=True)


_RAISED = {"MALLOC_MMAP_THRESHOLD_": str(2**31 - 1), "MALLOC_TRIM_THRESHOLD_": str(2**31 - 1)}


def breakdown_child(d):
    """One process: per method, µs per timestamp of `run`, of the host pass alone (`check_counts` casting to
    float32) and of drawing the publications' noise alone (`standard_laplace`, publications × d, added into a reused
    buffer, so no fresh output memory); JSON on stdout."""
    t = 400 if d > 10_000 else 4_000
    counts = wevent.synthetic_counts(3, timestamps=t, columns=d)

    def best(fn, n=5):
        times = []
        for i in range(n):
            t0 = time.perf_counter()
            jax.block_until_ready(fn(i))
            times.append(time.perf_counter() - t0)
        return min(times) * 1e6 / t

    out = {"host": best(lambda i: wevent.check_counts(counts, dtype=np.float32))}
    on_device = jnp.asarray(counts, jnp.float32)  # counts already in the kernel's dtype: no host pass
    for m in wevent.METHODS:
        r = wevent.run(jax.random.key(0), counts, method=m, w=40, epsilon=1.0)
        pubs = int(np.asarray(r.published).sum())
        # added into a donated buffer that the next call reuses: the draws' cost without fresh output memory
        draw = jax.jit(lambda k, buf: buf + mechanisms.standard_laplace(k, buf.shape), donate_argnums=1)
        buf = [draw(jax.random.key(0), jnp.zeros((max(pubs, 1), d), jnp.float32))]

        def chained(i, draw=draw, buf=buf):
            buf[0] = draw(jax.random.key(i + 1), buf[0])
            return buf[0]

        chained(0)
        out[m] = {
            "run": best(lambda i, m=m: wevent.run(jax.random.key(i + 1), counts, method=m, w=40, epsilon=1.0).releases),
            "device": best(lambda i, m=m: wevent.run(jax.random.key(i + 1), on_device, method=m, w=40,
                                                     epsilon=1.0).releases),
            "noise": best(chained), "publications": pubs,
        }
    print(json.dumps(out))


def breakdown(rounds=2):
    """`breakdown_child` in fresh processes, default allocator and raised mmap threshold alternately."""
    print(f"machine: {platform.machine()} | {os.cpu_count()} CPUs | JAX {jax.__version__} | w = 40, ε = 1, one "
          f"stream, best of 5 per process, {rounds} rounds")
    for d in (1_000, 25_936):
        _breakdown_table(d, rounds)


def _breakdown_table(d, rounds):
    """One table: per method, the run's µs per timestamp and rates, and the parts measured alone."""
    runs = {"default": [], "raised": []}
    for _ in range(rounds):
        for name in runs:
            env = dict(os.environ, **(_RAISED if name == "raised" else {}))
            res = subprocess.run([sys.executable, __file__, "--breakdown-child", str(d)], env=env,
                                 capture_output=True, text=True, check=True)
            runs[name].append(json.loads(res.stdout.strip().splitlines()[-1]))
    print(f"\nd = {d:,}, T = {400 if d > 10_000 else 4_000}\n")
    print("| method | publications | float64 NumPy counts: µs/ts (timestamps/s) | float32 JAX counts: µs/ts "
          "(timestamps/s) | float64, mmap threshold raised: µs/ts (timestamps/s) | host pass µs/ts | noise draws "
          "µs/ts | float32 JAX counts − draws: µs/ts (timestamps/s) |")
    print("|---|---|---|---|---|---|---|---|")

    def cell(v):
        return f"{min(v):.3g}–{max(v):.3g} ({1e6 / max(v):,.0f}–{1e6 / min(v):,.0f})"

    for m in wevent.METHODS:
        d_run = [r[m]["run"] for r in runs["default"]]
        dev = [r[m]["device"] for r in runs["default"]]
        r_run = [r[m]["run"] for r in runs["raised"]]
        host = [r["host"] for r in runs["default"]]
        noise = [r[m]["noise"] for r in runs["default"]]
        rest = float(np.mean(dev) - np.mean(noise))  # derived: the draws were timed apart
        left = f"{rest:.3g} ({1e6 / rest:,.0f})" if rest > 0.1 * np.mean(dev) else "≈ 0: the draws are the run"
        print(f"| {m} | {runs['default'][0][m]['publications']} | {cell(d_run)} | {cell(dev)} | {cell(r_run)} | "
              f"{min(host):.3g}–{max(host):.3g} | {min(noise):.3g}–{max(noise):.3g} | {left} |", flush=True)


def _timed(fn):
    t0 = time.perf_counter()
    fn().releases.block_until_ready()
    return time.perf_counter() - t0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    only = parser.add_mutually_exclusive_group()  # one table at a time (found in review: two were taken silently)
    only.add_argument("--partitioning-only", action="store_true", help="only the column-partitioning table")
    only.add_argument("--speed-only", action="store_true", help="only the timestamps/s table")
    only.add_argument("--shift-only", action="store_true", help="only the budget-shift table")
    only.add_argument("--startup-only", action="store_true", help="only the start-up convention table")
    only.add_argument("--breakdown", action="store_true", help="only the per-step time breakdown")
    parser.add_argument("--breakdown-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.breakdown_child:
        breakdown_child(args.breakdown_child)
        return
    if args.breakdown:
        breakdown()
        return
    machine = f"machine: {platform.machine()} | {os.cpu_count()} CPUs | JAX {jax.__version__}"
    if args.speed_only:
        print(machine)  # (found in review: the speed and shift tables printed no machine line)
        speed()
        return
    if args.shift_only:
        print(f"{machine} | 20 repetitions (the shift table's own)")
        shift_table()
        return
    if args.startup_only:
        print(f"machine: {platform.machine()} | {os.cpu_count()} CPUs | JAX {jax.__version__} | {args.reps} repetitions")
        startup_table(args.reps)
        return
    if args.partitioning_only:
        print(f"machine: {platform.machine()} | {os.cpu_count()} CPUs | JAX {jax.__version__} | {args.reps} repetitions")
        partitioning(args.reps)
        return
    print(f"machine: {platform.machine()} | {os.cpu_count()} CPUs | JAX {jax.__version__} | {args.reps} repetitions")
    keys = jax.random.split(jax.random.key(0), args.reps)
    for kind in ("bursty", "daily"):
        counts = wevent.synthetic_counts(7, timestamps=1000, columns=500, kind=kind)
        print(f"\n{kind} stream, ε = 1: MAE / MRE vs w\n")
        print("| w | " + " | ".join(f"{m} MAE | {m} MRE" for m in wevent.METHODS) + " |")
        print("|---|" + "---|---|" * len(wevent.METHODS))
        for w in (40, 80, 120, 160, 200):
            cells = []
            for m in wevent.METHODS:
                rel = wevent.run(keys, counts, method=m, w=w, epsilon=1.0).releases
                cells.append(f"{wevent.mae(rel, counts).mean():.3g} | {wevent.mre(rel, counts).mean():.3g}")
            print(f"| {w} | " + " | ".join(cells) + " |", flush=True)
        print(f"\n{kind} stream, w = 120: MAE vs ε\n")
        print("| ε | " + " | ".join(wevent.METHODS) + " |")
        print("|---|" + "---|" * len(wevent.METHODS))
        for eps in (0.1, 0.5, 1.0, 2.0):
            cells = [f"{wevent.mae(wevent.run(keys, counts, method=m, w=120, epsilon=eps).releases, counts).mean():.3g}"
                     for m in wevent.METHODS]  # fmt: skip
            print(f"| {eps:g} | " + " | ".join(cells) + " |", flush=True)
    speed()
    shift_table()
    partitioning(args.reps)


if __name__ == "__main__":
    main()
