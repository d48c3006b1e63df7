"""The Laplace and exponential mechanisms, with explicit typed PRNG keys.

Keys come first and are typed `jax.random.key`s; there is never a default key. Split a key for
every use (`jax.random.split`) and `vmap` over split keys to batch.

Every noise draw and every exponential-mechanism choice in jaxdp goes through this package, calibrated
from ``epsilon`` and ``sensitivity``:

* `jaxdp.mechanisms.noise` — the ``noise=`` choice every system offers (float / float64 / exact "grid");
* `jaxdp.mechanisms.laplace` — Laplace noise (float, and exact on a power-of-two grid), K-norm noise;
* `jaxdp.mechanisms.exponential` — the exponential mechanism (float samplers and the exact one);
* `jaxdp.mechanisms.exact` — the integer-arithmetic samplers behind ``noise="grid"``.

Modules: `noise`, `laplace`, `exponential`.
"""

from __future__ import annotations

from jaxdp.mechanisms import exact
from jaxdp.mechanisms.exponential import (
    categorical_2d,
    categorical_2d_from,
    categorical_uniforms,
    exponential,
    exponential_drawn,
    exponential_exact,
    exponential_exact_core,
    integer_scores,
    exponential_mechanism,
    exponential_probabilities,
    exponential_segments,
    exponential_uniforms,
)
from jaxdp.mechanisms.laplace import (
    add_laplace,
    add_standard_laplace,
    grid_laplace,
    grid_laplace_core,
    grid_spacing,
    l2_norm_noise,
    laplace,
    laplace_mechanism,
    laplace_noise,
    laplace_scale,
    standard_gumbel,
    standard_gumbel_from_uniform,
    standard_laplace,
)
from jaxdp.mechanisms.noise import (
    NOISES,
    check_grid_ratio,
    grid_ratio_ok,
    check_noise,
    grid_value_limit,
    check_grid_values,
    kernel_noise,
    precision,
)

__all__ = ['NOISES', 'add_laplace', 'add_standard_laplace', 'check_grid_ratio', 'check_grid_values', 'check_noise', 'exact', 'exponential', 'exponential_drawn', 'exponential_exact', 'exponential_mechanism', 'exponential_probabilities', 'exponential_segments', 'exponential_uniforms', 'grid_laplace', 'grid_ratio_ok', 'grid_spacing', 'grid_value_limit', 'kernel_noise', 'l2_norm_noise', 'laplace', 'laplace_mechanism', 'laplace_noise', 'laplace_scale', 'precision', 'standard_gumbel', 'standard_gumbel_from_uniform', 'standard_laplace']
