"""Fingerprints of HVC releases for fixed keys, to compare two checkouts: identical lines = identical releases.

Runs `anonymize`, `frame_mean`, `microaggregate` and `pln` on the bundled Census (bounds 1.5 × max as fixed
constants) at four settings, 5 repetitions each, and prints one line per release: method, ε, n, a SHA-1 of
the released records and their mean SSE. Works on checkouts from before and after the budget and the bounds
moved from `HVCConfig` to the call. Usage: ``PYTHONPATH=<checkout> python benchmarks/check_releases.py``,
then ``diff`` the outputs.
"""

import argparse
import hashlib

import jax
import numpy as np

import jaxdp

argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                        formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()  # no options (--help works)
census = jaxdp.datasets.load_census()
bounds = (np.zeros(13), 1.5 * census.max(0))
for eps, n, b, k in [(1.0, 8, 12, None), (3.0, 16, 27, 1), (10.0, 48, 9, None), (2.0, 8, 27, 1)]:
    kw = {} if k is None else dict(records_per_subject=k)
    keys = jax.random.split(jax.random.key(int(eps * 10) + n), 5)
    try:
        cfg = jaxdp.HVCConfig(n, b, **kw)

        def call(f, *a, eps=eps):
            return f(*a, epsilon=eps, bounds=bounds)
    except TypeError:  # a checkout from before ε and the bounds moved to the call
        cfg = jaxdp.HVCConfig(n, b, eps, bounds=bounds, **kw)

        def call(f, *a):
            return f(*a)
    for name in ("anonymize", "frame_mean", "microaggregate", "pln"):
        r = call(getattr(jaxdp, name), keys, census, cfg)
        recs = np.asarray(r.records)
        sse = float(((recs - census[r.index]) ** 2).sum() / len(keys))
        print(name, eps, n, hashlib.sha1(recs.tobytes()).hexdigest()[:12], f"{sse:.6g}")
