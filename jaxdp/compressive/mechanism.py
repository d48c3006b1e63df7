"""The compressive mechanism (Algorithm 1): projection, noise, sparsity choice, and the Laplace baseline."""

from __future__ import annotations

import dataclasses

import functools
import math
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from jaxdp import _validate, mechanisms
from jaxdp.compressive.recovery import _basis_key, _HashableMatrix, _recover, min_c5, psi_ops
from jaxdp._validate import vector as _check_vector  # the eager checks live in _validate

__all__ = ['measure', 'CompressiveConfig', 'sparsity_scores', 'max_sparsity', 'measurements', 'projection', 'CompressiveResult', 'compressive', 'laplace_identity']


class ValuesClampedWarning(UserWarning):
    """Input values beyond a public cap were clamped to it (a tree counter's `value_cap`; the compressive mechanism's
    and `laplace_identity`'s caps; the grid sampler's range). Clamping each value is 1-Lipschitz, so the sensitivity
    and the privacy guarantee are kept; the release is biased where it happens. Whether the warning fires reads the
    raw data: a curator-only diagnostic (its message names the public cap, never a count or a value). Found in
    review: these releases used to be *refused* past their limits, and a refusal tells neighbours on either side of
    a limit apart."""


def _clamp_warned(v: np.ndarray, cap: float, why: str, stacklevel: int = 3) -> np.ndarray:
    """Each value of `v` clamped to [−cap, cap] (public), with a curator-only `ValuesClampedWarning` if any was (its
    message names the cap and `why`, never a count or a value). Shared by the compressive mechanism,
    `laplace_identity`, the tree counters and CMCO."""
    if np.any(np.abs(v) > cap):
        warnings.warn(ValuesClampedWarning(f"values beyond ±{cap:,.6g} ({why}) were clamped to it (curator-only: whether "
                                           "this fires reads the raw data)."), stacklevel=stacklevel)
        return np.clip(v, -cap, cap)
    return v


@dataclasses.dataclass(frozen=True, kw_only=True)
class CompressiveConfig:
    """Public settings of the compressive mechanism.

    Attributes:
      basis: ``"haar"`` (n a power of two), ``"dct"``, or an orthonormal ``[n, n]`` matrix Ψ whose
        columns are the basis vectors (checked: ``ΨᵀΨ = I`` to 1e-6).
      c2: C₂ of Lemma 1 / Eq. (1) (default 1: the paper gives no value; it weighs the approximation term).
      c4: C₄ of Eq. (1) (default 1: weight of the noise term ``S·log(n/S)/ε``).
      c5: C₅ (sensitivity of u is C₅/√S); None → `min_c5` (the exact bound). Smaller values are rejected.
      c_k: measurements per ``S·log(n/S)`` (k = ⌈c_k·S·log(n/S)⌉, default 4).
      select_fraction: share of ε for the exponential choice of S (default 0.1, the paper's Sec. 7.1.1).
      iterations: NIHT iterations (default 100); refit: CG steps of the final least squares (default 30).
      l1_sensitivity: Δ, the L1 distance of neighbouring vectors (default 1).
    """

    basis: object = "haar"
    c2: float = 1.0
    c4: float = 1.0
    c5: float | None = None
    c_k: float = 4.0
    select_fraction: float = 0.1
    iterations: int = 100
    refit: int = 30
    l1_sensitivity: float = 1.0

    def __post_init__(self):
        # the settings that do not depend on n, on construction (the basis and C₅ are checked against n at
        # the call)
        for name in ("c2", "c4", "c_k", "l1_sensitivity"):
            _validate.positive_scalar(name, getattr(self, name))
        # found in review: c5 = nan passed the check at the call (nan < need is False) and fixed S = 1 silently
        for name in ("c5", "select_fraction"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating))):
                raise TypeError(f"{name} must be a number, got {v!r}.")
        if self.c5 is not None and not (math.isfinite(self.c5) and self.c5 > 0):
            raise ValueError(f"c5 must be a finite number > 0 (or None: the exact constant), got {self.c5!r}.")
        if not 0 < self.select_fraction < 1:
            raise ValueError(f"select_fraction must lie in (0, 1), got {self.select_fraction}.")
        _validate.size("iterations", self.iterations)
        _validate.size("refit", self.refit)
        if isinstance(self.basis, str) and self.basis not in ("haar", "dct"):  # (found in review: refused only at
            # the call) a matrix is checked against n there
            raise ValueError(f"basis must be 'haar', 'dct' or an orthonormal [n, n] matrix, got {self.basis!r}.")


def _check_config(config: CompressiveConfig, n: int) -> float:
    """Validate the public settings eagerly; return the C₅ to use."""
    if not isinstance(config, CompressiveConfig):
        raise TypeError(f"config must be a CompressiveConfig, got {type(config).__name__}.")
    return _c5(config, n)


def _c5(config: CompressiveConfig, n: int) -> float:
    need = min_c5(config.basis, n, c2=config.c2)
    if config.c5 is None:
        return need
    if config.c5 < need:  # no tolerance below: a smaller C5 would under-calibrate the choice of S
        raise ValueError(
            f"c5 = {config.c5} is below the true sensitivity constant {need:.4g} of u(D, S) for this basis "
            "(C₂·max_j ‖Ψᵀe_j‖₁); with it the choice of S would not be DP. Use c5=None."
        )
    return float(config.c5)


# --------------------------------------------------------------------------------------- S selection
def sparsity_scores(x: Float[Array, " n"], *, epsilon_noise, c2, c4) -> Float[Array, " n"]:
    """u(D, S) of Eq. (1) for S = 1 … n: ``C₂‖x − x_S‖₁/√S + C₄·S·log(n/S)/ε_noise`` (index S−1)."""
    n = x.shape[-1]
    mags = jnp.sort(jnp.abs(x))  # ascending: the tail after the S largest is the first n − S entries
    below = jnp.concatenate([jnp.zeros((1,), x.dtype), jnp.cumsum(mags)])  # below[m] = sum of m smallest
    s = jnp.arange(1, n + 1)
    tail = below[n - s]
    sf = s.astype(x.dtype)
    return c2 * tail / jnp.sqrt(sf) + c4 * sf * jnp.log(n / sf) / epsilon_noise


def max_sparsity(n: int, c_k: float) -> int:
    """The largest candidate S: S ≤ n/e (where S·log(n/S) peaks) and ⌈c_k·S·log(n/S)⌉ ≤ n.

    Eq. (1) taken over all S ∈ [1, n] rewards S → n: its noise term C₄·S·log(n/S)/ε falls back to 0 at
    S = n, where the "compressed" sample would have as many entries as D. The candidate set is
    therefore cut at this public bound (a function of n and c_k only).
    """
    _validate.size("n", n)  # found in review: n = 0 ended in "math domain error"
    if isinstance(c_k, (bool, np.bool_)) or not isinstance(c_k, (int, float, np.integer, np.floating)) \
            or not (math.isfinite(c_k) and c_k > 0):
        raise ValueError(f"c_k must be a finite number > 0, got {c_k!r}.")
    best = 1
    for s_ in range(1, max(1, int(n / math.e)) + 1):
        if math.ceil(c_k * s_ * math.log(n / s_)) <= n:
            best = s_
    return best


@functools.partial(jax.jit, static_argnums=(7,), static_argnames=("noise",))
def _select_s(key, x, eps_sel, eps_noise, c2, c4, c5, s_max, noise="float"):
    u = sparsity_scores(x, epsilon_noise=eps_noise, c2=c2, c4=c4)
    s = jnp.arange(1, x.shape[-1] + 1).astype(x.dtype)
    normalized = u / (c5 / jnp.sqrt(s))  # each normalized score has sensitivity ≤ 1; lower is better
    scores = jnp.where(jnp.arange(1, x.shape[-1] + 1) <= s_max, -normalized, -jnp.inf)
    return mechanisms.exponential_mechanism(key, scores, epsilon=eps_sel, sensitivity=1.0, noise=noise) + 1


def measurements(n: int, s: int, c_k: float) -> int:
    """k = ⌈c_k·S·log(n/S)⌉ clipped to [1, n], and k = n at S = n (every sample).

    The formula peaks at S = n/e and falls after it (below S near n): `compressive` refuses a public S whose k
    would be below S, unless k is given.
    """
    n, s = _validate.size("n", n), _validate.size("s", s)  # found in review: S = 0 ended in a ZeroDivisionError
    if s > n:
        raise ValueError(f"s = {s} exceeds n = {n}.")
    if isinstance(c_k, bool) or not isinstance(c_k, (int, float, np.integer, np.floating)) or not (
            math.isfinite(c_k) and c_k > 0):
        raise ValueError(f"c_k must be a finite number > 0, got {c_k!r}.")
    return int(min(n, max(1, math.ceil(c_k * s * math.log(n / s))))) if s < n else n


# --------------------------------------------------------------------------------------- projection
def projection(key: jax.Array, k: int, n: int, dtype=None) -> Float[Array, "k n"]:
    """The public random matrix Φ ∈ {±1/√k}^{k×n} (i.i.d. symmetric Bernoulli) from `key`, the same in any dtype and
    with or without ``jax_enable_x64``. `measure(key_phi, …)` uses ``projection(key_phi, k, n)``; a release
    ``r = compressive(key, …)`` draws its Φ from the first of ``jax.random.split(key, 3)``, so its Φ is
    ``projection(jax.random.split(key, 3)[0], r.k, n)`` (with a key array, per key; found in review: this said
    `compressive` used ``projection(key, …)``)."""
    _validate.key(key, max_ndim=0)
    for name, v in (("k", k), ("n", n)):  # found in review: k = -1 ended in an MLIR error
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}.")
    dtype = dtype or _validate.float_dtype()
    return _signs(key, (k, n), dtype) / jnp.sqrt(jnp.asarray(k, dtype))


def _signs(key: jax.Array, shape, dtype) -> jax.Array:
    """i.i.d. ±1 (exactly, in `dtype`) from the top bit of 32-bit words: the same signs whatever the dtype and
    the x64 mode (`jax.random.rademacher` draws a uniform of the default float width, so its signs for one key
    change with ``jax_enable_x64``; the compressive mechanism measures under x64 and recovers without it)."""
    bits = jax.random.bits(key, tuple(shape), jnp.uint32)
    return jnp.where((bits >> 31) == 1, jnp.asarray(1, dtype), jnp.asarray(-1, dtype))


# --------------------------------------------------------------------------------------- mechanisms

class CompressiveResult(NamedTuple):
    """Output of `compressive`: the release D* ``[n]``, the sparsity S and number of samples k used
    (``[R, n]``, ``[R]``, ``[R]`` for a key array ``[R]``), the ε each release spent (publishing all R
    spends R·ε) and `private` (True: ε-DP given a secret key used once; jaxdp cannot see where a key
    came from). S and k are releasable: derived from private outputs or public settings."""

    release: Float[Array, "*R n"]  # a JAX array, whether one key or a key array was given
    sparsity: int | np.ndarray  # int for one key, int64 ``[R]`` for a key array (likewise k)
    k: int | np.ndarray
    epsilon_spent: float
    private: bool


def compressive(key: jax.Array, d, *, epsilon: float, config: CompressiveConfig = CompressiveConfig(),
                sparsity: int | None = None, k: int | None = None, noise: str = "float") -> CompressiveResult:
    """The compressive mechanism (the paper's Algorithm 1).

    Privacy:
      ε-DP for neighbours at L1 distance ≤ Δ = ``config.l1_sensitivity``: the k samples ΦD move by at
      most √k·Δ in L1 (each column of Φ has L1 norm √k; Appendix A; brute-force tested), so
      ``Lap(√k·Δ/ε_n)`` is ε_n-DP; recovery is post-processing. With ``sparsity=None`` S is drawn with
      ε_s = select_fraction·ε by the exponential mechanism on u(D, S)·√S/C₅ (sensitivity ≤ 1 with the
      computed C₅) and ε_n = ε − ε_s; with a public `sparsity`, ε_n = ε.

    Args:
      key: typed PRNG key (split inside: Φ, choice of S, noise), or a key array ``[R]`` for R
        independent releases: S is drawn for all keys at once, then the runs are grouped by S (hence k)
        and each group is one vmapped call (same distribution as R calls, not the same draws).
      d: the vector D, shape ``[n]``. Each value is clamped to the public cap ``_total_cap/n`` (‖D‖₁ ≤ 2⁴⁰·Δ, and
        what the recovery's squares hold in the release dtype; 1-Lipschitz, so the sensitivity is kept), with a
        curator-only `ValuesClampedWarning` where it bites.
      epsilon: total ε > 0.
      config: `CompressiveConfig`.
      sparsity: a public S (skips the private choice), 1 ≤ S ≤ n; where the default k would be below S (S past
        ≈ n/e) only with a public `k` (S = n takes every sample).
      k: a public number of samples (default ⌈c_k·S·log(n/S)⌉, `measurements`).
      noise: ``"float"`` (default), ``"float64"`` or ``"grid"`` (exact samplers; `jaxdp.mechanisms.NOISES`).

    Returns:
      `CompressiveResult` (S and k are releasable: derived from private outputs).
    """
    _validate.key(key)
    if key.ndim > 1:
        raise ValueError(f"key must be one typed key or a 1-D key array [R], got shape {key.shape}.")
    if not _validate.is_concrete(key):  # found in review: under jax.vmap this ended in TracerArrayConversionError
        raise TypeError("compressive runs eagerly (S is drawn, then k samples of that size are taken): for R releases "
                        "pass a key array [R] (jax.random.split(key, R)) instead of jax.vmap, and call it outside jax.jit.")
    epsilon = float(_validate.eager_epsilon(epsilon, "compressive.compressive"))  # a Python float: a float32 ε split
    # in float32 overspent (found in review: ε_sel + ε_n = 0.70000005 for ε = float32(0.7))
    noise = mechanisms.check_noise(noise)
    v = _check_vector(d, check_l1=False)
    if isinstance(config, CompressiveConfig):  # (another type is refused below, with its own message)
        if k is None:
            _check_public_sparsity(v.size, sparsity, config.c_k)
        with mechanisms.precision(noise):
            dtype = np.dtype(_validate.float_dtype())
        # Each value clamped to a public cap (1-Lipschitz: the sensitivity is kept), so that ‖D‖₁ stays where the
        # float64 samples ΦD keep the sensitivity (≤ 2⁴⁰·Δ, `_validate.ROUNDED_TOTAL_LIMIT`; found in review: they
        # moved by 10.17 against √k = 10 near ‖D‖₁ = 2⁵³) and the recovery's squares fit the release dtype. These
        # were refusals that read ‖D‖₁; a refusal tells neighbours on either side of the limit apart (review).
        total = _total_cap(v.size, float(epsilon), config, sparsity, k, dtype)
        v = _clamp_warned(v, total / v.size, "the compressive mechanism's cap: its L1 total over n values, where "
                          "float64 samples keep the sensitivity and the recovery fits the release dtype")
        _check_recovery_range(v.size, float(epsilon), config, sparsity, k, total, dtype)
        if noise == "grid":
            _check_grid_every_k(v.size, float(epsilon), config, sparsity, k, float(np.sum(np.abs(v))))
    with mechanisms.precision(noise):
        if key.ndim == 1:
            return _compressive_many(key, v, epsilon, config, sparsity, k, noise)
        return _compressive_public(key, v, epsilon, config, sparsity, k, noise)


def _total_cap(n, epsilon, config, sparsity, k, dtype) -> float:
    """The public cap on ‖D‖₁: 2⁴⁰·Δ (float64 samples keep the sensitivity), and at most what the recovery's squared
    norms hold in `dtype` (`_check_recovery_range`'s data term)."""
    cap = _validate.ROUNDED_TOTAL_LIMIT * float(config.l1_sensitivity)
    if isinstance(sparsity, (type(None), int, np.integer)) and isinstance(k, (type(None), int, np.integer)):
        ks, _ = _candidate_ks(n, epsilon, config, sparsity, k)
        if ks.size:
            cap = min(cap, math.sqrt(float(np.finfo(dtype).max) / (float(ks.max()) * n)) / 64.0 * (1 - 1e-6))
    return cap


def _check_public_sparsity(n, sparsity, c_k):
    """Refuse a public S whose default number of samples k = ⌈c_k·S·log(n/S)⌉ is below S (past n/e the formula
    falls; found in review: S = 255 of n = 256 took k = 4 samples and released an unrecoverable vector without a
    word), unless k is given. S = n takes every sample (k = n)."""
    if isinstance(sparsity, (int, np.integer)) and not isinstance(sparsity, (bool, np.bool_)) and 1 <= sparsity < n:
        k = measurements(n, int(sparsity), c_k)
        if k < sparsity:
            raise ValueError(f"sparsity S = {sparsity} of n = {n}: the default number of samples ⌈c_k·S·log(n/S)⌉ = {k} "
                             "is below S (the formula falls past S = n/e), too few to recover an S-sparse vector: pass "
                             f"k= as well (k ≥ S; k = n takes every sample), or a smaller S (≤ max_sparsity(n, c_k) = "
                             f"{max_sparsity(n, c_k)} is where a private choice of S looks).")


def _candidate_ks(n, epsilon, config, sparsity, k):
    """(every k the release may use, ε_n): all S up to `max_sparsity` when S is drawn privately, else the public S."""
    if sparsity is None:
        candidates, eps_noise = range(1, max_sparsity(n, config.c_k) + 1), epsilon * (1 - config.select_fraction)
    else:
        candidates, eps_noise = ([int(sparsity)] if 1 <= sparsity <= n else []), epsilon  # (else refused later)
    ks = np.unique([int(k) if k is not None else measurements(n, s_, config.c_k) for s_ in candidates])
    return ks[(ks >= 1) & (ks <= n)], eps_noise


def _check_recovery_range(n, epsilon, config, sparsity, k, l1, dtype):
    """Refuse a release whose recovery (in the release dtype) would overflow, before anything is drawn: NIHT squares
    norms of up to k·n terms of the samples' size, |y_i| ≤ ‖D‖₁/√k + the noise (scale √k·Δ/ε_n), with 64 times
    that as margin (the check `cmco` makes). Found in review: at ε = 1e-20 (or Δ = 1e20) in float32 the squares
    overflowed and the recovery released exactly zero, reported as private. `l1` is the public cap `_total_cap`
    (the data are clamped to it), so only ε, Δ and the sizes can make it refuse."""
    if not (isinstance(sparsity, (type(None), int, np.integer)) and isinstance(k, (type(None), int, np.integer))):
        return  # refused later with its own message
    ks, eps_noise = _candidate_ks(n, epsilon, config, sparsity, k)
    if not ks.size:
        return
    kmax = float(ks.max())
    bound = 64.0 * max(math.sqrt(kmax) * float(config.l1_sensitivity) / eps_noise, l1)
    if not bound * bound * kmax * n <= float(np.finfo(dtype).max):
        scale = math.sqrt(kmax) * float(config.l1_sensitivity) / eps_noise
        raise ValueError(f"epsilon or l1_sensitivity (or the data's size) is out of range for the compressive mechanism "
                         f"in {dtype.name}: its recovery squares sums of the samples, whose noise scale is up to "
                         f"{scale:.3g}, and would overflow; raise epsilon or scale the data down"
                         + (' (or use noise="float64").' if dtype.itemsize < 8 else "."))


def _check_grid_every_k(n, epsilon, config, sparsity, k, l1):
    """noise="grid": check the noise-to-grid ratio of every k the release may use *before* S is drawn (a check
    after the private choice of S spent ε_sel first and made retries a rejection sampler over S)."""
    ks, eps_noise = _candidate_ks(n, epsilon, config, sparsity, k)
    if ks.size:
        delta = float(config.l1_sensitivity)
        mechanisms.check_grid_ratio(epsilon=eps_noise, sensitivity=np.sqrt(ks) * delta, coordinates=ks)
        limits = [mechanisms.grid_value_limit(sensitivity=np.sqrt(k_) * delta, coordinates=int(k_)) for k_ in ks]
        limit = min(limits)
        if any(l1 / np.sqrt(k_) > lim for k_, lim in zip(ks, limits)):  # every sample |Φ_i·D| ≤ ‖D‖₁/√k: the
            # sampler clamps beyond its range
            warnings.warn(ValuesClampedWarning(  # (it refused, reading ‖D‖₁: a refusal tells neighbours apart)
                f'noise="grid" holds samples ΦD up to ±{limit:,.6g} here (its finest grid); larger ones are clamped to '
                'it (curator-only: whether this fires reads the raw data); noise="float64" holds them.'), stacklevel=3)


def _compressive_public(key, d, epsilon, config, sparsity, k, noise):
    v = _check_vector(d, check_l1=False)  # (clamped to the public cap by `compressive`)
    n = v.size
    dtype = _validate.float_dtype()
    c5 = _check_config(config, n)
    kn = mechanisms.kernel_noise(noise)
    k_phi, k_sel, k_noise = jax.random.split(key, 3)
    if sparsity is None:
        eps_sel = config.select_fraction * epsilon
        eps_noise = epsilon - eps_sel
        s = int(_draw_sparsity(k_sel, v, config, c5, eps_sel, eps_noise / config.l1_sensitivity, kn))
    else:
        s = _validate.size("sparsity", sparsity)
        if s > n:
            raise ValueError(f"sparsity S = {s} exceeds n = {n}.")
        eps_noise = epsilon
    k = measurements(n, s, config.c_k) if k is None else _validate.size("k", k)
    if k > n:
        raise ValueError(f"k = {k} samples exceed n = {n}: the projection would not compress; choose k <= n.")
    # noise="grid": every k the release may use was checked in `compressive`, before S was drawn
    phi, y_star = _private_part(k_phi, k_noise, v, eps_noise, k, kn, dtype, float(config.l1_sensitivity))
    out = _recover_jit(phi, y_star, s, _basis_key(config.basis), config.iterations, config.refit)
    return CompressiveResult(out, s, k, float(epsilon), True)


def measure(key_phi: jax.Array, key_noise: jax.Array, d, *, epsilon, k: int, noise: str = "float",
            l1_sensitivity: float = 1.0):
    """Algorithm 1's measurement step (traceable core): ``(Φ, y* = ΦD + Lap(√k·Δ/ε)^k)``.

    Privacy: Φ ∈ {±1/√k}^{k×n} is public (drawn from `key_phi`); for neighbours at L1 distance ≤ Δ =
    `l1_sensitivity` the k samples ``ΦD`` move by at most √k·Δ in L1 (Appendix A), so ``y*`` is ε-DP. (Pass Δ
    here, not ε/Δ as the budget: with ``noise="grid"`` the samples are snapped to a grid sized from the
    sensitivity, and a review found ε/Δ with sensitivity √k spending up to 13ε at Δ = 3·10⁻⁴.) Everything after
    it (sparse recovery) is post-processing. The product ΦD is computed in float64 whenever `d`, the keys and
    `epsilon` are concrete (as `compressive` does; found in review: with x64 off a float64 `d` became float32 and
    ΦD rounded at the magnitude of its sums, moving neighbours by 40 in L1 against √k = 8 at counts of 10⁷);
    under a trace it is computed in the dtype of `d` — pass a float64 `d` (under ``jax.enable_x64``) there.

    Args:
      key_phi: typed key of the public Φ. key_noise: another typed key, for the noise (secret).
      d: the vector D ``[n]``. epsilon: ε > 0. k: the number of samples (public).
      noise: ``"float"``, ``"float64"`` or ``"grid"``. l1_sensitivity: Δ, the L1 distance of neighbours.

    Returns:
      ``(phi [k, n], y_star [k])`` in the dtype of `d`.
    """
    _validate.key(key_phi, "key_phi", max_ndim=0)  # found in review: legacy uint32 keys were accepted
    _validate.positive_scalar("l1_sensitivity", l1_sensitivity)
    _validate.key(key_noise, "key_noise", max_ndim=0)
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k (the number of measurements) must be an integer >= 1, got {k!r}.")
    raw, d = d, jnp.asarray(d)
    if d.ndim != 1:
        raise ValueError(f"d must be a vector [n], got shape {tuple(d.shape)}.")
    if _validate.is_concrete(d):  # found in review: an empty d gave Φ [k, 0], a NaN made every sample NaN
        _check_vector(np.asarray(d), check_l1=False)
    if _validate.is_concrete(key_phi) and _validate.is_concrete(key_noise):
        with jax.ensure_compile_time_eval():  # concrete keys, also inside a trace
            same = np.array_equal(np.asarray(jax.random.key_data(key_phi)), np.asarray(jax.random.key_data(key_noise)))
        if same:  # found in review: one key for the public Φ and the noise gives the noise's signs away
            raise ValueError("measure needs two different keys for Φ (public) and the noise: split one key.")
    if all(_validate.is_concrete(a) for a in (raw, key_phi, key_noise, epsilon)):
        _validate.budget("epsilon", epsilon)  # (inside the float64 program ε is traced: checked here)
        kn = mechanisms.kernel_noise(mechanisms.check_noise(noise))  # the caller's values in float64, not jnp's cast
        return _private_part(key_phi, key_noise, np.asarray(raw, np.float64), float(epsilon), k, kn, np.dtype(d.dtype),
                             float(l1_sensitivity))
    pm = _signs(key_phi, (k, d.shape[0]), d.dtype)  # Φ = pm/√k: `projection(key_phi, k, n)`
    return pm / jnp.sqrt(jnp.asarray(k, d.dtype)), _noisy_samples(key_noise, pm, d, epsilon, k, noise,
                                                                   float(l1_sensitivity))


def _noisy_samples(key_noise, pm, d, epsilon, k, noise, delta):
    """y* = ΦD + Lap(√k·Δ/ε)^k in the dtype of `d` (pm: Φ's ±1 signs): `measure`'s and `compressive`'s one copy (found
    in an audit of the tests: `compressive` had its own, where a sensitivity of 1 for √k passed every test). The
    samples' sensitivity √k·Δ goes to the mechanism as it is (not folded into ε: the grid sampler sizes its grid,
    and the snapping it adds to the sensitivity, from it)."""
    return mechanisms.laplace_mechanism(key_noise, _samples(pm, d), epsilon=epsilon, sensitivity=math.sqrt(k) * delta,
                                        noise=noise, coordinates=k)  # every sample moves


def _samples(pm, d):
    """ΦD = (pm @ D)/√k (pm: the ±1 signs) in the dtype of `d`, a few rows of `pm` at a time (a float64 copy of a
    float32 Φ would double its memory)."""
    k = pm.shape[0]
    return jax.lax.map(lambda row: row.astype(d.dtype) @ d, pm, batch_size=min(k, 16)) / math.sqrt(k)



def _draw_sparsity(k_sel, v, config, c5, eps_sel, eps_noise, noise):
    """S by the exponential mechanism on u(D, S) (`_select_s`), its scores computed in float64 whatever the
    release dtype (they read D; see `_private_part`); `k_sel` one key or ``[R]`` → an int array ``[]`` / ``[R]``."""
    n = v.size
    with jax.enable_x64(True):
        x = _analysis_jit(jnp.asarray(v, np.float64), _basis_key(config.basis))

        def draw(kk):
            return _select_s(kk, x, eps_sel, eps_noise, config.c2, config.c4, c5 * config.l1_sensitivity,
                             max_sparsity(n, config.c_k), noise=noise)

        return np.asarray(jax.vmap(draw)(k_sel) if k_sel.ndim else draw(k_sel))


def _private_part(k_phi, k_noise, v, eps_noise, k, noise, dtype, delta):
    """Algorithm 1's measurement, ``y* = ΦD + Lap(√k·Δ/ε)^k`` (Δ = `delta`), computed in float64 whatever the release dtype;
    returns ``(Φ, y*)`` in `dtype` (Φ drawn in `dtype` from the same key: the same signs; the cast of y* is
    post-processing). `k_phi`/`k_noise` may be key arrays ``[R]`` (then ``[R, k, n]``, ``[R, k]``).

    In float32, ΦD sums n products of the data, rounded at the sum's magnitude: for large values two
    neighbouring vectors moved ΦD by far more than the √k the noise is calibrated to (a review measured an L1
    move of 780 against √k = 14). In float64 the rounding is ≈ 10⁻¹⁶ of the sums. Only this one pass over Φ is
    in float64; the recovery, post-processing, stays in `dtype`.
    """
    with jax.enable_x64(True):
        d64 = jnp.asarray(v, np.float64)
        eps = jnp.asarray(eps_noise, np.float64)
        if k_phi.ndim:
            return jax.vmap(lambda a, b: _measure_jit(a, b, d64, eps, k, noise, np.dtype(dtype), delta))(k_phi, k_noise)
        return _measure_jit(k_phi, k_noise, d64, eps, k, noise, np.dtype(dtype), delta)


@functools.partial(jax.jit, static_argnums=(4, 5, 6, 7))
def _measure_jit(k_phi, k_noise, d64, eps, k, noise, dtype, delta):
    pm = _signs(k_phi, (k, d64.shape[0]), dtype)  # exactly ±1; Φ = pm/√k = `projection(k_phi, k, n, dtype)`
    y_star = _noisy_samples(k_noise, pm, d64, eps, k, noise, delta)  # as `measure` in float64
    return pm / jnp.sqrt(jnp.asarray(k, dtype)), y_star.astype(dtype)


@functools.partial(jax.jit, static_argnums=(1,))
def _analysis_jit(v, basis):
    """ΨᵀD as one program (eagerly, the Haar levels were ≈ 30 one-operation programs compiled per n)."""
    basis = basis.m if isinstance(basis, _HashableMatrix) else basis
    return psi_ops(basis, v.shape[-1], v.dtype)[1](v)


@functools.partial(jax.jit, static_argnums=(2, 3, 4, 5))
def _recover_jit(phi, y_star, s, basis, iterations, refit):
    basis = basis.m if isinstance(basis, _HashableMatrix) else basis
    psi_x, psi_t = psi_ops(basis, phi.shape[-1], phi.dtype)
    return _recover(phi, y_star, s, psi_x, psi_t, iterations, refit)


def laplace_identity(key: jax.Array, d, *, epsilon: float, l1_sensitivity: float = 1.0,
                     noise: str = "float") -> Float[Array, " n"]:
    """The baseline: ``D + Lap(Δ/ε)^n`` (ε-DP for neighbours at L1 distance ≤ Δ). `noise` as in `compressive`.

    Computed in float64 whatever `noise` and released in the default dtype (the cast is post-processing): in
    float32, values beyond 2²⁴ round neighbours apart by more than Δ before the noise.
    """
    _validate.key(key)
    _validate.positive_scalar("epsilon", epsilon)
    _validate.positive_scalar("l1_sensitivity", l1_sensitivity)
    noise = mechanisms.check_noise(noise)
    with mechanisms.precision(noise):
        out = np.dtype(_validate.float_dtype())
    raw = _check_vector(d, check_l1=False)
    # each value clamped to a public cap (1-Lipschitz: the sensitivity is kept): 2⁴⁰·Δ, where float64 keeps Δ and
    # the noise; with noise="grid" the sampler's range. Found in review: refusals that read max|D| and ‖D‖₁ (a
    # refusal tells neighbours on either side of the limit apart).
    cap = _validate.ROUNDED_TOTAL_LIMIT * float(l1_sensitivity)
    if noise == "grid":  # neighbours at L1 distance Δ may differ in every coordinate
        mechanisms.check_grid_ratio(epsilon=epsilon, sensitivity=l1_sensitivity, coordinates=raw.size)
        cap = min(cap, mechanisms.grid_value_limit(sensitivity=l1_sensitivity, coordinates=raw.size))
    raw = _clamp_warned(raw, cap, "laplace_identity's cap: where float64" + (" and the grid sampler hold" if noise ==
                        "grid" else " holds") + " the values, the noise and the sensitivity")
    _validate.noise_fits(float(l1_sensitivity) / float(epsilon), out, "laplace_identity")
    if key.ndim > 1:
        raise ValueError(f"key must be one typed key or a 1-D key array [R], got shape {key.shape}.")
    with jax.enable_x64(True):
        v = jnp.asarray(raw, np.float64)
        args = (v, float(epsilon), float(l1_sensitivity), mechanisms.kernel_noise(noise))
        if key.ndim == 1:  # R releases [R, n], each with its own key (found in review: a key array crashed in JAX)
            return jax.vmap(lambda k: _laplace_identity_jit(k, *args))(key).astype(out)
        return _laplace_identity_jit(key, *args).astype(out)


@functools.partial(jax.jit, static_argnums=(4,))
def _laplace_identity_jit(key, v, epsilon, sensitivity, noise):
    return mechanisms.laplace_mechanism(key, v, epsilon=epsilon, sensitivity=sensitivity, noise=noise)






def _compressive_many(keys, d, epsilon, config, sparsity, k_given, noise):
    kn = mechanisms.kernel_noise(noise)
    v = _check_vector(d, check_l1=False)  # (clamped to the public cap by `compressive`)
    n = v.size
    dtype = _validate.float_dtype()
    c5 = _check_config(config, n)
    split = jax.vmap(lambda kk: jax.random.split(kk, 3))(keys)
    if sparsity is None:
        eps_sel = config.select_fraction * epsilon
        eps_noise = epsilon - eps_sel
        s_all = _draw_sparsity(split[:, 1], v, config, c5, eps_sel, eps_noise / config.l1_sensitivity, kn)
    else:
        s_pub = _validate.size("sparsity", sparsity)
        if s_pub > n:
            raise ValueError(f"sparsity S = {s_pub} exceeds n = {n}.")
        eps_noise = epsilon
        s_all = np.full(keys.shape[0], s_pub, np.int64)
    out = np.zeros((keys.shape[0], n), dtype)
    ks = np.zeros(keys.shape[0], np.int64)
    for s_ in np.unique(s_all):
        idx = np.flatnonzero(s_all == s_)
        k = measurements(n, int(s_), config.c_k) if k_given is None else _validate.size("k", k_given)
        if k > n:
            raise ValueError(f"k = {k} samples exceed n = {n}: the projection would not compress; choose k <= n.")
        phi, y_star = _private_part(split[idx, 0], split[idx, 2], v, eps_noise, k, kn, dtype,
                                    float(config.l1_sensitivity))
        run = jax.vmap(lambda a, b: _recover_jit(a, b, int(s_), _basis_key(config.basis), config.iterations,
                                                 config.refit))
        out[idx] = np.asarray(run(phi, y_star))
        ks[idx] = k
    # the release a JAX array as for one key (found in review: a NumPy array here, a JAX array there)
    return CompressiveResult(jnp.asarray(out), s_all.astype(np.int64), ks, float(epsilon), True)
