"""jaxdp: JIT-compiled, vmapped JAX kernels for publishing differentially private numeric data.

Modules:
  transforms   orthonormal DCT-II / DST-I / DHT / identity matrices and separable 2-D transforms
  orders       zig-zag and diagonal coefficient scans
  sensitivity  Lemma 1 / 3 / 5 sensitivity tables, exact joint privacy loss
  mechanisms   Laplace and exponential mechanisms (explicit typed keys)
  quantize     Theorem 1 allocation, MSE tables, Algorithm 1 of the hybrid-video-coding paper
  datasets     bundled Census data, explicit (non-private) bound helpers
"""

from jaxdp import datasets, mechanisms, orders, quantize, sensitivity, transforms
from jaxdp.mechanisms import exponential, laplace
from jaxdp.quantize import QuantizeInfo, mse_table
from jaxdp.quantize import quantize as quantize_block

__version__ = "0.1.0"

__all__ = [
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
