import functools

import jax
import numpy as np
import pytest

import jaxdp
from jaxdp import datasets

CENSUS = datasets.load_census()
WIDTH = datasets.bounds_from_data(CENSUS)
BOUNDS = np.stack([np.zeros(13), WIDTH])


@pytest.mark.parametrize("release", ["frame_mean", "microaggregate"])
def test_baselines_match_a_numpy_reference_and_repeat_over_keys(key, release, x64):
    cfg = jaxdp.HVCConfig(4, 2, records_per_subject=1)
    data = CENSUS[:20].astype(np.float64)
    fn = getattr(jaxdp, release)
    if release == "microaggregate":
        fn = functools.partial(fn, group=4)
    keys = jax.random.split(key, 3)
    many = fn(keys, data, cfg, epsilon=2.0, bounds=BOUNDS)
    for r in range(3):
        np.testing.assert_array_equal(many.records[r], fn(keys[r], data, cfg, epsilon=2.0, bounds=BOUNDS).records)
    # zero-noise limit: ε → ∞ gives the exact frame means (running, weighted by size²) / group centroids
    exact = fn(key, data, cfg, epsilon=1e12, bounds=BOUNDS).records
    frames = [data[0:8], data[8:16], data[16:20]]
    if release == "frame_mean":
        w = np.asarray([len(f) ** 2 for f in frames], np.float64)
        means = np.stack([f.mean(0) for f in frames])
        want = np.concatenate([np.repeat((np.cumsum(means * w[:, None], 0) / np.cumsum(w)[:, None])[i:i + 1], len(f), 0)
                               for i, f in enumerate(frames)])  # fmt: skip
    else:
        want = np.concatenate([np.repeat(data[i:i + 4].mean(0, keepdims=True), 4, 0) for i in range(0, 20, 4)])
    np.testing.assert_allclose(exact, want, rtol=1e-6)


@pytest.mark.parametrize("release", ["pln", "frame_mean", "microaggregate"])
def test_baselines_code_values_shifted_by_lo_so_far_domains_keep_their_noise(key, release):
    """Found in review: on the domain [10⁹ + 31.5, 10⁹ + 32.5] the baselines rounded the data to float32's grid
    of 64 *before* the noise, so a record at lo + 0.4 always came out as 10⁹ and one at lo + 0.6 as 10⁹ + 64 (a
    neighbour told apart every time). Coded as x − lo, as `anonymize` does, the releases spread over the noise."""
    lo = 1e9 + 31.5
    bounds = np.array([[lo], [lo + 1.0]])
    cfg = jaxdp.HVCConfig(4, 2, records_per_subject=1)
    fn = getattr(jaxdp, release)
    outs = []
    for value in (0.4, 0.6):
        data = np.full((8, 1), lo + value)
        r = fn(jax.random.split(key, 50), data, cfg, epsilon=1.0, bounds=bounds)
        assert r.records.dtype == np.float64  # float32 cannot resolve this domain (as `anonymize`)
        outs.append(np.asarray(r.records)[:, 0, 0])
    for out in outs:
        assert np.unique(out).size > 20
    assert np.abs(np.median(outs[0]) - np.median(outs[1])) < 5.0  # 64 apart before the fix


@pytest.mark.parametrize("release", ["pln", "frame_mean", "microaggregate"])
def test_grid_baselines_refuse_what_the_sampler_cannot_take_instead_of_releasing_nan(key, release):
    """Found in review: with noise="grid" the frame-mean and microaggregation baselines skipped the ratio check
    that `pln` makes, so a budget the exact sampler cannot take (b/γ ≥ 2²⁹) released NaN for every record —
    first in a short last frame under the paper's accounting, which gets ε·r/l. Now all three refuse eagerly."""
    fn = getattr(jaxdp, release)
    cfg = jaxdp.HVCConfig(2, 5, noise="grid")  # frames of 10 records
    bounds = (np.zeros(1), np.ones(1))
    x = np.random.default_rng(0).uniform(0, 1, (101, 1))  # ten full frames and one of a single record
    assert np.all(np.isfinite(fn(key, x, cfg, epsilon=1.0, bounds=bounds).records))
    for eps in (1e-7, 1.01e-5):  # every frame out of range; only the last (ε·1/101) out of range
        with pytest.raises(ValueError, match=r"2\*\*29"):
            fn(key, x, cfg, epsilon=eps, bounds=bounds)


@pytest.mark.parametrize("release", ["frame_mean", "microaggregate", "anonymize"])
def test_grid_means_of_huge_frames_are_refused_not_clamped(key, release):
    """A mean of r records has sensitivity Λ/r, so the grid is ≈ Λ/(256 r) fine and a value Λ sits 256·r steps
    from 0: from r = 2²¹ records on it passes the sampler's int32 range (2²⁹ − 1 steps) and would be clamped.
    The frame-mean layer and both baselines refuse it before any draw (public: bounds and frame sizes)."""
    fn = getattr(jaxdp, release)
    if release == "microaggregate":
        fn = functools.partial(fn, group=2**21)
    cfg = jaxdp.HVCConfig(8, 2**18, records_per_subject=1, noise="grid")  # frames of 2²¹ records
    with pytest.raises(ValueError, match=r"\(2\*\*29 - 1\)·γ"):
        fn(key, np.ones((2**21, 1)), cfg, epsilon=1.0, bounds=(np.zeros(1), np.ones(1)))


def test_baselines_follow_the_configs_precision_and_refuse_frames_whose_noise_overflows(key):
    """Found in review: with noise="float64" the frame mean and microaggregation released float32 (PLN and
    `anonymize` float64); at records_per_subject = 10**45 (ε_f = 1e-45) PLN released ±inf and the frame mean NaN."""
    x = np.random.default_rng(0).uniform(0, 1, (8, 2))
    cfg64 = jaxdp.HVCConfig(2, 2, records_per_subject=1, noise="float64")
    for fn in (jaxdp.pln, jaxdp.frame_mean, jaxdp.microaggregate):
        assert np.asarray(fn(key, x, cfg64, epsilon=1.0, bounds=[1.0, 1.0]).records).dtype == np.float64, fn
        with pytest.raises(ValueError, match="a frame at its budget"):
            fn(key, x, jaxdp.HVCConfig(2, 2, records_per_subject=10**45), epsilon=1.0, bounds=[1.0, 1.0])
    with pytest.raises(ValueError, match="key array is empty"):
        jaxdp.pln(jax.random.split(key, 0), x, cfg64, epsilon=1.0, bounds=[1.0, 1.0])


@pytest.mark.parametrize("release", ["frame_mean", "microaggregate"])
def test_baselines_noise_has_the_l1_scale_of_each_group_in_every_column(key, release, x64):
    """Each frame's (group's) column means get Lap(ΣΛ/(g·ε_f)) — the L1 sensitivity over all d columns, g that
    frame's (group's) own size. Found in an audit of the tests: the checks used d = 1 and equal sizes, so ΣΛ
    replaced by max Λ, or every group given the largest group's size, passed. Constant records at the domain's
    centre, ε_f large enough that clipping has probability < e⁻⁶⁰: the noise standardized by the stated scale is
    Lap(1) (KS, α = 10⁻⁴), and standardized by 1.2× the scale it is not (the test's power)."""
    import scipy.stats

    width = np.array([1.0, 2.0, 5.0])  # ΣΛ = 8, max Λ = 5
    cfg = jaxdp.HVCConfig(4, 3, records_per_subject=1)
    eps, mid = 1e4, width / 2
    data = np.tile(mid, (40, 1))
    keys = jax.random.split(key, 1200)
    fn = functools.partial(jaxdp.microaggregate, group=3) if release == "microaggregate" else jaxdp.frame_mean
    res = fn(keys, data, cfg, epsilon=eps, bounds=np.stack([0 * width, width]))
    out, frame = np.asarray(res.records) - mid, np.asarray(res.frame)
    starts = np.flatnonzero(np.r_[True, np.diff(frame) != 0])
    frame_sizes = np.diff(np.r_[starts, frame.size]).astype(np.float64)
    assert frame_sizes.size >= 2 and np.unique(frame_sizes).size >= 2  # frames of unequal sizes (12, 8, 12, 8 here)
    if release == "microaggregate":  # groups of 3 within each frame, the last one shorter
        firsts = np.concatenate([np.arange(a, a + int(r), 3) for a, r in zip(starts, frame_sizes)])
        sizes = np.minimum(3.0, np.diff(np.r_[firsts, frame.size]))
        assert np.unique(sizes).size >= 2  # short last groups
        noise = out[:, firsts, :]  # [R, G, d]
    else:  # the running mean of frame f, un-averaged: each frame's own noisy mean (weights (g·ε)²)
        running, sizes = out[:, starts, :], frame_sizes
        w = np.cumsum(sizes**2)
        noise = np.empty_like(running)
        noise[:, 0] = running[:, 0]
        for f in range(1, sizes.size):
            noise[:, f] = (running[:, f] * w[f] - running[:, f - 1] * w[f - 1]) / sizes[f] ** 2
    z = (noise / (8.0 / (sizes[None, :, None] * eps))).reshape(-1)
    assert scipy.stats.kstest(z, scipy.stats.laplace.cdf).pvalue > 1e-4
    assert scipy.stats.kstest(z / 1.2, scipy.stats.laplace.cdf).pvalue < 1e-4


@pytest.mark.parametrize("release", ["pln", "frame_mean", "microaggregate", "midpoint"])
def test_baselines_warn_like_anonymize_when_records_past_target_length_are_dropped(key, release):
    """Found in review: `anonymize` warns (BudgetExhaustedWarning) when records arrive past `target_length`; the
    baselines returned fewer rows with `dropped` set and said nothing."""
    cfg = jaxdp.HVCConfig(4, 2, target_length=10)
    fn = getattr(jaxdp, release)
    args = () if release == "midpoint" else (key,)
    kw = {} if release == "midpoint" else {"epsilon": 1.0}
    with pytest.warns(jaxdp.BudgetExhaustedWarning, match="10 records"):
        out = fn(*args, CENSUS[:20], cfg, bounds=BOUNDS, **kw)
    assert out.dropped == 10 and out.records.shape[-2] == 10


def test_midpoint_draws_no_noise_so_no_noise_range_check_and_microaggregate_bounds_its_group(key):
    """Found in review: `midpoint` (no ε, no noise) asked to "raise epsilon" at records_per_subject = 10**45, and
    `microaggregate(group=10**30)` ended in an OverflowError."""
    cfg = jaxdp.HVCConfig(4, 2, records_per_subject=10**45)
    out = jaxdp.midpoint(CENSUS[:8], cfg, bounds=BOUNDS)
    np.testing.assert_array_equal(out.records, np.broadcast_to(0.5 * (BOUNDS[0] + BOUNDS[1]), (8, 13)))
    with pytest.raises(ValueError, match="group must be at most"):
        jaxdp.microaggregate(key, CENSUS[:8], jaxdp.HVCConfig(4, 2, records_per_subject=1), epsilon=1.0,
                             bounds=BOUNDS, group=10**30)


@pytest.mark.parametrize("release", ["pln", "frame_mean", "microaggregate"])
def test_baselines_read_records_clamped_into_the_domain(key, release):
    """Their sensitivities (ΣΛ per record, ΣΛ/g per group mean) hold for records inside the domain only: a record
    beyond a bound must be read as that bound (and NaN as the midpoint), or a single outlier moves the release
    without limit. Same key, records with outliers and the same records clamped: the same release, exactly. Found
    in an audit of the tests: the clamp of `pln` or of the group releases removed passed every test."""
    width = np.array([1.0, 2.0, 5.0])
    bounds = np.stack([0 * width, width])
    x = np.random.default_rng(1).uniform(0, width, (20, 3))
    out, fixed = x.copy(), x.copy()
    out[[1, 5, 9, 14, 18], [0, 2, 1, 2, 0]] = [7.0, -1e9, 1e300, np.inf, np.nan]
    fixed[[1, 5, 9, 14, 18], [0, 2, 1, 2, 0]] = [1.0, 0.0, 2.0, 5.0, 0.5]
    cfg = jaxdp.HVCConfig(4, 2, records_per_subject=1)
    fn = functools.partial(jaxdp.microaggregate, group=3) if release == "microaggregate" else getattr(jaxdp, release)
    keys = jax.random.split(key, 2)
    a, b = (fn(keys, z, cfg, epsilon=5.0, bounds=bounds) for z in (out, fixed))
    assert np.all(np.isfinite(a.records))
    np.testing.assert_array_equal(a.records, b.records)


def test_pln_noise_follows_each_frames_own_budget(key):
    """With the paper's accounting a frame of r records gets ε_f = ε·r/l, and `pln` adds Lap(ΣΛ/ε_f) to its records:
    a partial last frame (5 of l = 45 records) gets 4× the noise of a full one (20). Found in an audit of the tests:
    every record noised at the largest frame's budget passed (the stream test has full frames only). KS per frame,
    α = 10⁻⁴, with the power check at 1.2× the scale."""
    import scipy.stats

    records = np.full((45, 2), 0.5)
    cfg = jaxdp.HVCConfig(4, 5)  # frames of 20, 20 and 5 records; l = 45 (the records' count)
    res = jaxdp.pln(jax.random.split(key, 1000), records, cfg, epsilon=2.0, bounds=np.ones(2))
    sizes = np.bincount(res.frame)
    np.testing.assert_array_equal(sizes, [20, 20, 5])
    np.testing.assert_allclose(res.epsilon_spent, 2.0 * sizes / 45, rtol=1e-12)
    noise = np.asarray(res.records, np.float64) - 0.5  # [R, 45, 2]
    for f in (0, 2):
        z = (noise[:, np.asarray(res.frame) == f] / (2.0 / res.epsilon_spent[f])).reshape(-1)  # ΣΛ = 2
        assert scipy.stats.kstest(z, scipy.stats.laplace.cdf).pvalue > 1e-4
        assert scipy.stats.kstest(z / 1.2, scipy.stats.laplace.cdf).pvalue < 1e-4


@pytest.mark.parametrize("release", ["frame_mean", "microaggregate"])
def test_group_baselines_noise_follows_each_frames_own_budget(key, release):
    """As `pln` above, for the noisy means: with the paper's accounting frame f's means (its groups' centroids) get
    Lap(ΣΛ/(g·ε_f)), ε_f = ε·r_f/l. Found in an audit of the tests: the means drawn at the whole ε instead of ε_f
    passed every test but the grid sampler's refusal (the noise tests use records_per_subject = 1, where ε_f = ε),
    and so did microaggregate's groups all drawn at the first frame's budget.
    The two full frames (20 of l = 45 records each, equal weights: frame 2's own noisy mean is twice its running
    estimate less frame 1's): KS, α = 10⁻⁴, with the power check at 1.2× the scale; ε so large that clipping to the
    domain has probability < e⁻⁴⁰."""
    import scipy.stats

    records = np.full((45, 2), 0.5)
    cfg = jaxdp.HVCConfig(4, 5)
    fn = functools.partial(jaxdp.microaggregate, group=4) if release == "microaggregate" else jaxdp.frame_mean
    res = fn(jax.random.split(key, 1000), records, cfg, epsilon=100.0, bounds=np.ones(2))
    frame = np.asarray(res.frame)
    np.testing.assert_array_equal(np.bincount(frame), [20, 20, 5])
    eps_f = res.epsilon_spent[0]
    np.testing.assert_allclose(res.epsilon_spent[:2], 100.0 * 20 / 45, rtol=1e-12)
    out = np.asarray(res.records, np.float64) - 0.5  # [R, 45, 2]
    if release == "microaggregate":
        g, noise = 4, out[:, 0:40:4]  # one row per group of the two full frames
    else:
        g, first, second = 20, out[:, 0], out[:, 20]
        noise = np.stack([first, 2 * second - first], 1)  # the frames' own noisy means
    z = (noise / (2.0 / (g * eps_f))).reshape(-1)  # ΣΛ = 2
    assert scipy.stats.kstest(z, scipy.stats.laplace.cdf).pvalue > 1e-4
    assert scipy.stats.kstest(z / 1.2, scipy.stats.laplace.cdf).pvalue < 1e-4
    if release == "microaggregate":  # the partial frame's group of 4 at ε_2 = ε·5/45 (a mutant gave it frame 1's
        # budget); clipped beyond 11 scales (probability e⁻¹¹ a draw); 2000 draws: power against 2× the scale
        np.testing.assert_allclose(res.epsilon_spent[2], 100.0 * 5 / 45, rtol=1e-12)
        z = (out[:, 40] / (2.0 / (4 * res.epsilon_spent[2]))).reshape(-1)
        assert scipy.stats.kstest(z, scipy.stats.laplace.cdf).pvalue > 1e-4
        assert scipy.stats.kstest(z / 2.0, scipy.stats.laplace.cdf).pvalue < 1e-4
