"""jaxdp: JIT-compiled, vmapped JAX kernels for publishing differentially private numeric data.

Modules:
  transforms   orthonormal DCT-II / DST-I / DHT / identity matrices and separable 2-D transforms
  orders       zig-zag and diagonal coefficient scans
  sensitivity  Lemma 1 / 3 / 5 sensitivity tables, exact joint privacy loss
  mechanisms   Laplace and exponential mechanisms (explicit typed keys)
  quantize     Theorem 1 allocation, MSE tables, Algorithm 1 of the hybrid-video-coding paper
  datasets     bundled Census data, explicit (non-private) bound helpers
  predict      candidate predictions from protected blocks (intra / inter modes)
  codec        the closed loop: one block step, a scan over blocks
  stream       frames, budgets, record updates; `anonymize`, `StreamAnonymizer`
  baselines    PLN and the zero-budget midpoint
"""

from jaxdp import baselines, codec, datasets, mechanisms, orders, predict, quantize, sensitivity, stream, transforms
from jaxdp.baselines import midpoint, pln
from jaxdp.config import HVCConfig
from jaxdp.stream import Result, StreamAnonymizer, anonymize, anonymize_many
from jaxdp.mechanisms import exponential, laplace
from jaxdp.quantize import QuantizeInfo, mse_table
from jaxdp.quantize import quantize as quantize_block

__version__ = "0.1.0"

__all__ = [
    "HVCConfig",
    "Result",
    "StreamAnonymizer",
    "anonymize",
    "anonymize_many",
    "pln",
    "midpoint",
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
