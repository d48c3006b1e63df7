"""Mechanisms under audit and their deliberately broken mutants (shared by tests and benchmarks).

Each entry: name -> (claimed ε, mechanism, mutant, x, x', audit kwargs). The mutant breaks one
privacy-relevant detail; the auditor must catch it (lower bound > claimed ε).
"""


import jax
import jax.numpy as jnp
import numpy as np

import jaxdp
from jaxdp import mechanisms
from jaxdp.hvc import quantize


def laplace_case():
    eps = 1.0

    def mech(key, x):
        return jnp.sum(x) + mechanisms.laplace(key, 1.0 / eps, ())  # Δ = 1 for x ∈ [0, 1]

    def mutant(key, x):  # half the noise scale
        return jnp.sum(x) + mechanisms.laplace(key, 0.5 / eps, ())

    return eps, mech, mutant, jnp.asarray([0.0]), jnp.asarray([1.0]), {}


def grid_laplace_case():
    """The float-safe sampler with the codec's calibration: γ = grid_spacing(Δ), scale (Δ + γ)/ε."""
    eps, delta = 1.0, 1.0
    gamma = float(mechanisms.grid_spacing(jnp.asarray(delta)))

    def mech(key, x):
        return mechanisms.grid_laplace_core(key, jnp.sum(x), jnp.asarray((delta + gamma) / eps), jnp.asarray(gamma))

    def mutant(key, x):  # half the scale
        return mechanisms.grid_laplace_core(key, jnp.sum(x), jnp.asarray(0.5 * (delta + gamma) / eps), jnp.asarray(gamma))

    return eps, mech, mutant, jnp.asarray([0.0]), jnp.asarray([1.0]), {}


def exponential_case():
    eps, k = 2.0, 20
    u = jnp.zeros(k).at[0].set(1.0)  # neighbours: every score moves by at most Δ = 1
    u_prime = jnp.ones(k).at[0].set(0.0)

    def mech(key, scores):
        return mechanisms.exponential(key, scores, epsilon=eps, sensitivity=1.0)

    def mutant(key, scores):  # forgot the factor 2: ε/Δ instead of ε/(2Δ)
        return mechanisms.exponential(key, scores, epsilon=2 * eps, sensitivity=1.0)

    return eps, mech, mutant, u, u_prime, dict(discrete=True)


def algorithm1_case(accounting="paper"):
    """Algorithm 1 on a 1×1 block (its worst case: one coefficient carries the whole record)."""
    eps_l, eps_s = 1.0, 0.5
    tab = quantize.device_tables(quantize.tables(1, np.ones(1), kinds=("dct",), accounting=accounting), np.dtype("float32"))
    x_hat = jnp.full((1, 1), 0.5)

    def mech(key, x):
        out, _ = quantize.quantize_block_core(key, x, x_hat, tab, eps_l, eps_s, 1.0)
        return out[0, 0]

    def mutant(key, x):  # Laplace noise at a quarter of the scale (budget miscounted 4x)
        out, _ = quantize.quantize_block_core(key, x, x_hat, tab, 4 * eps_l, eps_s, 1.0)
        return out[0, 0]

    return eps_l + eps_s, mech, mutant, jnp.zeros((1, 1)), jnp.ones((1, 1)), {}


def joint_case():
    """accounting="joint" on a 2×2 DCT block; statistic = the Laplace log-likelihood ratio of x vs x'."""
    eps_l, eps_s = 1.0, 0.05
    n = d = 2
    tab_np = quantize.tables(n, np.ones(d), kinds=("dct",), accounting="joint")
    tab = quantize.device_tables(tab_np, np.dtype("float32"))
    x_hat = jnp.full((n, d), 0.5)
    x = jnp.asarray([[0.0, 1.0], [0.5, 0.5]])
    x_prime = jnp.asarray([[1.0, 0.0], [0.5, 0.5]])
    order = tab_np.order
    _, scales = quantize.allocation("dct", n, np.ones(d), n * d, eps_laplace=eps_l, accounting="joint")
    a = jnp.asarray(np.kron(jaxdp.transforms.matrix("dct", n), jaxdp.transforms.matrix("dct", d))[order], jnp.float32)
    c0, c1 = a @ (x - x_hat).reshape(-1), a @ (x_prime - x_hat).reshape(-1)
    b = jnp.asarray(scales, jnp.float32)

    def llr(out):
        c = a @ (out - x_hat).reshape(-1)
        return jnp.sum((jnp.abs(c - c1) - jnp.abs(c - c0)) / b)

    def mech(key, blk):
        return llr(quantize.quantize_block_core(key, blk, x_hat, tab, eps_l, eps_s, 0.5)[0])

    def mutant(key, blk):  # exact-loss scaling without the Theorem 1 fallback: twice too little noise
        return llr(quantize.quantize_block_core(key, blk, x_hat, tab, 2 * eps_l, eps_s, 0.5)[0])

    return eps_l + eps_s, mech, mutant, x, x_prime, {}


def mode_choice_case():
    """Algorithm 2's mode choice: score -‖x - x̂(φ)‖², sensitivity ‖Λ‖² (Lemma 5), clipped predictions. The
    predictions come from the library's `predict.candidates` (two "inter" modes over a history of released blocks
    outside the domain [0, 1]) and the choice from its exponential mechanism at Δ = ‖Λ‖² = 1, as the codec does
    (found in an audit of the tests: both were written in the test). The mutant skips the clipping."""
    from jaxdp.hvc import predict

    eps = 1.0
    lo, hi = jnp.zeros(1), jnp.ones(1)
    history = jnp.stack([jnp.full((1, 1), -4.0), jnp.full((1, 1), 5.0)])  # released blocks outside [0, 1]

    def choose(key, x, preds):
        score = -jnp.sum((x[None] - preds) ** 2, axis=(1, 2))
        return mechanisms.exponential_mechanism(key, score, epsilon=eps, sensitivity=1.0)

    def mech(key, x):
        return choose(key, x, predict.candidates(history, 2, lo, hi, ("inter",)))  # clipped to the domain

    def mutant(key, x):  # unclipped prediction: Lemma 5 no longer holds
        return choose(key, x, history)

    return eps, mech, mutant, jnp.zeros((1, 1)), jnp.ones((1, 1)), dict(discrete=True)


def pln_case():
    eps = 1.0
    cfg = jaxdp.HVCConfig(1, 1, target_length=1)

    def mech(keys, x):
        return jnp.asarray(jaxdp.pln(keys, np.asarray(x), cfg, epsilon=eps, bounds=np.ones(1)).records[:, 0, 0])

    def mutant(keys, x):  # the frame budget charged twice too low
        return jnp.asarray(jaxdp.pln(keys, np.asarray(x), cfg, epsilon=2 * eps, bounds=np.ones(1)).records[:, 0, 0])

    return eps, mech, mutant, np.zeros((1, 1)), np.ones((1, 1)), dict(batched=True)


def codec_block_case():
    """One full codec block through the public API (mode choice + Algorithm 1), 1 record x 1 attribute."""
    eps = 2.0
    cfg = jaxdp.HVCConfig(1, 1, target_length=1, clip_output=False, prune=False)

    def run(e):
        return lambda keys, x: jnp.asarray(jaxdp.anonymize(keys, np.asarray(x), cfg, epsilon=e, bounds=np.ones(1)).records[:, 0, 0])

    # mutant: the frame budget miscounted 4x (as if ε_j were charged for a quarter of the records)
    return eps, run(eps), run(4 * eps), np.zeros((1, 1)), np.ones((1, 1)), dict(
        batched=True
    )


CASES = {
    "laplace": laplace_case,
    "grid laplace (float-safe)": grid_laplace_case,
    "exponential": exponential_case,
    "algorithm1 (paper)": algorithm1_case,
    "algorithm1 (joint)": lambda: algorithm1_case("joint"),
    "joint accounting 2x2": joint_case,
    "mode choice": mode_choice_case,
    "pln": pln_case,
    "codec block": codec_block_case,
}


def reorder_case():
    """Algorithm 2's reordering (reorder="paper") on a 4×2 DCT block with exact joint accounting.

    The neighbours (found by a search over binary blocks, c_R = 8 = ⌊n²/2⌋) make the footrule-optimal
    permutation change, so the two *coded* blocks differ in two rows although the inputs differ in
    one (exact loss 1.92 ε_QL for this pair): the noise, calibrated for one row, no longer covers it
    (DESIGN note 3). The "mechanism" is the private default (no reordering); the "mutant" is the
    paper's reordering, through the same host solver the codec calls — the audit must flag it.
    """
    from jaxdp.hvc import codec

    eps_l = 1.0
    n, d = 4, 2
    tab_np = quantize.tables(n, np.ones(d), kinds=("dct",), accounting="joint")
    pred = jnp.asarray([[0.0, 1.0], [0.0, 1.0], [0.0, 0.0], [0.0, 0.0]])
    x = jnp.asarray([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    x_prime = x.at[1].set(jnp.asarray([1.0, 0.0]))
    _, scales = quantize.allocation("dct", n, np.ones(d), n * d, eps_laplace=eps_l, accounting="joint")
    a = jnp.asarray(np.kron(jaxdp.transforms.matrix("dct", n), jaxdp.transforms.matrix("dct", d))[tab_np.order], jnp.float32)
    b = jnp.asarray(scales, jnp.float32)

    def coded(blk, reordered):
        if not reordered:
            return blk
        perm = codec.paper_permutations(blk, pred[None], 8, "lagrangian")[0]
        return blk[perm]

    c0 = a @ (np.asarray(x)[[3, 1, 2, 0]] - pred).reshape(-1)  # the coded blocks under reordering
    c1 = a @ (np.asarray(x_prime)[[0, 3, 2, 1]] - pred).reshape(-1)

    def llr(c):
        return jnp.sum((jnp.abs(c - c1) - jnp.abs(c - c0)) / b)

    # Algorithm 1's noise stage with all t = nd coefficients kept (lines 7-9), joint scales: ε_QL-DP
    # for blocks that differ in one row (tested by brute force in test_sensitivity).
    def noisy(key, blk, reordered):
        c = a @ (coded(blk, reordered) - pred).reshape(-1)
        return llr(c + mechanisms.laplace(key, b, (n * d,)))

    def mech(key, blk):
        return noisy(key, blk, False)

    def mutant(key, blk):
        return noisy(key, blk, True)

    return eps_l, mech, mutant, x, x_prime, {}


CASES["reorder='paper' (mutant) vs none"] = reorder_case


def wevent_dissimilarity_case():
    """BD's M_{i,1} through `jaxdp.wevent.run`: the publish decision at timestamp 1 is post-processing of
    MAE(c_1, o_0) + Lap(2w/(εd)), ε_{1,1} = ε/(2w) (one user moves the MAE by ≤ 1/d). The mutant is the
    library run with the window budget charged twice too low."""
    from jaxdp import wevent

    eps, w = 1.0, 2

    def make(e):
        return lambda keys, c: jnp.asarray(
            wevent.run(keys, np.asarray(c)[None], method="bd", w=w, epsilon=e).published[:, 0]
        ).astype(jnp.float32)

    return eps / (2 * w), make(eps), make(2 * eps), np.zeros(4), np.array([1.0, 0.0, 0.0, 0.0]), dict(
        batched=True, discrete=True
    )


def wevent_publication_case():
    """BD's first publication through `jaxdp.wevent.run` (decision forced): c + Lap(2/ε_rm), ε_{1,2} = ε/4."""
    from jaxdp import wevent

    eps = 1.0

    def make(e):
        return lambda keys, c: jnp.asarray(
            wevent.run(keys, np.asarray(c)[None], method="bd", w=2, epsilon=e, decisions=[1]).releases[:, 0, 0]
        )

    # mutant: the publication budget computed from twice the window budget
    return eps / 4, make(eps), make(2 * eps), np.zeros(3), np.array([1.0, 0.0, 0.0]), dict(batched=True)


CASES["w-event M_i1 (dissimilarity)"] = wevent_dissimilarity_case
CASES["w-event M_i2 (BD publication)"] = wevent_publication_case


def efpa_case():
    """EFPA (histogram Algorithm 2) on 4 bins; neighbours differ by one record in bin 1.

    Statistic: the Im F_1 coordinate of the release. The mutant follows the paper's sentence "the
    real-valued noise is only added to the magnitude of coefficients" literally: it perturbs only the
    cosine (real-part) coordinates and releases the sine (imaginary-part) ones exactly.
    """
    from jaxdp import histogram, transforms

    eps = 2.0
    l1 = jnp.asarray(histogram.dft_sensitivity(4), jnp.float32)  # the default, exact accounting

    def mech(key, h):
        return transforms.rdft(histogram.efpa_core(key, h, jnp.asarray(eps, h.dtype), l1)[0])[2]

    def mutant(key, h):
        n = h.shape[0]
        k_sel, k_noise = jax.random.split(key)
        idx = jax.random.categorical(k_sel, -eps * histogram.efpa_scores_core(h, jnp.asarray(eps, h.dtype), l1) / 4.0)
        z = transforms.rdft_size(n, idx + 1)
        i = jnp.arange(n)
        sine = (i >= 2) & (i % 2 == 0) & (i < 2 * ((n - 1) // 2) + 1)
        noise = jnp.where(sine, 0.0, jax.random.laplace(k_noise, (n,), h.dtype) * 2.0 * l1[z] / eps)
        return jnp.where(i < z, transforms.rdft(h) + noise, 0.0)[2]

    return eps, mech, mutant, jnp.zeros(4), jnp.zeros(4).at[1].set(1.0), {}


def php_case():
    """P-HPartition (histogram Algorithm 4) on 2 bins; statistic: are bins 0 and 1 in one cluster?

    The mutant picks the clustering non-privately (HPartition's greedy rule instead of the exponential
    mechanisms) and then releases it with ReleaseHistogram at ε/2 as P-HP does.
    """
    from jaxdp import histogram

    eps = 4.0

    def mech(key, h):
        out, _ = histogram.php_core(key, h, jnp.asarray(eps, h.dtype))
        return (out[0] == out[1]).astype(jnp.float32)

    def mutant(key, h):
        # HPartition on 2 bins: bisect iff RE(whole) = |h0 − h1| exceeds the cost λ = 2/ε of a cluster
        cut = jnp.stack([jnp.asarray(True), jnp.abs(h[0] - h[1]) > 2.0 / eps])
        out = histogram.release_core(key, h, cut, jnp.asarray(eps / 2, h.dtype))
        return (out[0] == out[1]).astype(jnp.float32)

    return eps, mech, mutant, jnp.zeros(2), jnp.asarray([1.0, 0.0]), dict(discrete=True)


CASES["histogram EFPA"] = efpa_case
CASES["histogram P-HP"] = php_case


def compressive_case():
    """The compressive mechanism's measurement step through `jaxdp.compressive.measure`: y* = ΦD + Lap(√k/ε)^k
    with a public Φ ∈ {±1/√k}^{k×n}.

    Neighbours at L1 distance 1 (D = 0 vs D = e_0). Statistic: the log-likelihood ratio of the two inputs
    (the most powerful test), rounded to 4 decimals. The mutant calibrates the noise to sensitivity 1
    (forgetting that the k samples move by √k in L1, Appendix A): the library called with ε·√k.
    """
    from jaxdp import compressive

    eps, k, n = 1.0, 4, 4
    key_phi = jax.random.key(123)
    phi = compressive.measure(key_phi, jax.random.key(0), jnp.zeros(n), epsilon=eps, k=k)[0]
    y0 = jnp.zeros(k)
    y1 = phi[:, 0]

    def make(e):
        scale = np.sqrt(k) / eps  # the LLR's scale: the claimed calibration

        def mech(key, d):
            y = compressive.measure(key_phi, key, d, epsilon=e, k=k)[1]
            # rounded so that the atom at the maximal ratio is not split by float rounding of the sum
            return jnp.round(jnp.sum(jnp.abs(y - y0) - jnp.abs(y - y1)) / scale, 4)

        return mech

    return eps, make(eps), make(eps * np.sqrt(k)), jnp.zeros(n), jnp.zeros(n).at[0].set(1.0), {}


CASES["compressive measurement"] = compressive_case


# ---------------------------------------------------------------------------------------------
# Privacy at the edges (issue: secret keys, exact samplers, no leaking diagnostics)
# ---------------------------------------------------------------------------------------------
def _float_discrete_laplace(key, x, scale, spacing):
    """The pre-exact grid sampler, kept as a mutant: ⌊E·b/γ⌋ from float32 exponentials (2²³ values) and
    a float32 sum. At b/γ ≫ 2²³ most integers are unreachable and the output parity tells inputs apart."""
    k1, k2 = jax.random.split(key)
    ratio = scale / spacing
    g1 = jnp.floor(jax.random.exponential(k1, (), jnp.float32) * ratio)
    g2 = jnp.floor(jax.random.exponential(k2, (), jnp.float32) * ratio)
    return (jnp.round(x / spacing) + (g1 - g2)) * spacing


def grid_parity_case():
    """Exact discrete Laplace at b/γ = 1.2·10⁷ (γ = 1, Δ = 1); statistic: the parity of the output.

    Nominal ε = (Δ + γ)/b ≈ 1.7·10⁻⁷. The float mutant (the old sampler) separates neighbours by parity."""
    gamma, b = 1.0, 1.2e7
    eps = (1.0 + gamma) / b

    def parity(v):
        return jnp.mod(v, 2.0).astype(jnp.float32)

    def mech(key, x):
        return parity(mechanisms.grid_laplace_core(key, jnp.sum(x), jnp.asarray(b), jnp.asarray(gamma)))

    def mutant(key, x):
        return parity(_float_discrete_laplace(key, jnp.sum(x), jnp.float32(b), jnp.float32(gamma)))

    return eps, mech, mutant, jnp.asarray([0.0]), jnp.asarray([1.0]), dict(discrete=True)


def public_seed_case():
    """A release with a key only the curator knows, vs one whose key is a public seed (the old CLI default
    ``--seed 0``): the release is then a deterministic function of the data, and the audit sees it."""
    eps = 1.0

    def mech(key, x):
        return jnp.sum(x) + mechanisms.laplace(key, 1.0 / eps, ())

    def mutant(key, x):  # ignores the fresh key: everyone can recompute the noise
        del key
        return jnp.sum(x) + mechanisms.laplace(jax.random.key(0), 1.0 / eps, ())

    return eps, mech, mutant, jnp.asarray([0.0]), jnp.asarray([1.0]), {}


def leaking_diagnostic_case():
    """The numbers published with a stream release besides the records (ε spent, t per block, counts).

    The mechanism publishes what `Result` holds; the mutant also publishes the count of clipped values
    (the old ``Result.clipped``), an exact function of the raw data: one out-of-domain value moves it."""
    from jaxdp.diagnostics import curator_diagnostics

    eps = 2.0
    cfg = jaxdp.HVCConfig(1, 1, target_length=1, prune=False)

    def published(keys, x, leak):
        res = jaxdp.anonymize(keys, np.asarray(x), cfg, epsilon=eps, bounds=np.ones(1))
        stat = res.records[:, 0, 0] + 10.0 * res.info.t[:, 0]  # the released record and the chosen t
        if leak:
            stat = stat + 100.0 * curator_diagnostics(res, np.asarray(x)).clipped_total
        return jnp.asarray(stat, jnp.float32)

    return eps, (lambda k, x: published(k, x, False)), (lambda k, x: published(k, x, True)), \
        np.full((1, 1), 1.0), np.full((1, 1), 1.5), dict(batched=True)  # x' is out of the domain [0, 1]


def _frame_case(release, r=4, eps=1.0):
    """A frame of r one-record subjects in [0, 1] (records_per_subject=1: ε per frame); neighbours differ
    in the first record; the statistic is the last record's release (another subject's row, which
    depends on the first only through the frame's noisy means). The mutant charges the frame r× too
    little — the same noise as a sensitivity ΣΛ/r² instead of ΣΛ/r."""

    cfg = jaxdp.HVCConfig(r, 1, records_per_subject=1)

    def run(e):
        return lambda keys, x: jnp.asarray(release(keys, np.asarray(x), cfg, epsilon=e, bounds=np.ones(1)).records[:, -1, 0])

    x = np.zeros((r, 1))
    x_prime = x.copy()
    x_prime[0, 0] = 1.0
    return eps, run(eps), run(r * eps), x, x_prime, dict(batched=True)


CASES["frame-mean layer (default HVC)"] = lambda: _frame_case(jaxdp.anonymize)
CASES["baseline: running frame mean"] = lambda: _frame_case(jaxdp.frame_mean)
CASES["baseline: microaggregation"] = lambda: _frame_case(lambda k, x, c, epsilon, bounds: jaxdp.microaggregate(k, x, c, epsilon=epsilon, bounds=bounds, group=4))
CASES["grid laplace parity at b/γ = 1.2e7"] = grid_parity_case
CASES["public seed (mutant) vs secret key"] = public_seed_case
CASES["leaking diagnostic (mutant): clipped count"] = leaking_diagnostic_case
