"""Sparsity bases (Haar, DCT, identity) and sparse recovery (NIHT + least-squares refit)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import _validate, transforms

__all__ = ['basis_matrix', 'min_c5', 'recover', 'psi_ops', 'kth_largest']


# --------------------------------------------------------------------------------------- bases
_EXACT_C5_MAX_N = 4096  # min_c5 computes the DCT's constant exactly up to this n


def basis_matrix(basis, n: int) -> np.ndarray:
    """Ψ as a float64 ``[n, n]`` matrix with orthonormal *columns* (``D = Ψx``), validated."""
    n = _validate.size("n", n)
    if isinstance(basis, str):
        basis = _validate.option("basis", basis, ("haar", "dct"))
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


def min_c5(basis, n: int, *, c2: float = 1.0) -> float:
    """The smallest valid C₅: ``C₂ · max_j ‖Ψᵀ e_j‖₁`` (Δ = 1), so that u(D, S) of Eq. (1) has
    sensitivity ≤ C₅/√S for every S.

    Exact for Haar (every e_j has the same coefficient magnitudes: computed by the fast transform) and for
    any matrix up to n = 4096; for a DCT beyond that the valid bound ``√n`` (the
    L1 norm of a unit vector in R^n is at most √n) is used instead of building the n × n matrix.
    """
    n = _validate.size("n", n)
    if isinstance(basis, str) and basis == "haar":
        if n & (n - 1):
            raise ValueError(f"the Haar basis needs n to be a power of two, got n = {n}; pad the vector.")
        return float(c2 * _named_norm("haar", n) * (1 + 1e-6))
    if isinstance(basis, str) and basis == "dct":
        return float(c2 * _named_norm("dct", n))
    psi = basis_matrix(basis, n)
    return float(c2 * np.abs(psi).sum(axis=1).max())


@functools.lru_cache(maxsize=64)
def _named_norm(basis: str, n: int):
    """``max_j ‖Ψᵀ e_j‖₁`` of a named basis, kept per (basis, n) as a number: the n × n DCT matrix it is read from
    (128 MiB at n = 4096) is not kept (the transforms keep only small matrices) and is not rebuilt per release."""
    if basis == "haar":
        # in NumPy (float32 as the release's transform): eagerly in JAX it compiled ≈ 60 one-operation
        # programs per n, most of a first call's compile time
        return np.abs(_haar_analysis(np.eye(1, n, dtype=np.float32)[0])).sum()
    if n > _EXACT_C5_MAX_N:
        return np.sqrt(n)  # ‖column‖₁ ≤ √n ‖column‖₂ = √n for any orthonormal matrix
    return np.abs(basis_matrix(basis, n)).sum(axis=1).max()


def _haar_analysis(d):
    """Ψᵀd for the Haar basis in O(n): coefficients ordered as the rows of `transforms.haar_matrix` (a NumPy
    array in, a NumPy array out; else traced with JAX)."""
    xp = np if isinstance(d, np.ndarray) else jnp
    parts, cur = [], d
    r = float(np.sqrt(0.5))
    while cur.shape[-1] > 1:
        a, b = cur[..., 0::2], cur[..., 1::2]
        parts.insert(0, (a - b) * r)
        cur = (a + b) * r
    return xp.concatenate([cur, *parts], axis=-1)


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


def psi_ops(basis, n, dtype):
    """(x ↦ Ψx, D ↦ ΨᵀD) on the last axis: O(n) Haar, O(n log n) DCT (FFT), dense for a user matrix."""
    if isinstance(basis, str):
        _validate.option("basis", basis, ("haar", "dct"))
        if basis == "haar":
            if n & (n - 1):
                raise ValueError(f"the Haar basis needs n to be a power of two, got n = {n}; pad the vector.")
            return _haar_synthesis, _haar_analysis
        if basis == "dct":
            return (lambda x: jax.scipy.fft.idct(x, type=2, norm="ortho", axis=-1),
                    lambda d: jax.scipy.fft.dct(d, type=2, norm="ortho", axis=-1))
    psi = jnp.asarray(basis_matrix(basis, n), dtype)
    return (lambda x: x @ psi.T), (lambda d: d @ psi)


def _kth_largest(a, k):
    """The k-th largest entry of a non-negative float vector `a` (exactly the value ``sort(a)[-k]``).

    A bisection on the IEEE bit patterns, which order non-negative floats as integers do: 32 (64 for
    float64) counting passes over `a`. On XLA:CPU this is ≈ 10× faster than `lax.top_k` at n = 65,536
    (13 ms per call there, two calls per NIHT iteration); `k` may be traced.
    """
    itype = jnp.int32 if a.dtype == jnp.float32 else jnp.int64
    bits = jax.lax.bitcast_convert_type(a, itype)
    top = jnp.iinfo(itype).max

    def step(_, lohi):  # invariant: #(bits ≥ lo) ≥ k > #(bits ≥ hi)
        lo, hi = lohi
        mid = lo + (hi - lo) // 2
        ok = jnp.sum(bits >= mid) >= k
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)

    lo, _ = jax.lax.fori_loop(0, 8 * jnp.dtype(itype).itemsize, step, (jnp.zeros((), itype), jnp.asarray(top, itype)))
    return jax.lax.bitcast_convert_type(lo, a.dtype)


# the public name is one jitted program (found in review: called eagerly, its loop was compiled again at every call,
# ≈ 0.26 s each at n = 64); the recovery calls the traceable core inside its own program
kth_largest = jax.jit(_kth_largest)


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
    # found in review: S = 0 ran as S = 1, and a NaN sample gave all zeros, silently (checked where concrete)
    if _validate.is_concrete(sparsity) and np.ndim(sparsity) == 0:
        _validate.size("sparsity", int(sparsity) if np.asarray(sparsity).dtype.kind in "iu" else sparsity, hi=n,
                       why="S counts basis coefficients of the n-vector.")
    if _validate.is_concrete(y) and not np.all(np.isfinite(np.asarray(y))):
        raise ValueError("y contains NaN or inf: the samples must be finite.")
    psi_ops(basis, n, phi.dtype)  # the basis checked here, eagerly
    iterations, refit = _loop_count("iterations", iterations), _loop_count("refit", refit)
    # one program per (basis, sizes, iterations): found while timing a test, called eagerly the loops dispatched op by
    # op and compiled each body apart (4.4 s on the 2-core CPU for n = 64, 10 + 3 iterations; 1.4 s compiled once)
    return _recover_public(phi, jnp.asarray(y, phi.dtype), jnp.asarray(sparsity), _basis_key(basis), iterations, refit)


def _loop_count(name, value) -> int:
    """A whole number ≥ 0 of loop steps, as a Python int: it sizes the compiled program (found in review: a JAX array
    or a traced count was refused by the jit's static argument with JAX's own message)."""
    if isinstance(value, jax.core.Tracer):
        raise TypeError(f"{name} must be a concrete whole number (it sets the program's loop count), not traced: pass "
                        "it from outside jax.jit.")
    v = np.asarray(value)
    if v.ndim or v.dtype.kind not in "iu" or v < 0:
        raise ValueError(f"{name} must be a whole number >= 0, got {value!r}.")
    return int(v)


def _basis_key(basis):
    """A static (hashable) form of a basis: its name, or the user's matrix wrapped."""
    return basis if isinstance(basis, str) else _HashableMatrix(np.asarray(basis, np.float64))


class _HashableMatrix:
    def __init__(self, m):
        self.m = m
        self._h = hash(m.tobytes())

    def __hash__(self):
        return self._h

    def __eq__(self, other):
        return isinstance(other, _HashableMatrix) and np.array_equal(self.m, other.m)


@functools.partial(jax.jit, static_argnums=(3, 4, 5))
def _recover_public(phi, y, s, basis, iterations, refit):
    basis = basis.m if isinstance(basis, _HashableMatrix) else basis
    psi_x, psi_t = psi_ops(basis, phi.shape[-1], phi.dtype)
    return _recover(phi, y, s, psi_x, psi_t, iterations, refit)


def _recover(phi, y, s, psi_x, psi_t, iterations, refit):
    n = phi.shape[-1]
    dtype = phi.dtype

    def a(x):
        return phi @ psi_x(x)

    def at(r):
        return psi_t(r @ phi)

    def keep_top(v):
        thr = _kth_largest(jnp.abs(v), jnp.clip(s, 1, n))
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

    # CG stops where its residual is at round-off level (relative to ‖Aᵀy‖²) or the curvature pᵀAᵀAp is not
    # positive: found in review, past convergence on a rank-deficient support (more kept coefficients than
    # independent samples, e.g. S = k) the step rr/pᵀAᵀAp divided round-off by round-off and the release blew up
    # to ±1e37, inf or NaN
    # (relative to the support's part of Aᵀy, and the curvature relative to ‖p‖²: found in review, a tolerance over
    # all n coordinates stopped float32 CG up to 1000× short of the least-squares fit when n ≫ S)
    eps_d = jnp.finfo(dtype).eps
    tol = (4 * eps_d) ** 2 * jnp.sum(jnp.where(mask, at(y), 0.0) ** 2)

    def cg(_, st):  # least squares on the support: (A_Tᵀ A_T) z = A_Tᵀ y
        z, r, p, rr = st
        ap = jnp.where(mask, at(a(p)), 0.0)
        pap = jnp.sum(p * ap)
        go = (rr > tol) & (pap > 64 * eps_d * jnp.sum(p * p))
        alpha = jnp.where(go, rr / jnp.where(go, pap, 1.0), 0.0)
        z = z + alpha * p
        r = r - alpha * ap
        rr_new = jnp.sum(r * r)
        p = jnp.where(go, r + (rr_new / jnp.maximum(rr, jnp.finfo(dtype).tiny)) * p, p)
        return z, r, p, jnp.where(go, rr_new, rr)

    r0 = jnp.where(mask, at(y - a(x)), 0.0)
    z, *_ = jax.lax.fori_loop(0, refit, cg, (x, r0, r0, jnp.sum(r0 * r0)))
    return psi_x(z)
