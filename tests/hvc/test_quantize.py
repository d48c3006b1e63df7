import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference as ref
import scipy.stats

from jaxdp import datasets, transforms
from jaxdp.hvc import quantize
from jaxdp.transforms import orders

ALPHA = 1e-4  # per-test significance level (see test_mechanisms.py)


def _block(rng, n, d, lo, hi):
    return rng.uniform(lo, hi, size=(n, d))


@pytest.mark.parametrize("kind", ["dct", "dst", "dht", "identity"])
@pytest.mark.parametrize("n, d, order", [(1, 1, "zigzag"), (4, 3, "zigzag"), (8, 13, "diagonal"), (5, 7, "zigzag")])
def test_mse_table_equals_direct_loop(kind, n, d, order, dtype):
    rng = np.random.default_rng(n * d)
    width = rng.uniform(1.0, 100.0, size=d)
    x = _block(rng, n, d, 0.0, width)
    x_hat = _block(rng, n, d, 0.0, width)
    got = quantize.mse_table(jnp.asarray(x, dtype), jnp.asarray(x_hat, dtype), width, kinds=(kind,), order=order, eps_laplace=0.7)
    assert got.shape == (1, n * d + 1) and got.dtype == dtype
    want = ref.mse_loop(
        np.asarray(jnp.asarray(x, dtype), np.float64), np.asarray(jnp.asarray(x_hat, dtype), np.float64),
        width, kind, orders.get(order, n, d), 0.7,
    )  # fmt: skip
    rtol = 2e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(np.asarray(got[0], np.float64), want, rtol=rtol, atol=rtol * want.max())


def test_mse_table_batched_and_all_kinds_at_once():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, size=(2, 3, 4, 5))
    out = quantize.mse_table(x, np.zeros((4, 5)), np.ones(5))
    assert out.shape == (2, 3, 3, 21)
    for s, kind in enumerate(("dct", "dst", "dht")):
        single = quantize.mse_table(x[1, 2], np.zeros((4, 5)), np.ones(5), kinds=(kind,))
        np.testing.assert_allclose(out[1, 2, s], single[0], rtol=1e-6)


def test_fig4_census_first_32_records_optimal_t_is_2(x64):
    x = datasets.load_census()[:32].astype(np.float64)
    table = quantize.mse_table(x, np.zeros_like(x), x.max(axis=0), kinds=("dct",), order="zigzag", eps_laplace=1.0)
    assert table.shape == (1, 32 * 13 + 1)
    assert int(jnp.argmin(table[0])) == 2  # paper Fig. 4(b): "t = 2 minimizes the minimum MSE"


def test_theorem1_allocation_is_optimal_and_sums_to_budget():
    width = np.array([1.0, 2.0, 3.0, 0.5])
    rng = np.random.default_rng(1)
    for t in (1, 3, 7, 20):
        eps, scales = quantize.allocation("dht", 5, width, t, eps_laplace=2.0)
        assert eps.sum() == pytest.approx(2.0)
        g = eps * scales  # GS_k = ε*_k b_k
        best = 2 * np.sum(scales**2)
        for _ in range(200):  # any other split of the same budget has a larger Laplace error
            other = rng.dirichlet(np.ones(t)) * 2.0
            assert 2 * np.sum((g / other) ** 2) >= best * (1 - 1e-12)


def test_joint_laplace_mse_never_above_paper():
    width = np.ones(13)
    paper = quantize.tables(8, width, accounting="paper").laplace_mse
    joint = quantize.tables(8, width, accounting="joint").laplace_mse
    assert np.all(joint <= paper * (1 + 1e-12))
    assert np.all(joint[:, 2:] < paper[:, 2:])  # strictly better once two coefficients are kept
    ratio = paper[0, 2] / joint[0, 2]
    assert 2.5 < ratio < 3.0  # DESIGN note 4: "cuts the Laplace error 2.8× at t=2"


def test_selection_frequencies_match_exact_pmf(key, dtype):
    rng = np.random.default_rng(2)
    n, d = 3, 2
    width = np.array([10.0, 4.0])
    x = jnp.asarray(_block(rng, n, d, 0.0, width), dtype)
    x_hat = jnp.asarray(np.full((n, d), 0.5) * width, dtype)
    kw = dict(eps_laplace=1.0, eps_select=8.0, theta=1.0, kinds=("dct", "dht"))
    probs = np.asarray(quantize.selection_probabilities(x, x_hat, width, **kw), np.float64).reshape(-1)
    assert probs.sum() == pytest.approx(1.0, abs=1e-5)
    draws = 40_000
    xs = jnp.broadcast_to(x, (draws, n, d))
    _, info = quantize.quantize(key, xs, x_hat, width, **kw)
    idx = np.asarray(info.kind) * (n * d + 1) + np.asarray(info.t)
    counts = np.bincount(idx, minlength=probs.size).astype(float)
    expected = probs * draws
    keep = expected > 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    assert scipy.stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > ALPHA
    uniform = np.full_like(probs, 1.0 / probs.size) * draws  # power: not a uniform choice
    assert scipy.stats.chisquare(counts, uniform).pvalue < ALPHA


@pytest.mark.parametrize("theta", [1.0, 0.5])
def test_selection_pmf_is_the_softmax_of_the_scores_over_lemma3s_sensitivity(theta, x64):
    """The PMF of Algorithm 1's choice is ∝ exp(ε_sel·ω_θ/(2·GS(ω_θ))) with ω_1 = −(Laplace + removal error), ω_½ =
    −(√Laplace + √removal) and GS from Lemma 3 (`sensitivity.score_sensitivity`), written out here from the public
    tables. Found by a mutation audit: the θ = 1 sensitivity halved passed (the PMF was compared with the sampler
    only, and both used it)."""
    from jaxdp.hvc import sensitivity

    rng = np.random.default_rng(4)
    n, d, width = 3, 2, np.array([10.0, 4.0])
    x = rng.uniform(0, 1, (n, d)) * width
    x_hat = np.array([[0.3, 0.9], [0.5, 0.1], [0.2, 0.6]]) * width
    kw = dict(kinds=("dct", "dht"))
    total = np.asarray(quantize.mse_table(x, x_hat, width, eps_laplace=1.0, **kw), np.float64)
    removal = np.asarray(quantize.mse_table(x, x_hat, width, eps_laplace=1e30, **kw), np.float64)  # Laplace term ≈ 0
    laplace = total - removal
    score = -total if theta == 1.0 else -(np.sqrt(np.maximum(laplace, 0.0)) + np.sqrt(removal))
    gs = float(sensitivity.score_sensitivity(theta, n, width, x_hat=x_hat, **kw))
    z = (4.0 / (2 * gs) * score).reshape(-1)
    want = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    got = np.asarray(quantize.selection_probabilities(x, x_hat, width, eps_laplace=1.0, eps_select=4.0, theta=theta,
                                                      **kw), np.float64).reshape(-1)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)
    assert got.max() < 0.9  # not a degenerate PMF: the scale matters


@pytest.mark.parametrize("accounting", [pytest.param("paper", marks=pytest.mark.slow), "joint"])  # (statistical)
def test_noise_on_retained_coefficients_is_laplace_with_theorem1_scales(key, accounting, x64):
    n, d = 4, 3
    width = np.array([5.0, 1.0, 2.0])
    x = np.random.default_rng(3).uniform(0, width, size=(n, d))
    x_hat = np.full((n, d), 0.5) * width
    draws = 20_000
    _, info_probe = quantize.quantize(key, x, x_hat, width, eps_laplace=1.0, eps_select=1.0, kinds=("dct",))
    x_tilde, info = quantize.quantize(
        key, np.broadcast_to(x, (draws, n, d)), x_hat, width,
        eps_laplace=1.0, eps_select=1.0, kinds=("dct",), accounting=accounting,
    )  # fmt: skip
    order = orders.zigzag(n, d)
    c_true = ref.forward(x - x_hat, "dct").reshape(-1)[order]
    c_out = ref.forward(np.asarray(x_tilde) - x_hat, "dct").reshape(-1, n * d)[:, order]
    t = np.asarray(info.t)
    assert np.all(np.asarray(info.kind) == 0)
    pooled = []
    for t_val in np.unique(t):
        rows = c_out[t == t_val]
        np.testing.assert_allclose(rows[:, t_val:], 0.0, atol=1e-8)  # removed coefficients are zero
        if t_val == 0 or rows.shape[0] < 2000:
            continue
        _, scales = quantize.allocation("dct", n, width, int(t_val), eps_laplace=1.0, accounting=accounting)
        z = (rows[:, :t_val] - c_true[:t_val]) / scales  # standardized noise, should be Lap(1)
        for k in range(t_val):
            assert scipy.stats.kstest(z[:, k], scipy.stats.laplace().cdf).pvalue > ALPHA
        pooled.append(z.reshape(-1))
    pooled = np.concatenate(pooled)
    assert pooled.size >= 10_000
    assert scipy.stats.kstest(pooled, scipy.stats.laplace().cdf).pvalue > ALPHA
    assert scipy.stats.kstest(pooled * 1.15, scipy.stats.laplace().cdf).pvalue < ALPHA  # power: 15 % off


def test_t_zero_releases_the_prediction(key, x64):
    width = np.ones(3)
    x_hat = np.full((4, 3), 0.25)
    x = np.random.default_rng(4).uniform(0, 1, size=(500, 4, 3))
    # Tiny Laplace budget: every t >= 1 is hopeless, so the mechanism mostly picks t = 0.
    x_tilde, info = quantize.quantize(key, x, x_hat, width, eps_laplace=1e-6, eps_select=50.0)
    zero = np.asarray(info.t) == 0
    assert zero.mean() > 0.9
    np.testing.assert_allclose(np.asarray(x_tilde)[zero], np.broadcast_to(x_hat, x.shape)[zero], atol=1e-12)


def test_vmap_over_keys_equals_loop_and_jit_equals_no_jit(key):
    rng = np.random.default_rng(5)
    width = np.array([3.0, 2.0, 1.0])
    xs = jnp.asarray(rng.uniform(0, width, size=(6, 8, 3)), jnp.float32)
    x_hat = jnp.zeros((8, 3), jnp.float32)
    keys = jax.random.split(key, 6)
    kw = dict(eps_laplace=1.0, eps_select=1.0, accounting="joint")
    batched, info = quantize.quantize(keys, xs, x_hat, width, **kw)
    for i in range(6):
        single, single_info = quantize.quantize(keys[i : i + 1], xs[i][None], x_hat, width, **kw)
        assert int(single_info.t[0]) == int(info.t[i]) and int(single_info.kind[0]) == int(info.kind[i])
        np.testing.assert_allclose(single[0], batched[i], rtol=1e-5, atol=1e-4)
    via_vmap, _ = jax.vmap(lambda k, x: quantize.quantize(k[None], x[None], x_hat, width, **kw))(keys, xs)
    np.testing.assert_allclose(via_vmap[:, 0], batched, rtol=1e-5, atol=1e-4)
    with jax.disable_jit():  # op by op (slow): two blocks are enough to compare
        eager, eager_info = quantize.quantize(keys[:2], xs[:2], x_hat, width, **kw)
    np.testing.assert_array_equal(eager_info.t, info.t[:2])
    np.testing.assert_allclose(eager, batched[:2], rtol=1e-4, atol=1e-3)


def test_quantize_inside_a_callers_jit_caches_no_tracer(key):
    """Found while measuring: the device copies of the tables, first built inside a caller's `jax.jit`, were cached as
    tracers, and the next traced call failed with an UnexpectedTracerError. A width no other test uses, so the tables
    are first built under jit here; two traced calls (two programs), then the eager call, agree."""
    width = np.array([1.25, 3.5, 0.75])
    xs = jnp.asarray(np.random.default_rng(9).uniform(0, width, size=(2, 4, 3)), jnp.float32)
    x_hat = jnp.zeros((4, 3), jnp.float32)
    keys = jax.random.split(key, 2)
    for accounting in ("paper", "joint"):
        kw = dict(eps_laplace=50.0, eps_select=50.0, accounting=accounting)
        traced, _ = jax.jit(lambda k, x, kw=kw: quantize.quantize(k, x, x_hat, width, **kw))(keys, xs)
        eager, _ = quantize.quantize(keys, xs, x_hat, width, **kw)
        np.testing.assert_allclose(traced, eager, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shared_prediction", [True, False])
def test_tiled_batches_equal_per_block_calls(key, monkeypatch, shared_prediction):
    # 7 blocks of 3 x 2 (a shape no other test compiles) in tiles of 3: three tiles, two padding blocks.
    monkeypatch.setattr(quantize, "TILE_ENTRIES", 3 * 3 * (3 * 2 + 1))
    rng = np.random.default_rng(11)
    width = np.array([2.0, 5.0])
    xs = jnp.asarray(rng.uniform(0, width, size=(7, 3, 2)), jnp.float32)
    x_hat = jnp.asarray(rng.uniform(0, width, size=(3, 2) if shared_prediction else (7, 3, 2)), jnp.float32)
    hat = lambda i: x_hat if shared_prediction else x_hat[i]  # noqa: E731
    keys = jax.random.split(key, 7)
    kw = dict(eps_laplace=0.8, eps_select=0.6)
    out, info = quantize.quantize(keys, xs, x_hat, width, **kw)
    mse = quantize.mse_table(xs, x_hat, width, eps_laplace=0.8)
    probs = quantize.selection_probabilities(xs, x_hat, width, **kw)
    assert out.shape == (7, 3, 2) and mse.shape == (7, 3, 7) and probs.shape == (7, 3, 7)
    for i in range(7):
        single, single_info = quantize.quantize(keys[i : i + 1], xs[i][None], hat(i), width, **kw)
        assert (int(single_info.t[0]), int(single_info.kind[0])) == (int(info.t[i]), int(info.kind[i]))
        np.testing.assert_allclose(single[0], out[i], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(quantize.mse_table(xs[i], hat(i), width, eps_laplace=0.8), mse[i], rtol=1e-5)
        np.testing.assert_allclose(quantize.selection_probabilities(xs[i], hat(i), width, **kw), probs[i], rtol=1e-5)


def test_empty_batch_gives_empty_outputs(key):
    x = np.zeros((0, 4, 3), np.float32)
    assert quantize.mse_table(x, np.zeros((4, 3)), np.ones(3), eps_laplace=1.0).shape == (0, 3, 13)
    out, info = quantize.quantize(key, x, np.zeros((4, 3)), np.ones(3), eps_laplace=1.0, eps_select=1.0)
    assert out.shape == (0, 4, 3) and info.t.shape == (0,)


def test_float32_and_float64_choose_alike(key):
    x = datasets.load_census()[:64].reshape(8, 8, 13)
    width = 1.5 * datasets.load_census().max(axis=0)
    m32 = quantize.mse_table(x, np.zeros((8, 13), np.float32), width)
    with jax.enable_x64(True):
        m64 = quantize.mse_table(x.astype(np.float64), np.zeros((8, 13)), width)
        assert m64.dtype == jnp.float64
    assert m32.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(m32, np.float64), np.asarray(m64), rtol=1e-4)


def test_out_of_domain_values_are_clamped_and_not_reported(key):
    width = np.array([1.0, 1.0])
    x = np.array([[0.5, 2.0], [-1.0, np.nan], [0.2, np.inf], [0.3, 0.4]])
    x_tilde, info = quantize.quantize(key, x, np.zeros((4, 2)), width, eps_laplace=1.0, eps_select=1.0)
    assert info._fields == ("t", "kind", "epsilon")  # no count of clamped values: it reads the raw data
    assert np.all(np.isfinite(np.asarray(x_tilde)))
    clamped = np.clip(np.nan_to_num(x, nan=0.5), 0.0, 1.0)
    np.testing.assert_allclose(
        quantize.mse_table(x, np.zeros((4, 2)), width), quantize.mse_table(clamped, np.zeros((4, 2)), width), rtol=1e-6
    )


def test_info_reports_budget(key):
    _, info = quantize.quantize(key, np.zeros((2, 4, 3)), np.zeros((4, 3)), np.ones(3), eps_laplace=0.3, eps_select=0.2)
    np.testing.assert_allclose(info.epsilon, [0.5, 0.5], rtol=1e-6)
    assert info.t.shape == (2,) and info.kind.dtype == jnp.int32


GOOD = dict(eps_laplace=1.0, eps_select=1.0)


@pytest.mark.parametrize(
    "args, kwargs, err, match",
    [
        ((np.ones((4, 3)), np.zeros((4, 3)), np.ones(3)), dict(GOOD, eps_laplace=0.0), ValueError, "eps_laplace"),
        ((np.ones((4, 3)), np.zeros((4, 3)), np.ones(3)), dict(GOOD, eps_select=-1.0), ValueError, "eps_select"),
        ((np.ones((4, 3)), np.zeros((4, 3)), np.ones(3)), dict(GOOD, eps_select=np.inf), ValueError, "eps_select"),
        ((np.ones((4, 3)), np.zeros((4, 3)), np.ones(4)), GOOD, ValueError, "d = 3"),
        ((np.ones((4, 3)), np.zeros((4, 3)), [1.0, 0.0, 1.0]), GOOD, ValueError, "positive"),
        ((np.ones((4, 3)), np.zeros((4, 3)), [1.0, np.nan, 1.0]), GOOD, ValueError, "finite"),
        ((np.ones(3), np.zeros(3), np.ones(3)), GOOD, ValueError, "shape"),
        ((np.ones((4, 3)), np.zeros((5, 3)), np.ones(3)), GOOD, ValueError, "x_hat"),
        ((np.ones((4, 3)), np.zeros((4, 3)), np.ones(3)), dict(GOOD, kinds=("dct", "wavelet")), ValueError, "kind"),
        ((np.ones((4, 3)), np.zeros((4, 3)), np.ones(3)), dict(GOOD, kinds=()), ValueError, "kinds"),
        ((np.ones((4, 3)), np.zeros((4, 3)), np.ones(3)), dict(GOOD, order="hilbert"), ValueError, "order"),
        ((np.ones((4, 3)), np.zeros((4, 3)), np.ones(3)), dict(GOOD, accounting="rdp"), ValueError, "accounting"),
        ((np.ones((4, 3)), np.zeros((4, 3)), np.ones(3)), dict(GOOD, theta=2.0), ValueError, "theta"),
        ((np.ones((4, 3), bool), np.zeros((4, 3)), np.ones(3)), GOOD, TypeError, "real numbers"),
    ],
)
def test_bad_input_is_rejected_before_computation(key, args, kwargs, err, match):
    with pytest.raises(err, match=match):
        quantize.quantize(key, *args, **kwargs)


def test_bad_keys_are_rejected():
    x = np.ones((2, 4, 3))
    with pytest.raises(TypeError, match="jax.random.key"):
        quantize.quantize(jax.random.PRNGKey(0), x, np.zeros((4, 3)), np.ones(3), **GOOD)
    with pytest.raises(ValueError, match="batch shape"):
        quantize.quantize(jax.random.split(jax.random.key(0), 3), x, np.zeros((4, 3)), np.ones(3), **GOOD)


def test_mse_table_rejects_bad_epsilon():
    with pytest.raises(ValueError, match="eps_laplace"):
        quantize.mse_table(np.ones((4, 3)), np.zeros((4, 3)), np.ones(3), eps_laplace=-2.0)


def test_transforms_round_trip_inside_quantizer_without_noise(x64):
    # With t = nd and a gigantic budget, Algorithm 1 returns (almost) the input: the pipeline is lossless.
    x = np.random.default_rng(6).uniform(0, 1, size=(4, 3))
    x_tilde, info = quantize.quantize(
        jax.random.key(1), x, np.zeros((4, 3)), np.ones(3), eps_laplace=1e12, eps_select=1e12, kinds=("dst",)
    )
    assert int(info.t) == 12
    np.testing.assert_allclose(x_tilde, x, atol=1e-9)
    np.testing.assert_allclose(transforms.inverse(transforms.forward(x, "dst"), "dst"), x, atol=1e-12)


@pytest.mark.parametrize("low", [np.float16, jnp.bfloat16])
def test_half_precision_blocks_compute_in_the_default_float(low):
    # found in review: float16 blocks of width 40 gave all-NaN probability tables, bfloat16 was refused
    x = np.random.default_rng(0).uniform(0, 40, (8, 2))
    b = [[0, 0], [40, 40]]
    want = quantize.selection_probabilities(np.asarray(jnp.asarray(x, low), np.float32), np.zeros((8, 2), np.float32), b,
                                            eps_laplace=1.0, eps_select=1.0)
    got = quantize.selection_probabilities(jnp.asarray(x, low), jnp.zeros((8, 2), low), b, eps_laplace=1.0,
                                           eps_select=1.0)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-7)


def test_float32_quantize_codes_far_bounds_in_their_own_width(key):
    """Found in review: in float32 the public `quantize` cast the bounds [1e9 + 31, 1e9 + 33] to [1e9, 1e9 + 64] and
    clamped to those, so the neighbours x = lo and x′ = hi were coded 64 apart where the noise is calibrated for
    Λ = 2: P[release > 1e9 + 32] was 0 for x and 0.52 for x′ (ε = 1.01 allows a ratio of 2.75). It now codes
    x − lo in [0, Λ], shifted in float64, as the stream front ends do. 4,000 blocks per input (fixed keys); the
    check allows 0.05 beyond e^ε·p, about 6 standard deviations of the estimates."""
    lo, hi = 1e9 + 31, 1e9 + 33
    bounds = np.array([[lo], [hi]])
    keys = jax.random.split(key, 4000)
    p = []
    for v in (lo, hi):
        x = jnp.full((4000, 1, 1), v, jnp.float32)
        x_tilde, _ = quantize.quantize(keys, x, jnp.full((1, 1), lo, jnp.float32), bounds, eps_laplace=1.0,
                                       eps_select=0.01, kinds=("identity",))  # fmt: skip
        p.append(float(np.mean(np.asarray(x_tilde, np.float64) > lo + 1.0)))
    assert p[1] <= np.exp(1.01) * p[0] + 0.05 and p[0] <= np.exp(1.01) * p[1] + 0.05, p
    with pytest.raises(ValueError, match="too wide for float32"):
        quantize.quantize(key, jnp.zeros((2, 1), jnp.float32), jnp.zeros((2, 1), jnp.float32),
                          np.array([[0.0], [1e20]]), eps_laplace=1.0, eps_select=1.0)
    with pytest.raises(TypeError, match="theta must be the number"):
        quantize.quantize(key, jnp.zeros((2, 1)), jnp.zeros((2, 1)), np.array([1.0]), eps_laplace=1.0,
                          eps_select=1.0, theta=True)
