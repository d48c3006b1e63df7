"""jaxdp: JIT-compiled, vmapped JAX kernels for publishing differentially private numeric data.

Modules:
  transforms   orthonormal DCT-II / DST-I / DHT / identity matrices and separable 2-D transforms
  orders       zig-zag and diagonal coefficient scans
  sensitivity  Lemma 1 / 3 / 5 sensitivity tables, exact joint privacy loss
  mechanisms   Laplace and exponential mechanisms (explicit typed keys)
  keys         secret keys from the operating system (`fresh_key`), reproducible seeds (not private)
  privacy      when a release is private (one rule for every front end), what is assumed public
  diagnostics  curator-only numbers computed from the raw data (never to be published)
  quantize     Theorem 1 allocation, MSE tables, Algorithm 1 of the hybrid-video-coding paper
  datasets     bundled Census data, explicit (non-private) bound helpers
  predict      candidate predictions from protected blocks (intra / inter modes)
  codec        the closed loop: one block step, a scan over blocks
  backend      how the codec loop is compiled on CPU (one kernel for small blocks; `fuse_cpu_loops`)
  stream       frames, budgets, record updates; `anonymize`, `StreamAnonymizer`
  baselines    PLN and the zero-budget midpoint
  reorder      Algorithm 2's footrule-constrained reordering (not DP; opt-in)
  audit        empirical DP auditing (Clopper-Pearson lower bounds on ε)
  wevent       w-event privacy for count streams: Uniform, Sample, BD, BA
  histogram    histograms by lossy compression: LPA, FPA, SPA, EFPA, P-HPartition
  compressive  the compressive mechanism, binary-tree counters, CMCO
  bucketize    F′-privacy bucketization (TwoSize, MultiSize, exact MILP, Anatomy); Theorem 2
"""

from jaxdp import (
    audit,
    backend,
    baselines,
    bucketize,
    compressive,
    codec,
    datasets,
    diagnostics,
    histogram,
    keys,
    mechanisms,
    orders,
    predict,
    privacy,
    quantize,
    reorder,
    sensitivity,
    stream,
    transforms,
    wevent,
)
from jaxdp.backend import fuse_cpu_loops
from jaxdp.baselines import midpoint, pln
from jaxdp.config import HVCConfig
from jaxdp.keys import fresh_key
from jaxdp.stream import BudgetExhaustedWarning, Result, StreamAnonymizer, anonymize, anonymize_many
from jaxdp.mechanisms import exponential, laplace
from jaxdp.quantize import QuantizeInfo, mse_table
from jaxdp.quantize import quantize as quantize_block

__version__ = "0.1.0"

__all__ = [
    "HVCConfig",
    "Result",
    "StreamAnonymizer",
    "BudgetExhaustedWarning",
    "fresh_key",
    "keys",
    "privacy",
    "diagnostics",
    "anonymize",
    "anonymize_many",
    "fuse_cpu_loops",
    "backend",
    "pln",
    "midpoint",
    "audit",
    "reorder",
    "wevent",
    "histogram",
    "compressive",
    "bucketize",
    "baselines",
    "codec",
    "predict",
    "stream",
    "datasets",
    "mechanisms",
    "orders",
    "quantize",
    "sensitivity",
    "transforms",
    "exponential",
    "laplace",
    "mse_table",
    "quantize_block",
    "QuantizeInfo",
    "__version__",
]
