"""jaxdp: JIT-compiled, vmapped JAX kernels for publishing differentially private numeric data.

Modules:
  transforms   orthonormal DCT-II / DST-I / DHT / identity matrices and separable 2-D transforms
  orders       zig-zag and diagonal coefficient scans
  sensitivity  Lemma 1 / 3 / 5 sensitivity tables, exact joint privacy loss
  mechanisms   every noise draw: Laplace and exponential mechanisms (float and exact), `noise=` choices
  exact        exact samplers in integer arithmetic (discrete Laplace, exponential mechanism)
  keys         secret keys from the operating system (`fresh_key`), reproducible seeds (not private)
  privacy      when a release is private (one rule for every front end), what is assumed public
  diagnostics  curator-only numbers computed from the raw data (never to be published)
  quantize     Theorem 1 allocation, MSE tables, Algorithm 1 of the hybrid-video-coding paper
  datasets     bundled Census data, explicit (non-private) bound helpers
  io           tables in and out in chunks (CSV, Parquet, Arrow IPC) for the CLI
  predict      candidate predictions from protected blocks (intra / inter modes)
  codec        the closed loop: one block step, a scan over blocks
  backend      how the codec loop is compiled on CPU (one kernel for small blocks; `fuse_cpu_loops`)
  stream       frames, budgets, record updates; `anonymize`, `StreamAnonymizer`
  baselines    PLN, the running noisy frame mean, DP microaggregation, the zero-budget midpoint
  metrics      utility measures: relative SSE (per column), marginal TV, correlations, moments, regression
  reorder      Algorithm 2's footrule-constrained reordering (not DP; opt-in)
  audit        empirical DP auditing (Clopper-Pearson lower bounds on ε)
  wevent       w-event privacy for count streams: Uniform, Sample, BD, BA
  histogram    histograms by lossy compression: LPA, FPA, SPA, EFPA, P-HPartition
  compressive  the compressive mechanism, binary-tree counters, CMCO
  bucketize    F′-privacy bucketization (TwoSize, MultiSize, exact MILP, Anatomy); Theorem 2

Submodules and the names below are imported on first use, so ``import jaxdp`` (and the CLI's
argument checks) do not start JAX.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_SUBMODULES = (
    "audit", "backend", "baselines", "bucketize", "codec", "compressive", "datasets", "diagnostics", "exact",
    "histogram", "io", "keys", "mechanisms", "metrics", "orders", "predict", "privacy", "quantize", "reorder", "sensitivity",
    "stream", "transforms", "wevent",
)  # fmt: skip
_NAMES = {
    "HVCConfig": ("config", "HVCConfig"),
    "Result": ("stream", "Result"),
    "StreamAnonymizer": ("stream", "StreamAnonymizer"),
    "BudgetExhaustedWarning": ("stream", "BudgetExhaustedWarning"),
    "anonymize": ("stream", "anonymize"),
    "anonymize_many": ("stream", "anonymize_many"),
    "fresh_key": ("keys", "fresh_key"),
    "fuse_cpu_loops": ("backend", "fuse_cpu_loops"),
    "midpoint": ("baselines", "midpoint"),
    "pln": ("baselines", "pln"),
    "frame_mean": ("baselines", "frame_mean"),
    "microaggregate": ("baselines", "microaggregate"),
    "exponential": ("mechanisms", "exponential"),
    "laplace": ("mechanisms", "laplace"),
    "mse_table": ("quantize", "mse_table"),
    "quantize_block": ("quantize", "quantize"),
    "QuantizeInfo": ("quantize", "QuantizeInfo"),
}

__all__ = sorted([*_NAMES, *_SUBMODULES, "__version__"])


def __getattr__(name: str):
    if name in _NAMES:
        module, attr = _NAMES[name]
        value = getattr(importlib.import_module(f"jaxdp.{module}"), attr)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"jaxdp.{name}")
    else:
        raise AttributeError(f"module 'jaxdp' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return __all__
