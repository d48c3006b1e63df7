"""Baselines beside the codec, with the same privacy unit, frames, delay and `Result`.

* `pln`: plain Laplace noise on every record (the paper's baseline; hopeless at small ε).
* `frame_mean`: every record of a frame released as the running estimate of the column means — the
  noisy mean of each frame so far, combined by inverse-variance weights — the first thing a sceptic
  would try, and strong when records vary little over time relative to the noise.
* `microaggregate`: groups of g consecutive records of a frame released as their noisy centroid.
* `midpoint`: the domain midpoint for every record (no data, no budget).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import _validate, mechanisms
from jaxdp.hvc.config import HVCConfig
from jaxdp.hvc.stream import (
    Result,
    _cast_within,
    _compute_dtype,
    _frame_epsilon,
    _output_dtype,
    _prepare,
    _warn_dropped,
)

__all__ = ["pln", "frame_mean", "microaggregate", "midpoint"]


def _release_args(where, key, records, epsilon, ids) -> float:
    """The checks every noisy baseline makes first: concrete input (it plans on the host), a typed key or key array
    ``[R]``, and ε as a Python float."""
    _validate.eager(where, key=key, records=records, epsilon=epsilon, ids=ids)
    _validate.key(key, max_ndim=1)
    return float(_validate.positive_scalar("epsilon", epsilon))


def _plan(records, config, epsilon, ids, bounds, noise_check=True):
    records, _, lo, hi, private, limit, frames, planner = _prepare(records, config, ids, bounds, epsilon)
    if planner.dropped:  # as `anonymize` (found in review: the baselines dropped records past target_length silently)
        _warn_dropped(planner.dropped, limit, stacklevel=4)
    index = np.concatenate([np.asarray(f[0], np.int64) for f in frames])
    frame = np.concatenate([np.full(len(f[0]), i) for i, f in enumerate(frames)])
    eps_frames = _frame_epsilon(config, epsilon, [len(f[0]) for f in frames], limit)
    if noise_check and eps_frames.size:  # a frame's noise must fit the compute dtype (found in review:
        # records_per_subject = 10**45 gave ε_f = 1e-45, and PLN released ±inf, the frame mean NaN)
        _validate.noise_fits(float(np.sum(hi - lo)) / float(eps_frames.min()), _compute_dtype(config),
                             "a frame at its budget ε_f")
    # records that arrived after each one before its frame was released, as `anonymize` reports (found in review:
    # the baselines reported 0 for every record, though they release frame by frame)
    release_row = np.fromiter((f[1] for f in frames), np.int64, len(frames))
    delay = release_row[frame] - index if index.size else np.zeros(0, np.int64)
    return records, lo, hi, private, planner, index, frame, eps_frames, delay


def pln(key: jax.Array, records, config: HVCConfig, *, epsilon: float, bounds, ids=None) -> Result:
    """Plain Laplace noise (paper Sec. 5.2): each record plus ``Lap(ΣΛ/ε_f)`` on every attribute.

    Privacy:
      A record's L1 sensitivity is ``ΣΛ`` (Corollary 1's GS(I_r)); with scale ``ΣΛ/ε_f`` each frame
      is ε_f-DP, at the same per-frame budget ε_f = ε·r/l as `anonymize`. ``config.noise`` selects the
      sampler (default ``"float"``: the textbook float Laplace, with the float caveats of the README's privacy
      section; ``"grid"``: exact discrete Laplace on a grid of ΣΛ/256). Records are clamped into
      the domain first; the noisy output is not clipped (the paper's PLN).

    Args:
      key: typed key; shape ``[R]`` for R repetitions.
      records: ``[N, d]``. config: an `HVCConfig` (only target length or records per subject, frame size and
        noise are used). epsilon, bounds: the total budget and the public domain, as in `anonymize`. ids:
        optional subject ids.
    """
    epsilon = _release_args("pln", key, records, epsilon, ids)
    records, lo, hi, private, planner, index, frame, eps_frames, delay = _plan(records, config, epsilon, ids, bounds)
    x = records[index].astype(np.float64)
    x = np.clip(np.where(np.isnan(x), 0.5 * (lo + hi), x), lo, hi)
    sens = float(np.sum(hi - lo))  # a record's L1 sensitivity ΣΛ (Corollary 1)
    noise = mechanisms.check_noise(config.noise)
    if noise == "grid" and eps_frames.size:
        mechanisms.check_grid_ratio(epsilon=eps_frames.min(), sensitivity=sens, coordinates=x.shape[1])
    kernel = mechanisms.kernel_noise(noise)
    with mechanisms.precision(noise):
        dtype = jnp.zeros(()).dtype
        shape = (*key.shape, *x.shape)
        eps = jnp.asarray(eps_frames[frame][:, None], dtype)  # the frame budget of each record
        xj = jnp.asarray(x - lo, dtype)  # shifted in float64 first: x itself may not fit float32's resolution
        # one subject's record: its d coordinates move (the other rows are other subjects); one module-level
        # program (a function jitted here was traced and compiled again at every call)
        out = _noisy_rows(key, xj, eps, jnp.asarray(sens, dtype), kernel)
        out = (np.asarray(out, np.float64) + lo).reshape(shape).astype(_output_dtype(lo, hi, dtype))
    return Result(
        records=out, index=index, delay=delay, footrule=np.zeros_like(index), capped=planner.capped,
        superseded=planner.superseded, dropped=planner.dropped, epsilon_spent=eps_frames, frame=frame,
        info=None, private=private, lo=lo, hi=hi,
    )  # fmt: skip


def _clamped(records, index, lo, hi):
    x = records[index].astype(np.float64)
    return np.clip(np.where(np.isnan(x), 0.5 * (lo + hi), x), lo, hi)


def _group_release(key, x, group, eps_group, sizes, sens, config, lo, hi):
    """Noisy group means: for each group g, mean + Lap(ΣΛ/(|g|·ε_g)) (one record moves the mean by ≤ ΣΛ/|g|
    in L1); `key` ``[]`` or ``[R]``; returns ``[(R,) G, d]`` host float64. The means are shifted by the domain's
    lower bound in float64 before they reach the (float32) noise, as `anonymize` codes x − lo: a mean near 10⁹
    would otherwise round to float32's grid of 64 before the noise, which can tell neighbours apart."""
    noise = mechanisms.check_noise(config.noise)
    if noise == "grid":  # public budgets, sizes and domain: refuse before any draw what the sampler cannot take
        # (a ratio b/γ outside [1, 2²⁹) would release NaN; a mean beyond (2²⁹ − 1)·γ would be clamped)
        mechanisms.check_grid_ratio(epsilon=eps_group, sensitivity=sens / sizes, coordinates=x.shape[1])
        mechanisms.check_grid_values(float(np.max(np.asarray(hi) - lo)), sensitivity=sens / sizes.max(),
                                     coordinates=x.shape[1], what="group means")
    sums = np.zeros((sizes.shape[0], x.shape[1]))
    np.add.at(sums, group, x - lo)
    means = sums / sizes[:, None]
    # the exact sampler in float64: a float32 mean rounds by up to half its ulp before the snap to the grid γ, beyond
    # the allowance in groups of more than 2¹⁶ records (found in review for the stream's frame means)
    with mechanisms.precision("float64" if noise == "grid" else noise):
        dtype = jnp.zeros(()).dtype
        eps = jnp.asarray(eps_group[:, None], dtype)
        sens_g = jnp.asarray((sens / sizes)[:, None], dtype)
        out = _noisy_rows(key, jnp.asarray(means, dtype), eps, sens_g, mechanisms.kernel_noise(noise))
        return np.asarray(out, np.float64) + lo


@functools.partial(jax.jit, static_argnums=(4,))
def _noisy_rows(key, rows, eps, sens, noise):
    """``rows [G, d]`` + Laplace(sens/eps) per row, one record moving one row's d coordinates (a group's
    means, or a record for `pln`); `key` ``[]`` or ``[R]`` → ``[(R,) G, d]``."""

    def release(k):
        return mechanisms.laplace_mechanism(k, rows, epsilon=eps, sensitivity=sens, noise=noise,
                                            coordinates=rows.shape[-1])

    return release(key) if key.shape == () else jax.vmap(release)(key)


def frame_mean(key: jax.Array, records, config: HVCConfig, *, epsilon: float, bounds, ids=None) -> Result:
    """The running noisy frame mean: every record of frame f is released as the estimate of the column
    means from frames 1 … f.

    Each frame's column means get ``Lap(ΣΛ/(r_f·ε_f))`` (r_f records; one record moves the vector of
    means by at most ΣΛ/r_f in L1); the estimate at frame f is the inverse-variance weighted average
    (weights ∝ (r_g ε_g)²) of the noisy means of frames g ≤ f, clipped to the domain — post-processing
    of released values only.

    Privacy: ε_f-DP per frame, the same frames and per-frame budgets as `anonymize` (paper accounting or
    `records_per_subject`); the release does not depend on the records except through the noisy means.
    ``config.noise`` picks the sampler, as for `anonymize`: the default ``"float"`` is the textbook float
    Laplace (the float caveats of the README's privacy section), ``"grid"`` the exact one (pure ε-DP).

    Args:
      key: typed key; shape ``[R]`` for R repetitions. records: ``[N, d]``. config: an `HVCConfig`.
      epsilon, bounds: the total budget and the public domain, as in `anonymize`. ids: optional subject ids.
    """
    epsilon = _release_args("frame_mean", key, records, epsilon, ids)
    records, lo, hi, private, planner, index, frame, eps_frames, delay = _plan(records, config, epsilon, ids, bounds)
    x = _clamped(records, index, lo, hi)
    sizes = np.bincount(frame, minlength=eps_frames.shape[0]).astype(np.float64)
    noisy = _group_release(key, x, frame, eps_frames, sizes, float(np.sum(hi - lo)), config, lo, hi)  # [(R,) F, d]
    w = (sizes * eps_frames) ** 2  # 1 / variance of each frame's noisy mean (up to a constant)
    running = np.cumsum(noisy * w[:, None], axis=-2) / np.cumsum(w)[:, None]
    out = np.clip(running, lo, hi)[..., frame, :]
    return _result(out, index, frame, planner, eps_frames, private, lo, hi, delay, config)


def microaggregate(
    key: jax.Array, records, config: HVCConfig, *, epsilon: float, bounds, group: int = 8, ids=None
) -> Result:
    """DP microaggregation by arrival order: consecutive runs of `group` records within a frame (the last
    run of a frame may be shorter) are each released as their noisy centroid, ``mean + Lap(ΣΛ/(g·ε_f))``.

    Privacy: the grouping depends only on arrival order (public), groups of a frame are disjoint
    (parallel composition), so each frame is ε_f-DP, as in `anonymize`. ``config.noise`` picks the sampler,
    as for `anonymize`: the default ``"float"`` is the textbook float Laplace (the float caveats of the
    README's privacy section), ``"grid"`` the exact one (pure ε-DP).
    """
    epsilon = _release_args("microaggregate", key, records, epsilon, ids)
    group = _validate.size("group", group, hi=2**40, why="groups are counted in int64 (a frame holds fewer records).")
    records, lo, hi, private, planner, index, frame, eps_frames, delay = _plan(records, config, epsilon, ids, bounds)
    x = _clamped(records, index, lo, hi)
    starts = np.r_[0, np.flatnonzero(np.diff(frame)) + 1]  # first released row of every frame
    pos = np.arange(index.shape[0]) - np.repeat(starts, np.diff(np.r_[starts, index.shape[0]]))
    key_rows = frame * (index.shape[0] + 1) + pos // group  # a group id unique across frames
    _, first, grp = np.unique(key_rows, return_index=True, return_inverse=True)
    sizes = np.bincount(grp).astype(np.float64)
    eps_group = eps_frames[frame[first]]  # each group's frame budget (a loop over groups was quadratic: review)
    noisy = _group_release(key, x, grp, eps_group, sizes, float(np.sum(hi - lo)), config, lo, hi)
    out = np.clip(noisy, lo, hi)[..., grp, :]
    return _result(out, index, frame, planner, eps_frames, private, lo, hi, delay, config)


def _result(out, index, frame, planner, eps_frames, private, lo, hi, delay, config):
    # as `anonymize`: the config's precision (found in review: noise="float64" released float32 here), and float64
    # where float32 cannot resolve the domain
    dtype = _output_dtype(lo, hi, _compute_dtype(config))
    return Result(
        records=_cast_within(out, lo, hi, dtype), index=index, delay=delay, footrule=np.zeros_like(index),
        capped=planner.capped, superseded=planner.superseded, dropped=planner.dropped, epsilon_spent=eps_frames,
        frame=frame, info=None, private=private, lo=lo, hi=hi,
    )  # fmt: skip


def midpoint(records, config: HVCConfig, *, bounds, ids=None) -> Result:
    """Release the domain midpoint for every record: no budget spent (ε = 0), and no record's values used — unless
    ``bounds="data"``, which reads the domain from the records (the result then says ``private=False``)."""
    # ε unused, and no noise drawn: no check that a frame's noise fits (found in review: records_per_subject = 10**45
    # asked to "raise epsilon" of a call that takes none)
    records, lo, hi, private, planner, index, frame, eps_frames, delay = _plan(records, config, 1.0, ids, bounds,
                                                                               noise_check=False)
    out = np.broadcast_to(0.5 * (lo + hi), (index.shape[0], lo.shape[0])).copy()
    return Result(
        records=out, index=index, delay=delay, footrule=np.zeros_like(index), capped=planner.capped,
        superseded=planner.superseded, dropped=planner.dropped, epsilon_spent=np.zeros_like(eps_frames),
        frame=frame, info=None, private=private, lo=lo, hi=hi,
    )  # fmt: skip
