"""Speed and scale of the stream anonymizer, beside a plain NumPy implementation of the same codec.

* records/s vs stream length (10³ … 10⁶ records) and vs n, compile time separated from run time
  (`block_until_ready` via NumPy conversion of the result);
* the codec loop with the paper's 5 prediction modes (exponential-mechanism mode choice, Algorithm 1 with
  pruning and joint accounting, clipped output; the default's frame-mean layer is off here, it is a
  separate vectorized pass) beside the same codec written as a straightforward float64 NumPy loop over
  blocks, run in the same process on a prefix of the stream, for the ratio;
* resident memory of `StreamAnonymizer` while a 10⁶-record stream is pushed in chunks (must stay flat).

Streams: Census records resampled with a seeded generator and ±1 % multiplicative jitter (see
`jaxdp/data/README.md`); bounds 1.5 × the Census maximum (fixed constants, not read from the stream).

Usage: python benchmarks/bench_scale.py [--max-records 1000000] [--numpy-blocks 2000]
       [--block-sizes 8,48] [--skip-memory] [--json OUT.json] [--compare OTHER.json]

Each row times jaxdp twice in the same process: with its default single-stream loop (for n·d ≤ 256 one
CPU kernel, `jaxdp.hvc.cpu_loop`) and with XLA's default loop of separate kernels (`jaxdp.fuse_cpu_loops(False)`);
for larger blocks both are the same program and only the first is run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import jax
import numpy as np

import jaxdp
from jaxdp import datasets
from jaxdp.hvc import codec, predict, quantize

CENSUS = datasets.load_census().astype(np.float64)
HI = 1.5 * CENSUS.max(axis=0)


def stream(n_records: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return CENSUS[rng.integers(0, CENSUS.shape[0], size=n_records)] * rng.uniform(0.99, 1.01, size=(n_records, 13))


def numpy_codec(records: np.ndarray, config: jaxdp.HVCConfig, epsilon: float, seed: int = 0) -> np.ndarray:
    """The default codec as a plain float64 NumPy loop (no reordering, full frames only)."""
    rng = np.random.default_rng(seed)
    n, d = config.block_size, records.shape[1]
    lo, hi = np.zeros(d), HI
    tab = quantize.tables(n, np.stack([lo, hi]), kinds=config.kinds, order=config.order, accounting=config.accounting)
    names = predict.mode_names(config.modes, config.history)
    ql, qe, e = config.budget_split
    eps_j = epsilon * config.frame_size / records.shape[0]
    hist = np.zeros((config.history, n, d))
    valid = 0
    mid = np.broadcast_to(0.5 * (lo + hi), (n, d))
    out = np.empty_like(records)
    nd = n * d
    mode_sens = float(np.sum((hi - lo) ** 2))
    for j in range(records.shape[0] // n):
        x = np.clip(records[j * n : (j + 1) * n], lo, hi)
        preds = []
        for name in names:
            if name == "midpoint" or valid == 0:
                preds.append(mid)
            elif name == "column_mean":
                preds.append(np.broadcast_to(hist[0].mean(axis=0), (n, d)))
            elif name == "last_record":
                preds.append(np.broadcast_to(hist[0, -1], (n, d)))
            elif name == "history_mean":
                preds.append(np.broadcast_to(hist[:valid].mean(axis=(0, 1)), (n, d)))
            else:
                k = int(name[5:]) - 1
                preds.append(hist[k] if k < valid else mid)
        preds = np.clip(np.stack(preds), lo, hi)
        score = -np.sum((x[None] - preds) ** 2, axis=(1, 2))
        logits = e * eps_j / (2 * mode_sens) * score
        x_hat = preds[int(np.argmax(logits + rng.gumbel(size=logits.shape)))]
        c = np.stack([(tab.an[s] @ (x - x_hat) @ tab.ad[s].T).reshape(-1)[tab.order] for s in range(len(config.kinds))])
        tail = np.concatenate([np.cumsum((c**2)[:, ::-1], axis=1)[:, ::-1], np.zeros((c.shape[0], 1))], axis=1)
        lap = tab.laplace_mse / (ql * eps_j) ** 2
        far = np.maximum(np.abs(hi - x_hat), np.abs(x_hat - lo))
        r_max = np.sum(far**2)
        score = -np.sqrt(lap) - np.sqrt(tail)  # θ = ½
        score = np.where(lap > r_max, -np.inf, score)
        logits = (qe * eps_j / (2 * float(tab.gs_frobenius))) * score.reshape(-1)
        idx = int(np.argmax(logits + rng.gumbel(size=logits.shape)))
        s, t = divmod(idx, nd + 1)
        scale = tab.cbrt_gs[s] * tab.prefix[s, t] * tab.rho[s, t] / (ql * eps_j)
        noisy = np.where(np.arange(nd) < t, c[s] + rng.laplace(size=nd) * scale, 0.0)
        cm = np.zeros(nd)
        cm[tab.order] = noisy
        released = np.clip(x_hat + tab.an[s].T @ cm.reshape(n, d) @ tab.ad[s], lo, hi)
        hist = np.concatenate([released[None], hist[:-1]])
        valid = min(valid + 1, config.history)
        out[j * n : (j + 1) * n] = released
    return out


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _compare(rows, path):
    """This run's records/s beside another run's (`--json` file), row by row: the GPU-vs-CPU ratio."""
    with open(path) as f:
        ref = json.load(f)
    by_key = {(r["n"], r["records"]): r for r in ref["rows"]}
    print(f"\nThis run vs {path} ({ref['machine']}):\n")
    print("| n | records | records/s here | records/s there | ratio | ratio to its XLA-default-loop column |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        other = by_key.get((r["n"], r["records"]))
        if other is None:
            continue
        default = other.get("run_s_xla_default_loop")
        vs_default = f"{r['records_per_s'] / (r['records'] / default):.2f}×" if default else ""
        print(f"| {r['n']} | {r['records']:,} | {r['records_per_s']:,.0f} | {other['records_per_s']:,.0f} | "
              f"{r['records_per_s'] / other['records_per_s']:.2f}× | {vs_default} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-records", type=int, default=1_000_000)
    parser.add_argument("--numpy-blocks", type=int, default=2000)
    parser.add_argument("--block-sizes", default="8,48", help="comma-separated n (default 8,48)")
    parser.add_argument("--skip-memory", action="store_true", help="only the records/s table")
    parser.add_argument("--json", default=None, help="also write the records/s rows (and the machine) to this file")
    parser.add_argument("--compare", default=None,
                        help="a --json file of another run (e.g. the CPU one): print this run's records/s relative to it")
    args = parser.parse_args()
    dev = jax.devices()[0]
    machine = (f"{platform.machine()} | {os.cpu_count()} CPUs | JAX {jax.__version__} on {dev.platform.upper()} "
               f"({dev.device_kind}) | NumPy {np.__version__} | jaxdp {jaxdp.__version__}")
    print(f"machine: {machine}")
    rows = []
    print("\n| n | records | compile+run s | run s | records/s | run s, XLA default loop | records/s | "
          "NumPy records/s (same codec) | speed-up | speed-up, XLA default loop |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    lengths = [10**k for k in range(3, 7) if 10**k <= args.max_records]
    for n in (int(v) for v in args.block_sizes.split(",")):
        for length in lengths:
            # the codec loop with the paper's five prediction modes (the NumPy codec below implements
            # them; the default's frame-mean layer is a separate vectorized pass, not in the loop)
            cfg = jaxdp.HVCConfig(n, max(1, 96 // n), modes=predict.PAPER_MODES,
                                  frame_mean_share=0.0)
            data = stream(length, seed=length)
            settings = (True, False) if codec.one_kernel_loop(cfg, n * 13) else (True,)
            first, run = {}, {}
            for setting in settings:
                jaxdp.fuse_cpu_loops(setting)
                t0 = time.perf_counter()
                jaxdp.anonymize(jax.random.key(0), data, cfg, epsilon=3.0, bounds=(np.zeros(13), HI))
                first[setting] = time.perf_counter() - t0
                runs = []
                for r in range(5 if length <= 100_000 else 1):  # median of 5 for the short streams
                    t0 = time.perf_counter()
                    res = jaxdp.anonymize(jax.random.key(1 + r), data, cfg, epsilon=3.0, bounds=(np.zeros(13), HI))
                    runs.append(time.perf_counter() - t0)
                run[setting] = float(np.median(runs))
                assert res.records.shape[0] == length
            jaxdp.fuse_cpu_loops(True)
            np_rate = ratio = ratio_default = ""
            np_rate_v = None
            if length >= 10**4:
                nb = min(args.numpy_blocks, length // n)
                t0 = time.perf_counter()
                numpy_codec(data[: nb * n], cfg, 3.0)
                np_rate_v = nb * n / (time.perf_counter() - t0)
                np_rate = f"{np_rate_v:,.0f}"
                ratio = f"{(length / run[True]) / np_rate_v:.1f}×"
                if False in run:
                    ratio_default = f"{(length / run[False]) / np_rate_v:.1f}×"
            default = f"{run[False]:.3f} | {length / run[False]:,.0f}" if False in run else "(same program) | "
            print(f"| {n} | {length:,} | {first[True]:.2f} | {run[True]:.3f} | {length / run[True]:,.0f} | {default} | "
                  f"{np_rate} | {ratio} | {ratio_default} |", flush=True)
            rows.append({"n": n, "records": length, "device": dev.platform, "compile_run_s": first[True],
                         "run_s": run[True], "records_per_s": length / run[True],
                         "run_s_xla_default_loop": run.get(False), "numpy_records_per_s": np_rate_v})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine, "rows": rows}, f, indent=1)
    if args.compare:
        _compare(rows, args.compare)

    if args.skip_memory:
        return
    print(f"\nStreamAnonymizer memory, {args.max_records:,} records pushed in chunks of up to 10,000 (n = 8, δ = 96; the "
          "rate below includes the first push's compilation):")
    cfg = jaxdp.HVCConfig(8, 12, target_length=args.max_records)
    sa = jaxdp.StreamAnonymizer(jax.random.key(2), cfg, epsilon=3.0, bounds=(np.zeros(13), HI))
    rss = []
    released = 0
    t0 = time.perf_counter()
    for start in range(0, args.max_records, 10_000):
        size = min(10_000, args.max_records - start)  # (found in review: a last chunk past --max-records was
        chunk = stream(size, seed=start)  # pushed whole, more records than the target length)
        out = sa.push(chunk).records
        released += out.shape[0]
        if (start // 10_000) % 10 == 0:
            rss.append((start + size, _rss_mb()))
    released += sa.flush().records.shape[0]
    secs = time.perf_counter() - t0
    print("| records pushed | resident MB |")
    print("|---|---|")
    for k, mb in rss:
        print(f"| {k:,} | {mb:.0f} |")
    print(f"released {released:,} records in {secs:.1f} s ({released / secs:,.0f} records/s); "
          f"pending raw records held: {len(sa.pending)}")


if __name__ == "__main__":
    main()
