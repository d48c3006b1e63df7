"""Full empirical privacy audit: every mechanism and its broken mutant, with many trials.

For each case of `tests/audits.py`: the claimed ε, the auditor's 95 %-confidence lower bound for the real
mechanism (must be ≤ the claim) and for the mutant (should exceed it), with the chosen event.

Usage: python benchmarks/audit_all.py [--trials 1000000] [--batched-trials 200000] [--only NAME]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import jax

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from audits import CASES  # noqa: E402

from jaxdp import audit  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--batched-trials", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", default="", help="run the cases whose name contains this (same keys as a full run)")
    args = parser.parse_args()
    print(f"machine: {platform.machine()} | {os.cpu_count()} CPUs | JAX {jax.__version__} | confidence 0.95 per bound")
    print("\n| mechanism | claimed ε | audited lower bound | event | mutant lower bound | mutant caught | trials | s |")
    print("|---|---|---|---|---|---|---|---|")
    key = jax.random.key(args.seed)
    for i, (name, make) in enumerate(sorted(CASES.items())):
        if args.only not in name:
            continue
        eps, mech, mutant, x, x_prime, kw = make()
        trials = args.batched_trials if kw.get("batched") else args.trials
        t0 = time.perf_counter()
        good = audit.audit(mech, jax.random.fold_in(key, 2 * i), x, x_prime, trials=trials, **kw)
        bad = audit.audit(mutant, jax.random.fold_in(key, 2 * i + 1), x, x_prime, trials=trials, **kw)
        secs = time.perf_counter() - t0
        ok = "yes" if bad.lower_bound > eps else "NO"
        flag = "" if good.lower_bound <= eps else " **VIOLATION**"
        print(f"| {name} | {eps:g} | {good.lower_bound:.3f}{flag} | `{good.event}` | {bad.lower_bound:.3f} | {ok} | "
              f"{trials:,} | {secs:.0f} |", flush=True)


if __name__ == "__main__":
    main()
