"""Baselines beside the codec: plain Laplace noise per record (PLN) and the zero-budget midpoint."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import _checks, mechanisms
from jaxdp.config import HVCConfig
from jaxdp.stream import Result, _frame_epsilon, _prepare

__all__ = ["pln", "midpoint"]


def _plan(records, config, ids):
    records, _, lo, hi, private, limit, frames, planner = _prepare(records, config, ids)
    index = np.concatenate([np.asarray(f[0], np.int64) for f in frames])
    frame = np.concatenate([np.full(len(f[0]), i) for i, f in enumerate(frames)])
    eps_frames = _frame_epsilon(config, [len(f[0]) for f in frames], limit)
    return records, lo, hi, private, planner, index, frame, eps_frames


def pln(key: jax.Array, records, config: HVCConfig, *, ids=None) -> Result:
    """Plain Laplace noise (paper Sec. 5.2): each record plus ``Lap(ΣΛ/ε_f)`` on every attribute.

    Privacy:
      A record's L1 sensitivity is ``ΣΛ`` (Corollary 1's GS(I_r)); with scale ``ΣΛ/ε_f`` each frame
      is ε_f-DP, at the same per-frame budget ε_f = ε·r/l as `anonymize`. ``config.noise`` selects the
      sampler (``"grid"``: exact discrete Laplace on a grid of ΣΛ/256). Records are clamped into
      the domain first; the noisy output is not clipped (the paper's PLN).

    Args:
      key: typed key; shape ``[R]`` for R repetitions.
      records: ``[N, d]``. config: an `HVCConfig` (only bounds, epsilon, target length, frame size
        are used). ids: optional subject ids, as in `anonymize`.
    """
    _checks.key(key)
    records, lo, hi, private, planner, index, frame, eps_frames = _plan(records, config, ids)
    x = records[index].astype(np.float64)
    x = np.clip(np.where(np.isnan(x), 0.5 * (lo + hi), x), lo, hi)
    sens = float(np.sum(hi - lo))  # a record's L1 sensitivity ΣΛ (Corollary 1)
    noise = mechanisms.check_noise(config.noise)
    if noise == "grid" and eps_frames.size:
        mechanisms.check_grid_ratio(epsilon=eps_frames.min(), sensitivity=sens)
    kernel = mechanisms._kernel_noise(noise)
    with mechanisms.precision(noise):
        dtype = jnp.zeros(()).dtype
        shape = (*key.shape, *x.shape)
        eps = jnp.asarray(eps_frames[frame][:, None], dtype)  # the frame budget of each record

        def release(k, v):
            return mechanisms.laplace_mechanism(k, v, epsilon=eps, sensitivity=sens, noise=kernel)

        xj = jnp.asarray(x, dtype)
        release = jax.jit(release)
        out = release(key, xj) if key.shape == () else jax.vmap(release, in_axes=(0, None))(key, xj)
        out = np.asarray(out).reshape(shape)
    return Result(
        records=out, index=index, delay=np.zeros_like(index), footrule=np.zeros_like(index), capped=planner.capped,
        superseded=planner.superseded, dropped=planner.dropped, epsilon_spent=eps_frames, frame=frame,
        info=None, private=private, lo=lo, hi=hi,
    )  # fmt: skip


def midpoint(records, config: HVCConfig, *, ids=None) -> Result:
    """Release the domain midpoint for every record: no data used, no budget spent (ε = 0)."""
    records, lo, hi, private, planner, index, frame, eps_frames = _plan(records, config, ids)
    out = np.broadcast_to(0.5 * (lo + hi), (index.shape[0], lo.shape[0])).copy()
    return Result(
        records=out, index=index, delay=np.zeros_like(index), footrule=np.zeros_like(index), capped=planner.capped,
        superseded=planner.superseded, dropped=planner.dropped, epsilon_spent=np.zeros_like(eps_frames),
        frame=frame, info=None, private=private, lo=lo, hi=hi,
    )  # fmt: skip
