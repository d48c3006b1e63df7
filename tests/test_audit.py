"""Empirical audits of every mechanism and of a broken mutant of each (the audit must have teeth).

Confidence 0.95 per bound; the measurement runs use fresh keys, so a correct mechanism passes
unless the 5 % failure event happens (fixed keys make each test deterministic)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from audits import CASES

from jaxdp import audit

FAST = {"laplace", "exponential", "public seed (mutant) vs secret key", "mode choice"}


@pytest.mark.parametrize(
    "name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in sorted(CASES)]
)  # the others run in CI's second step (`pytest -m slow`)
def test_audit_bound_is_below_the_claim_and_the_mutant_is_caught(name, key):
    eps, mech, mutant, x, x_prime, kw = CASES[name]()
    trials = 50_000 if kw.get("batched") else 100_000
    good = audit.audit(mech, jax.random.fold_in(key, 1), x, x_prime, trials=trials, **kw)
    bad = audit.audit(mutant, jax.random.fold_in(key, 2), x, x_prime, trials=trials, **kw)
    assert good.lower_bound <= eps, good
    assert bad.lower_bound > eps, bad


def test_clopper_pearson_matches_known_values():
    lo, hi = audit.clopper_pearson(0, 10, 0.05)
    assert lo == 0.0 and hi == pytest.approx(0.3085, abs=1e-4)
    lo, hi = audit.clopper_pearson(5, 10, 0.05)
    assert lo == pytest.approx(0.1871, abs=1e-4) and hi == pytest.approx(0.8129, abs=1e-4)


@pytest.mark.slow  # (an audit, ≈ 4 s; CI's second step)
def test_audit_pairs_finds_the_worst_neighbour(key):
    # Only row 0 is noised weakly; the search must pick a pair that changes row 0.
    def mech(k, x):
        return x[0, 0] + jax.random.laplace(k, ()) * 0.5 + 0.0 * jnp.sum(x)

    x = np.zeros((3, 2))
    pairs = audit.corner_neighbours(x, np.zeros(2), np.ones(2))
    res = audit.audit_pairs(mech, key, pairs, statistic=lambda out: out, trials=20_000)
    a, b = pairs[res.pair]
    assert np.any(a[0] != b[0])
    assert res.lower_bound > 1.0


def test_audit_rejects_bad_arguments(key):
    with pytest.raises(ValueError, match="confidence"):
        audit.audit(lambda k, x: x, key, 0.0, 1.0, confidence=1.5)
    with pytest.raises(ValueError, match="pairs"):
        audit.audit_pairs(lambda k, x: x, key, [])


def test_audit_sizes_and_counts_are_checked(key):
    # found in review: trials = 10¹² aborted the process inside XLA, 0 divided by zero, −5 an MLIR error;
    # search_trials = 0 and rows=[5] of 4 raised IndexError; clopper_pearson(11, 10) returned NaN
    mech = lambda k, x: x + jax.random.laplace(k, ())  # noqa: E731
    for trials in (10**12, 0, -5):
        with pytest.raises((ValueError, TypeError), match="trials"):
            audit.audit(mech, key, 0.0, 1.0, trials=trials)
    with pytest.raises(ValueError, match="search_trials"):
        audit.audit_pairs(mech, key, [(0.0, 1.0)], search_trials=0)
    with pytest.raises(ValueError, match="record indices"):
        audit.corner_neighbours(np.zeros((4, 2)), 0.0, 1.0, rows=[5])
    with pytest.raises(ValueError, match="count"):
        audit.clopper_pearson(11, 10, 0.05)
    lo, hi = audit.clopper_pearson(5, 10, 0.05)
    assert 0 < lo < 0.5 < hi < 1


def test_non_finite_outputs_are_events_of_their_own(key):
    """Found in review: one NaN output made every threshold NaN, so no event was ever selected: a mechanism with no
    noise at all (ε = ∞) that output NaN once in 500 runs was reported ε ≥ 0, and one that output NaN on x′ only
    as well. NaN and ±inf are now events, thresholds are taken over the finite values."""

    def no_noise_rare_nan(k, x):
        return jnp.where(jax.random.uniform(k) < 2e-3, jnp.nan, x)

    def nan_on_one_side(k, x):
        return jnp.where((x > 0) & (jax.random.uniform(k) < 0.5), jnp.nan, jax.random.laplace(k))

    for mech in (no_noise_rare_nan, nan_on_one_side):
        res = audit.audit(mech, key, jnp.asarray(0.0), jnp.asarray(1.0), trials=4000)
        assert res.lower_bound > 3.0, (mech.__name__, res)


def test_audit_arguments_are_checked(key):
    """Found in review: a vector output ended in NumPy's reshape error, confidence="0.95" in a raw TypeError,
    n_thresholds=-1 in NumPy's message; audit_pairs ignored the caller's min_count."""
    with pytest.raises(ValueError, match="statistic must map one output to a scalar"):
        audit.audit(lambda k, x: x + jax.random.laplace(k, (2,)), key, jnp.zeros(2), jnp.ones(2), trials=1000)
    with pytest.raises(TypeError, match="confidence must be a number"):
        audit.audit(lambda k, x: x, key, 0.0, 1.0, trials=1000, confidence="0.95")
    with pytest.raises(TypeError, match="alpha must be a number"):
        audit.clopper_pearson(3, 10, "0.05")
    with pytest.raises(ValueError, match="n_thresholds must be >= 1"):
        audit.audit(lambda k, x: x, key, 0.0, 1.0, trials=1000, n_thresholds=-1)
    # the upper limit is exact for tiny α: P[X ≤ k | p = hi] = α/2 (1 − α/2 rounded in float64 before)
    import scipy.stats

    for n, k, alpha in ((10**6, 0, 1e-12), (10**6, 5, 3e-16), (100, 3, 1e-13)):
        _, hi = audit.clopper_pearson(k, n, alpha)
        np.testing.assert_allclose(scipy.stats.binom.cdf(k, n, hi), alpha / 2, rtol=1e-6)


def test_min_count_zero_still_means_no_minimum(key):
    """Found in review of the argument checks: min_count=0 (no minimum) was refused; a 0-d confidence too."""
    res = audit.audit(lambda k, x: x + jax.random.laplace(k), key, 0.0, 1.0, trials=1000, min_count=0,
                      confidence=np.asarray(0.9))
    assert 0.0 <= res.lower_bound < 1.5


def test_the_audit_applies_its_statistic(key):
    """From a mutation audit: every test used the identity statistic, so an audit that dropped `statistic` passed.
    A vector output needs it to become a scalar, and a constant statistic carries no evidence at all."""

    def mech(k, x):
        return x + jax.random.laplace(k, (2,))

    res = audit.audit(mech, key, jnp.zeros(2), jnp.ones(2), trials=1000, selection_trials=1000,
                      statistic=lambda o: o[0])
    assert res.lower_bound > 0  # the first coordinate differs by 1 at ε = 1: some evidence
    flat = audit.audit(mech, key, jnp.zeros(2), jnp.ones(2), trials=1000, selection_trials=1000,
                       statistic=lambda o: jnp.zeros_like(o[0]))
    assert flat.lower_bound == 0.0
