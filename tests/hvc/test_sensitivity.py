import itertools

import jax.numpy as jnp
import numpy as np
import pytest
import reference as ref

from jaxdp import transforms
from jaxdp.hvc import quantize, sensitivity
from jaxdp.transforms import orders

KINDS = ("dct", "dst", "dht", "identity")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n, d", [(1, 1), (2, 1), (2, 3), (3, 2), (4, 4), (5, 3), (3, 6)])
def test_lemma1_table_equals_bruteforce(kind, n, d):
    width = np.random.default_rng(n * 10 + d).uniform(0.5, 3.0, size=d)
    table = sensitivity.coefficient_table(kind, n, width)
    assert table.shape == (n, d)
    np.testing.assert_allclose(table, ref.lemma1_bruteforce(kind, n, width), rtol=1e-12)


def test_lemma1_uses_width_of_lo_hi_bounds():
    lo = np.array([-5.0, 10.0, 0.0])
    hi = np.array([5.0, 12.0, 1.0])
    np.testing.assert_allclose(
        sensitivity.coefficient_table("dht", 4, np.stack([lo, hi])), sensitivity.coefficient_table("dht", 4, hi - lo)
    )


@pytest.mark.parametrize("n", range(2, 65))
def test_proposition1_dct(n):
    a = transforms.matrix("dct", n)
    first = 1.0 / np.sqrt(n)  # a^n_{1j} for every j
    # What the proof of Proposition 1 establishes: for every column j some row i >= 2 has |a_ij| >= a_1j.
    assert np.all(np.abs(a[1:]).max(axis=0) >= first - 1e-12)
    # What Corollary 1 uses: every row's largest entry is at least the first row's, |a_{i,r*(i)}| >= a_{1,·}.
    assert np.all(np.abs(a).max(axis=1) >= first - 1e-12)


def test_proposition1_literal_reading_is_false():
    # The statement "for any i >= 2 and any j, |a_ij| >= a_1i" is false as written: a^3_{2,2} = 0.
    a = transforms.matrix("dct", 3)
    assert abs(a[1, 1]) < 1e-15 < a[0, 1]


@pytest.mark.parametrize("n, d", [(2, 2), (8, 13), (16, 16), (13, 8), (64, 64), (48, 13), (7, 64)])
def test_corollary1(n, d):
    width = np.random.default_rng(n + d).uniform(0.1, 10.0, size=d)
    gs_identity = sensitivity.identity_sensitivity(width)
    dct = sensitivity.coefficient_table("dct", n, width)
    assert np.all(dct[0][None, :] <= dct + 1e-12)  # (i) first row has the lowest sensitivity
    for kind in ("dct", "dst", "dht"):  # (ii) every coefficient is <= 2/sqrt(nd) GS(I_r)
        assert np.all(sensitivity.coefficient_table(kind, n, width) <= 2 / np.sqrt(n * d) * gs_identity + 1e-12)
    dst = sensitivity.coefficient_table("dst", n, width)
    assert np.all(dst <= 2 / np.sqrt((n + 1) * (d + 1)) * gs_identity + 1e-12)


def test_fig8_frobenius_varies_little_with_n_and_grows_with_d():
    values = {
        d: np.array([[sensitivity.frobenius(k, n, np.ones(d)) for k in ("dct", "dst", "dht")] for n in (8, 16, 32, 48)])
        for d in (10, 13)
    }
    for v in values.values():
        assert v.max() / v.min() < 1.2  # "does not vary significantly with the block size"
    ratio = values[13].max() / values[10].max()
    assert 1.2 < ratio < 1.4  # "roughly linear with d": 13/10 = 1.3
    assert sensitivity.frobenius("dct", 8, np.ones(13)) == pytest.approx(
        np.linalg.norm(sensitivity.coefficient_table("dct", 8, np.ones(13)))
    )


def _neighbours(x, lo, hi):
    """All blocks that replace one row of x by a vertex of the domain box."""
    n, d = x.shape
    for r in range(n):
        for bits in itertools.product((0, 1), repeat=d):
            y = x.copy()
            y[r] = np.where(np.asarray(bits) == 1, hi, lo)
            yield y


@pytest.mark.parametrize("theta", [0.5, 1.0])
@pytest.mark.parametrize("kinds", [("dct", "dst", "dht")] + [pytest.param(k, marks=pytest.mark.slow) for k in (("dht",), ("dct", "identity"))])
def test_lemma3_bounds_hold_by_bruteforce(theta, kinds, x64):
    rng = np.random.default_rng(3)
    n, d = 3, 3
    lo, hi = np.array([0.0, -2.0, 1.0]), np.array([4.0, 1.0, 2.5])
    bounds = np.stack([lo, hi])
    worst = 0.0
    bound_max = 0.0
    for trial in range(6):
        x = rng.uniform(lo, hi, size=(n, d))
        x_hat = rng.uniform(lo, hi, size=(n, d)) if trial % 2 else np.broadcast_to(lo, (n, d)).copy()
        bound = float(sensitivity.score_sensitivity(theta, n, bounds, kinds=kinds, x_hat=x_hat))
        bound_max = max(bound_max, bound)
        probs_score = _scores(x, x_hat, bounds, kinds, theta)
        for y in _neighbours(x, lo, hi):
            diff = np.abs(_scores(y, x_hat, bounds, kinds, theta) - probs_score).max()
            worst = max(worst, diff)
            assert diff <= bound * (1 + 1e-9)
    assert worst > 0.05 * bound_max  # the check exercised real differences


def _scores(x, x_hat, bounds, kinds, theta):
    m = np.asarray(quantize.mse_table(x, x_hat, bounds, kinds=kinds, eps_laplace=1.0))
    if theta == 1.0:
        return -m
    tab = quantize.tables(x.shape[0], bounds, kinds=kinds)
    lap = np.asarray(tab.laplace_mse)
    return -np.sqrt(lap) - np.sqrt(np.maximum(m - lap, 0.0))


def test_lemma5_holds_for_clipped_predictions_and_fails_without(x64):
    rng = np.random.default_rng(5)
    lo, hi = np.zeros(3), np.array([1.0, 2.0, 3.0])
    bound = sensitivity.mode_score_sensitivity(hi)
    assert bound == pytest.approx(1 + 4 + 9)
    x = rng.uniform(lo, hi, size=(4, 3))

    def kappa(block, pred):
        return -np.sum((block - pred) ** 2)

    worst_in, worst_out = 0.0, 0.0
    for _ in range(50):
        inside = rng.uniform(lo, hi, size=(4, 3))
        outside = inside + rng.choice([-1, 1], size=(4, 3)) * 5 * hi  # a prediction far outside the domain
        for y in _neighbours(x, lo, hi):
            worst_in = max(worst_in, abs(kappa(x, inside) - kappa(y, inside)))
            worst_out = max(worst_out, abs(kappa(x, outside) - kappa(y, outside)))
    assert worst_in <= bound
    assert worst_out > bound  # DESIGN note 2: unclipped predictions break Lemma 5
    # the codec's mode choice uses this bound (found in an audit of the tests: the mode-choice audit wrote Δ = 1 for
    # one column itself, so the codec's ‖Λ‖² replaced by max Λ² passed every test)
    from jaxdp import HVCConfig
    from jaxdp.hvc import codec

    lo2 = np.array([-1.0, 0.5, 2.0])
    prm = codec.params(HVCConfig(4, 3, modes=("midpoint", "inter")), lo2, lo2 + hi, np.float64)
    assert float(prm.mode_sensitivity) == pytest.approx(sensitivity.mode_score_sensitivity(np.stack([lo2, lo2 + hi])))
    assert float(prm.mode_sensitivity) == pytest.approx(14.0)


@pytest.mark.parametrize("kind", ["dct", "dst", "dht"])
@pytest.mark.parametrize("n, d", [(2, 2), (3, 3), (4, 2), (2, 5)])
def test_joint_loss_equals_bruteforce(kind, n, d):
    width = np.random.default_rng(n * d).uniform(0.5, 2.0, size=d)
    order = orders.zigzag(n, d)
    scales = np.random.default_rng(1).uniform(0.5, 2.0, size=n * d)
    for t in (1, 2, n * d):
        want = ref.joint_loss_bruteforce(kind, n, width, order, scales[:t])
        assert sensitivity.joint_privacy_loss(kind, n, width, scales[:t]) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("kind", ["dct", "dst", "dht"])
@pytest.mark.parametrize("n, d, order", [(3, 3, "zigzag")] + [pytest.param(*c, marks=pytest.mark.slow) for c in ((4, 2, "diagonal"), (2, 6, "zigzag"))])
def test_joint_accounting_spends_exactly_the_budget_by_bruteforce(kind, n, d, order):
    width = np.random.default_rng(7).uniform(0.5, 2.0, size=d)
    idx = orders.get(order, n, d)
    eps = 0.7
    for t in range(1, n * d + 1):
        _, paper_scales = quantize.allocation(kind, n, width, t, eps_laplace=eps, order=order)
        _, joint_scales = quantize.allocation(kind, n, width, t, eps_laplace=eps, order=order, accounting="joint")
        paper_loss = ref.joint_loss_bruteforce(kind, n, width, idx, paper_scales)
        joint_loss = ref.joint_loss_bruteforce(kind, n, width, idx, joint_scales)
        assert paper_loss <= eps * (1 + 1e-12)  # Theorem 1 is valid (and loose)
        assert joint_loss == pytest.approx(eps, rel=1e-9)  # exact loss equals the budget, never more
        assert joint_loss <= eps * (1 + 1e-12)
        assert np.all(joint_scales <= paper_scales * (1 + 1e-12))  # joint noise never above the paper's
        assert 2 * np.sum(joint_scales**2) <= 2 * np.sum(paper_scales**2) * (1 + 1e-12)


def test_joint_factor_matches_design_note_numbers():
    rho = sensitivity.joint_factor("dct", 8, np.ones(13))
    assert rho[0] == 0.0 and np.all(rho[1:] <= 1.0) and rho[1] == pytest.approx(1.0)
    assert rho[2] == pytest.approx(0.6, abs=0.01)  # DESIGN note 4: "only 0.6 ε at t=2"
    assert np.all((rho[8:33] > 0.3) & (rho[8:33] < 0.55))  # "≈0.3–0.5 ε at t=8…32"


def test_joint_falls_back_to_paper_bound_for_large_d():
    rho = sensitivity.joint_factor("dct", 2, np.ones(sensitivity.JOINT_MAX_D + 1))
    assert np.all(rho[1:] == 1.0)
    with pytest.raises(ValueError, match="JOINT_MAX_D"):
        sensitivity.joint_privacy_loss("dct", 2, np.ones(sensitivity.JOINT_MAX_D + 1), [1.0])


@pytest.mark.parametrize(
    "bounds",
    [[1.0, 0.0], [1.0, -2.0], [np.nan, 1.0], [np.inf, 1.0], [[0.0, 0.0], [1.0, 0.0]], np.ones((3, 2)), [], "abc"],
)
def test_bad_bounds_are_rejected(bounds):
    with pytest.raises((ValueError, TypeError)):
        sensitivity.coefficient_table("dct", 4, bounds)


def test_score_sensitivity_errors():
    with pytest.raises(ValueError, match="theta"):
        sensitivity.score_sensitivity(2.0, 4, np.ones(3))
    with pytest.raises(ValueError, match="x_hat"):
        sensitivity.score_sensitivity(1.0, 4, np.ones(3))
    out = sensitivity.score_sensitivity(1.0, 4, np.ones(3), x_hat=jnp.zeros((2, 4, 3)))
    assert out.shape == (2,)


def test_sensitivity_tables_refuse_sizes_the_codec_cannot_take():
    # found in review: coefficient_table/score_sensitivity/joint_* with n = 10⁵ built n × n float64 matrices
    # (75 GiB); n is a block size (≤ 1024, as HVCConfig checks) and d indexes a d × d matrix
    for call in (lambda: sensitivity.coefficient_table("dct", 10**5, np.ones(3)),
                 lambda: sensitivity.score_sensitivity(0.5, 10**5, np.ones(3)),
                 lambda: sensitivity.joint_factor("dct", 10**5, np.ones(3)),
                 lambda: sensitivity.joint_privacy_loss("dct", 10**5, np.ones(3), [1.0])):
        with pytest.raises(ValueError, match="at most 1,024"):
            call()
    with pytest.raises(ValueError, match="d \\(the attributes in bounds\\) must be at most 16,384"):
        sensitivity.coefficient_table("dct", 4, np.ones(20_000))
    with pytest.raises(ValueError, match="theta"):  # before any table is built
        sensitivity.score_sensitivity(2.0, 10**5, np.ones(3))
