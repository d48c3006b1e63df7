import warnings
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxdp import mechanisms, wevent

ALPHA = 1e-4


def test_fig3_bd_budgets_reproduced_exactly(x64, key):
    # Paper Fig. 3: w = 3, publications at 1, 3, 4; nulls at 2, 5, 6.
    res = wevent.run(key, np.ones((6, 4)), method="bd", w=3, epsilon=1.0, decisions=[1, 0, 1, 1, 0, 0])
    e = Fraction(1)
    np.testing.assert_allclose(res.eps1, [float(e / 6)] * 6, rtol=1e-12)
    np.testing.assert_allclose(res.eps2, [float(e / 4), 0, float(e / 8), float(3 * e / 16), 0, 0], rtol=1e-12)
    total = np.asarray(res.eps1) + np.asarray(res.eps2)
    np.testing.assert_allclose(total, [5 / 12, 1 / 6, 7 / 24, 17 / 48, 1 / 6, 1 / 6], rtol=1e-12)
    sums = wevent.window_sums(res.eps1, res.eps2, 3)
    np.testing.assert_allclose(sums[2:], [21 / 24, 39 / 48, 39 / 48, 33 / 48], rtol=1e-12)  # as in Fig. 3
    assert list(np.asarray(res.published)) == [True, False, True, True, False, False]


def test_fig5_ba_budgets_reproduced_exactly(x64, key):
    # Paper Fig. 5: w = 3, publish at 1, skip 2, publish 3 (absorbs 2), 4 nullified, publish 5, skip 6.
    res = wevent.run(key, np.ones((6, 4)), method="ba", w=3, epsilon=1.0, decisions=[1, 0, 1, 1, 1, 0])
    np.testing.assert_allclose(res.eps2, [1 / 6, 0, 1 / 3, 0, 1 / 6, 0], rtol=1e-12)
    assert list(np.asarray(res.nullified)) == [False, False, False, True, False, False]
    assert list(np.asarray(res.published)) == [True, False, True, False, True, False]
    sums = wevent.window_sums(res.eps1, res.eps2, 3)
    np.testing.assert_allclose(sums[2:], [1.0, 5 / 6, 1.0, 2 / 3], rtol=1e-12)  # Fig. 5: ε, 5ε/6, ε, 2ε/3


def test_budget_shift_ledger_absorbs_exactly_the_rest_of_the_window(x64, key):
    """With the shift (Sec. 4.5) ε_{i,1} = ε/d and the publications share P = ε − w·ε/d: BA, w = 3, d = 12, ε = 1,
    publishing at 3 (absorbing 2 skipped units: all of P = 3/4), 4 and 5 nullified, publishing at 6 (one unit,
    1/4). The windows 1–3, 2–4 and 3–5 spend exactly ε. Found by a mutation audit: P = ε − (w − 1)·ε/d (windows
    at ε + ε/d) passed every fast test (the randomized window test rarely fills a window under the shift)."""
    res = wevent.run(key, np.ones((6, 12)), method="ba", w=3, epsilon=1.0, shift=True, decisions=[0, 0, 1, 1, 1, 1])
    np.testing.assert_allclose(res.eps1, np.full(6, 1 / 12), rtol=1e-12)
    np.testing.assert_allclose(res.eps2, [0, 0, 3 / 4, 0, 0, 1 / 4], rtol=1e-12)
    assert list(np.asarray(res.nullified)) == [False, False, False, True, True, False]
    sums = wevent.window_sums(res.eps1, res.eps2, 3)
    assert list(np.asarray(res.published)) == [False, False, True, False, False, True]
    np.testing.assert_allclose(sums[2:], [1.0, 1.0, 1.0, 1 / 2], rtol=1e-12)  # windows 1–3, 2–4, 3–5: all of ε


def test_ba_without_nullification_would_break_the_window(x64, key):
    res = wevent.run(key, np.ones((6, 2)), method="ba", w=3, epsilon=1.0, decisions=[1, 0, 1, 1, 1, 0])
    eps2 = np.asarray(res.eps2).copy()
    eps2[3] = 1 / 6  # what timestamp 4 would spend if it were not nullified
    assert wevent.window_sums(res.eps1, eps2, 3)[4] == pytest.approx(7 / 6)  # "7ε/6 > ε" in the paper


@settings(max_examples=12, deadline=None)
@given(
    method=st.sampled_from(wevent.METHODS),
    w=st.integers(1, 12),
    eps=st.floats(0.1, 5.0),
    seed=st.integers(0, 2**16),
    forced=st.booleans(),
    shift=st.booleans(),
    initial=st.sampled_from(wevent.INITIAL),
)
def test_every_window_spends_at_most_epsilon(method, w, eps, seed, forced, shift, initial):
    shift = shift and method in ("bd", "ba")
    initial = initial if method in ("bd", "ba") else "zero"
    counts = wevent.synthetic_counts(seed, timestamps=60, columns=30 if shift else 5)
    rng = np.random.default_rng(seed)
    # adversarial publish patterns too (BD/BA only: Uniform and Sample have fixed schedules)
    decisions = rng.integers(0, 2, size=60) if forced and method in ("bd", "ba") else None
    if decisions is not None and initial == "publish":
        decisions[0] = 1  # a skip there contradicts the start-up rule and is refused (its own test)
    res = wevent.run(
        jax.random.key(seed), counts, method=method, w=w, epsilon=eps, decisions=decisions, shift=shift, initial=initial
    )
    if initial == "publish":
        assert bool(res.published[0])
    sums = wevent.window_sums(res.eps1, res.eps2, w)
    assert np.all(sums <= eps * (1 + 1e-5))
    assert np.all(np.asarray(res.eps1) >= 0) and np.all(np.asarray(res.eps2) >= 0)


def test_uniform_and_sample_noise_scales(key):
    counts = np.full((4000, 5), 50.0)
    u = wevent.run(key, counts, method="uniform", w=10, epsilon=2.0)
    z = ((np.asarray(u.releases) - 50.0) / (10 / 2.0)).reshape(-1)
    assert scipy.stats.kstest(z, scipy.stats.laplace().cdf).pvalue > ALPHA
    assert scipy.stats.kstest(z * 1.2, scipy.stats.laplace().cdf).pvalue < ALPHA
    s = wevent.run(key, counts, method="sample", w=10, epsilon=2.0)
    pub = np.asarray(s.published)
    assert pub.sum() == 400 and pub[0] and pub[10] and not pub[1]
    released = np.asarray(s.releases)
    np.testing.assert_array_equal(released[1:10], np.broadcast_to(released[0], (9, 5)))  # nulls repeat o_l
    zs = ((released[pub] - 50.0) * 2.0).reshape(-1)
    assert scipy.stats.kstest(zs, scipy.stats.laplace().cdf).pvalue > ALPHA


@pytest.mark.parametrize("method", ["uniform", "sample"])
def test_uniform_and_sample_ledgers_report_the_budget_their_noise_spends(key, method):
    """The ledger of Uniform (ε/w at every timestamp) and Sample (ε at each publication, 0 elsewhere) holds the
    budgets the noise spends: each at or below its exact value and within 10⁻⁶ of it, every full window summing
    to ε, and the noise standardized by the ledger's ε_{i,2} Laplace(0, 1) (KS, α = 10⁻⁴; the control at 2·ε_{i,2}
    is rejected). Found by a mutation audit: Uniform's ledger reporting ε/(2w) while its noise spent ε/w passed
    (the test above checks the noise against w/ε, the window tests only that the ledger sums to at most ε)."""
    w, eps, t, d = 10, 2.0, 200, 50
    counts = np.full((t, d), 50.0)
    res = wevent.run(key, counts, method=method, w=w, epsilon=eps)
    eps1, eps2 = np.asarray(res.eps1, np.float64), np.asarray(res.eps2, np.float64)
    pub = np.asarray(res.published)
    budget = eps / w if method == "uniform" else eps
    assert pub.sum() == (t if method == "uniform" else t // w) and np.all(eps1 == 0) and np.all(eps2[~pub] == 0)
    assert np.all(eps2[pub] <= budget) and np.allclose(eps2[pub], budget, rtol=1e-6)
    sums = wevent.window_sums(eps1, eps2, w)
    assert np.all(sums <= eps) and np.allclose(sums[w - 1 :], eps, rtol=1e-6)
    z = (np.asarray(res.releases, np.float64)[pub] - 50.0) * eps2[pub][:, None]
    assert scipy.stats.kstest(z.ravel(), "laplace").pvalue > ALPHA
    assert scipy.stats.kstest(2 * z.ravel(), "laplace").pvalue < ALPHA


def test_epsilon_spent_is_the_whole_ledger_of_each_timestamp(key):
    """`epsilon_spent`, the per-timestamp loss a caller checks the windows with, is ``eps1 + eps2`` (summed in the
    ledger's dtype) for `run`, `WEventStream` pushes and `run_partitioned`, never below BD/BA's ε_{i,1} = ε/(2w),
    and its windows sum to at most ε. Found by a mutation audit: `epsilon_spent` returning ``eps2`` alone (the
    dissimilarity's ε/(2w) per timestamp left out) passed every test."""
    counts = wevent.synthetic_counts(2, timestamps=20, columns=6)
    w, eps = 4, 1.0
    stream = wevent.WEventStream(key, d=6, method="ba", w=w, epsilon=eps)
    pushed = [stream.push(c) for c in counts]
    results = [wevent.run(key, counts, method="bd", w=w, epsilon=eps),
               wevent.run_partitioned(key, counts, method="ba", w=w, epsilon=eps, groups=2), *pushed]
    for r in results:
        spent = np.asarray(r.epsilon_spent, np.float64)
        np.testing.assert_allclose(spent, np.asarray(r.eps1, np.float64) + np.asarray(r.eps2, np.float64), rtol=1e-6)
        assert np.all(spent >= eps / (2 * w) * (1 - 1e-6))
    whole = np.concatenate([np.asarray(p.epsilon_spent, np.float64) for p in pushed])
    assert np.all(wevent.window_sums(whole, 0.0, w) <= eps * (1 + 1e-6))
    assert np.all(wevent.window_sums(results[0].epsilon_spent, 0.0, w) <= eps * (1 + 1e-6))


def test_bd_and_ba_beat_uniform_on_slowly_varying_counts(key):
    counts = wevent.synthetic_counts(1, timestamps=400, columns=200, kind="bursty")
    keys = jax.random.split(key, 5)
    err = {m: wevent.mae(wevent.run(keys, counts, method=m, w=100, epsilon=1.0).releases, counts).mean()
           for m in wevent.METHODS}  # fmt: skip
    assert err["ba"] < err["uniform"] and err["bd"] < err["uniform"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(counts=-np.ones((3, 2))), "non-negative"),
        (dict(counts=[[1.0, 2.0], [1.0]]), "ragged"),
        (dict(w=0), "w"),
        (dict(epsilon=0.0), "epsilon"),
        (dict(method="fast"), "method"),
        (dict(counts=np.zeros((0, 3))), "shape"),
        (dict(method="sample", decisions=[1, 1, 1]), "fixed schedule"),
        (dict(shift=True), "d > 2w"),
        (dict(method="sample", initial="publish"), "fixed schedule"),
        (dict(initial="first"), "initial"),
    ],
)
def test_bad_input(key, kwargs, match):
    args = dict(counts=np.ones((3, 2)), method="bd", w=2, epsilon=1.0)
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        wevent.run(key, args.pop("counts"), **args)


@pytest.mark.parametrize("rows", [3, 600])  # 600 × 500 float64 (2.4 MB) takes the chunked, aligned cast
@pytest.mark.parametrize("value, match", [(np.nan, "NaN or inf"), (np.inf, "NaN or inf"), (-1.0, "non-negative"),
                                          (1e300, None)])  # fmt: skip
def test_bad_counts_found_in_the_one_pass_cast(key, rows, value, match):
    """`run` checks and casts counts in one chunked pass: a bad value anywhere, even in the last chunk, is
    refused; 1e300, which float32 cannot hold, is a count above the cap like any other: clamped (a refusal could
    stop a stream on a value of the data), never released as inf."""
    counts = np.ones((rows, 500))
    counts[-1, -1] = value
    if match is None:
        with pytest.warns(wevent.CountsClampedWarning, match="1 count"):
            out = wevent.run(key, counts, method="bd", w=2, epsilon=1.0).releases
        with pytest.warns(wevent.CountsClampedWarning, match="1 count"):
            pushed = wevent.WEventStream(key, d=500, method="bd", w=2, epsilon=1.0).push(counts[-1]).releases
        assert np.all(np.isfinite(np.asarray(out))) and np.all(np.isfinite(pushed))
        return
    with pytest.raises(ValueError, match=match):
        wevent.run(key, counts, method="bd", w=2, epsilon=1.0)
    with pytest.raises(ValueError, match=match):  # the streaming front end refuses the same row
        wevent.WEventStream(key, d=500, method="bd", w=2, epsilon=1.0).push(counts[-1])


@pytest.mark.parametrize("value, match", [(np.nan, "NaN or inf"), (np.inf, "NaN or inf"), (-1.0, r"at row 2 \(0-based; timestamp 3 of this call, 1-based\), column 3")])
def test_a_jax_array_of_the_kernel_dtype_is_used_in_place_and_checked_the_same(key, value, match):
    """A float32 JAX array skips the host pass (checked on its device): the same releases as the NumPy counts,
    and the same refusals, with the same message, for NaN, inf and negative counts."""
    counts = wevent.synthetic_counts(2, timestamps=5, columns=7)
    for method in ("uniform", "ba"):
        a = wevent.run(key, counts, method=method, w=3, epsilon=1.0)
        b = wevent.run(key, jnp.asarray(counts, jnp.float32), method=method, w=3, epsilon=1.0)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    bad = counts.copy()
    bad[2, 3] = value
    with pytest.raises(ValueError, match=match):
        wevent.run(key, jnp.asarray(bad, jnp.float32), method="bd", w=2, epsilon=1.0)
    with pytest.raises(ValueError, match="shape"):
        wevent.run(key, jnp.ones((4,), jnp.float32), method="bd", w=2, epsilon=1.0)
    with pytest.raises(TypeError, match="concrete"):
        jax.jit(lambda c: wevent.run(key, c, method="bd", w=2, epsilon=1.0).releases)(jnp.asarray(counts, jnp.float32))


def test_the_one_pass_cast_keeps_the_values(key):
    counts = wevent.synthetic_counts(1, timestamps=600, columns=500)  # > 1 MB: the chunked path
    a = wevent.run(key, counts, method="uniform", w=4, epsilon=1.0).releases
    b = wevent.run(key, counts.astype(np.float32), method="uniform", w=4, epsilon=1.0).releases
    np.testing.assert_array_equal(a, b)
    noise = jax.vmap(lambda i: mechanisms.laplace(jax.random.split(jax.random.fold_in(key, i))[1], 4.0, (500,)))
    np.testing.assert_allclose(a, counts + noise(jnp.arange(600, dtype=jnp.uint32)), rtol=1e-5, atol=1e-3)


def test_csv_loader(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("a,b\n1,2\n3,4\n")
    np.testing.assert_array_equal(wevent.load_counts(str(p)), [[1, 2], [3, 4]])
    p.write_text("1,2\n3\n")
    with pytest.raises(ValueError, match="ragged"):
        wevent.load_counts(str(p))
    p.write_text("a,b\n")
    with pytest.raises(ValueError, match="no rows"):
        wevent.load_counts(str(p))


@pytest.mark.parametrize("method", wevent.METHODS)
def test_streaming_push_equals_batch(key, method):
    counts = wevent.synthetic_counts(4, timestamps=40, columns=6)
    batch = wevent.run(key, counts, method=method, w=5, epsilon=1.0)
    stream = wevent.WEventStream(key, d=6, method=method, w=5, epsilon=1.0)
    pushed = [stream.push(c) for c in counts]
    assert all(isinstance(p, wevent.WEventResult) for p in pushed)  # the batch call's type, one timestamp each
    for name in wevent.WEventResult._fields:  # concatenated, the pushes are the batch release and ledger
        np.testing.assert_array_equal(np.concatenate([getattr(p, name) for p in pushed]), np.asarray(getattr(batch, name)))


@pytest.mark.parametrize("noise", ["float", "float64", "grid"])
def test_uniform_all_at_once_equals_pushes_step_by_step(key, noise):
    # `run` draws Uniform's timestamps all at once (no state); `push` runs the scan's step: same keys, same draws
    counts = wevent.synthetic_counts(6, timestamps=12, columns=5)
    batch = wevent.run(key, counts, method="uniform", w=4, epsilon=2.0, noise=noise, start=3)
    stream = wevent.WEventStream(key, d=5, method="uniform", w=4, epsilon=2.0, noise=noise, start=3)
    pushed = [stream.push(c) for c in counts]
    for name in wevent.WEventResult._fields:
        np.testing.assert_array_equal(np.concatenate([getattr(p, name) for p in pushed]), np.asarray(getattr(batch, name)))
    keys = jax.random.split(key, 3)  # repetitions: one vmapped program, each repetition its own key's release
    many = wevent.run(keys, counts, method="uniform", w=4, epsilon=2.0, noise=noise)
    np.testing.assert_array_equal(many.releases[1], wevent.run(keys[1], counts, method="uniform", w=4, epsilon=2.0,
                                                                noise=noise).releases)  # fmt: skip


@pytest.mark.parametrize("method", ["uniform", "ba"])
def test_pushes_spend_epsilon_rounded_down_to_the_kernel_dtype_as_run_does(key, method):
    """`run` derives every budget from ε rounded down to the kernel's float dtype; `WEventStream` must too. At
    ε = 0.3 float32's nearest value is 0.3000000119 > 0.3: pushes and `run` give the same release and ledger, and
    every window of the pushes' ledger sums to at most ε in exact rationals (Uniform: every window is full). Found
    by a mutation audit: `push` spending float32(ε) (a window of Uniform at 0.30000000447) passed every fast test
    (the push-equals-run tests use ε = 1, which float32 holds)."""
    eps, w = 0.3, 3
    counts = wevent.synthetic_counts(4, timestamps=12, columns=6)
    batch = wevent.run(key, counts, method=method, w=w, epsilon=eps)
    stream = wevent.WEventStream(key, d=6, method=method, w=w, epsilon=eps)
    pushed = [stream.push(c) for c in counts]
    for name in ("releases", "eps1", "eps2", "published"):
        np.testing.assert_array_equal(np.concatenate([getattr(p, name) for p in pushed]), np.asarray(getattr(batch, name)))
    total = [Fraction(float(p.eps1[0])) + Fraction(float(p.eps2[0])) for p in pushed]
    assert max(sum(total[max(0, i - w + 1) : i + 1], Fraction(0)) for i in range(len(total))) <= Fraction(eps)


@pytest.mark.parametrize("method", ["bd", "ba"])
def test_streaming_push_equals_batch_with_the_budget_shift(key, method):
    counts = wevent.synthetic_counts(4, timestamps=30, columns=12)
    batch = wevent.run(key, counts, method=method, w=3, epsilon=1.0, shift=True)
    stream = wevent.WEventStream(key, d=12, method=method, w=3, epsilon=1.0, shift=True)
    pushed = [stream.push(c) for c in counts]
    np.testing.assert_array_equal(np.concatenate([p.releases for p in pushed]), np.asarray(batch.releases))
    np.testing.assert_allclose(np.concatenate([p.eps1 for p in pushed]), np.asarray(batch.eps1))
    np.testing.assert_allclose(np.concatenate([p.eps1 for p in pushed]), 1.0 / 12)  # ε_{i,1} = ε/d with the shift
    with pytest.raises(ValueError, match="d > 2w"):
        wevent.WEventStream(key, d=6, method=method, w=3, epsilon=1.0, shift=True)
    with pytest.raises(ValueError, match="shift"):
        wevent.WEventStream(key, d=12, method=method, w=3, epsilon=1.0, shift="sometimes")
    # "auto": the paper's d ≫ w, read as d ≥ 10·w (public): on for d = 30, w = 3; off for d = 12, w = 3
    counts30 = wevent.synthetic_counts(5, timestamps=20, columns=30)
    auto = wevent.run(key, counts30, method=method, w=3, epsilon=1.0, shift="auto")
    np.testing.assert_array_equal(auto.releases, wevent.run(key, counts30, method=method, w=3, epsilon=1.0,
                                                            shift=True).releases)  # fmt: skip
    off = wevent.run(key, counts, method=method, w=3, epsilon=1.0, shift="auto")
    np.testing.assert_array_equal(off.releases, wevent.run(key, counts, method=method, w=3, epsilon=1.0).releases)
    assert wevent.run(key, counts30, method="uniform", w=3, epsilon=1.0, shift="auto").eps1.max() == 0.0


def test_degenerate_cases(key, x64):
    counts = wevent.synthetic_counts(5, timestamps=30, columns=4)
    # w = 1: w-event privacy is event-level privacy and Uniform and Sample are the same mechanism.
    u = wevent.run(key, counts, method="uniform", w=1, epsilon=0.7)
    s = wevent.run(key, counts, method="sample", w=1, epsilon=0.7)
    np.testing.assert_array_equal(np.asarray(u.releases), np.asarray(s.releases))
    # BA that publishes at every timestamp never absorbs: it is Uniform with the publication half ε/2.
    ba = wevent.run(key, counts, method="ba", w=5, epsilon=1.0, decisions=np.ones(30, int))
    assert np.asarray(ba.published).all() and not np.asarray(ba.nullified).any()
    np.testing.assert_allclose(ba.eps2, np.full(30, 1.0 / 10))
    # BD that publishes at every timestamp halves the remaining budget: ε/4, ε/8, … within a window.
    bd = wevent.run(key, counts, method="bd", w=30, epsilon=1.0, decisions=np.ones(30, int))
    np.testing.assert_allclose(bd.eps2[:4], [1 / 4, 1 / 8, 1 / 16, 1 / 32])


# ------------------------------------------------------------------ column partitioning (Sec. 4.5)
@pytest.mark.parametrize("method", ["bd", "ba"])
@pytest.mark.parametrize("groups,regroup", [(1, None), (4, 10)] + [pytest.param(*g, marks=pytest.mark.slow) for g in ((4, None), (7, 3))])
def test_partitioned_joint_ledger_keeps_every_window_within_epsilon(method, groups, regroup, key):
    counts = wevent.synthetic_counts(3, timestamps=120, columns=28, kind="bursty")
    w, eps = 10, 1.0
    res = wevent.run_partitioned(jax.random.split(key, 4), counts, method=method, w=w, epsilon=eps, groups=groups,
                                 regroup_every=regroup)
    eps2 = np.asarray(res.eps2)
    np.testing.assert_allclose(eps2, np.asarray(res.group_eps2).max(axis=-1))
    sums = wevent.window_sums(res.eps1, res.eps2, w)
    assert sums.max() <= eps * (1 + 1e-5)
    assert np.asarray(res.published).any()  # not vacuous: groups do publish
    rel = np.asarray(res.releases)
    assert rel.shape == (4, 120, 28) and np.isfinite(rel).all()


def test_independent_group_ledgers_would_overspend_a_window(x64, key):
    # the paper's literal reading: one BD per group, each with its own ledger. A user in group A at
    # timestamp 1 and 3 and in group B at timestamp 2 is covered by max_g ε_{g,k,2} at every k.
    c = np.ones((3, 4))
    a = wevent.run(key, c[:, :2], method="bd", w=3, epsilon=1.0, decisions=[1, 0, 1])
    b = wevent.run(key, c[:, 2:], method="bd", w=3, epsilon=1.0, decisions=[0, 1, 0])
    worst = np.maximum(np.asarray(a.eps2), np.asarray(b.eps2)).sum()
    assert worst == pytest.approx(5 / 8) and worst > 1.0 / 2  # 1/4 + 1/4 + 1/8 > ε/2


def test_regrouping_uses_only_past_releases(key):
    counts = wevent.synthetic_counts(5, timestamps=60, columns=12, kind="bursty")
    res = wevent.run_partitioned(key, counts, method="bd", w=6, epsilon=2.0, groups=3, regroup_every=5)
    rel = np.asarray(res.releases)
    grp = np.asarray(res.groups)
    sizes = [4, 4, 4]
    acc = np.zeros(12)
    last = np.zeros(12)
    for i in range(60):
        acc += (rel[i] - last) ** 2
        last = rel[i]
        if (i + 1) % 5 == 0 and i + 1 < 60:
            rank = np.argsort(np.argsort(acc, kind="stable"), kind="stable")
            expected = np.searchsorted(np.cumsum(sizes), rank, side="right")
            np.testing.assert_array_equal(grp[i + 1], expected)
            acc[:] = 0


def test_partitioned_bad_input(key):
    with pytest.raises(ValueError, match="exceeds"):
        wevent.run_partitioned(key, np.ones((5, 3)), method="bd", w=2, epsilon=1.0, groups=4)
    with pytest.raises(ValueError, match="method"):
        wevent.run_partitioned(key, np.ones((5, 3)), method="uniform", w=2, epsilon=1.0, groups=2)


@pytest.mark.parametrize("start", [2**24 - 3, 2**31 - 5, 2**32 - 40])
@pytest.mark.parametrize("method, w", [("sample", 3), ("sample", 5), ("bd", 3), ("ba", 3), ("ba", 5)])
def test_streams_started_late_keep_the_schedule_and_the_window(key, start, method, w):
    """Integer counters: a stream whose timestamps pass 2²⁴ or 2³¹ behaves exactly as one that starts at 1.

    With float32 timestamps (the old carry) Sample published at consecutive timestamps near 2²⁴ and BA
    lost its nullification (window sums 2ε–4ε)."""
    counts = np.random.default_rng(start % 97).poisson(5.0, size=(40, 6)).astype(float)
    late = wevent.run(key, counts, method=method, w=w, epsilon=1.0, start=start)
    sums = wevent.window_sums(late.eps1, late.eps2, w)
    assert np.all(sums <= 1.0 * (1 + 1e-6))
    if method == "sample":
        expected = (start - 1 + np.arange(40)) % w == 0
        np.testing.assert_array_equal(np.asarray(late.published), expected)
    else:  # the decisions forced to "publish" give the budgets of a stream started at 1
        always = np.ones(40, int)
        early = wevent.run(key, counts, method=method, w=w, epsilon=1.0, decisions=always)
        forced = wevent.run(key, counts, method=method, w=w, epsilon=1.0, decisions=always, start=start)
        np.testing.assert_array_equal(np.asarray(forced.eps2), np.asarray(early.eps2))
        np.testing.assert_array_equal(np.asarray(forced.nullified), np.asarray(early.nullified))
    stream = wevent.WEventStream(key, d=6, method=method, w=w, epsilon=1.0, start=start)
    pushed = np.concatenate([stream.push(c).releases for c in counts[:6]])
    np.testing.assert_array_equal(pushed, np.asarray(late.releases)[:6])


def test_start_beyond_the_key_index_is_refused(key):
    with pytest.raises(ValueError, match="2\\*\\*32"):
        wevent.run(key, np.ones((10, 2)), method="bd", w=3, epsilon=1.0, start=2**32 - 5)


@pytest.mark.parametrize("method", [pytest.param(m, marks=pytest.mark.slow) for m in wevent.METHODS])
def test_exact_noise_keeps_the_window_lands_on_the_grid_and_matches_float_accuracy(key, method):
    counts = wevent.synthetic_counts(4, timestamps=60, columns=8)
    keys = jax.random.split(key, 12)
    grid = wevent.run(keys, counts, method=method, w=4, epsilon=1.0, noise="grid")
    flt = wevent.run(keys, counts, method=method, w=4, epsilon=1.0)
    assert np.all(wevent.window_sums(grid.eps1, grid.eps2, 4) <= 1.0 + 1e-6)
    rel = np.asarray(grid.releases)
    np.testing.assert_array_equal(rel * 256, np.round(rel * 256))  # integer counts + exact noise on 2^-8
    ratio = wevent.mae(rel, counts).mean() / wevent.mae(flt.releases, counts).mean()
    assert 0.6 < ratio < 1.6  # same calibration (12 repetitions)
    stream = wevent.WEventStream(keys[0], d=8, method=method, w=4, epsilon=1.0, noise="grid")
    pushed = np.concatenate([stream.push(c).releases for c in counts[:5]])
    np.testing.assert_array_equal(pushed, rel[0, :5])


def test_exact_noise_refuses_budgets_it_cannot_sample(key):
    with pytest.raises(ValueError, match="2\\*\\*29"):
        wevent.run(key, np.ones((5, 2)), method="uniform", w=10, epsilon=1e-7, noise="grid")
    with pytest.raises(ValueError, match="noise must be one of"):
        wevent.run(key, np.ones((5, 2)), method="bd", w=3, epsilon=1.0, noise="exact")


@pytest.mark.parametrize("method", wevent.METHODS)
def test_single_stream_skips_noise_at_null_timestamps_without_changing_anything(key, method):
    # A single stream draws publication noise only when it publishes (lax.cond runs one branch); under vmap
    # the cond is a select that draws it every time, as the old path did. Same keys: identical releases,
    # decisions and ledger.
    counts = wevent.synthetic_counts(8, timestamps=60, columns=30)
    one = wevent.run(key, counts, method=method, w=6, epsilon=1.0)
    many = wevent.run(key[None], counts, method=method, w=6, epsilon=1.0)
    for a, b in zip(one, many):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b)[0])
    assert 0 < int(np.asarray(one.published).sum()) <= 60


@pytest.mark.parametrize("method", ["bd", "ba"])
def test_initial_publish_forces_only_the_first_timestamp_and_streams_the_same(key, method):
    counts = wevent.synthetic_counts(5, timestamps=40, columns=6)
    zero = wevent.run(key, counts, method=method, w=4, epsilon=1.0)
    pub = wevent.run(key, counts, method=method, w=4, epsilon=1.0, initial="publish")
    assert bool(pub.published[0])
    # the pseudocode's budget for a publication at timestamp 1: BD ε_rm/2 = ε/4, BA one unit ε/(2w)
    assert float(pub.eps2[0]) == pytest.approx(0.25 if method == "bd" else 1.0 / 8, rel=1e-6)
    # the same as forcing the decision by hand
    forced = wevent.run(key, counts, method=method, w=4, epsilon=1.0, decisions=[1] + [-1] * 39)
    np.testing.assert_array_equal(np.asarray(pub.releases), np.asarray(forced.releases))
    assert np.all(wevent.window_sums(pub.eps1, pub.eps2, 4) <= 1.0 + 1e-6)
    stream = wevent.WEventStream(key, d=6, method=method, w=4, epsilon=1.0, initial="publish", start=1)
    outs = [stream.push(c).releases for c in counts]
    np.testing.assert_array_equal(np.concatenate(outs), np.asarray(pub.releases))
    if not bool(zero.published[0]):  # the default leaves the zero vector standing at timestamp 1
        np.testing.assert_array_equal(np.asarray(zero.releases[0]), np.zeros(6))


@pytest.mark.parametrize("as_jax", [False, True])
def test_counts_beyond_what_the_arithmetic_holds_are_clamped_not_refused(key, as_jax):
    """Above 2²⁴ float32 rounds counts apart by 2 or more (one user would move the release by more than the
    sensitivity 1), and noise="grid" holds counts only up to its grid's limit. Such counts are clamped to the public
    cap (1-Lipschitz: the sensitivity holds) with a curator-only warning. Found in review: they were refused, and a
    refusal mid-stream, after earlier releases, told neighbours apart (2**24 went on, 2**24 + 1 stopped the stream)."""
    base = np.array([[5.0, 1.0], [7.0, 1.0], [2.0**24, 1.0], [5.0, 1.0]])
    outs = []
    for extra in (0.0, 1.0, 2.0):  # neighbours of the count at timestamp 2
        counts = base.copy()
        counts[2, 0] += extra
        data = jnp.asarray(counts, jnp.float32) if as_jax else counts
        with warnings.catch_warnings():
            warnings.simplefilter("error" if extra == 0.0 else "ignore")  # 2**24 itself is held exactly: no warning
            outs.append(np.asarray(wevent.run(key, data, method="bd", w=2, epsilon=1.0).releases))
        stream = wevent.WEventStream(key, d=2, method="bd", w=2, epsilon=1.0)
        pushed = [stream.push(counts[0]), stream.push(counts[1])]
        if extra:
            with pytest.warns(wevent.CountsClampedWarning, match="1 count"):
                pushed.append(stream.push(counts[2]))  # the stream goes on
        else:
            pushed.append(stream.push(counts[2]))
        pushed.append(stream.push(counts[3]))
        np.testing.assert_array_equal(np.concatenate([p.releases for p in pushed]), outs[-1])
    np.testing.assert_array_equal(outs[1], outs[0])  # clamped: the same release as the count 2**24, same key
    np.testing.assert_array_equal(outs[2], outs[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # float64 holds them: nothing clamped
        assert wevent.run(key, base + 2.0, method="bd", w=2, epsilon=1.0, noise="float64").releases.dtype == jnp.float64
    beyond = wevent.WEventStream(key, d=2, method="bd", w=2, epsilon=1.0)  # past float32's range: clamped too
    beyond.push([5.0, 1.0])
    with pytest.warns(wevent.CountsClampedWarning, match="1 count"):
        assert float(np.asarray(beyond.push([1e39, 1.0]).releases).max()) < 2.0**25
    cap = wevent.count_cap(noise="grid")
    assert cap == mechanisms.grid_value_limit(sensitivity=1.0)
    big = [[3e6, 1.0]]
    with pytest.warns(wevent.CountsClampedWarning):
        r = wevent.run(key, big, method="uniform", w=2, epsilon=1.0, noise="grid")
    with pytest.warns(wevent.CountsClampedWarning):
        wevent.WEventStream(key, d=2, method="bd", w=2, epsilon=1.0, noise="grid").push(big[0])
    with pytest.warns(wevent.CountsClampedWarning):
        wevent.run_partitioned(key, big, method="bd", w=2, epsilon=1.0, groups=2, noise="grid")
    assert abs(float(r.releases[0, 0]) - cap) < 1e3  # the clamped count plus Lap(2)-scale noise


def test_refusals_name_positions_not_values_and_float64_limits_hold(key):
    """Found in review: messages quoted the offending count (messages end up in logs), and counts past 2**53,
    where float64 rounds neighbours apart (2**60 + 383 and + 384 came out 256 apart), were accepted."""
    bad = np.ones((3, 2))
    bad[1, 1] = -41.25
    with pytest.raises(ValueError, match=r"row 1 \(0-based; timestamp 2 of this call, 1-based\), column 1") as err:
        wevent.run(key, bad, method="bd", w=2, epsilon=1.0)
    assert "41" not in str(err.value)
    huge = np.full((3, 2), 2.0**60)
    with pytest.warns(wevent.CountsClampedWarning, match="6 count") as rec:  # clamped to 2**53, not refused
        r = wevent.run(key, huge, method="uniform", w=2, epsilon=1.0, noise="float64")
    assert "1152921504606846976" not in str(rec[0].message) and np.all(np.abs(np.asarray(r.releases) - 2.0**53) < 1e3)


def test_float_path_dissimilarity_is_exact_in_float64_where_float32_moves_it_by_multiples():
    """Found in review: BD/BA's dissimilarity with noise="float" was summed in float32, so neighbouring counts
    (one count + 1) moved it by 4× its sensitivity 1/d at d = 1,000 and counts ≈ 4·10⁴ (128× near 2²⁴). The
    kernels now sum, noise and test it in float64 whatever the release dtype (what this checks is the arithmetic
    they use: float64 inputs move it by exactly 1/d; float32, the control, by multiples)."""
    from jaxdp.wevent.methods import dissimilarity

    rng = np.random.default_rng(3)
    c = rng.integers(20_000, 60_000, 1000).astype(np.float64)
    last = rng.laplace(0, 30.0, c.size).astype(np.float32).astype(np.float64)  # a float32 release near the start
    moves = {}
    for dt in (np.float32, np.float64):
        with jax.enable_x64(dt == np.float64):
            worst = 0.0
            for j in range(0, 1000, 37):
                c2 = c.copy()
                c2[j] += 1
                a = float(dissimilarity(jnp.asarray(c, dt), jnp.asarray(last, dt)))
                b = float(dissimilarity(jnp.asarray(c2, dt), jnp.asarray(last, dt)))
                worst = max(worst, abs(a - b) * c.size)
        moves[dt] = worst
    assert moves[np.float64] <= 1.0 + 1e-9
    assert moves[np.float32] >= 2.0


@pytest.mark.parametrize("method", ["bd", "ba"])
def test_grid_dissimilarity_clips_its_inputs_and_publications_keep_the_counts(key, method):
    """Found in review: with noise="grid" the dissimilarity (sensitivity 1/d, so a grid 256·d times finer than the
    counts') was clamped at ≈ 2²¹/d — counts of 30,000 at d = 100 read as 16,384 and every publication was missed;
    then the counts themselves were clamped there, and published as 16,384. Now the dissimilarity clips its own
    inputs to what its grid holds (1-Lipschitz: sensitivity 1/d kept) and the counts keep their own cap (2²¹):
    publications happen and release the counts, in `run`, `WEventStream` and `run_partitioned`. A publication
    budget above 257 (b/γ < 1) is refused eagerly."""
    counts = np.tile([[0.0] * 100, [40_000.0] * 100], (4, 1))  # beyond the dissimilarity's 2¹⁴ at d = 100
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing clamped: 40,000 is below the counts' cap
        res = wevent.run(key, counts, method=method, w=1, epsilon=1.0, noise="grid")
        part = wevent.run_partitioned(key, counts, method=method, w=1, epsilon=1.0, groups=2, noise="grid")
        s = wevent.WEventStream(key, d=100, method=method, w=1, epsilon=1.0, noise="grid")
        pushed = np.concatenate([s.push(c).releases for c in counts])
    np.testing.assert_array_equal(pushed, np.asarray(res.releases))
    for r in (res, part):
        published = np.asarray(r.published)  # [T], or [T, groups] (two groups of 50 contiguous columns)
        per_column = np.repeat(published, 50, axis=1) if published.ndim == 2 else published[:, None]
        pub = per_column & (counts > 0)
        assert pub.any()
        assert np.abs(np.asarray(r.releases)[pub] - 40_000).max() < 200  # Lap(≤ 4) noise, not 16,384
    small = np.ones((3, 257))
    with pytest.raises(ValueError, match="below 1"):
        wevent.run(key, small, method=method, w=1, epsilon=2000.0, noise="grid")
    with pytest.raises(ValueError, match="below 1"):
        wevent.WEventStream(key, d=257, method=method, w=1, epsilon=2000.0, noise="grid")


@pytest.mark.slow  # (an audit in exact rationals, ≈ 10 s; the float check above stays in the main step; CI's second step)
@pytest.mark.parametrize("noise", ["float", "grid"])
def test_every_window_spends_at_most_epsilon_exactly_in_rationals(key, noise):
    """Found in review: budgets rounded to nearest in float32 let a window spend 0.3000000380 of ε = 0.3 (the
    noise used those values). Budgets are now rounded down from ε rounded down, so every window's ledger — run,
    run_partitioned and WEventStream — sums to at most ε in exact rational arithmetic (no tolerance)."""
    counts = wevent.synthetic_counts(0, timestamps=60, columns=30, kind="bursty")

    def check(eps1, eps2, w, eps):
        total = [Fraction(float(a)) + Fraction(float(b)) for a, b in zip(np.asarray(eps1), np.asarray(eps2))]
        worst = max(sum(total[max(0, i - w + 1): i + 1], Fraction(0)) for i in range(len(total)))
        assert worst <= Fraction(eps), (float(worst), eps)

    # grid: the (w, ε) whose rounding the review found (each grid program costs seconds to compile; the ledger
    # arithmetic is the float path's plus the cast `_released` makes, which every grid run here goes through)
    for w, eps in ((3, 1.0), (7, 0.3)) if noise == "float" else ((7, 0.3),):
        for method in ("uniform", "sample", "bd", "ba"):
            r = wevent.run(key, counts, method=method, w=w, epsilon=eps, noise=noise)
            check(r.eps1, r.eps2, w, eps)
        p = wevent.run_partitioned(key, counts, method="ba", w=w, epsilon=eps, groups=3, noise=noise)
        check(p.eps1, p.eps2, w, eps)
    r = wevent.run(key, counts, method="ba", w=3, epsilon=0.7, shift=True, noise=noise)  # d = 30 > 2w
    check(r.eps1, r.eps2, 3, 0.7)
    s = wevent.WEventStream(key, d=30, method="bd", w=7, epsilon=0.3, noise=noise)
    parts = [s.push(c) for c in counts[:20]]
    check(np.concatenate([q.eps1 for q in parts]), np.concatenate([q.eps2 for q in parts]), 7, 0.3)


@pytest.mark.slow  # (three grid programs traced afresh through the recorder: ≈ 20 s; CI runs it in the slow step)
def test_grid_ledger_reports_exactly_the_budgets_the_noise_spent(key, monkeypatch):
    """Found in review: with noise="grid" the kernels spent float64 budgets and reported them rounded down to float32,
    so the ledger under-reported ε spent by up to a float32 ulp (0.021428570 reported, 0.021428571428 spent). Every
    budget given to the Laplace mechanism is recorded (a fresh trace) and must be one the ledger holds, exactly."""
    calls, real = [], mechanisms.laplace_mechanism

    def recording(k, x, *, epsilon, sensitivity, noise="float", coordinates=None):
        jax.debug.callback(lambda e: calls.append(np.asarray(e, np.float64).ravel()), jnp.asarray(epsilon))
        return real(k, x, epsilon=epsilon, sensitivity=sensitivity, noise=noise, coordinates=coordinates)

    counts = wevent.synthetic_counts(0, timestamps=12, columns=6, kind="bursty")
    monkeypatch.setattr(mechanisms, "laplace_mechanism", recording)
    jax.clear_caches()  # trace afresh, through the recording mechanism
    try:
        for dummy, run in ((False, lambda: wevent.run(key, counts, method="bd", w=7, epsilon=0.3, noise="grid")),
                           (False, lambda: wevent.run(key, counts, method="sample", w=7, epsilon=0.3, noise="grid")),
                           (True, lambda: wevent.run_partitioned(key, counts, method="ba", w=7, epsilon=0.3, groups=2,
                                                                 noise="grid"))):
            calls.clear()
            r = run()
            spent = np.unique(np.concatenate(calls))
            published = np.asarray(r.published).reshape(len(counts), -1).any(axis=1)
            ledger = np.concatenate([np.asarray(r.eps1, np.float64).ravel(),
                                     np.asarray(r.eps2, np.float64)[published].ravel()])
            reported = np.unique(ledger[ledger > 0])
            assert published.any() and np.all(np.isin(reported, spent)), (reported, spent)
            drawn = spent[spent < 0.3] if dummy else spent  # (run_partitioned draws the groups that do not publish
            # at a dummy budget, ε, and keeps their last release: that noise is never released)
            assert np.all(np.isin(drawn, reported)), (spent, reported)
    finally:
        monkeypatch.undo()
        jax.clear_caches()  # no later test may reuse the recording trace


def test_a_traced_epsilon_is_refused_and_errors_give_1_based_timestamps(key):
    """Found in review: a traced ε ended in JAX's ConcretizationTypeError, and a negative count in the second
    timestamp was reported at "timestamp 1" (0-based, where the API's timestamps are 1-based)."""
    with pytest.raises(TypeError, match="concrete epsilon"):
        jax.jit(lambda e: wevent.run(key, np.ones((3, 2)), method="bd", w=2, epsilon=e).releases)(1.0)
    with pytest.raises(ValueError, match=r"row 1 \(0-based; timestamp 2 of this call"):
        wevent.run(key, [[1.0], [-1.0]], method="uniform", w=1, epsilon=1.0)


@pytest.mark.slow  # (clears JAX's caches: the worker's later tests would trace their programs again)
def test_every_draw_has_its_own_key_and_groups_their_own_sensitivity(key, mechanism_calls):
    """Found in an audit of the tests: BD's dissimilarity drawn with the publication's key (with float64 noise a
    published count then reveals the noisy decision exactly), and `run_partitioned`'s group dissimilarity calibrated
    to 1/d instead of 1/d_g (G·ε/(2w) spent per timestamp), both passed. Every draw of a run is recorded here."""
    counts = wevent.synthetic_counts(0, timestamps=12, columns=8, kind="bursty")
    r = wevent.run(key, counts, method="bd", w=3, epsilon=1.0)
    words = [c[1] for c in mechanism_calls]
    assert np.asarray(r.published).any() and len(words) == 12 + int(np.sum(r.published))
    assert len(set(words)) == len(words)  # every draw its own key
    mechanism_calls.clear()
    p = wevent.run_partitioned(key, counts, method="ba", w=3, epsilon=1.0, groups=4)  # 4 groups of 2 columns
    dis = [c for c in mechanism_calls if c[0] == "laplace" and not np.all(c[3] == 1.0)]
    assert len(dis) == 12 and all(np.allclose(c[3], 0.5) for c in dis)  # 1/d_g = 1/2 (not 1/d = 1/8)
    words = [c[1] for c in mechanism_calls]
    assert np.asarray(p.published).any() and len(set(words)) == len(words)


@pytest.mark.parametrize("reps", [None, 3])
def test_runs_with_caller_decisions_are_flagged_not_private(key, reps):
    # found in review: `private` was True whatever `decisions` said, though decisions computed from the data
    # are not private; the public start-up rule (initial="publish") forces timestamp 1 and stays private
    k = key if reps is None else jax.random.split(key, reps)
    counts = np.ones((6, 3))
    assert wevent.run(k, counts, method="bd", w=3, epsilon=1.0).private
    assert wevent.run(k, counts, method="ba", w=3, epsilon=1.0, initial="publish").private
    assert wevent.run(k, counts, method="bd", w=3, epsilon=1.0, decisions=[-1] * 6).private
    forced = wevent.run(k, counts, method="bd", w=3, epsilon=1.0, decisions=[1, -1, -1, -1, -1, -1])
    assert forced.private is False
    np.testing.assert_array_equal(np.asarray(forced.forced).reshape(-1, 6), [[True] + [False] * 5] * (reps or 1))


@pytest.mark.parametrize("method", ["bd", "ba"])
def test_publication_noise_is_laplace_at_the_ledgers_budget_at_every_timestamp(key, method):
    """BD/BA publish with noise Lap(1/ε_{i,2}) where the ledger reports ε_{i,2} (found in an audit of the tests:
    only the ledger's sums were checked for BD/BA, and the noise only at timestamp 1 in the slow audits). Every
    timestamp forced to publish (`decisions`), constant counts: the noise standardized by the ledger's ε_{i,2} is
    Laplace(0, 1) (KS, α = 10⁻⁴); the control, standardized by 2·ε_{i,2}, is rejected."""
    t, d = 60, 200
    counts = np.full((t, d), 10.0)
    res = wevent.run(key, counts, method=method, w=5, epsilon=1.0, decisions=[1] * t)
    eps2 = np.asarray(res.eps2, np.float64)
    pub = np.asarray(res.published)
    assert pub.all() and (eps2 > 0).all() and not res.private
    z = (np.asarray(res.releases, np.float64) - counts) * eps2[:, None]
    assert scipy.stats.kstest(z.ravel(), "laplace").pvalue > ALPHA
    assert scipy.stats.kstest(2 * z.ravel(), "laplace").pvalue < ALPHA


def test_a_window_beyond_the_buffer_limit_is_refused(key):
    # found in review: w = 10⁹ took 8 GB (a buffer of w budgets) before the first timestamp
    for f in (lambda: wevent.run(key, np.ones((5, 3)), method="bd", w=10**9, epsilon=1.0),
              lambda: wevent.WEventStream(key, d=3, method="bd", w=10**9, epsilon=1.0),
              lambda: wevent.run_partitioned(key, np.ones((5, 3)), method="ba", w=10**9, epsilon=1.0, groups=1)):
        with pytest.raises(ValueError, match="w must be at most 16,777,216"):
            f()


def test_error_measures_refuse_releases_of_another_shape():
    # found in review: a length mismatch ended in NumPy's broadcast error
    with pytest.raises(ValueError, match="matching counts"):
        wevent.mae(np.zeros((4, 3)), np.zeros((5, 3)))
    with pytest.raises(ValueError, match="matching counts"):
        wevent.mre(np.zeros((4, 2)), np.zeros((4, 3)))
    assert wevent.mae(np.ones((2, 4, 3)), np.zeros((4, 3))).shape == (2,)


def test_partitioned_runs_refuse_key_arrays_of_two_axes(key):
    # a second review: JAX's "fold_in accepts a single key" traceback (run gave a clear message)
    with pytest.raises(ValueError, match=r"key array \[R\]"):
        wevent.run_partitioned(jax.random.split(key, 4).reshape(2, 2), np.ones((5, 3)), method="ba", w=2,
                               epsilon=1.0, groups=1)


def test_loading_counts_names_positions_never_values(tmp_path):
    # found in review: a cell that is not a number was quoted ("secretvalue42"); a folder or a missing file raised
    # OSError, a bad byte was quoted
    p = tmp_path / "c.csv"
    p.write_text("a,b\n1,2\n3,secretvalue42\n")
    with pytest.raises(ValueError, match="c.csv:3, column 2: not a number") as err:
        wevent.load_counts(str(p))
    assert "secret" not in str(err.value)
    p.write_bytes(b"a,b\n1,2\n3,\xff\n")
    with pytest.raises(ValueError, match=":3: not valid UTF-8") as err:
        wevent.load_counts(str(p))
    assert "xff" not in str(err.value)
    for bad in (tmp_path, tmp_path / "missing.csv"):
        with pytest.raises(ValueError, match="cannot read"):
            wevent.load_counts(str(bad))
    with pytest.raises(TypeError, match="file name"):
        wevent.load_counts(3)
    p.write_text("a,b\n1,2\n3,4\n")
    np.testing.assert_array_equal(wevent.load_counts(str(p)), [[1, 2], [3, 4]])


def test_a_skip_at_the_first_timestamp_contradicting_initial_publish_is_refused(key):
    # found in review: initial="publish" silently overrode decisions[0] = 0
    with pytest.raises(ValueError, match="contradicts initial='publish'"):
        wevent.run(key, np.ones((4, 2)), method="bd", w=2, epsilon=1.0, initial="publish", decisions=[0, -1, -1, -1])
    r = wevent.run(key, np.ones((4, 2)), method="bd", w=2, epsilon=1.0, initial="publish", decisions=[1, -1, -1, -1])
    assert r.releases.shape == (4, 2)


def test_dissimilarity_terms_are_capped_so_neighbours_move_it_by_at_most_its_sensitivity(x64):
    """Found in review: with noise="float64" the counts (up to 2⁵³) were summed unclipped, and near 2⁵³ one count
    + 1 moved the float64 mean by 1 instead of 1/d (100× at d = 100). The runs take the mean of
    min(|c − o_l|, K) with K = `difference_cap` (2²⁴ in the float modes): 1-Lipschitz, and exact enough."""
    from jaxdp.wevent.methods import dissimilarity

    d = 100
    rng = np.random.default_rng(5)
    last = np.zeros(d)
    cap = wevent.difference_cap(noise="float64", sensitivity=1.0 / d)
    assert cap == wevent.difference_cap(noise="float", sensitivity=1.0 / d) == 2.0**24

    def capped(x):
        return float(jnp.mean(jnp.minimum(jnp.abs(jnp.asarray(x) - jnp.asarray(last)), cap)))

    worst, worst_raw = 0.0, 0.0
    for _ in range(300):  # (fixed seed: the uncapped mean moves by 50/d in some of these)
        c = np.floor(rng.uniform(2.0**51, 2.0**52, d))  # below the float64 count cap 2⁵³: accepted by the runs
        c2 = c.copy()
        c2[rng.integers(d)] += 1.0  # a neighbour: one count one higher
        worst = max(worst, abs(capped(c) - capped(c2)) * d)
        worst_raw = max(worst_raw, abs(float(dissimilarity(jnp.asarray(c), jnp.asarray(last)))
                                       - float(dissimilarity(jnp.asarray(c2), jnp.asarray(last)))) * d)  # fmt: skip
    assert worst <= 1.0 + 1e-9
    assert worst_raw >= 10.0  # the control: the uncapped mean (what the runs summed before)


@pytest.mark.parametrize("method", ["bd", "ba"])
def test_runs_decide_on_dissimilarity_terms_capped_at_the_difference_cap(key, method):
    """The runs' dissimilarity is the mean of min(|c − o_l|, K), K = `difference_cap` (2²⁴ with noise="float64"), in
    `run`, `WEventStream` and `run_partitioned` alike. Found by a mutation audit: the runs summing the terms uncapped
    (near 2⁵³ one count + 1 then moves the float64 mean by up to 1 instead of its sensitivity 1/d) passed — the test
    above checks the clip on its own copy of it. Here d = 1,000 columns of 2²⁷ against o_0 = 0, w = 1: the capped
    mean is 2²⁴, the uncapped 2²⁷. Timestamp 1's threshold λ is 4/ε (BD, 2/ε_rm) or 2/ε (BA, 1/ε_{1,2}) and the
    dissimilarity's noise Lap(2/(εd)) has scale ≤ λ/1000: with λ = 2²⁶ the capped mean stays below it (margin
    3·2²⁴ > 750 scales: P(publish) < e⁻⁷⁵⁰), the uncapped one would be far above; with λ = 2²² (the control) the
    capped mean is above it (margin > 3,000 scales) and timestamp 1 publishes."""
    d = 1000
    counts = np.full((1, d), 2.0**27)
    assert wevent.difference_cap(noise="float64", sensitivity=1.0 / d) == 2.0**24
    for lam, expected in ((2.0**26, False), (2.0**22, True)):
        eps = (4.0 if method == "bd" else 2.0) / lam
        res = wevent.run(key, counts, method=method, w=1, epsilon=eps, noise="float64")
        stream = wevent.WEventStream(key, d=d, method=method, w=1, epsilon=eps, noise="float64")
        part = wevent.run_partitioned(key, counts, method=method, w=1, epsilon=eps, groups=1, noise="float64")
        assert bool(res.published[0]) is expected
        assert bool(stream.push(counts[0]).published[0]) is expected
        assert bool(np.asarray(part.published)[0, 0]) is expected


@pytest.mark.parametrize("method", ["bd", "ba"])
def test_grid_dissimilarity_sees_changes_between_levels_above_its_grid(key, method):
    """Found in review: with noise="grid" the counts and the last release were each clipped to [0, K] (K = 16,384
    at d = 100) before the dissimilarity, so a stream stepping from 40,000 to 80,000 read as "no change" and its
    releases stayed at 40,000. The runs now cap |c − o_l| at K instead: the step is seen and published, in `run`
    and `run_partitioned` (each counts' publication is Lap(≤ 4), far from the stale 40,000)."""
    counts = np.full((8, 100), 40_000.0)
    counts[4:] = 80_000.0
    res = wevent.run(key, counts, method=method, w=2, epsilon=1.0, noise="grid")
    part = wevent.run_partitioned(key, counts, method=method, w=2, epsilon=1.0, groups=2, noise="grid")
    for r in (res, part):
        tail = np.asarray(r.releases)[-1]
        assert np.abs(tail - 80_000).max() < 200, np.asarray(r.published).astype(int).tolist()


def test_window_sums_and_errors_are_exact_enough_and_refuse_bad_input():
    """Found in review: window sums as differences of one running sum drifted by 6e-11 over 10⁶ steps (467,513
    windows of 10 × 0.1 reported above 1 + 1e-12); a NaN at timestamp 1 made every later window NaN; mismatched
    ledgers broadcast into NumPy's error; mre with sanity 0 gave inf, and "1" a UFuncTypeError; T = 0 gave NaN."""
    ledger = np.full(10**6, 0.1)
    sums = wevent.window_sums(ledger, np.zeros_like(ledger), 10)
    assert np.abs(sums[9:] - 1.0).max() <= 4e-16 and np.all(sums[:9] < 1.0)
    rng = np.random.default_rng(2)
    e1, e2 = rng.uniform(0, 1, (3, 25)), rng.uniform(0, 1, (3, 25))
    for w in (1, 4, 7, 25, 40):  # against direct sums, windows cut at the start
        ref = np.stack([[(e1 + e2)[b, max(0, i - w + 1): i + 1].sum() for i in range(25)] for b in range(3)])
        np.testing.assert_allclose(wevent.window_sums(e1, e2, w), ref, rtol=0, atol=1e-14)
    with pytest.raises(ValueError, match="NaN or inf"):
        wevent.window_sums([np.nan, 0.1, 0.1], [0.0, 0.0, 0.0], 1)
    with pytest.raises(ValueError, match="one shape"):
        wevent.window_sums([0.1, 0.1], [0.1, 0.1, 0.1], 1)
    np.testing.assert_allclose(wevent.window_sums([0.1, 0.2], 0.0, 2), [0.1, 0.3])  # broadcasts, as it always did
    with pytest.raises(TypeError, match="complex"):
        wevent.mae(np.ones((2, 2)) + 0j, np.ones((2, 2)))
    counts = np.ones((4, 2))
    for sanity in (0, -1.0, np.nan, "1", True):
        with pytest.raises(ValueError, match="sanity"):
            wevent.mre(counts, counts, sanity=sanity)
    with pytest.raises(ValueError, match="at least one timestamp"):
        wevent.mae(np.zeros((0, 2)), np.zeros((0, 2)))
    with pytest.raises(ValueError, match="NaN or inf"):
        wevent.mre(np.full((4, 2), np.nan), counts)


@pytest.mark.parametrize("method", ["uniform", "bd"])
def test_fractional_counts_are_rounded_before_float32_so_neighbours_stay_one_apart(key, method):
    """Found in review: with noise="float" the counts were cast to float32 first, which rounds a fraction to the
    spacing 1 in [2²³, 2²⁴): neighbours 8388608.5 and 8388609.5 (1 apart, below the cap) became 8388608 and 8388610, and
    the release moved by 2 under the same key (a loss of 1.985 ε measured). Fractions are now rounded to whole numbers
    exactly, halves up (monotone, commutes with +1), with a curator-only warning, in `run`, `WEventStream` and `run_partitioned` alike; float64 keeps
    them."""
    outs = []
    for c in (8388608.5, 8388609.5):
        counts = np.array([[c, 3.0], [c, 3.0]])
        with pytest.warns(wevent.CountsRoundedWarning, match="2 fractional count"):
            outs.append(np.asarray(wevent.run(key, counts, method=method, w=1, epsilon=1.0).releases, np.float64))
        stream = wevent.WEventStream(key, d=2, method=method, w=1, epsilon=1.0)
        with pytest.warns(wevent.CountsRoundedWarning, match="1 fractional count"):
            pushed = [stream.push(row) for row in counts[:1]]
        with pytest.warns(wevent.CountsRoundedWarning):
            pushed.append(stream.push(counts[1]))
        np.testing.assert_array_equal(np.concatenate([p.releases for p in pushed]), outs[-1])
    assert np.all(np.abs(outs[1] - outs[0])[:, 0] <= 1.0)  # the same noise: the sensitivity, not 2
    if method == "bd":
        with pytest.warns(wevent.CountsRoundedWarning):
            wevent.run_partitioned(key, np.array([[0.5, 2.0, 1.0]] * 3), method="bd", w=2, epsilon=1.0, groups=1)
    # found in review of the fix: object inputs (Fractions, a nullable pandas column) skipped it, and ⌊x⌋ turned
    # 0.29·100 = 28.999999999999996 into 28. Rounding is to the nearest, halves up, for every input that reaches
    # float64: the same release as the whole numbers, same key
    from fractions import Fraction

    whole = np.asarray(wevent.run(key, np.array([[29.0, 8388610.0]]), method=method, w=1, epsilon=1.0).releases)
    for odd in (np.array([[0.29 * 100, 8388609.5]]), np.array([[Fraction(29), Fraction(16777219, 2)]], dtype=object)):
        with pytest.warns(wevent.CountsRoundedWarning):
            got = np.asarray(wevent.run(key, odd, method=method, w=1, epsilon=1.0).releases)
        np.testing.assert_array_equal(got, whole)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # whole numbers, float32 values and float64 arithmetic: nothing floored
        wevent.run(key, np.array([[8388609.0, 3.0]]), method=method, w=1, epsilon=1.0)
        wevent.run(key, jnp.asarray([[1.5, 3.0]], jnp.float32), method=method, w=1, epsilon=1.0)
        kept = wevent.run(key, np.array([[1.5, 3.0]]), method=method, w=1, epsilon=1.0, noise="float64")
    assert kept.releases.dtype == jnp.float64


def test_counts_finer_than_float64_are_rounded_before_the_float64_cast(key):
    """Found in review: in float64 arithmetic (noise="float64", or x64 on) exact fractions — `Fraction`s, `Decimal`s,
    longdoubles — reached the kernel through the float64 cast, which rounds halves to even in [2⁵², 2⁵³) where the
    spacing is 1: neighbours 2⁵² + 0.5 and 2⁵² + 1.5 (1 apart) became 2⁵² and 2⁵² + 2, released 2 apart under the
    same key (≈ 2ε). They are now rounded to whole numbers exactly, halves up, as in float32 (curator-only warning);
    counts given as floats keep their fractions."""
    from decimal import Decimal

    big = 2**52
    pairs = [
        (np.array([[Fraction(2 * big + 1, 2)]], dtype=object), np.array([[Fraction(2 * big + 3, 2)]], dtype=object)),
        (np.array([[Decimal(big) + Decimal("0.5")]], dtype=object), np.array([[Decimal(big) + Decimal("1.5")]], dtype=object)),
    ]
    if np.finfo(np.longdouble).nmant > 52:  # (on platforms where longdouble is float64, nothing is finer)
        pairs.append((np.array([[np.longdouble(big) + np.longdouble(0.5)]]), np.array([[np.longdouble(big) + np.longdouble(1.5)]])))
    for a, b in pairs:
        outs = []
        for counts in (a, b):
            with pytest.warns(wevent.CountsRoundedWarning, match="1 fractional count"):
                res = wevent.run(key, counts, method="uniform", w=1, epsilon=1e6, noise="float64")
            outs.append(float(np.asarray(res.releases, np.float64)[0, 0]) - big)
            stream = wevent.WEventStream(key, d=1, method="uniform", w=1, epsilon=1e6, noise="float64")
            with pytest.warns(wevent.CountsRoundedWarning):
                pushed = stream.push(counts[0])
            assert float(np.asarray(pushed.releases, np.float64)[0, 0]) - big == outs[-1]
        assert outs[1] - outs[0] == 1.0, outs  # the sensitivity, not 2
    with pytest.warns(wevent.CountsRoundedWarning):
        wevent.run_partitioned(key, np.array([[Fraction(1, 2), 2, 1]] * 2, dtype=object), method="bd", w=2,
                               epsilon=1.0, groups=1, noise="float64")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # floats and whole exact numbers: unchanged
        kept = wevent.run(key, np.array([[1.5, 3.0]]), method="uniform", w=1, epsilon=1e9, noise="float64")
        wevent.run(key, np.array([[Fraction(3), 2]], dtype=object), method="uniform", w=1, epsilon=1.0, noise="float64")
    assert abs(float(kept.releases[0, 0]) - 1.5) < 1e-6


def test_dates_and_times_are_not_counts(key):
    """Found in review: datetime64 counts were taken as days since 1970."""
    for counts in (np.array([["2020-01-01"]], dtype="datetime64[D]"), np.array([[3]], dtype="timedelta64[s]")):
        with pytest.raises(TypeError, match="real numbers"):
            wevent.run(key, counts, method="uniform", w=1, epsilon=1.0)


def test_load_counts_takes_a_header_only_where_no_cell_is_a_number(tmp_path):
    """Found in review: a first row with a missing or mistyped first count (",3,4", "1O,3,4") was dropped as a
    header, shifting every timestamp by one; "1_000" (Python's digit separator, not CSV) was read as 1000."""
    p = tmp_path / "c.csv"
    for text in (",3,4\n1,2,3\n", "1O,3,4\n1,2,3\n"):
        p.write_text(text)
        with pytest.raises(ValueError, match=r"c\.csv:1, column 1: not a number"):
            wevent.load_counts(str(p))
    p.write_text("a,b,c\n1,2,3\n")
    np.testing.assert_array_equal(wevent.load_counts(str(p)), [[1, 2, 3]])
    p.write_text("1,2\n1_000,3\n")
    with pytest.raises(ValueError, match=r"c\.csv:2, column 1: not a number"):
        wevent.load_counts(str(p))


def test_difference_cap_checks_its_noise_name():
    with pytest.raises(ValueError, match="noise must be one of"):
        wevent.difference_cap(noise="bogus", sensitivity=1.0)


def test_decimal_counts_round_exactly_beyond_their_context_precision(key):
    """Found in review of the fix above: Decimal's 28-digit context rounded 0.4999…9 (32 nines) up to 1."""
    from decimal import Decimal

    counts = np.array([[Decimal("0." + "4" + "9" * 31), Decimal(3)]], dtype=object)
    with pytest.warns(wevent.CountsRoundedWarning, match="1 fractional count"):
        got = wevent.run(key, counts, method="uniform", w=1, epsilon=1e9, noise="float64").releases
    np.testing.assert_allclose(np.asarray(got, np.float64), [[0.0, 3.0]], atol=1e-6)


@pytest.mark.slow  # (records draws through a host callback and clears JAX's caches, as the other draw-recorder tests; CI's second step)
@pytest.mark.parametrize("method", ["bd", "ba"])
def test_dissimilarity_noise_is_calibrated_to_the_ledgers_eps1_and_sensitivity_1_over_d(key, monkeypatch, method):
    """Every noise draw goes through `mechanisms.laplace_mechanism`; recorded there (a host callback in a fresh
    trace), the private dissimilarity of timestamp i is drawn at exactly the ε_{i,1} the ledger reports, with
    sensitivity 1/d (the mean absolute difference of d counts). Found in an audit of the tests: the dissimilarity
    drawn at 2·ε_{i,1} (the ledger unchanged) passed every fast w-event test."""
    calls, real = [], mechanisms.laplace_mechanism

    def recording(k, x, *, epsilon, sensitivity, noise="float", coordinates=None):
        jax.debug.callback(lambda e, s: calls.append((float(e), float(np.max(s)))), jnp.max(jnp.asarray(epsilon)),
                           jnp.asarray(sensitivity))
        return real(k, x, epsilon=epsilon, sensitivity=sensitivity, noise=noise, coordinates=coordinates)

    d, T = 8, 30
    counts = np.random.default_rng(3).integers(0, 20, (T, d))
    monkeypatch.setattr(mechanisms, "laplace_mechanism", recording)
    jax.clear_caches()  # trace afresh, through the recording mechanism
    try:
        res = wevent.run(key, counts, method=method, w=5, epsilon=1.0)
    finally:
        monkeypatch.undo()
        jax.clear_caches()  # no later test may reuse the recording trace
    dis = [(e, s) for e, s in calls if s != 1.0]  # the publications' draws have sensitivity 1
    assert len(dis) == T
    np.testing.assert_allclose([e for e, _ in dis], np.asarray(res.eps1, np.float64), rtol=1e-6)
    assert all(s == pytest.approx(1 / d) for _, s in dis)


def test_a_missing_count_is_named_as_missing_not_ragged(key):
    """Found in review: a pandas NA among the counts was reported as "ragged rows?"."""
    counts = np.array([[1], [2], [None], [4]], dtype=object)
    try:
        import pandas as pd

        counts[2, 0] = pd.NA
    except ImportError:
        pass
    with pytest.raises(ValueError, match="missing value|NaN"):
        wevent.run(key, counts, method="bd", w=2, epsilon=1.0)
    with pytest.raises(ValueError, match="not a number") as err:  # (NumPy's message quoted the cell: a data value)
        wevent.run(key, np.array([["1"], ["x7"]], dtype=object), method="bd", w=2, epsilon=1.0)
    assert "x7" not in str(err.value)
