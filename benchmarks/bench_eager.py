"""Benchmark: public cores called eagerly (outside jax.jit) — first call, a second call, a call with a new ε.

Usage: python benchmarks/bench_eager.py [--rounds 1]

Each function is timed in its own fresh Python process (so the first call includes tracing and compilation, with
JAX's persistent compilation cache and jaxdp's program cache off), as a researcher calling the mechanisms directly would meet them. A second
call with the same shapes (a new key) should take milliseconds; a call with another ε shows whether ε is compiled
into the program. Machine: printed. The jaxdp measured is the installed one; side by side with another checkout,
set PYTHONPATH to it (the children run in the temporary folder, so the current folder does not shadow it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

CASES = {
    "laplace_mechanism (float)": "mechanisms.laplace_mechanism(k, jnp.zeros(8), epsilon=e, sensitivity=1.0)",
    "laplace_mechanism (grid)": "mechanisms.laplace_mechanism(k, jnp.zeros(8), epsilon=e, sensitivity=1.0, noise='grid')",
    "exponential_mechanism (grid)": "mechanisms.exponential_mechanism(k, jnp.arange(10.0), epsilon=e, sensitivity=1.0, "
                                    "noise='grid')",
    "exponential_segments (grid)": "mechanisms.exponential_segments(k, jnp.arange(10.0), jnp.zeros(10, int), "
                                   "jnp.ones(10, bool), epsilon=e, sensitivity=1.0, noise='grid')",
    "l2_norm_noise": "mechanisms.l2_norm_noise(k, (6,), dim=5, epsilon=e)",
    "compressive.kth_largest": "C.kth_largest(jnp.abs(jax.random.normal(k, (64,))), 5)",
    "compressive.recover": "C.recover(PHI, Y, basis='haar', sparsity=4, iterations=10, refit=3)",
    "audit.audit": "audit.audit(MECH, k, jnp.zeros(()), jnp.ones(()), trials=2000, selection_trials=2000)",
}

CHILD = """
import time, json, jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_compilation_cache", False)
from jaxdp import mechanisms, audit, compressive as C
PHI = C.projection(jax.random.key(9), 20, 64, jnp.float32)
Y = PHI @ jnp.ones(64, jnp.float32)
def MECH(k, x):
    return mechanisms.laplace_mechanism(k, x, epsilon=1.0, sensitivity=1.0)
out = []
for i, e in enumerate((1.0, 1.0, 2.0)):
    k = jax.random.key(i)
    t = time.perf_counter()
    jax.block_until_ready({expr})
    out.append(time.perf_counter() - t)
print(json.dumps(out))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="fresh processes per function (the table: the median)")
    args = parser.parse_args()
    print(f"machine: {platform.machine()} | {os.cpu_count()} CPUs | Python {platform.python_version()} | "
          f"{args.rounds} round(s), a fresh process each, JAX's persistent cache off\n")
    print("| function | first call s | second call ms | new ε ms |")
    print("|---|---|---|---|")
    for name, expr in CASES.items():
        runs = []
        for _ in range(args.rounds):
            # (in the temporary folder: run from a checkout, `python -c` would import that checkout's jaxdp first)
            res = subprocess.run([sys.executable, "-c", CHILD.replace("{expr}", expr)], capture_output=True, text=True,
                                 env={**os.environ, "JAXDP_PROGRAM_CACHE": "off"}, cwd=tempfile.gettempdir())
            if res.returncode:
                raise SystemExit(f"{name}: {res.stderr[-2000:]}")
            runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
        med = sorted(runs)[len(runs) // 2]
        print(f"| {name} | {med[0]:.2f} | {med[1] * 1e3:.1f} | {med[2] * 1e3:.1f} |", flush=True)


if __name__ == "__main__":
    main()
