"""Float-safe noise (DESIGN note 5): grid Laplace support, distribution, and the float32 porous-support signal."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

import jaxdp
from jaxdp import datasets, mechanisms
from jaxdp.hvc import GridFrameWarning

ALPHA = 1e-4


def test_grid_outputs_are_exact_multiples_of_the_spacing(key):
    gamma = 2.0**-6
    x = jnp.asarray([0.0, 0.1234567, -3.3, 1e3 + 0.3])
    xs = jnp.broadcast_to(x, (50_000, 4))  # 200,000 values: the size the other grid tests draw
    out = np.asarray(mechanisms.grid_laplace(key, xs, scale=1.0, spacing=gamma))
    np.testing.assert_array_equal(out / gamma, np.round(out / gamma))
    # the draws depend on the values in order, not on the shape (one compiled program per size)
    flat = mechanisms.grid_laplace(key, xs.reshape(-1), scale=1.0, spacing=gamma)
    np.testing.assert_array_equal(out, np.asarray(flat).reshape(xs.shape))


@pytest.mark.slow  # (a statistical run; the sampler's own PMF tests are in tests/mechanisms; CI's second step)
def test_grid_noise_is_discrete_laplace_with_the_scale(key, x64):
    b, gamma = 2.0, 2.0**-4
    z = np.asarray(mechanisms.grid_laplace(key, jnp.zeros(200_000), scale=b, spacing=gamma)) / gamma
    q = np.exp(-gamma / b)
    ks = np.arange(-400, 401)
    pmf = (1 - q) / (1 + q) * q ** np.abs(ks)  # discrete Laplace
    counts = np.array([(z == k).sum() for k in ks], float)
    keep = pmf * z.size > 20
    obs = np.append(counts[keep], z.size - counts[keep].sum())
    exp = np.append(pmf[keep] * z.size, z.size * (1 - pmf[keep].sum()))
    assert scipy.stats.chisquare(obs, exp).pvalue > ALPHA
    wrong = (1 - q**1.2) / (1 + q**1.2) * q ** (1.2 * np.abs(ks))  # 20 % smaller scale is rejected
    exp_w = np.append(wrong[keep] * z.size, z.size * (1 - wrong[keep].sum()))
    assert scipy.stats.chisquare(obs, exp_w).pvalue < ALPHA


def test_float32_textbook_sampler_has_porous_support_and_grid_does_not(key):
    """Mironov's signal: with float32 arithmetic, x + Lap lands on different float values for
    neighbouring x, so an output value can be possible under one input and impossible under the other.
    The grid sampler's outputs for both inputs are the same grid points."""
    n = 2_000_000
    k1, k2, k3, k4 = jax.random.split(key, 4)
    lo_w, hi_w = 0.40, 0.45  # a window both inputs reach often

    def window(v):
        v = np.asarray(v)
        return set(v[(v > lo_w) & (v < hi_w)].tolist())

    f0 = window(0.0 + mechanisms.laplace(k1, jnp.float32(1.0), (n,)))
    f1 = window(jnp.float32(1 / 3) + mechanisms.laplace(k2, jnp.float32(1.0), (n,)))
    gamma = float(mechanisms.grid_spacing(jnp.float32(1.0)))  # 2^-8
    g0 = window(mechanisms.grid_laplace(k3, jnp.zeros(n), scale=1.0, spacing=gamma))
    g1 = window(mechanisms.grid_laplace(k4, jnp.full(n, 1 / 3, jnp.float32), scale=1.0, spacing=gamma))
    assert len(f0) > 1000 and len(f1) > 1000
    assert len(f0 & f1) / len(f1) < 0.05  # textbook: the observed output sets barely overlap
    points = {k * gamma for k in range(int(np.ceil(lo_w / gamma)), int(np.floor(hi_w / gamma)) + 1)}
    assert g0 == g1 == points  # grid: both inputs hit exactly the grid points of the window


def test_codec_noise_options_run_and_keep_their_promises(key):
    records = datasets.load_census()[:96]
    bounds = (np.zeros(13), datasets.bounds_from_data(datasets.load_census()))
    base = jaxdp.HVCConfig(8, 4, target_length=96)
    r32 = jaxdp.anonymize(key, records, base, epsilon=30.0, bounds=bounds)
    r64 = jaxdp.anonymize(key, records, dataclasses.replace(base, noise="float64"), epsilon=30.0, bounds=bounds)
    rg = jaxdp.anonymize(key, records, dataclasses.replace(base, noise="grid"), epsilon=30.0, bounds=bounds)
    assert r32.records.dtype == np.float32 and r64.records.dtype == np.float64
    assert rg.records.shape == r32.records.shape and np.all(np.isfinite(rg.records))
    sa = jaxdp.StreamAnonymizer(key, dataclasses.replace(base, noise="float64"), epsilon=30.0, bounds=bounds)
    o, o2 = sa.push(records).records, sa.flush().records
    np.testing.assert_array_equal(np.concatenate([o, o2]), r64.records)


def test_grid_frame_mean_layer_refuses_budgets_it_cannot_sample_instead_of_releasing_nan(key):
    """Found in review: with noise="grid", a frame-mean column whose per-column budget fell outside the grid
    sampler's ratio range (here ε_f = 32/10⁹ per frame) released NaN. The budgets are public: refused before
    any draw, in batch and streaming (a budget inside the range releases finite values: the test above)."""
    records = datasets.load_census()[:96]
    bounds = (np.zeros(13), datasets.bounds_from_data(datasets.load_census()))
    cfg = jaxdp.HVCConfig(8, 4, noise="grid", target_length=10**9)
    with pytest.raises(ValueError, match="cannot sample this release exactly"):
        jaxdp.anonymize(key, records, cfg, epsilon=1.0, bounds=bounds)
    with pytest.raises(ValueError, match="cannot sample this release exactly"):  # before any record: its full frames
        jaxdp.StreamAnonymizer(key, cfg, epsilon=1.0, bounds=bounds)


def test_grid_frames_too_small_for_the_sampler_are_released_not_lost(key):
    """Found in review: with noise="grid" a short final frame (ε_f = ε·r/l tiny) failed the frame-mean layer's
    eager check in `flush()` after the planner had let go of its rows: a ValueError, and the rows were lost. Full
    frames that the sampler cannot take are refused before the stream starts; a smaller frame it cannot take is
    released as the running estimate of earlier frames, without a query of its own (a GridFrameWarning), in the
    stream and in the batch call alike."""
    x = np.random.default_rng(0).uniform(0, 1, (9, 2))
    cfg = jaxdp.HVCConfig(4, 2, target_length=2_000_000, noise="grid")
    sa = jaxdp.StreamAnonymizer(key, cfg, epsilon=1.0, bounds=[1.0, 1.0])
    first = sa.push(x)
    assert first.records.shape[0] == 8
    with pytest.warns(GridFrameWarning, match="1 frame"):
        last = sa.flush()
    assert last.index.tolist() == [8] and np.all(np.isfinite(last.records))
    with pytest.warns(GridFrameWarning):
        batch = jaxdp.anonymize(key, x, cfg, epsilon=1.0, bounds=[1.0, 1.0])
    np.testing.assert_array_equal(np.concatenate([first.records, last.records]), batch.records)


def test_a_call_that_fails_after_its_records_entered_the_stream_refuses_later_calls(key):
    """Found in review: a push or flush that failed after the planner had handed its frame over (here the frame
    layer's warning raised as an error, as under `-W error`; an out-of-memory error or an interrupt alike) left the
    anonymizer half-updated: a retry released nothing and the frame's records and ε were lost without a word. Later
    calls are now refused; an input refused up front changes nothing."""
    import warnings

    x = np.random.default_rng(0).uniform(0, 1, (9, 2))
    cfg = jaxdp.HVCConfig(4, 2, target_length=2_000_000, noise="grid")
    sa = jaxdp.StreamAnonymizer(key, cfg, epsilon=1.0, bounds=[1.0, 1.0])
    with pytest.raises(ValueError):
        sa.push(np.zeros((3, 5)))  # refused before anything moves: the stream goes on
    first = sa.push(x)
    assert first.records.shape[0] == 8
    with warnings.catch_warnings():
        warnings.simplefilter("error", GridFrameWarning)
        with pytest.raises(GridFrameWarning):
            sa.flush()
    for call in (sa.flush, lambda: sa.push(x)):
        with pytest.raises(RuntimeError, match="fresh key"):
            call()
    # found in review of the above: the warning that records were dropped (the budget spent) was raised after the
    # push had released its frames, outside the guard: under -W error those records were lost and the stream went on
    sb = jaxdp.StreamAnonymizer(key, jaxdp.HVCConfig(4, 2, target_length=16), epsilon=1.0, bounds=[1.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", jaxdp.BudgetExhaustedWarning)
        with pytest.raises(jaxdp.BudgetExhaustedWarning):
            sb.push(np.random.default_rng(1).uniform(0, 1, (40, 2)))
    with pytest.raises(RuntimeError, match="fresh key"):
        sb.flush()


@pytest.mark.slow
def test_grid_frame_mean_layer_accepts_budgets_it_can_sample(key):
    """Found in review of the refusal above: it first checked s·ε_f for every frame, but a frame whose blocks
    can never be live (a public rule) spends all of ε_f on its means — budgets in [1, 1/s) × the limit were
    refused though the sampler takes them. Here ε_f = 6.2·10⁻⁵ (ratio 0.74 × 2²⁹ at ε_f, 1.49 × at s·ε_f)."""
    records = datasets.load_census()[:96]
    bounds = (np.zeros(13), datasets.bounds_from_data(datasets.load_census()))
    cfg = jaxdp.HVCConfig(8, 4, noise="grid", target_length=520_000)
    res = jaxdp.anonymize(key, records, cfg, epsilon=1.0, bounds=bounds)
    assert np.isfinite(np.asarray(res.records)).all()
    with pytest.raises(ValueError, match="cannot sample this release exactly"):  # 2× smaller: refused
        jaxdp.anonymize(key, records, dataclasses.replace(cfg, target_length=1_100_000), epsilon=1.0, bounds=bounds)
