"""The compressive mechanism and its continual-observation version CMCO (Li, Zhang, Winslett & Yang 2011).

**Neighbours** are vectors at L1 distance ≤ Δ (the paper: Δ = 1, e.g. count vectors; pass
``l1_sensitivity`` for vectors in other units). The sparsity basis Ψ (columns = basis vectors,
``D = Ψx``) and every random matrix are public.

* `compressive` (the paper's Algorithm 1): ``y = ΦD`` with Φ ∈ {±1/√k}^{k×n} drawn from an explicit key,
  ``y* = y + Lap(√k·Δ/ε)`` (Appendix A: the k samples move by ≤ √k·Δ in L1), sparse recovery of x in Ψ,
  ``D* = Ψx*``. The sparsity S is either public (all of ε goes to the noise) or chosen by the
  exponential mechanism with the paper's utility Eq. (1) (default split 0.1ε / 0.9ε, Section 7.1.1);
  k = ⌈c_k·S·log(n/S)⌉ (clipped to [1, n]).
* Recovery: normalized iterative hard thresholding (NIHT, Blumensath & Davies 2010) at sparsity S, then a
  least-squares refit on the support by conjugate gradients. Why not a library: scikit-learn's OMP/Lasso
  run dense on the CPU, cannot be vmapped or jitted and would add a dependency; NIHT has the same RIP
  error bound as CoSaMP (the paper's [38]: ``‖x − x*‖₂ ≤ C₂‖x − x_S‖₁/√S + C₃‖e‖₂``), needs only products
  with A = ΦΨ and Aᵀ, and keeps fixed shapes with a traced S (the threshold is the S-th largest |x|).
* `cmco` (Algorithm 2): per time step a public column Φ_t, k binary-tree counters (`tree_counter`,
  Dwork et al.'s continual mechanism, Appendix E) on ``u_t = Φ_t D[t]``, reconstruction of D_t at chosen
  times. `continual_identity` is the baseline (differences of one counter).

Where this implementation departs from the paper (tested):

* **The tree counter is not pan-private.** Appendix C asks for ε-pan-private counters. jaxdp's counter
  (like Dwork et al.'s continual counter without the pan-private extension) keeps each register's
  opening noise and releases the register as it is when its segment closes: an intruder who reads the
  state once and later sees the outputs subtracts the two and learns exact input sums (tested). Its
  outputs alone are ε-DP.
* **CMCO's counters are calibrated jointly.** Appendix C runs each of the k counters ε-pan-privately on
  an input that moves by 1/√k; k such counters compose to k·(1/√k)·√k… in total the k inputs move by
  √k in L1, so independent ε-counters give √k·ε (not ε) if each is calibrated to its own 1/√k move,
  and k·ε if calibrated to 1 as the text does. jaxdp calibrates the tree noise to the joint L1
  sensitivity √k·Δ, which is ε-DP; the error is then √k times the paper's Theorem 2 claim.
* **C₅ is computed, not assumed.** The score's data term ``C₂‖x − x_S‖₁/√S`` moves by at most
  ``C₂·Δ·max_j ‖Ψᵀe_j‖₁/√S`` (the tail-sum is 1-Lipschitz in L1): a constant ≈ 2.4·C₂ for Haar, but
  growing like √n for the DCT. `min_c5` computes it; a smaller user C₅ is rejected.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from jaxdp import _checks, mechanisms, transforms

__all__ = [
    "CompressiveConfig", "CompressiveResult", "basis_matrix", "min_c5", "max_sparsity", "sparsity_scores", "measurements", "projection",
    "recover", "compressive", "compressive_many", "laplace_identity", "tree_counter", "TreeCounter", "continual_identity", "cmco",
    "synthetic_compressible", "bundled_vector", "load_vector", "BUNDLED",
]  # fmt: skip


class CompressiveConfig(NamedTuple):
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


# --------------------------------------------------------------------------------------- bases
def basis_matrix(basis, n: int) -> np.ndarray:
    """Ψ as a float64 ``[n, n]`` matrix with orthonormal *columns* (``D = Ψx``), validated."""
    n = _checks.size("n", n)
    if isinstance(basis, str):
        basis = _checks.option("basis", basis, ("haar", "dct"))
        a = transforms.haar_matrix(n) if basis == "haar" else transforms.matrix("dct", n)
        return np.asarray(a).T
    psi = np.asarray(basis, dtype=np.float64)
    if psi.shape != (n, n):
        raise ValueError(f"basis must be an [n, n] = [{n}, {n}] matrix, got shape {psi.shape}.")
    if not np.all(np.isfinite(psi)):
        raise ValueError("basis contains NaN or inf.")
    err = np.abs(psi.T @ psi - np.eye(n)).max()
    if err > 1e-6:
        raise ValueError(f"basis is not orthonormal (max |ΨᵀΨ − I| = {err:.2e}); orthonormalize it (e.g. np.linalg.qr).")
    return psi


_EXACT_C5_MAX_N = 4096


def min_c5(basis, n: int, *, c2: float = 1.0) -> float:
    """The smallest valid C₅: ``C₂ · max_j ‖Ψᵀ e_j‖₁`` (Δ = 1), so that u(D, S) of Eq. (1) has
    sensitivity ≤ C₅/√S for every S.

    Exact for Haar (every e_j has the same coefficient magnitudes: computed by the fast transform) and for
    any matrix up to n = 4096; for a DCT beyond that the valid bound ``√n`` (the
    L1 norm of a unit vector in R^n is at most √n) is used instead of building the n × n matrix.
    """
    n = _checks.size("n", n)
    if isinstance(basis, str) and basis == "haar":
        if n & (n - 1):
            raise ValueError(f"the Haar basis needs n to be a power of two, got n = {n}; pad the vector.")
        return float(c2 * np.abs(np.asarray(_haar_analysis(jnp.eye(1, n, dtype=jnp.float32)[0]))).sum() * (1 + 1e-6))
    if isinstance(basis, str) and basis == "dct" and n > _EXACT_C5_MAX_N:
        return float(c2 * np.sqrt(n))  # ‖column‖₁ ≤ √n ‖column‖₂ = √n for any orthonormal matrix
    psi = basis_matrix(basis, n)
    return float(c2 * np.abs(psi).sum(axis=1).max())


def _check_config(config: CompressiveConfig, n: int) -> float:
    """Validate the public settings eagerly; return the C₅ to use."""
    for name in ("c2", "c4", "c_k", "l1_sensitivity"):
        _checks.positive_scalar(name, getattr(config, name))
    if not 0 < config.select_fraction < 1:
        raise ValueError(f"select_fraction must lie in (0, 1), got {config.select_fraction}.")
    _checks.size("iterations", config.iterations)
    _checks.size("refit", config.refit)
    return _c5(config, n)


def _c5(config: CompressiveConfig, n: int) -> float:
    need = min_c5(config.basis, n, c2=config.c2)
    if config.c5 is None:
        return need
    if config.c5 < need * (1 - 1e-9):
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
    """k = ⌈c_k·S·log(n/S)⌉ clipped to [1, n]."""
    return int(min(n, max(1, math.ceil(c_k * s * math.log(n / s))))) if s < n else n


# --------------------------------------------------------------------------------------- projection
def projection(key: jax.Array, k: int, n: int, dtype=None) -> Float[Array, "k n"]:
    """The public random matrix Φ ∈ {±1/√k}^{k×n} (i.i.d. symmetric Bernoulli) from `key`."""
    dtype = dtype or _checks.float_dtype()
    return jax.random.rademacher(key, (k, n), dtype) / jnp.sqrt(jnp.asarray(k, dtype))


def _haar_analysis(d):
    """Ψᵀd for the Haar basis in O(n): coefficients ordered as the rows of `transforms.haar_matrix`."""
    parts, cur = [], d
    r = float(np.sqrt(0.5))
    while cur.shape[-1] > 1:
        a, b = cur[..., 0::2], cur[..., 1::2]
        parts.insert(0, (a - b) * r)
        cur = (a + b) * r
    return jnp.concatenate([cur, *parts], axis=-1)


def _haar_synthesis(x):
    """Ψx for the Haar basis in O(n) (inverse of `_haar_analysis`)."""
    n = x.shape[-1]
    r = float(np.sqrt(0.5))
    cur, pos, width = x[..., :1], 1, 1
    while width < n:
        diff = x[..., pos : pos + width]
        cur = jnp.stack([(cur + diff) * r, (cur - diff) * r], axis=-1).reshape(*x.shape[:-1], 2 * width)
        pos, width = pos + width, 2 * width
    return cur


def _psi_ops(basis, n, dtype):
    """(x ↦ Ψx, D ↦ ΨᵀD) on the last axis: O(n) Haar, O(n log n) DCT (FFT), dense for a user matrix."""
    if isinstance(basis, str):
        _checks.option("basis", basis, ("haar", "dct"))
        if basis == "haar":
            if n & (n - 1):
                raise ValueError(f"the Haar basis needs n to be a power of two, got n = {n}; pad the vector.")
            return _haar_synthesis, _haar_analysis
        if basis == "dct":
            return (lambda x: jax.scipy.fft.idct(x, type=2, norm="ortho", axis=-1),
                    lambda d: jax.scipy.fft.dct(d, type=2, norm="ortho", axis=-1))
    psi = jnp.asarray(basis_matrix(basis, n), dtype)
    return (lambda x: x @ psi.T), (lambda d: d @ psi)


def recover(phi, y, *, basis, sparsity, iterations: int = 100, refit: int = 30):
    """Sparse recovery of D from ``y ≈ ΦD`` with ``D = Ψx`` and x (approximately) S-sparse.

    Normalized IHT at sparsity S followed by a CG least-squares refit on the support. Pure and
    jittable with a traced `sparsity`; vmappable.

    Args:
      phi: ``[k, n]`` projection. y: ``[k]`` (noisy) samples. basis: as in `CompressiveConfig`.
      sparsity: S ≥ 1 (int or traced int).

    Returns:
      D* of shape ``[n]``.
    """
    phi = jnp.asarray(phi)
    n = phi.shape[-1]
    psi_x, psi_t = _psi_ops(basis, n, phi.dtype)
    return _recover(phi, jnp.asarray(y, phi.dtype), jnp.asarray(sparsity), psi_x, psi_t, iterations, refit)


def _recover(phi, y, s, psi_x, psi_t, iterations, refit):
    n = phi.shape[-1]
    dtype = phi.dtype

    def a(x):
        return phi @ psi_x(x)

    def at(r):
        return psi_t(r @ phi)

    def keep_top(v):
        if isinstance(s, int):  # static S: a top-k instead of a full sort
            thr = jax.lax.top_k(jnp.abs(v), max(1, min(s, n)))[0][-1]
        else:
            thr = jnp.sort(jnp.abs(v))[n - jnp.clip(s, 1, n)]
        return jnp.where(jnp.abs(v) >= thr, v, 0.0)

    x0 = keep_top(at(y))

    def niht(_, x):  # x ← H_S(x + μ g), μ the exact line-search step on the current support
        g = at(y - a(x))
        gs = jnp.where(jnp.any(x != 0), jnp.where(x != 0, g, 0.0), keep_top(g))
        ag = a(gs)
        mu = jnp.sum(gs * gs) / jnp.maximum(jnp.sum(ag * ag), jnp.finfo(dtype).tiny)
        return keep_top(x + mu * g)

    x = jax.lax.fori_loop(0, iterations, niht, x0)
    mask = x != 0

    def cg(_, st):  # least squares on the support: (A_Tᵀ A_T) z = A_Tᵀ y
        z, r, p, rr = st
        ap = jnp.where(mask, at(a(p)), 0.0)
        alpha = rr / jnp.maximum(jnp.sum(p * ap), jnp.finfo(dtype).tiny)
        z = z + alpha * p
        r = r - alpha * ap
        rr_new = jnp.sum(r * r)
        p = r + (rr_new / jnp.maximum(rr, jnp.finfo(dtype).tiny)) * p
        return z, r, p, rr_new

    r0 = jnp.where(mask, at(y - a(x)), 0.0)
    z, *_ = jax.lax.fori_loop(0, refit, cg, (x, r0, r0, jnp.sum(r0 * r0)))
    return psi_x(z)


# --------------------------------------------------------------------------------------- mechanisms
def _check_vector(d, name="d") -> np.ndarray:
    if isinstance(d, jax.core.Tracer):
        raise TypeError(f"{name} must be concrete (vmap over keys, not over data).")
    v = np.asarray(d, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError(f"{name} must be a 1-D vector, got shape {v.shape}.")
    if v.size == 0:
        raise ValueError(f"{name} is empty.")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} contains NaN or inf.")
    return v


class CompressiveResult(NamedTuple):
    """Output of `compressive`: the release D* ``[n]``, the sparsity S and number of samples k used."""

    release: jax.Array
    sparsity: int
    k: int


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
      key: typed PRNG key (split inside: Φ, choice of S, noise).
      d: the vector D, shape ``[n]``.
      epsilon: total ε > 0.
      config: `CompressiveConfig`.
      sparsity: a public S (skips the private choice), 1 ≤ S ≤ n.
      k: a public number of samples (default ⌈c_k·S·log(n/S)⌉).
      noise: ``"float"`` (default), ``"float64"`` or ``"grid"`` (exact samplers; `jaxdp.mechanisms.NOISES`).

    Returns:
      `CompressiveResult` (S and k are releasable: derived from private outputs).
    """
    _checks.key(key)
    _checks.positive_scalar("epsilon", epsilon)
    noise = mechanisms.check_noise(noise)
    with mechanisms.precision(noise):
        return _compressive_public(key, d, epsilon, config, sparsity, k, noise)


def _compressive_public(key, d, epsilon, config, sparsity, k, noise):
    v = _check_vector(d)
    n = v.size
    dtype = _checks.float_dtype()
    c5 = _check_config(config, n)
    kn = mechanisms._kernel_noise(noise)
    k_phi, k_sel, k_noise = jax.random.split(key, 3)
    psi_x, psi_t = _psi_ops(config.basis, n, dtype)
    dj = jnp.asarray(v, dtype)
    if sparsity is None:
        eps_sel = config.select_fraction * epsilon
        eps_noise = epsilon - eps_sel
        x = psi_t(dj)
        s = int(_select_s(k_sel, x, eps_sel, eps_noise / config.l1_sensitivity, config.c2, config.c4,
                          c5 * config.l1_sensitivity, max_sparsity(n, config.c_k), noise=kn))
    else:
        s = _checks.size("sparsity", sparsity)
        if s > n:
            raise ValueError(f"sparsity S = {s} exceeds n = {n}.")
        eps_noise = epsilon
    k = measurements(n, s, config.c_k) if k is None else _checks.size("k", k)
    if k > n:
        raise ValueError(f"k = {k} samples exceed n = {n}: the projection would not compress; choose k <= n.")
    if noise == "grid":
        mechanisms.check_grid_ratio(epsilon=eps_noise / config.l1_sensitivity, sensitivity=math.sqrt(k))
    out = _compressive_jit(k_phi, k_noise, dj, s, jnp.asarray(eps_noise / config.l1_sensitivity, dtype),
                           k, _basis_key(config.basis), config.iterations, config.refit, kn)
    return CompressiveResult(out, s, k)


def _basis_key(basis):
    return basis if isinstance(basis, str) else _HashableMatrix(np.asarray(basis, np.float64))


class _HashableMatrix:
    def __init__(self, m):
        self.m = m
        self._h = hash(m.tobytes())

    def __hash__(self):
        return self._h

    def __eq__(self, other):
        return isinstance(other, _HashableMatrix) and np.array_equal(self.m, other.m)


@functools.partial(jax.jit, static_argnums=(3, 5, 6, 7, 8, 9))
def _compressive_jit(k_phi, k_noise, d, s, eps_noise, k, basis, iterations, refit, noise="float"):
    n = d.shape[0]
    basis = basis.m if isinstance(basis, _HashableMatrix) else basis
    phi = projection(k_phi, k, n, d.dtype)
    y = phi @ d
    # the k samples move by at most √k (× Δ, folded into eps_noise) in L1: Appendix A
    y_star = mechanisms.laplace_mechanism(k_noise, y, epsilon=eps_noise, sensitivity=math.sqrt(k), noise=noise)
    psi_x, psi_t = _psi_ops(basis, n, d.dtype)
    return _recover(phi, y_star, s, psi_x, psi_t, iterations, refit)


def laplace_identity(key: jax.Array, d, *, epsilon: float, l1_sensitivity: float = 1.0,
                     noise: str = "float") -> Float[Array, " n"]:
    """The baseline: ``D + Lap(Δ/ε)^n`` (ε-DP for neighbours at L1 distance ≤ Δ). `noise` as in `compressive`."""
    _checks.key(key)
    _checks.positive_scalar("epsilon", epsilon)
    _checks.positive_scalar("l1_sensitivity", l1_sensitivity)
    noise = mechanisms.check_noise(noise)
    if noise == "grid":
        mechanisms.check_grid_ratio(epsilon=epsilon, sensitivity=l1_sensitivity)
    with mechanisms.precision(noise):
        v = jnp.asarray(_check_vector(d), _checks.float_dtype())
        return _laplace_identity_jit(key, v, float(epsilon), float(l1_sensitivity), mechanisms._kernel_noise(noise))


@functools.partial(jax.jit, static_argnums=(4,))
def _laplace_identity_jit(key, v, epsilon, sensitivity, noise):
    return mechanisms.laplace_mechanism(key, v, epsilon=epsilon, sensitivity=sensitivity, noise=noise)


# --------------------------------------------------------------------------------------- continual counting
def _tree_levels(t_max: int) -> int:
    return max(0, (t_max - 1).bit_length())


def tree_counter(key: jax.Array, stream, *, epsilon: float, l1_sensitivity: float = 1.0,
                 horizon: int | None = None, noise: str = "float") -> Float[Array, "T *k"]:
    """Dwork et al.'s binary-tree continual counter (the paper's Appendix E).

    Time is cut into dyadic segments at L + 1 levels (L = ⌈log₂ horizon⌉). Each segment has a register
    that starts at ``Lap((L + 1)·Δ/ε)`` when the segment opens and receives every input inside it; the
    output at t is the sum of the closed registers that tile [1, t] (one per set bit of t). Each input
    enters L + 1 registers, so the outputs are ε-DP. Error at t: ``popcount(t)`` Laplace terms, i.e.
    O(log^1.5 T / ε).

    **Not pan-private**: a register keeps its opening noise and is released unchanged when it closes,
    so the state (`TreeCounter.state`) read at one time and the outputs seen later reveal exact sums of
    the inputs in between. Keep the state as secret as the raw data.

    Args:
      key: typed PRNG key. stream: inputs ``[T]`` or vectors ``[T, k]`` (k counters sharing the tree;
        `l1_sensitivity` bounds the L1 change of *all* of one time's inputs together). epsilon: ε > 0.
      horizon: the public maximum length (default T).
      noise: ``"float"`` or ``"float64"``. ``"grid"`` is refused: registers accumulate float inputs,
        which an exact grid release would need in integers (not implemented).

    Returns:
      Noisy prefix sums of shape ``[T]`` or ``[T, k]``.
    """
    _checks.key(key)
    _checks.positive_scalar("epsilon", epsilon)
    _checks.positive_scalar("l1_sensitivity", l1_sensitivity)
    noise = _tree_noise(noise)
    with mechanisms.precision(noise):
        return _tree_counter(key, stream, epsilon, l1_sensitivity, horizon)


def _tree_noise(noise):
    noise = mechanisms.check_noise(noise)
    if noise == "grid":
        raise ValueError('the tree counter has no exact (noise="grid") version: its registers sum float inputs; '
                         'use noise="float" or "float64".')
    return noise


def _tree_counter(key, stream, epsilon, l1_sensitivity, horizon):
    x = np.asarray(stream, dtype=np.float64)
    if x.ndim not in (1, 2) or x.shape[0] == 0:
        raise ValueError(f"stream must have shape [T] or [T, k] with T >= 1, got {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise ValueError("stream contains NaN or inf.")
    horizon = x.shape[0] if horizon is None else _checks.size("horizon", horizon)
    if horizon < x.shape[0]:
        raise ValueError(f"horizon {horizon} is shorter than the stream ({x.shape[0]}).")
    xs = jnp.asarray(x if x.ndim == 2 else x[:, None], _checks.float_dtype())
    keys = jax.random.split(key, horizon)[: x.shape[0]]
    out = _tree_jit(keys, xs, _register_budget(epsilon, l1_sensitivity, horizon, xs.dtype), _tree_levels(horizon))
    return out if x.ndim == 2 else out[:, 0]


def _register_budget(epsilon, sensitivity, horizon, dtype):
    """(ε per register, Δ): every input enters L + 1 registers, so each register gets ε/(L + 1)."""
    return jnp.asarray([epsilon / (_tree_levels(horizon) + 1), sensitivity], dtype)


def _tree_step(levels, budget, carry, inp):
    """One time step. Registers ``[L+1, k]``: level i holds the open segment of length 2^i (initialised
    with noise when it opens); closed ones are frozen in `closed` until the output no longer needs them."""
    regs, closed = carry
    t, x, kt = inp  # t is 1-based
    lv = jnp.arange(levels + 1)
    opening = ((t - 1) % (2**lv)) == 0  # the segment of level i starts at t
    fresh = mechanisms.laplace_noise(kt, regs.shape, epsilon=budget[0], sensitivity=budget[1], dtype=regs.dtype)
    regs = jnp.where(opening[:, None], fresh, regs) + x[None, :]
    ending = (t % (2**lv)) == 0  # the segment of level i ends at t: freeze it
    closed = jnp.where(ending[:, None], regs, closed)
    bits = ((t >> lv) & 1) == 1  # the tiling of [1, t] uses level i iff bit i of t is set
    out = jnp.sum(jnp.where(bits[:, None], closed, 0.0), axis=0)
    return (regs, closed), out


def _tree_scan(keys, xs, budget, levels):
    t_len, k = xs.shape
    init = (jnp.zeros((levels + 1, k), xs.dtype), jnp.zeros((levels + 1, k), xs.dtype))
    _, out = jax.lax.scan(functools.partial(_tree_step, levels, budget), init, (jnp.arange(1, t_len + 1), xs, keys))
    return out


_tree_jit = jax.jit(_tree_scan, static_argnums=(3,))
_tree_push = jax.jit(_tree_step, static_argnums=(0,))


class TreeCounter:
    """Streaming binary-tree counter: ``push(x) → noisy Σ_{j ≤ t} x_j``, identical to `tree_counter` for the
    same key and horizon. The state is the noisy registers (`state`); raw inputs are never stored, but
    the state is **not** safe to reveal: read once and combined with later outputs it gives exact input
    sums (the counter is not pan-private, see `tree_counter`).

    Args: key: typed PRNG key. epsilon: ε > 0. horizon: the public maximum number of pushes. k: width of
    each input. l1_sensitivity: bound on the L1 change of one input. noise: ``"float"`` or ``"float64"``.
    """

    def __init__(self, key: jax.Array, *, epsilon: float, horizon: int, k: int = 1, l1_sensitivity: float = 1.0,
                 noise: str = "float"):
        _checks.key(key)
        self._noise = _tree_noise(noise)
        _checks.positive_scalar("epsilon", epsilon)
        _checks.positive_scalar("l1_sensitivity", l1_sensitivity)
        self._horizon = _checks.size("horizon", horizon)
        self._k = _checks.size("k", k)
        self._levels = _tree_levels(self._horizon)
        with mechanisms.precision(self._noise):
            dtype = _checks.float_dtype()
        self._keys = jax.random.split(key, self._horizon)
        self._scale = _register_budget(epsilon, l1_sensitivity, self._horizon, dtype)
        zeros = jnp.zeros((self._levels + 1, self._k), dtype)
        self._carry = (zeros, zeros)
        self._t = 0

    @property
    def state(self):
        """The noisy registers (open and closed), ``([L+1, k], [L+1, k])``: secret (see the class notes)."""
        return self._carry

    def push(self, x) -> jax.Array:
        if self._t >= self._horizon:
            raise ValueError(f"the counter's horizon of {self._horizon} steps is used up (its budget covers no more).")
        v = np.asarray(x, np.float64).reshape(-1)
        if v.size != self._k or not np.all(np.isfinite(v)):
            raise ValueError(f"push takes {self._k} finite value(s), got {np.asarray(x).shape}.")
        with mechanisms.precision(self._noise):
            self._carry, out = _tree_push(self._levels, self._scale, self._carry,
                                          (jnp.asarray(self._t + 1), jnp.asarray(v, self._scale.dtype), self._keys[self._t]))
        self._t += 1
        return out if self._k > 1 else out[0]


def continual_identity(key: jax.Array, stream, *, epsilon: float, l1_sensitivity: float = 1.0,
                       noise: str = "float") -> Float[Array, " T"]:
    """The baseline of the paper's Section 6.3: D*_t[i] = Σ*_i − Σ*_{i−1} from one tree counter (ε-DP)."""
    sums = tree_counter(key, stream, epsilon=epsilon, l1_sensitivity=l1_sensitivity, noise=noise)
    return jnp.diff(sums, prepend=jnp.zeros((1,), sums.dtype))


def cmco(key: jax.Array, stream, *, epsilon: float, k: int, sparsity: int, times, basis="haar",
         l1_sensitivity: float = 1.0, iterations: int = 100, refit: int = 30, noise: str = "float") -> list[jax.Array]:
    """CMCO (the paper's Algorithm 2) with jointly calibrated counters.

    At each t a public column Φ_t ∈ {±1/√k}^k (from `key`) turns D[t] into u_t = Φ_t·D[t]; k tree counters
    (one shared tree, noise calibrated to the joint L1 sensitivity √k·Δ of u_t) give v*_t ≈ Σ_{j≤t} u_j =
    Φ_{1..t} D_t; at each requested time t the vector D_t ∈ R^t is recovered at sparsity S in the
    t-point basis (Haar needs t a power of two).

    Privacy: ε-DP for streams at L1 distance ≤ Δ (its outputs; the counters are not pan-private, see
    `tree_counter`); the paper's per-counter calibration would spend k·ε (see the module notes).

    Args:
      key: typed PRNG key, or a key array ``[R]`` for R repetitions as one vmapped program. stream: D ``[T]``.
      epsilon: ε > 0. k: number of counters (public). sparsity: S used by the recovery (public).
      times: the 1-based times t at which to reconstruct.
      noise: ``"float"`` or ``"float64"`` (as `tree_counter`).

    Returns:
      A list of D*_t arrays, shape ``[t]`` each (``[R, t]`` with a key array), in the order of `times`.
    """
    _checks.key(key)
    _checks.positive_scalar("epsilon", epsilon)
    _checks.positive_scalar("l1_sensitivity", l1_sensitivity)
    noise = _tree_noise(noise)
    with mechanisms.precision(noise):
        return _cmco(key, stream, epsilon, k, sparsity, times, basis, l1_sensitivity, iterations, refit)


def _cmco(key, stream, epsilon, k, sparsity, times, basis, l1_sensitivity, iterations, refit):
    v = _check_vector(stream, "stream")
    big_t = v.size
    k = _checks.size("k", k)
    sparsity = _checks.size("sparsity", sparsity)
    times = tuple(int(t) for t in times)
    if not times or any(t < 1 or t > big_t for t in times):
        raise ValueError(f"times must be a non-empty list of values in [1, T = {big_t}].")
    if isinstance(basis, str):
        for t in times:
            _psi_ops(basis, t, np.float32)  # validates (Haar needs powers of two)
    scale = _register_budget(epsilon, math.sqrt(k) * l1_sensitivity, big_t, np.float32)  # joint L1 sensitivity √k·Δ
    dj = jnp.asarray(v, _checks.float_dtype())
    args = (jnp.asarray(scale, dj.dtype), k, times, _basis_key(basis), sparsity, iterations, refit)  # (ε_reg, Δ)
    if key.shape == ():
        return list(_cmco_jit(key, dj, *args))
    return list(jax.vmap(lambda kk: _cmco_jit(kk, dj, *args))(key))


@functools.partial(jax.jit, static_argnums=(3, 4, 5, 6, 7, 8))
def _cmco_jit(key, v, scale, k, times, basis, sparsity, iterations, refit):
    basis = basis.m if isinstance(basis, _HashableMatrix) else basis
    big_t = v.shape[0]
    k_phi, k_tree = jax.random.split(key)
    phi = projection(k_phi, k, big_t, v.dtype)  # column t is Φ_t (public)
    u = (phi * v[None, :]).T  # [T, k]: u_t = Φ_t D[t]
    sums = _tree_scan(jax.random.split(k_tree, big_t), u, scale, _tree_levels(big_t))
    out = []
    for t in times:
        psi_x, psi_t = _psi_ops(basis, t, v.dtype)
        out.append(_recover(phi[:, :t], sums[t - 1], min(sparsity, t), psi_x, psi_t, iterations, refit))
    return tuple(out)


def compressive_many(keys: jax.Array, d, *, epsilon: float, config: CompressiveConfig = CompressiveConfig(),
                     noise: str = "float") -> CompressiveResult:
    """R independent runs of `compressive` (key array ``[R]``) as few vmapped programs: S is drawn for all
    keys at once, then the runs are grouped by S (hence k) and each group is one vmapped call.

    Returns a `CompressiveResult` with ``release [R, n]``, ``sparsity [R]`` and ``k [R]`` (NumPy ints).
    Same distribution as R calls of `compressive` (not the same draws: keys are split differently).
    `noise` as in `compressive`.
    """
    _checks.key(keys)
    if keys.ndim != 1:
        raise ValueError(f"keys must be a 1-D key array [R], got shape {keys.shape}.")
    _checks.positive_scalar("epsilon", epsilon)
    noise = mechanisms.check_noise(noise)
    with mechanisms.precision(noise):
        return _compressive_many(keys, d, epsilon, config, noise)


def _compressive_many(keys, d, epsilon, config, noise):
    kn = mechanisms._kernel_noise(noise)
    v = _check_vector(d)
    n = v.size
    dtype = _checks.float_dtype()
    c5 = _check_config(config, n)
    dj = jnp.asarray(v, dtype)
    psi_x, psi_t = _psi_ops(config.basis, n, dtype)
    eps_sel = config.select_fraction * epsilon
    eps_noise = (epsilon - eps_sel) / config.l1_sensitivity
    split = jax.vmap(lambda kk: jax.random.split(kk, 3))(keys)
    x = psi_t(dj)
    s_all = np.asarray(jax.vmap(lambda kk: _select_s(kk, x, eps_sel, eps_noise, config.c2, config.c4,
                                                     c5 * config.l1_sensitivity, max_sparsity(n, config.c_k),
                                                     noise=kn))(split[:, 1]))
    out = np.zeros((keys.shape[0], n), dtype)
    ks = np.zeros(keys.shape[0], np.int64)
    for s_ in np.unique(s_all):
        idx = np.flatnonzero(s_all == s_)
        k = measurements(n, int(s_), config.c_k)
        if noise == "grid":
            mechanisms.check_grid_ratio(epsilon=eps_noise, sensitivity=math.sqrt(k))
        run = jax.vmap(lambda a, b: _compressive_jit(a, b, dj, int(s_), jnp.asarray(eps_noise, dtype), k,
                                                     _basis_key(config.basis), config.iterations, config.refit, kn))
        out[idx] = np.asarray(run(split[idx, 0], split[idx, 2]))
        ks[idx] = k
    return CompressiveResult(out, s_all.astype(np.int64), ks)


# --------------------------------------------------------------------------------------- data
def synthetic_compressible(seed: int, *, n: int = 4096, basis="haar", p: float = 0.5, scale: float = 1000.0,
                           offset: float = 0.0) -> np.ndarray:
    """A seeded compressible vector D = Ψx: sorted coefficient magnitudes ``scale·i^(−1/p)`` (power law,
    p ∈ (0, 1)), random signs and positions, plus a constant `offset`. float64 ``[n]``."""
    if not 0 < p < 1:
        raise ValueError(f"p must lie in (0, 1) for a compressible vector, got {p}.")
    rng = np.random.default_rng(seed)
    mags = scale * np.arange(1, n + 1, dtype=np.float64) ** (-1.0 / p)
    x = np.zeros(n)
    x[rng.permutation(n)] = mags * rng.choice([-1.0, 1.0], n)
    return _synthesize64(basis, x) + offset


def _synthesize64(basis, x: np.ndarray) -> np.ndarray:
    """Ψx in float64 NumPy without building Ψ for the named bases (Haar: O(n); DCT: SciPy's FFT-based idct)."""
    import scipy.fft

    n = x.size
    if isinstance(basis, str) and basis == "haar":
        if n & (n - 1):
            raise ValueError(f"the Haar basis needs n to be a power of two, got n = {n}; pad the vector.")
        cur, pos, width = x[:1], 1, 1
        while width < n:
            diff = x[pos : pos + width]
            cur = np.stack([(cur + diff), (cur - diff)], axis=-1).reshape(2 * width) / np.sqrt(2.0)
            pos, width = pos + width, 2 * width
        return cur
    if isinstance(basis, str) and basis == "dct":
        return scipy.fft.idct(x, type=2, norm="ortho")
    return basis_matrix(basis, n) @ x


BUNDLED = ("census-afnlwgt-sorted", "eia-totsales-by-utility")


def bundled_vector(name: str, *, n: int = 1024) -> np.ndarray:
    """Vectors from the bundled data (float64 ``[n]``; padded with zeros or truncated to n).

    ``census-afnlwgt-sorted``: the AFNLWGT column of Census sorted ascending (a smooth ramp);
    ``eia-totsales-by-utility``: annual TOTSALES per utility (sum over the 12 months), in file order.
    Neighbours at L1 distance 1 mean one unit of these values: set `l1_sensitivity` to the public bound
    of one person's contribution for a record-level guarantee.
    """
    from jaxdp import datasets

    name = _checks.option("name", name, BUNDLED)
    n = _checks.size("n", n)
    if name == "census-afnlwgt-sorted":
        v = np.sort(datasets.load_census()[:, 0].astype(np.float64))
    else:
        e = datasets.load_eia()
        _, inv = np.unique(e["UTILITYID"], return_inverse=True)
        v = np.bincount(inv, weights=e["TOTSALES"].astype(np.float64))
    out = np.zeros(n)
    out[: min(n, v.size)] = v[:n]
    return out


def load_vector(path: str) -> np.ndarray:
    """A user's vector: one number per line (or the last field of CSV rows; a header line is skipped)."""
    return _check_vector(_checks.read_number_column(path), "vector")
