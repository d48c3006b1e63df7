"""jaxdp: JIT-compiled, vmapped JAX kernels for publishing differentially private numeric data.

Packages and modules:
  mechanisms   every noise draw: Laplace and exponential mechanisms (float and exact), the `noise=` choice
  transforms   DCT-II / DST-I / DHT / identity, real DFT, Haar; coefficient scans; GEMM cumulative sums
  hvc          the hybrid-video-coding anonymizer: config, sensitivity, quantize, predict, reorder, codec,
               cpu_loop, stream (`anonymize`, `StreamAnonymizer`), baselines
  wevent       w-event privacy for count streams: Uniform, Sample, BD, BA, column partitioning
  histogram    histograms by lossy compression: LPA, FPA, SPA, EFPA, P-HPartition
  compressive  the compressive mechanism, binary-tree counters, CMCO
  bucketize    F′-privacy bucketization (TwoSize, MultiSize, exact MILP, Anatomy); Theorem 2
  metrics      utility measures: relative SSE (per column), marginal TV, correlations, moments, regression
  datasets     bundled Census / EIA data, explicit (non-private) bound helpers, chunked table I/O
  keys         secret keys from the operating system (`fresh_key`), reproducible seeds (not private)
  privacy      when a release is private (one rule for every front end), what is assumed public
  diagnostics  curator-only numbers computed from the raw data (never to be published)
  audit        empirical DP auditing (Clopper-Pearson lower bounds on ε)
  programs     jaxdp's cache of its own compiled programs on disk (never data)
  cli          the `jaxdp` command line

Submodules and the names below are imported on first use, so ``import jaxdp`` (and the CLI's
argument checks) do not start JAX.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_SUBMODULES = (
    "audit", "bucketize", "cli", "compressive", "datasets", "diagnostics", "histogram", "hvc", "keys", "mechanisms",
    "metrics", "privacy", "programs", "transforms", "wevent",
)  # fmt: skip
_NAMES = {
    "HVCConfig": ("hvc.config", "HVCConfig"),
    "Result": ("hvc.stream", "Result"),
    "StreamAnonymizer": ("hvc.stream", "StreamAnonymizer"),
    "BudgetExhaustedWarning": ("hvc.stream", "BudgetExhaustedWarning"),
    "anonymize": ("hvc.stream", "anonymize"),
    "anonymize_streams": ("hvc.stream", "anonymize_streams"),
    "fresh_key": ("keys", "fresh_key"),
    "fuse_cpu_loops": ("hvc.cpu_loop", "fuse_cpu_loops"),
    "midpoint": ("hvc.baselines", "midpoint"),
    "pln": ("hvc.baselines", "pln"),
    "frame_mean": ("hvc.baselines", "frame_mean"),
    "microaggregate": ("hvc.baselines", "microaggregate"),
    "mse_table": ("hvc.quantize", "mse_table"),
    "quantize_block": ("hvc.quantize", "quantize"),
    "QuantizeInfo": ("hvc.quantize", "QuantizeInfo"),
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
