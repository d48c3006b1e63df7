"""LPA, FPA, SPA and EFPA, and the exact L1/L2 sensitivity of retained real-DFT coordinates."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import _validate, mechanisms, programs, transforms
from jaxdp.histogram._common import HistogramResult, _arithmetic, _check_grid, _over_keys, _prepare, _result, check_histogram

__all__ = ['lpa', 'ACCOUNTINGS', 'dft_sensitivity', 'fpa', 'PENALTIES', 'spa_scores', 'spa', 'EFPA_PENALTIES', 'efpa_scores', 'efpa', 'efpa_core', 'efpa_scores_core', 'spa_core']


# --------------------------------------------------------------------------------------- LPA / FPA
def lpa(key: jax.Array, hist, *, epsilon: float, noise: str = "float") -> HistogramResult:
    """Laplace per bin: ``H + Lap(1/ε)^n``.

    Privacy: ε-DP; one record changes one bin by 1 (Δ₁ = 1).

    Args:
      key: typed PRNG key, used once.
      hist: counts, shape ``[n]`` (non-negative integers).
      epsilon: ε > 0.
      noise: ``"float"`` (default), ``"float64"`` or ``"grid"`` (exact; `jaxdp.mechanisms.NOISES`).

    Returns:
      `HistogramResult`: ``counts [n]`` (default float dtype; float64 with ``noise="float64"``), k = n.
      A key array ``[R]`` gives R independent releases ``[R, n]``.
    """
    with _arithmetic(noise) as dtype:
        h, noise = _prepare(key, hist, epsilon, noise)
        _check_grid(noise, epsilon, 1.0, h, snapped="bins")
        out = _over_keys(_lpa, key, h, jnp.asarray(epsilon, h.dtype), noise=mechanisms.kernel_noise(noise))
        return _result(key, out.astype(dtype), h.shape[0], True, epsilon)


ACCOUNTINGS = ("exact", "paper")


_EXACT_MAX_BINS = 8192  # exact sensitivity tables up to this n (O(n²) work, once per n); a proven bound beyond


def dft_sensitivity(n: int, *, norm: int = 1, accounting: str = "exact") -> np.ndarray:
    """Sensitivity of the first z coordinates of the orthonormal real DFT (`jaxdp.transforms.rdft`) when
    one count changes by 1, for z = 0 … n: a float64 array ``[n + 1]`` (public; computed from n only).

    ``norm=1`` (L1, the Laplace noise of FPA and EFPA), ``norm=2`` (L2, SPA's K-norm noise).
    ``accounting="paper"``: the paper's bounds ``√z`` (L1, from ‖·‖₁ ≤ √z‖·‖₂) and 1 (L2).
    ``accounting="exact"``: ``max_i ‖(rdft e_i)_{<z}‖`` — the change of bin i moves coordinate c by
    ``M[c, i]`` (entries 1/√n, √2·cos(2πfi/n)/√n, √2·sin(2πfi/n)/√n, (−1)^i/√n), plus a 10⁻⁹ relative
    margin, never above the paper's. L2: in closed form, attained at bin 0 (a (cos, sin) pair adds 2/n to
    the squared norm, a lone cosine at most 2/n, DC and Nyquist 1/n): ≈ √(z/n). L1: computed exactly for
    n ≤ 8192 (O(n²) once per n, ≈ 0.3 s at n = 4096), beyond that bounded with ``|cos| + |sin| ≤ √2`` per
    frequency ((1 + 2·pairs + √2·[a lone cosine] + [Nyquist])/√n, within 1.6× of exact). About 0.9·z/√n
    in L1: e.g. 0.134 instead of 3 for z = 9, n = 4096.
    """
    n = _validate.size("n", n, hi=_validate.MAX_GENERATED, why="the table holds n + 1 float64 sensitivities.")
    if norm not in (1, 2):
        raise ValueError(f"norm must be 1 or 2, got {norm!r}.")
    accounting = _validate.option("accounting", accounting, ACCOUNTINGS)
    return _dft_sensitivity(n, norm, accounting)


@functools.lru_cache(maxsize=64)
def _dft_sensitivity(n: int, norm: int, accounting: str) -> np.ndarray:
    z = np.arange(n + 1, dtype=np.float64)
    paper = np.sqrt(z) if norm == 1 else np.minimum(z, 1.0)
    if accounting == "paper":
        out = paper
    elif norm == 2:  # closed form, attained at bin 0: a (cos, sin) pair adds 2/n, a lone cosine ≤ 2/n, DC and Nyquist 1/n
        h = (n - 1) // 2
        c = np.maximum(z - 1.0, 0.0)
        in_pairs = np.minimum(c, 2 * h)
        nyq = np.maximum(c - 2 * h, 0.0)
        full, lone = np.floor(in_pairs / 2), in_pairs % 2
        out = np.minimum(np.sqrt((np.minimum(z, 1.0) + 2.0 * full + 2.0 * lone + nyq) / n) * (1.0 + 1e-9), paper)
    elif n <= _EXACT_MAX_BINS:
        exact = programs.public_table(f"dft_l1_exact_v1_n{n}", lambda: _exact_l1(n), size=n + 1)
        out = np.minimum(exact, paper)
    else:
        c = np.maximum(z - 1.0, 0.0)  # coordinates after the DC
        h = (n - 1) // 2
        in_pairs = np.minimum(c, 2 * h)
        nyq = np.maximum(c - 2 * h, 0.0)  # the Nyquist coordinate (even n), entries ±1/√n
        full, lone = np.floor(in_pairs / 2), in_pairs % 2
        bound = (np.minimum(z, 1.0) + 2.0 * full + np.sqrt(2.0) * lone + nyq) / np.sqrt(n)
        out = np.minimum(bound * (1.0 + 1e-9), paper)
    out.flags.writeable = False
    return out


def _exact_l1(n: int) -> np.ndarray:
    """``max_i ‖(rdft e_i)_{<z}‖₁`` for z = 0 … n, times (1 + 10⁻⁹) (O(n²), ≈ 0.3 s at n = 4096; kept on disk
    by `jaxdp.programs.public_table`)."""
    h = (n - 1) // 2
    f = np.arange(1, h + 1, dtype=np.int64)
    root2 = np.sqrt(2.0)
    cos_t = np.abs(np.cos(2.0 * np.pi * np.arange(n) / n)) * root2  # |entries| by angle index f·i mod n
    sin_t = np.abs(np.sin(2.0 * np.pi * np.arange(n) / n)) * root2
    best = np.zeros(n)
    # columns i and n − i hold the same absolute entries: i = 0 … ⌊n/2⌋ suffice
    for start in range(0, n // 2 + 1, 512):  # columns in chunks: |M[:, i]| cumulated over the coordinates
        i = np.arange(start, min(start + 512, n // 2 + 1), dtype=np.int64)
        idx = np.outer(f, i) % n
        pairs = np.stack([cos_t[idx], sin_t[idx]], axis=1).reshape(2 * h, i.size)
        rows = [np.ones((1, i.size)), pairs]
        if n % 2 == 0 and n > 1:
            rows.append(np.ones((1, i.size)))  # |(−1)^i| = 1
        col = np.concatenate(rows) / np.sqrt(n)
        best = np.maximum(best, np.cumsum(col, axis=0).max(axis=1))
    return np.concatenate([[0.0], best]) * (1.0 + 1e-9)


@programs.program(static_argnames=("noise",))
def _lpa(key, h, eps, *, noise="float"):
    return mechanisms.laplace_mechanism(key, h, epsilon=eps, sensitivity=1.0, noise=noise, coordinates=1)  # one bin


def fpa(
    key: jax.Array, hist, *, epsilon: float, k: int, accounting: str = "exact", noise: str = "float"
) -> HistogramResult:
    """Fourier perturbation with a fixed number ``k`` of retained real DFT coordinates.

    Keeps the first k coordinates of `jaxdp.transforms.rdft` (the lowest frequencies), adds
    ``Lap(Δ₁/ε)`` to each, zero-pads and inverts. Expected SSE (the paper's Lemma 1, exact here
    because the basis is orthonormal): ``Σ_{i ≥ k} c_i² + 2k·Δ₁²/ε²``.

    Privacy: ε-DP: Δ₁ is the L1 sensitivity of the k coordinates, `dft_sensitivity`(n)[k]: ``√k`` with
    ``accounting="paper"`` (Theorem 3: they move by at most 1 in L2), the exact value (≈ 0.9·k/√n) with
    ``accounting="exact"`` (default).

    Args:
      key: typed PRNG key. hist: counts ``[n]``. epsilon: ε > 0.
      k: retained coordinates, ``1 ≤ k ≤ n`` (public).
      accounting: ``"exact"`` (default) or ``"paper"``.
      noise: ``"float"`` (default), ``"float64"`` or ``"grid"`` (exact; `jaxdp.mechanisms.NOISES`).

    Returns:
      `HistogramResult` (``counts [n]``, the given k); ``[R, n]`` for a key array ``[R]``.
    """
    accounting = _validate.option("accounting", accounting, ACCOUNTINGS)
    with _arithmetic(noise) as dtype:
        h, noise = _prepare(key, hist, epsilon, noise, rounded=True)
        k = _validate.size("k", k)
        if k > h.shape[0]:
            raise ValueError(f"k = {k} exceeds the number of bins n = {h.shape[0]}; choose 1 <= k <= n.")
        sens = float(dft_sensitivity(h.shape[0], accounting=accounting)[k])
        _check_grid(noise, epsilon, sens, h, coordinates=k, snapped="dft")
        out = _over_keys(_fpa, key, h, jnp.asarray(epsilon, h.dtype), k=k, sens=sens, noise=mechanisms.kernel_noise(noise))
        return _result(key, out.astype(dtype), k, True, epsilon)


@programs.program(static_argnames=("k", "noise"))
def _fpa(key, h, eps, *, k, sens, noise="float"):
    c = transforms.rdft(h)
    keep = jnp.arange(h.shape[0]) < k
    noisy = mechanisms.laplace_mechanism(key, c, epsilon=eps, sensitivity=jnp.asarray(sens, h.dtype), noise=noise,
                                         coordinates=k)  # the k kept coordinates all move
    return transforms.irdft(jnp.where(keep, noisy, 0.0))


# --------------------------------------------------------------------------------------- SPA / EFPA
def _tail_norm(c):
    """``tail[j] = sqrt(Σ_{i ≥ j} c_i²)`` for j = 0 … n (length n + 1, last entry 0)."""
    sq = c * c
    suffix = jnp.cumsum(sq[::-1])[::-1]
    return jnp.sqrt(jnp.concatenate([suffix, jnp.zeros((1,), c.dtype)]))


PENALTIES = ("consistent", "paper")


def _tables(n, accounting, norm):
    """Public per-z table: the L1 or L2 sensitivity of the first z coordinates."""
    return dft_sensitivity(n, norm=norm, accounting=accounting)


def _score_inputs(hist, epsilon, penalty, accounting, *, norm):
    """Validated inputs of `spa_scores` / `efpa_scores`: (h, ε, the Δ_norm table, penalty) as device arrays."""
    _validate.positive_scalar("epsilon", epsilon)
    penalty = _validate.option("penalty", penalty, PENALTIES)
    accounting = _validate.option("accounting", accounting, ACCOUNTINGS)
    h = jnp.asarray(check_histogram(hist), np.float64)  # float64, as the mechanisms score (call under enable_x64)
    table = _tables(h.shape[0], accounting, norm)
    return h, jnp.asarray(epsilon, h.dtype), jnp.asarray(table, h.dtype), penalty


def spa_scores(hist, *, epsilon: float, penalty: str = "consistent", accounting: str = "exact") -> np.ndarray:
    """SPA's ``U(H, k)`` for k = 1 … n: ``sqrt(Σ_{i ≥ k} c_i²) + noise term``, c = `rdft`(H), ε_n = ε/2 the
    noise budget. Sensitivity of U: 1 (the data term is the L2 norm of a projection of H). Shape ``[n]``.
    **Not private**: computed from the raw histogram (what `spa`'s exponential mechanism scores; a curator's
    diagnostic, never to be published).

    `penalty`: ``"consistent"`` (default) ``k·Δ₂(k)/ε_n``, the expected norm of the K-norm noise SPA adds
    (density ∝ exp(−ε_n‖z‖₂/Δ₂) in k dimensions: ‖z‖ ~ Gamma(k, ε_n/Δ₂)); ``"paper"`` ``k√n/ε_n`` (the
    paper's Eq. 1, written for the *unnormalized* DFT of Rastogi & Nath, whose coordinates are √n times
    the orthonormal ones used here: with orthonormal coordinates it overstates the noise ≥ √n-fold and
    SPA keeps k ≈ 1 — the flat histograms measured in RESULTS). Δ₂(k) = `dft_sensitivity`(n, norm=2,
    accounting=accounting)[k] (1 with ``"paper"``).
    """
    with jax.enable_x64(True):  # float64, as `spa` scores (found in review: float32 here, 82 off its scores)
        h, eps, l2, penalty = _score_inputs(hist, epsilon, penalty, accounting, norm=2)
        return np.asarray(_spa_scores(h, eps, l2, penalty=penalty))  # NumPy float64: usable whatever the caller's x64 mode


@programs.program(static_argnames=("penalty",))
def _spa_scores(h, eps, l2, *, penalty="consistent"):
    n = h.shape[0]
    tail = _tail_norm(transforms.rdft(h))[1:]  # k = 1 … n: coordinates k … n−1 removed
    k = jnp.arange(1, n + 1, dtype=h.dtype)
    if penalty == "paper":
        return tail + k * float(np.sqrt(n)) / (eps / 2)
    return tail + k * l2[1:] / (eps / 2)


def spa(
    key: jax.Array, hist, *, epsilon: float, penalty: str = "consistent", accounting: str = "exact",
    noise: str = "float",
) -> HistogramResult:
    """Sampling perturbation (the paper's Algorithm 1, after Rastogi & Nath).

    k ∈ {1 … n} is drawn with probability ∝ ``exp(−(ε/2)·U(H, k)/2)`` (exponential mechanism, ΔU = 1:
    `spa_scores`); the first k `rdft` coordinates get noise with density ∝ ``exp(−(ε/2)‖z‖₂/Δ₂)``, sampled as
    ``√g · N(0, I_k)`` with ``g ~ Gamma((k+1)/2, rate (ε/(2Δ₂))²/2)`` (a K-norm mechanism for the L2 norm;
    the k coordinates move by ≤ Δ₂ = `dft_sensitivity`(n, norm=2)[k] in L2: 1 with ``accounting="paper"``,
    the exact ≈ √(k/n) with ``"exact"``).

    Privacy: ε/2 (choice of k) + ε/2 (noise) = ε-DP.

    Args:
      penalty: ``"consistent"`` (default) or ``"paper"`` (`spa_scores`). accounting: ``"exact"`` or ``"paper"``.
      noise: ``"float"`` or ``"float64"``. ``"grid"`` is refused: the K-norm noise of SPA has no exact
        sampler here (use EFPA or FPA for exact Fourier releases).

    Returns:
      `HistogramResult` (``counts [n]``, the chosen k); ``[R, n]`` for a key array ``[R]``.
    """
    penalty = _validate.option("penalty", penalty, PENALTIES)
    accounting = _validate.option("accounting", accounting, ACCOUNTINGS)
    with _arithmetic(noise) as dtype:
        h, noise = _prepare(key, hist, epsilon, noise, rounded=True)
        if noise == "grid":
            raise ValueError('spa has no exact sampler for its K-norm noise: use noise="float" or "float64", '
                             'or efpa/fpa/lpa/php with noise="grid".')
        l2 = _tables(h.shape[0], accounting, 2)
        out, k = _over_keys(spa_core, key, h, jnp.asarray(epsilon, h.dtype), jnp.asarray(l2, h.dtype), penalty=penalty)
        return _result(key, out.astype(dtype), k, True, epsilon)


@programs.program(static_argnames=("penalty",))
def spa_core(key, h, eps, l2, *, penalty="consistent"):
    n = h.shape[0]
    k_sel, k_noise = jax.random.split(key)
    scores = _spa_scores(h, eps, l2, penalty=penalty)  # U(H, k): lower is better, sensitivity 1
    k = mechanisms.exponential_mechanism(k_sel, -scores, epsilon=eps / 2, sensitivity=1.0) + 1
    z = mechanisms.l2_norm_noise(k_noise, h.shape, dim=k, epsilon=eps / 2, sensitivity=l2[k], dtype=h.dtype)
    keep = jnp.arange(n, dtype=k.dtype) < k
    return transforms.irdft(jnp.where(keep, transforms.rdft(h) + z, 0.0)), k


EFPA_PENALTIES = PENALTIES


def _efpa_penalty(n, eps, dtype, l1, penalty="consistent"):
    m = n // 2 + 1
    k = jnp.arange(1, m + 1)
    z = transforms.rdft_size(n, k)
    zf = z.astype(dtype)
    if penalty == "paper":
        return k, z, float(np.sqrt(2.0)) * zf / eps
    return k, z, jnp.sqrt(2.0 * zf) * 2.0 * l1[z] / eps  # √(z·2·b²), b = Δ₁(z)/(ε/2): the noise actually added


def efpa_scores(hist, *, epsilon: float, penalty: str = "consistent", accounting: str = "exact") -> np.ndarray:
    """EFPA's ``u(H, k)`` (the paper's Eq. 3 as used in Algorithm 2) for k = 1 … m = ⌊n/2⌋ + 1:
    ``sqrt(energy of the removed real coordinates) + noise term`` with z = `rdft_size`(n, k). The data term
    moves by at most 1 between neighbours (Theorem 6); the noise term is public. Shape ``[m]`` (index k−1).
    **Not private**: computed from the raw histogram (what `efpa`'s exponential mechanism scores; a curator's
    diagnostic, never to be published).

    `penalty`: ``"consistent"`` (default) the root expected squared error of the noise EFPA actually adds,
    z coordinates with ``Lap(2Δ₁(z)/ε)``: ``√(2z)·2Δ₁(z)/ε`` (= 2√2·z/ε with the paper's Δ₁ = √z);
    ``"paper"`` ``√2·z/ε`` as printed — the error of ``Lap(√z/ε)``, half the noise, so it under-penalizes
    large k. Δ₁(z) = `dft_sensitivity`(n, accounting=accounting)[z].
    """
    with jax.enable_x64(True):  # float64, as `efpa` scores (found in review: float32 here, 82 off its scores)
        h, eps, l1, penalty = _score_inputs(hist, epsilon, penalty, accounting, norm=1)
        return np.asarray(efpa_scores_core(h, eps, l1, penalty=penalty))  # NumPy float64: usable whatever the caller's x64 mode


@programs.program(static_argnames=("penalty",))
def efpa_scores_core(h, eps, l1, *, penalty="consistent"):
    n = h.shape[0]
    k, z, pen = _efpa_penalty(n, eps, h.dtype, l1, penalty)
    tail = _tail_norm(transforms.rdft(h))
    return tail[z] + pen


def efpa(
    key: jax.Array, hist, *, epsilon: float, penalty: str = "consistent", accounting: str = "exact",
    noise: str = "float",
) -> HistogramResult:
    """Enhanced Fourier perturbation (the paper's Algorithm 2), for any n (odd or even).

    k ∈ {1 … m} (frequencies F_0 … F_{k−1}) is drawn with probability ∝ ``exp(−ε·u(H, k)/4)``
    (exponential mechanism at ε/2, Δu = 1: Theorem 6); the z = `rdft_size`(n, k) retained real
    coordinates get ``Lap(2Δ₁(z)/ε)`` each; the rest are zeroed; inverse real DFT.

    Privacy: ε-DP: ε/2 for the choice of k, ε/2 for the noise; Δ₁(z) = `dft_sensitivity`(n)[z] is the L1
    sensitivity of the z retained coordinates: √z with ``accounting="paper"`` (they move by ≤ 1 in L2),
    the exact value (≈ 0.9·z/√n) with ``"exact"`` (default). Every retained coordinate, real and
    imaginary part, is perturbed.

    Args:
      key: typed PRNG key. hist: counts ``[n]``. epsilon: ε > 0.
      penalty: the score's noise term (`efpa_scores`): ``"consistent"`` (default) or ``"paper"``.
      accounting: ``"exact"`` (default) or ``"paper"``. The paper preset is ``penalty="paper",
        accounting="paper"``.
      noise: ``"float"`` (default), ``"float64"`` or ``"grid"`` (exact; `jaxdp.mechanisms.NOISES`).

    Returns:
      `HistogramResult` (``counts [n]``, the chosen k); ``[R, n]`` for a key array ``[R]``.
    """
    penalty = _validate.option("penalty", penalty, PENALTIES)
    accounting = _validate.option("accounting", accounting, ACCOUNTINGS)
    with _arithmetic(noise) as dtype:
        h, noise = _prepare(key, hist, epsilon, noise, rounded=True)
        l1 = _tables(h.shape[0], accounting, 1)
        n = h.shape[0]  # every z = rdft_size(n, k) a choice of k can retain (the noise uses l1[z])
        zs = np.unique(np.minimum(2 * np.arange(1, n // 2 + 2) - 1, n))
        _check_grid(noise, epsilon / 2, l1[zs], h, coordinates=zs, snapped="dft")
        out, k = _over_keys(efpa_core, key, h, jnp.asarray(epsilon, h.dtype), jnp.asarray(l1, h.dtype),
                            noise=mechanisms.kernel_noise(noise), penalty=penalty)
        return _result(key, out.astype(dtype), k, True, epsilon)


@programs.program(static_argnames=("noise", "penalty"))
def efpa_core(key, h, eps, l1, *, noise="float", penalty="consistent"):
    n = h.shape[0]
    k_sel, k_noise = jax.random.split(key)
    scores = efpa_scores_core(h, eps, l1, penalty=penalty)  # u(H, k): lower is better, sensitivity 1 (Theorem 6)
    idx = mechanisms.exponential_mechanism(k_sel, -scores, epsilon=eps / 2, sensitivity=1.0, noise=noise)
    k, z, _ = _efpa_penalty(n, eps, h.dtype, l1, penalty)
    zk = z[idx]
    sens = l1[zk]  # L1 sensitivity of the z retained orthonormal coordinates
    noisy = mechanisms.laplace_mechanism(k_noise, transforms.rdft(h), epsilon=eps / 2, sensitivity=sens, noise=noise,
                                         coordinates=zk)  # the zk kept coordinates move (the rest are zeroed)
    keep = jnp.arange(n) < zk
    return transforms.irdft(jnp.where(keep, noisy, 0.0)), k[idx]
