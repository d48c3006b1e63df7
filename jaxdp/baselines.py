"""Baselines beside the codec: plain Laplace noise per record (PLN) and the zero-budget midpoint."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import _checks
from jaxdp.config import HVCConfig
from jaxdp.stream import Result, _prepare

__all__ = ["pln", "midpoint"]


def _plan(records, config, ids):
    records, _, lo, hi, private, limit, frames, planner = _prepare(records, config, ids)
    index = np.concatenate([np.asarray(f[0], np.int64) for f in frames])
    frame = np.concatenate([np.full(len(f[0]), i) for i, f in enumerate(frames)])
    eps_frames = np.array([config.epsilon * len(f[0]) / limit for f in frames])
    return records, lo, hi, private, planner, index, frame, eps_frames


def pln(key: jax.Array, records, config: HVCConfig, *, ids=None) -> Result:
    """Plain Laplace noise (paper Sec. 5.2): each record plus ``Lap(ΣΛ/ε_f)`` on every attribute.

    Privacy:
      A record's L1 sensitivity is ``ΣΛ`` (Corollary 1's GS(I_r)); with scale ``ΣΛ/ε_f`` each frame
      is ε_f-DP, at the same per-frame budget ε_f = ε·r/l as `anonymize`. Records are clamped into
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
    scale = (np.sum(hi - lo) / eps_frames[frame])[:, None]
    dtype = jnp.zeros(()).dtype
    shape = (*key.shape, *x.shape)
    noise = jax.random.laplace(key, x.shape, dtype) if key.shape == () else jax.vmap(
        lambda k: jax.random.laplace(k, x.shape, dtype)
    )(key)
    out = np.asarray(jnp.asarray(x, dtype) + jnp.asarray(scale, dtype) * noise).reshape(shape)
    return Result(
        records=out, index=index, delay=np.zeros_like(index), footrule=np.zeros_like(index),
        superseded=planner.superseded, dropped=planner.dropped, epsilon_spent=eps_frames, frame=frame,
        info=None, private=private, lo=lo, hi=hi,
    )  # fmt: skip


def midpoint(records, config: HVCConfig, *, ids=None) -> Result:
    """Release the domain midpoint for every record: no data used, no budget spent (ε = 0)."""
    records, lo, hi, private, planner, index, frame, eps_frames = _plan(records, config, ids)
    out = np.broadcast_to(0.5 * (lo + hi), (index.shape[0], lo.shape[0])).copy()
    return Result(
        records=out, index=index, delay=np.zeros_like(index), footrule=np.zeros_like(index),
        superseded=planner.superseded, dropped=planner.dropped, epsilon_spent=np.zeros_like(eps_frames),
        frame=frame, info=None, private=private, lo=lo, hi=hi,
    )  # fmt: skip
