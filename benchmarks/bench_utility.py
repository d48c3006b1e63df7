"""Benchmark: what the stream anonymizer's release keeps of the data, against the strongest simple baselines.

Data (bounds are chosen from the data — NOT private, as the paper does for Census — and passed as
public values; every method gets the same bounds, frames, delay and per-frame budgets):

* Census (bundled; 1080 × 13 unrelated people), the 27-setting grid of `bench_codec.py`:
  ε ∈ {1, 2, 3}, n ∈ {8, 16, 48}, δ ∈ {96, 216, 432} (frame m = n·⌊δ/n⌋); bounds [0, 1.5 × max].
* census-public: the same records and grid over jaxdp's public Census domain (`datasets.census_bounds()`:
  [0, 10⁶] and [0, 250,000] × 12, never read from the data) — what the CLI's main job uses, so a private release.
* Seattle weather (`vega_datasets`, MIT; daily 2012-01-01 … 2015-12-31, 1461 × 4: precipitation,
  temp_max, temp_min, wind): a real time-ordered stream; bounds [min − ¼ range, max + ¼ range].
* diabetes (scikit-learn, 442 × 10) and wine (scikit-learn, 178 × 13): other real tables; bounds as weather.
  These three: ε ∈ {1, 3, 10}, n = 8, δ ∈ {96, 216}.

Accounting: the paper's (ε·r/l per frame of r records, l = stream length) and one record per subject
(`records_per_subject=1`, ε per frame).

Methods: the default HVC, the paper preset (no reordering), PLN, the running noisy frame mean, DP
microaggregation (g = 8), the midpoint. R repetitions (explicit keys). Measures (`jaxdp.metrics`):
mean SSE / midpoint SSE (total and worst column), mean TV of 1- and 2-way marginals (10 cells per
column), correlation error, R² of a regression of the last column on the others (fit on the release,
scored on the data).

Usage: python benchmarks/bench_utility.py [--reps 100] [--quick] [--data census,census-public,weather,...]
(needs `pip install -e ".[bench]"`). A run over some of the data sets replaces their rows in the saved file and
keeps the others'.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import time

import jax
import numpy as np

import jaxdp
from jaxdp import datasets, metrics
from jaxdp.hvc import baselines

OUT = os.path.join(os.path.dirname(__file__), "results", "utility.json")


def load(name):
    if name == "census":
        x = np.asarray(datasets.load_census(), np.float64)
        return x, np.zeros(x.shape[1]), datasets.bounds_from_data(x)
    if name == "census-public":
        return np.asarray(datasets.load_census(), np.float64), *datasets.census_bounds()
    if name == "weather":
        from vega_datasets import data

        df = data.seattle_weather()
        x = df[["precipitation", "temp_max", "temp_min", "wind"]].to_numpy(np.float64)
    elif name in ("diabetes", "wine"):
        import sklearn.datasets as skd

        x = getattr(skd, f"load_{name}")().data.astype(np.float64)
    else:
        raise ValueError(name)
    lo, hi = x.min(0), x.max(0)
    pad = 0.25 * np.where(hi > lo, hi - lo, 1.0)
    return x, lo - pad, hi + pad


def methods(n, b, eps, bounds, k):
    acct = dict(records_per_subject=1) if k else {}
    cfg = jaxdp.HVCConfig(n, b, **acct)
    paper = jaxdp.HVCConfig.paper(n, b, reorder="none", **acct)
    return {
        "HVC default": lambda key, x: jaxdp.anonymize(key, x, cfg, epsilon=eps, bounds=bounds),
        "HVC paper preset": lambda key, x: jaxdp.anonymize(key, x, paper, epsilon=eps, bounds=bounds),
        "PLN": lambda key, x: baselines.pln(key, x, cfg, epsilon=eps, bounds=bounds),
        "frame mean": lambda key, x: baselines.frame_mean(key, x, cfg, epsilon=eps, bounds=bounds),
        "microaggregation g=8": lambda key, x: baselines.microaggregate(key, x, cfg, group=8, epsilon=eps, bounds=bounds),
        "midpoint": lambda key, x: baselines.midpoint(x, cfg, bounds=bounds),
    }


def measure(res, x, lo, hi):
    y = np.asarray(res.records, np.float64)
    ref = x[res.index]
    one, two = metrics.marginal_tv(y, ref, lo, hi, pairs=ref.shape[1] <= 13)
    cols = metrics.relative_sse(y, ref, lo, hi, per_column=True)
    return {
        "rel_sse": metrics.relative_sse(y, ref, lo, hi),
        "rel_sse_cols": cols.tolist(),
        "tv1": one,
        "tv2": two,
        "corr": metrics.correlation_error(y, ref),
        "r2": metrics.regression_r2(y, ref),
    }


def settings(name, quick):
    if name in ("census", "census-public"):
        grid = itertools.product((1.0, 3.0) if quick else (1.0, 2.0, 3.0), (8, 16, 48), (96, 216, 432))
        return [(e, n, d) for e, n, d in grid if not quick or n == 8]
    return list(itertools.product((1.0, 3.0, 10.0), (8,), (96, 216)))


METHODS = ("HVC default", "frame mean", "microaggregation g=8", "HVC paper preset", "PLN")


def tables(path=OUT):
    """Markdown tables of a saved run (for RESULTS.md)."""
    with open(path) as f:
        saved = json.load(f)
    rows = saved["rows"]
    print(f"{saved['meta']['reps']} repetitions; {saved['meta']['machine']}; {saved['meta']['seconds']:.0f} s\n")
    print("Mean SSE / midpoint SSE (total); ratio = HVC default / best of frame mean and microaggregation; "
          "worst column = max over columns of the HVC default's per-column SSE / midpoint (and / best baseline's).\n")
    print("| data | ε | n | δ | accounting | HVC default | frame mean | microagg. | paper preset | PLN | ratio | "
          "worst column vs midpoint | worst column vs best baseline |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        cells = [f"{r[m]['rel_sse']:.3g}" for m in METHODS]
        print(f"| {r['data']} | {r['eps']:g} | {r['n']} | {r['delay']} | {r['accounting']} | " + " | ".join(cells)
              + f" | {r['ratio_to_best_baseline']:.3f} | {r['worst_col_rel_sse']:.2f} | "
              f"{r['worst_col_ratio_to_best_baseline']:.2f} |")
    print("\nDistributional measures (n = 8, δ = 216 on Census; δ = 216 elsewhere): TV of 1-way / 2-way marginals, "
          "correlation error, regression R² (last column on the others, fit on the release, scored on the data; fit on the data itself: census 0.947, weather 0.121, diabetes 0.326, wine 0.646).\n")
    print("| data | ε | accounting | method | TV 1-way | TV 2-way | corr. error | R² |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["n"] != 8 or r["delay"] != 216:
            continue
        for m in (*METHODS, "midpoint"):
            v = r[m]
            print(f"| {r['data']} | {r['eps']:g} | {r['accounting']} | {m} | {v['tv1']:.3f} | {v['tv2']:.3f} | "
                  f"{v['corr']:.3f} | {v['r2']:.3f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--reps", type=int, default=100, help="repetitions per cell (explicit keys)")
    ap.add_argument("--quick", action="store_true", help="a few Census settings only; nothing is saved")
    ap.add_argument("--data", default="census,census-public,weather,diabetes,wine",
                    help="data sets to (re-)measure; the saved file keeps the others' rows")
    ap.add_argument("--tables", action="store_true", help="print the markdown tables of the saved run and exit")
    args = ap.parse_args()
    if args.tables:
        tables()
        return
    names = args.data.split(",")
    if not args.quick and os.path.exists(OUT):  # (checked before the work: found in review, it failed after it)
        with open(OUT) as f:
            saved = json.load(f)
        held = {r["data"] for r in saved["rows"]}
        if saved["meta"]["reps"] != args.reps and held - set(names):
            raise SystemExit(f"{OUT} holds a run of {saved['meta']['reps']} repetitions, which this run would mix with "
                             f"{args.reps}: pass --reps {saved['meta']['reps']}, or re-measure every data set it holds "
                             f"(--data {','.join(sorted(held | set(names)))}).")
    keys = jax.random.split(jax.random.key(0), args.reps)
    rows = []
    t0 = time.time()
    for name in args.data.split(","):
        x, lo, hi = load(name)
        bounds = (lo, hi)
        for (eps, n, delay), k in itertools.product(settings(name, args.quick), (False, True)):
            b = max(delay // n, 1)
            row = {"data": name, "eps": eps, "n": n, "delay": delay, "m": n * b, "accounting": "k=1" if k else "paper"}
            for meth, fn in methods(n, b, eps, bounds, k).items():
                row[meth] = measure(fn(keys, x), x, lo, hi)
            best = min(row["frame mean"]["rel_sse"], row["microaggregation g=8"]["rel_sse"])
            row["ratio_to_best_baseline"] = row["HVC default"]["rel_sse"] / best
            base_cols = np.minimum(row["frame mean"]["rel_sse_cols"], row["microaggregation g=8"]["rel_sse_cols"])
            hvc_cols = np.asarray(row["HVC default"]["rel_sse_cols"])
            row["worst_col_ratio_to_best_baseline"] = float(np.nanmax(hvc_cols / base_cols))
            row["worst_col_rel_sse"] = float(np.nanmax(hvc_cols))
            rows.append(row)
            print(
                f"{name} ε={eps:g} n={n} δ={delay} {row['accounting']}: HVC {row['HVC default']['rel_sse']:.3f} "
                f"fm {row['frame mean']['rel_sse']:.3f} ma {row['microaggregation g=8']['rel_sse']:.3f} "
                f"paper {row['HVC paper preset']['rel_sse']:.3f} PLN {row['PLN']['rel_sse']:.3g} | "
                f"ratio {row['ratio_to_best_baseline']:.3f} worst col ratio {row['worst_col_ratio_to_best_baseline']:.3f} "
                f"worst col {row['worst_col_rel_sse']:.3f} | {time.time() - t0:.0f}s",
                flush=True,
            )
    meta = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "jax": jax.__version__,
        "device": str(jax.devices()[0]),
        "reps": args.reps,
        "quick": args.quick,
        "seconds": time.time() - t0,
    }
    if not args.quick:
        if os.path.exists(OUT):  # keep the rows of the data sets this run did not measure
            with open(OUT) as f:
                saved = json.load(f)
            rows = [r for r in saved["rows"] if r["data"] not in names] + rows  # (same reps, or all replaced: above)
            meta["seconds"] += saved["meta"]["seconds"]  # all runs that made the file, the replaced rows' included
            meta["runs"] = saved["meta"].get("runs", [])
        meta.setdefault("runs", []).append({"data": args.data, "seconds": round(time.time() - t0),
                                            "date": time.strftime("%Y-%m-%d")})
        os.makedirs(os.path.dirname(OUT), exist_ok=True)
        with open(OUT, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
