"""Paper-style figures from jaxdp runs on the bundled Census data (PNG files in benchmarks/figures/).

* sse_vs_epsilon.png — Figs. 9–12 style: log2 mean SSE vs ε for the default HVC, the paper preset,
  PLN and the zero-budget midpoint, per (δ, n); R repetitions as one vmapped program.
* selection_pmf.png — Fig. 5 style: the (t, σ) selection PMF of Algorithm 1 for θ = ½ and 1.
* sensitivity.png — Fig. 2 style relative L1-sensitivity differences (n = d = 8, Λ = 1) and Fig. 8 style
  ‖GS(f_c^σ)‖_F vs n (d = 13, Λ = 1).
* blocks.png — Fig. 14 style: an input block and its protected output (n = 8).
* time_per_block.png — Fig. 13 style: time per block vs n (one stream and 100 vmapped repetitions).
* weather_stream.png — not in the paper: one column of a time-ordered stream (Seattle weather, `vega_datasets`)
  as released by the default, the running noisy frame mean and DP microaggregation, one record per subject.

Usage: python benchmarks/figures.py [--reps 20]   (needs matplotlib)
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import jaxdp  # noqa: E402
from jaxdp import datasets
from jaxdp.hvc import quantize, sensitivity  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "figures")
DATA = datasets.load_census()
BOUNDS = (np.zeros(13), datasets.bounds_from_data(DATA))  # the paper's rule (not private), for comparison


def sse_vs_epsilon(reps):
    eps_grid = [1.0, 1.5, 2.0, 2.5, 3.0]
    keys = jax.random.split(jax.random.key(0), reps)
    fig, axes = plt.subplots(3, 3, figsize=(12, 10), sharey=True)
    for i, delay in enumerate((96, 216, 432)):
        for j, n in enumerate((8, 16, 48)):
            b = delay // n
            curves = {"HVC default": [], "HVC paper preset": [], "PLN": [], "midpoint (ε = 0)": []}
            for eps in eps_grid:
                cfg = jaxdp.HVCConfig(n, b)
                curves["HVC default"].append(jaxdp.anonymize(keys, DATA, cfg, epsilon=eps, bounds=BOUNDS).sse(DATA).mean())
                curves["HVC paper preset"].append(
                    jaxdp.anonymize(keys, DATA, jaxdp.HVCConfig.paper(n, b, reorder="none"), epsilon=eps, bounds=BOUNDS)
                    .sse(DATA).mean()
                )
                curves["PLN"].append(jaxdp.pln(keys, DATA, cfg, epsilon=eps, bounds=BOUNDS).sse(DATA).mean())
                curves["midpoint (ε = 0)"].append(jaxdp.midpoint(DATA, cfg, bounds=BOUNDS).sse(DATA))
            ax = axes[i, j]
            for name, ys in curves.items():
                ax.plot(eps_grid, np.log2(ys), marker="o", label=name)
            ax.set_title(f"δ = {delay} (m = {n * b}), n = {n}")
            ax.set_xlabel("ε")
            if j == 0:
                ax.set_ylabel("log2 mean SSE")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(f"Census (l = 1080), bounds 1.5 × max, {reps} repetitions")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "sse_vs_epsilon.png"), dpi=110)


def selection_pmf():
    fig, axes = plt.subplots(2, 2, figsize=(12, 7))
    blocks = [("last 8 records × first 8 attributes", DATA[-8:, :8]), ("last 48 records × 13 attributes", DATA[-48:])]
    for i, (title, x) in enumerate(blocks):
        x = x.astype(np.float64)
        for j, theta in enumerate((0.5, 1.0)):
            p = np.asarray(quantize.selection_probabilities(
                x, np.zeros_like(x), x.max(axis=0), eps_laplace=1.0, eps_select=1.0, theta=theta
            ))  # fmt: skip
            ax = axes[i, j]
            for s, kind in enumerate(("dct", "dst", "dht")):
                ax.plot(np.arange(p.shape[1]), p[s], label=kind)
            ax.set_xlim(0, min(p.shape[1], 40))
            ax.set_title(f"{title}, θ = {theta:g}")
            ax.set_xlabel("t")
            ax.set_ylabel("p_TΣ(t, σ)")
    axes[0, 0].legend()
    fig.suptitle("Algorithm 1 selection PMF (ε_QL = ε_QE = 1, x̂ = 0, Λ = block max), cf. paper Fig. 5")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "selection_pmf.png"), dpi=110)


def sensitivity_figure():
    fig, axes = plt.subplots(1, 4, figsize=(16, 4))
    gs = {k: sensitivity.coefficient_table(k, 8, np.ones(8)) for k in ("dct", "dst", "dht")}
    for ax, (a, b) in zip(axes[:3], (("dct", "dst"), ("dct", "dht"), ("dst", "dht"))):
        r = 100 * (gs[a] - gs[b]) / np.minimum(gs[a], gs[b])  # paper Eq. (6)
        im = ax.imshow(r, cmap="coolwarm", vmin=-100, vmax=100)
        ax.set_title(f"r_{a[1]}{b[1]} (%), n = d = 8")
        fig.colorbar(im, ax=ax, fraction=0.046)
    ns = [4, 8, 16, 24, 32, 48, 64]
    for kind in ("dct", "dst", "dht"):
        axes[3].plot(ns, [sensitivity.frobenius(kind, n, np.ones(13)) for n in ns], marker="o", label=kind)
    axes[3].set_xlabel("n")
    axes[3].set_title("‖GS(f_c^σ)‖_F, d = 13, Λ = 1 (cf. Fig. 8)")
    axes[3].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "sensitivity.png"), dpi=110)


def blocks_figure():
    cfg = jaxdp.HVCConfig(8, 54)
    res = jaxdp.anonymize(jax.random.key(3), DATA, cfg, epsilon=3.0, bounds=BOUNDS)
    j = int(np.argmax(res.info.t))  # a block where coefficients were released
    rows = slice(8 * j, 8 * j + 8)
    scale = BOUNDS[1]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for ax, mat, title in ((axes[0], DATA[res.index[rows]], "input block"), (axes[1], res.records[rows], "protected")):
        im = ax.imshow(mat / scale, vmin=0, vmax=1, cmap="viridis")
        ax.set_title(f"{title} (block {j}, t = {int(res.info.t[j])})")
        ax.set_xlabel("attribute")
        ax.set_ylabel("record")
    fig.colorbar(im, ax=axes, fraction=0.03, label="value / domain width")
    fig.savefig(os.path.join(OUT, "blocks.png"), dpi=110, bbox_inches="tight")


def time_figure():
    ns = [8, 16, 32, 48]
    one, many = [], []
    keys = jax.random.split(jax.random.key(4), 100)
    for n in ns:
        cfg = jaxdp.HVCConfig(n, max(1, 432 // n))
        jaxdp.anonymize(jax.random.key(1), DATA, cfg, epsilon=3.0, bounds=BOUNDS)  # compile
        t0 = time.perf_counter()
        res = jaxdp.anonymize(jax.random.key(2), DATA, cfg, epsilon=3.0, bounds=BOUNDS)
        one.append((time.perf_counter() - t0) / res.info.t.shape[0])
        jaxdp.anonymize(keys, DATA, cfg, epsilon=3.0, bounds=BOUNDS)
        t0 = time.perf_counter()
        res = jaxdp.anonymize(keys, DATA, cfg, epsilon=3.0, bounds=BOUNDS)
        many.append((time.perf_counter() - t0) / res.info.t.size)
    paper = [0.6038, 0.2495, 0.1039, 0.02456]  # 75th percentile, MATLAB, vlCensus (with reordering)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.semilogy(ns, one, marker="o", label="jaxdp, one stream (per block)")
    ax.semilogy(ns, many, marker="o", label="jaxdp, 100 vmapped repetitions (per block)")
    ax.semilogy(ns, paper, marker="s", label="paper, MATLAB (with reordering)")
    ax.set_xlabel("n")
    ax.set_ylabel("seconds per block")
    ax.set_title("Time per block, Census, CPU (cf. Fig. 13)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "time_per_block.png"), dpi=110)
    return list(zip(ns, one, many))


def weather_stream(eps=3.0, n=8, delay=96):
    """Daily maximum temperature, Seattle 2012–2015 (1,461 records × 4 columns; bounds [min − ¼ range, max + ¼ range],
    read from the data, as in `bench_utility.py`), one release each with the same key: the default's frame-mean
    layer follows the seasons (local-level filter), the running frame mean lags towards the all-time mean."""
    from bench_utility import load  # the same data and bounds as the utility benchmark
    from vega_datasets import data

    from jaxdp import metrics
    from jaxdp.hvc import baselines

    x, lo, hi = load("weather")
    dates = data.seattle_weather()["date"]
    cfg = jaxdp.HVCConfig(n, delay // n, records_per_subject=1)
    key = jax.random.key(3)
    releases = {
        "jaxdp default": jaxdp.anonymize(key, x, cfg, epsilon=eps, bounds=(lo, hi)),
        "running frame mean": baselines.frame_mean(key, x, cfg, epsilon=eps, bounds=(lo, hi)),
        "microaggregation (g = 8)": baselines.microaggregate(key, x, cfg, group=8, epsilon=eps, bounds=(lo, hi)),
    }
    fig, ax = plt.subplots(figsize=(12, 4.5))
    ax.plot(dates, x[:, 1], color="0.75", lw=0.8, label="data (temp_max, °C)")
    for (name, res), style in zip(releases.items(), ({"lw": 2.0}, {"lw": 1.5}, {"lw": 0.7, "alpha": 0.7})):
        y = np.full(x.shape[0], np.nan)
        y[np.asarray(res.index)] = np.asarray(res.records, np.float64)[:, 1]
        sse = metrics.relative_sse(np.asarray(res.records, np.float64), x[np.asarray(res.index)], lo, hi)
        ax.plot(dates, y, label=f"{name} (SSE / midpoint {sse:.3f}, all columns)", **style)
    ax.set_ylabel("temp_max (°C)")
    ax.set_title(f"Seattle weather as a stream, ε = {eps:g} per record (one record per subject), n = {n}, δ = {delay}")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "weather_stream.png"), dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    sensitivity_figure()
    selection_pmf()
    blocks_figure()
    for n, a, b in time_figure():
        print(f"n = {n}: {a * 1e6:.0f} µs/block (one stream), {b * 1e6:.1f} µs/block (100 reps)")
    sse_vs_epsilon(args.reps)
    weather_stream()
    print("figures written to", OUT)


if __name__ == "__main__":
    main()
