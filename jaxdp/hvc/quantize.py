"""The DP quantizer of the hybrid-video-coding paper: Theorem 1, scores ω_θ and Algorithm 1.

For an input block ``x`` (n records × d attributes) and a public prediction ``x̂`` (computed from
already protected data), the error ``e = x - x̂`` is transformed by every candidate transform σ,
``c = a^n e a^dᵀ``, and read in a fixed scan order O. Keeping the first t coefficients with the
budget allocation of Theorem 1 costs the expected squared error (Lemma 2, Theorem 1)

    ξ(ε*, O, t, σ) = (2/ε_QL²) (Σ_{k≤t} GS_k^{2/3})³ · ρ_t²  +  Σ_{k>t} c_{O(k)}²,

where ``GS_k`` is the Lemma 1 sensitivity of the k-th coefficient and ``ρ_t = 1`` under
``accounting="paper"``; under ``accounting="joint"``, ``ρ_t ≤ 1`` is the exact joint privacy
loss of the allocation (see `jaxdp.hvc.sensitivity.joint_factor`, DESIGN note 4). The removal term
uses the *observed* coefficients, as the paper's scores do. All t = 0 … nd and all transforms
are scored at once with prefix sums (the Laplace term, public) and suffix sums (the removal
term): O(nd) per transform after the transform itself.

Algorithm 1 then draws (t, σ) with the exponential mechanism on ω_θ (θ = ½ or 1, sensitivities
of Lemma 3), adds Laplace noise of scale ``GS_k/ε*_k`` (× ρ_t) to the first t coefficients,
zeroes the rest and inverts the transform: ``x̃ = x̂ + ẽ``.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from jaxdp import _domain, _validate, mechanisms, transforms
from jaxdp.hvc import sensitivity
from jaxdp.mechanisms import exact
from jaxdp.transforms import cumsum, orders

__all__ = [
    "QuantizerTables",
    "QuantizeInfo",
    "tables",
    "allocation",
    "mse_table",
    "selection_probabilities",
    "quantize",
    "TILE_ENTRIES",
]

_HIGHEST = jax.lax.Precision.HIGHEST
_DEFAULT_KINDS = ("dct", "dst", "dht")
_KRON_MAX = 128  # n·d up to which the forward transform is one Kronecker GEMM


class QuantizerTables(NamedTuple):
    """Public, data-independent tables of one quantizer configuration (float64, host).

    Attributes:
      an: ``[K, n, n]`` transform matrices ``a^n`` of the K candidate kinds.
      ad: ``[K, d, d]`` transform matrices ``a^d``.
      order: ``[n*d]`` int32 flat scan order.
      inverse_order: ``[n*d]`` int32 inverse permutation of `order`.
      cbrt_gs: ``[K, n*d]`` ``GS_k^{1/3}`` in scan order (Laplace scale of coefficient k is
        ``GS_k^{1/3} · S_t · ρ_t / ε_QL``).
      prefix: ``[K, n*d+1]`` ``S_t = Σ_{k<t} GS_k^{2/3}``.
      rho: ``[K, n*d+1]`` joint-loss factor ρ_t (all ones under ``accounting="paper"``).
      laplace_mse: ``[K, n*d+1]`` Laplace error ``2 S_t³ ρ_t²`` at ``ε_QL = 1``.
      lo, hi: ``[d]`` domain bounds.
      gs_frobenius: ``[]`` ``max_σ ‖GS(f_c^σ)‖_F`` over the candidate kinds (Lemma 3).
      kron: ``[K, n*d, n*d]`` ordered Kronecker matrices ``P_O (a^n ⊗ a^d)`` when n·d ≤ 128, else None.
      kron_t: ``[n*d, K, n*d]``, the same matrices transposed (``kron_t[q, k, p] = kron[k, p, q]``),
        so the forward product reads them row by row without a per-call transpose.
    """

    an: np.ndarray
    ad: np.ndarray
    order: np.ndarray
    inverse_order: np.ndarray
    cbrt_gs: np.ndarray
    prefix: np.ndarray
    rho: np.ndarray
    laplace_mse: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    gs_frobenius: np.ndarray
    kron: np.ndarray | None = None
    kron_t: np.ndarray | None = None


class QuantizeInfo(NamedTuple):
    """What Algorithm 1 chose for each block (arrays with the batch shape of the input).

    Attributes:
      t: number of retained coefficients (0 … n·d).
      kind: index into the `kinds` tuple of the selected transform.
      epsilon: budget spent on the block, ``eps_laplace + eps_select``.

    Everything here is chosen by the mechanism (t and the kind) or public (ε). How many input values
    were clamped into the domain is deliberately *not* reported: it is an exact function of the
    private data (count them yourself, as the curator, if you need them).
    """

    t: Int[Array, "*batch"]
    kind: Int[Array, "*batch"]
    epsilon: Float[Array, "*batch"]


@functools.lru_cache(maxsize=128)
def _tables(n, lo, hi, kinds, order, accounting) -> QuantizerTables:
    bounds = np.stack([np.asarray(lo), np.asarray(hi)])
    d = len(lo)
    order_idx = orders.get(order, n, d)
    gs = np.stack([sensitivity.coefficient_table(k, n, bounds).reshape(-1)[order_idx] for k in kinds])
    g23 = gs ** (2.0 / 3.0)
    prefix = np.concatenate([np.zeros((len(kinds), 1)), np.cumsum(g23, axis=1)], axis=1)
    if accounting == "joint":
        rho = np.stack([sensitivity.joint_factor(k, n, bounds, order=order) for k in kinds])
    else:
        rho = np.ones_like(prefix)
        rho[:, 0] = 0.0
    kron = (
        np.stack([np.kron(transforms.matrix(k, n), transforms.matrix(k, d))[order_idx] for k in kinds])
        if n * d <= _KRON_MAX
        else None
    )
    out = QuantizerTables(
        an=np.stack([transforms.matrix(k, n) for k in kinds]),
        ad=np.stack([transforms.matrix(k, d) for k in kinds]),
        order=np.asarray(order_idx, np.int32),
        inverse_order=np.argsort(order_idx).astype(np.int32),
        cbrt_gs=gs ** (1.0 / 3.0),
        prefix=prefix,
        rho=rho,
        laplace_mse=2.0 * prefix**3 * rho**2,
        lo=np.asarray(lo),
        hi=np.asarray(hi),
        gs_frobenius=np.asarray(max(sensitivity.frobenius(k, n, bounds) for k in kinds)),
        kron=kron,
        kron_t=None if kron is None else np.ascontiguousarray(kron.transpose(2, 0, 1)),
    )
    for arr in out:
        if arr is not None:
            arr.flags.writeable = False
    return out


def tables(
    n: int, bounds, *, kinds=_DEFAULT_KINDS, order: str = "zigzag", accounting: str = "paper"
) -> QuantizerTables:
    """Build (and cache) the public tables of a quantizer configuration. See `QuantizerTables`."""
    n = _validate.block_size("n", n)
    lo, hi = _validate.bounds(bounds)
    kinds = _validate.kinds(kinds)
    order = _validate.option("order", order, orders.ORDERS)
    accounting = _validate.option("accounting", accounting, _validate.ACCOUNTINGS)
    return _tables(n, tuple(lo.tolist()), tuple(hi.tolist()), kinds, order, accounting)


def allocation(
    kind: str, n: int, bounds, t: int, *, eps_laplace: float, order: str = "zigzag", accounting: str = "paper"
) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 1 budget allocation and the Laplace scales for the first t coefficients.

    Returns:
      ``(eps, scales)``, float64 arrays of shape ``[t]`` in scan order: ``ε*_k = GS_k^{2/3} /
      Σ_{l≤t} GS_l^{2/3} · ε_QL`` (summing to ε_QL) and the scales ``GS_k/ε*_k · ρ_t`` actually
      used (ρ_t = 1 for ``"paper"``).
    """
    _validate.positive_scalar("eps_laplace", eps_laplace)
    tab = tables(n, bounds, kinds=(kind,), order=order, accounting=accounting)
    nd = tab.order.shape[0]
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 0 <= t <= nd:
        raise ValueError(f"t must be an int in [0, n*d] = [0, {nd}], got {t!r}.")
    g = tab.cbrt_gs[0, :t] ** 3
    eps = g ** (2.0 / 3.0) / tab.prefix[0, t] * eps_laplace if t else np.zeros(0)
    scales = tab.cbrt_gs[0, :t] * tab.prefix[0, t] * tab.rho[0, t] / eps_laplace
    return eps, scales


# ----------------------------------------------------------------------------------------------
# Traceable per-block kernels (no validation; called under the public jit)
# ----------------------------------------------------------------------------------------------


def _clamp(x, x_hat, lo, hi):
    """Clamp data and prediction into the domain (NaN → the midpoint)."""
    mid = 0.5 * (lo + hi)
    x = jnp.clip(jnp.where(jnp.isnan(x), mid, x), lo, hi)
    x_hat = jnp.clip(jnp.where(jnp.isnan(x_hat), mid, x_hat), lo, hi)
    return x, x_hat


def _coefficients(e, tab):
    """All candidate transforms of one error block, in scan order: ``[K, n*d]``.

    For n·d ≤ `_KRON_MAX` this is one product with ``kron[s] = P_O (a^n ⊗ a^d)`` (the scan order
    folded in), which under `vmap` is a single large GEMM. Otherwise it is written as two einsums so that, under `vmap` over blocks, the first product becomes one
    large GEMM ``[K·n, n] x [n, B·d]`` and the second K GEMMs ``[B·n, d] x [d, d]``.
    """
    if tab.kron is not None:  # small blocks: one GEMM with the ordered Kronecker matrices
        return jnp.einsum("q,qkp->kp", e.reshape(-1), tab.kron_t, precision=_HIGHEST)
    left = jnp.einsum("kij,jl->kil", tab.an, e, precision=_HIGHEST)
    c = jnp.einsum("kil,kml->kim", left, tab.ad, precision=_HIGHEST)
    return c.reshape(c.shape[0], -1)[:, tab.order]


def _inverse(c_tilde, s, tab, n, d):
    """Inverse transform of kind `s` of coefficients ``c_tilde`` ``[n*d]`` in scan order → ``[n, d]``.

    Small blocks: a sum over all K kinds with the other kinds' coefficients zeroed, which under
    vmap is one large GEMM with the Kronecker matrices. Larger blocks: the selected kind's
    matrices are gathered per block (cheaper there than K-fold work).
    """
    if tab.kron is not None:
        c_all = jnp.where((jnp.arange(tab.kron.shape[0]) == s)[:, None], c_tilde[None, :], 0.0)
        return jnp.einsum("kp,kpq->q", c_all, tab.kron, precision=_HIGHEST).reshape(n, d)
    cm = c_tilde[tab.inverse_order].reshape(n, d)  # back from scan order (a gather, not a scatter)
    return jnp.matmul(jnp.matmul(tab.an[s].T, cm, precision=_HIGHEST), tab.ad[s], precision=_HIGHEST)


def _suffix_sums(sq):
    """``tail[:, t] = Σ_{k ≥ t} sq[:, k]`` for t = 0 … nd (last column 0), shape ``[K, nd+1]``."""
    return cumsum.suffix_sums(sq)


def _block_terms(x, x_hat, tab, eps_laplace):
    x, x_hat = _clamp(x, x_hat, tab.lo, tab.hi)
    c = _coefficients(x - x_hat, tab)
    tail = _suffix_sums(c * c)
    lap = tab.laplace_mse / (eps_laplace * eps_laplace)
    return x_hat, c, lap, tail


def _scores(lap, tail, x_hat, tab, theta, prune=False, bound=None):
    """ω_θ for all (σ, t) and its Lemma 3 sensitivity bound: ``(public, private, sens)`` with
    ``ω_θ = public + private``.

    The public part (from the Laplace error `lap`, a function of public tables and ε_QL) and the private part
    (from the removal error `tail`, which reads the block) are kept apart so that the exact sampler can round
    them apart (`jaxdp.mechanisms.integer_scores`): summed in float32, the large public term set the rounding
    of the private one.

    With `prune`, candidates whose Laplace error alone exceeds the largest possible removal error
    ``R = Σ_ij max(hi_j - x̂_ij, x̂_ij - lo_j)²`` (the worst error of releasing x̂ itself, t = 0)
    get a public part of -inf; with a public `bound` (a released estimate of the block's removal error at
    t = 0, e.g. from the frame-mean layer), also those whose Laplace error exceeds it: they cannot beat
    releasing x̂. The rule reads only public values (ε_QL, Λ, n, d, the order, x̂ and `bound`), so the
    candidate set stays data-independent; t = 0 is never pruned.
    """
    far = sensitivity._omega_one_factor(x_hat, tab.lo, tab.hi)
    if theta == 1.0:
        public, private = -lap, -tail
        sens = 2.0 * tab.gs_frobenius * far
    else:
        public, private = -jnp.sqrt(lap), -jnp.sqrt(tail)
        sens = tab.gs_frobenius
    if prune:
        limit = far * far if bound is None else jnp.minimum(far * far, bound)
        public = jnp.where(lap > limit, -jnp.inf, public)
    return jnp.broadcast_to(public, private.shape), private, sens


def _mse_block(x, x_hat, tab, eps_laplace):
    _, _, lap, tail = _block_terms(x, x_hat, tab, eps_laplace)
    return lap + tail


def _probabilities_block(x, x_hat, tab, eps_laplace, eps_select, theta):
    x_hat, _, lap, tail = _block_terms(x, x_hat, tab, eps_laplace)
    public, private, sens = _scores(lap, tail, x_hat, tab, theta)
    score = public + private
    return jax.nn.softmax((eps_select / (2.0 * sens)) * score.reshape(-1)).reshape(score.shape)


class _BlockDraws(NamedTuple):
    """The random numbers Algorithm 1 uses for one block, drawn from its key by `_block_draws`."""

    select: Float[Array, "2"]  # uniforms of the two-stage (t, σ) draw (noise="grid": a key for the exact draw)
    noise: Float[Array, " nd"]  # standard Laplace [nd] (noise="float"), or a key (noise="grid": exact sampler)


def _block_draws(key, nd: int, dtype, noise: str = "float") -> _BlockDraws:
    """Everything random in `quantize_block_core` for one block, from its key (same derivation).

    Separate so that a `lax.scan` over blocks can draw all of it in one vectorized call before
    the loop: on CPU, JAX lowers threefry to a rolled loop whose per-call cost dominates a small
    scan step.
    """
    k_select, k_noise = jax.random.split(key)
    if noise == "grid":  # the exact samplers draw as many words as they need, from these keys
        return _BlockDraws(k_select, k_noise)
    u = mechanisms.exponential_uniforms(k_select, dtype)
    return _BlockDraws(u, mechanisms.standard_laplace(k_noise, (nd,), dtype))


def quantize_block_core(key, x, x_hat, tab, eps_laplace, eps_select, theta, prune=False, noise="float"):
    draws = _block_draws(key, x.shape[0] * x.shape[1], x.dtype, noise)
    return _quantize_block_drawn(draws, x, x_hat, tab, eps_laplace, eps_select, theta, prune, noise)


def _quantize_block_drawn(
    draws, x, x_hat, tab, eps_laplace, eps_select, theta, prune=False, noise="float", bound=None
):
    n, d = x.shape
    nd = n * d
    x_hat, c, lap, tail = _block_terms(x, x_hat, tab, eps_laplace)
    public, private, sens = _scores(lap, tail, x_hat, tab, theta, prune, bound)
    gs = tab.cbrt_gs**3  # [K, nd] Lemma 1 sensitivities in scan order
    # Theorem 1: coefficient k < t gets ε*_k = GS_k^{2/3}/S_t · ε_QL; joint accounting divides by ρ_t.
    # With the noise scale b_k = GS_k/ε*_k (× ρ_t) = GS_k^{1/3} S_t ρ_t / ε_QL.
    if noise == "grid":
        # Float-safe and exact: snap to γ_k = 2^⌊log2(GS_k/256)⌋ and add exact discrete Laplace. Snapping adds
        # ≤ γ_k ≤ GS_k/256 to each coefficient's sensitivity, i.e. at most ε_QL/(256 ρ_t) to the loss: the
        # sensitivities are inflated by (1 + 1/(256 ρ_t)) so that the total stays ≤ ε_QL.
        gamma_all = mechanisms.grid_spacing(gs)
        inflate_all = 1.0 + 1.0 / (256.0 * jnp.maximum(tab.rho, 1e-6))  # [K, nd+1]
        # Candidates whose noise-to-grid ratio b_k/γ_k could not be sampled exactly are excluded (a rule
        # on public values: tables, ε_QL). t = 0 is always allowed.
        ratio_max = jax.lax.cummax(tab.cbrt_gs / gamma_all, axis=1)  # max_{k<t} GS_k^{1/3}/γ_k, [K, nd]
        ratio_max = jnp.concatenate([jnp.zeros_like(ratio_max[:, :1]), ratio_max], axis=1)
        ratio = ratio_max * tab.prefix * tab.rho * inflate_all * 1.01 / eps_laplace
        public = jnp.where(ratio < exact.MAX_SCALE, public, -jnp.inf)
        # Algorithm 1, lines 1-4: exponential mechanism over all (σ, t), sampled exactly on integer scores
        # (the public and private parts of ω_θ rounded apart: `mechanisms.integer_scores`).
        idx = mechanisms.exponential_exact_core(draws.select, private.reshape(-1), eps_select, sens,
                                                public=public.reshape(-1))
        idx = idx.astype(jax.dtypes.canonicalize_dtype(jnp.int64))  # int32: the default int under x64 is int64
        s, t = idx // (nd + 1), idx % (nd + 1)
        eps_k = tab.cbrt_gs[s] ** 2 * eps_laplace / (tab.prefix[s, t] * tab.rho[s, t])
        gamma = gamma_all[s]
        scale = mechanisms.laplace_scale(epsilon=eps_k, sensitivity=gs[s] * inflate_all[s, t], dtype=x.dtype)
        noisy = mechanisms.grid_laplace_core(draws.noise, c[s], scale, gamma)
    else:
        # Algorithm 1, lines 1-4: exponential mechanism over all (σ, t), in log space.
        s, t = mechanisms.exponential_drawn(draws.select, public + private, epsilon=eps_select, sensitivity=sens)
        # Lines 6-13: Laplace noise of scale GS_k/ε*_k (× ρ_t) on the first t coefficients, zero the rest.
        eps_k = tab.cbrt_gs[s] ** 2 * eps_laplace / (tab.prefix[s, t] * tab.rho[s, t])
        noisy = mechanisms.add_standard_laplace(draws.noise, c[s], epsilon=eps_k, sensitivity=gs[s])
    keep = jnp.arange(nd) < t
    c_tilde = jnp.where(keep, noisy, jnp.zeros_like(noisy))
    # Line 14: inverse transform of the selected kind.
    e_tilde = _inverse(c_tilde, s, tab, n, d)
    eps = jnp.asarray(eps_laplace + eps_select, x.dtype)
    return x_hat + e_tilde, QuantizeInfo(t.astype(jnp.int32), s.astype(jnp.int32), eps)


# ----------------------------------------------------------------------------------------------
# Public, validated, jitted entry points
# ----------------------------------------------------------------------------------------------


def _prepare(x, x_hat, bounds, kinds, order, accounting):
    x = _validate.block("x", x)
    x_hat = _validate.block("x_hat", x_hat)
    n, d = x.shape[-2:]
    if x_hat.shape[-2:] != (n, d):
        raise ValueError(f"x_hat must have the block shape of x, [..., {n}, {d}]; got {tuple(x_hat.shape)}.")
    try:
        batch = jnp.broadcast_shapes(x.shape[:-2], x_hat.shape[:-2])
    except ValueError as err:
        raise ValueError(f"x {tuple(x.shape)} and x_hat {tuple(x_hat.shape)} have incompatible batch shapes.") from err
    lo, hi = _validate.bounds(bounds, d)  # shape and value checks against the data's d
    dtype = np.dtype(jax.dtypes.canonicalize_dtype(np.promote_types(x.dtype, x_hat.dtype)))
    width = hi - lo
    reason = _domain.unfit(np.zeros_like(width), width, dtype)
    if reason is not None:  # (found in review: such domains silently released x_hat with t = 0)
        raise ValueError(f"bounds: {reason}; use float64 inputs (jax_enable_x64) or rescale the data.")
    if np.any(lo != 0):
        # Code x − lo in [0, Λ], shifted in float64, as the stream front ends do (found in review: in float32 the
        # bounds [1e9 + 31, 1e9 + 33] rounded to [1e9, 1e9 + 64], the clamp let neighbours 32× further apart than
        # the calibrated width Λ = 2, and a release above 1e9 + 32 had probability 0 for one and 0.52 for the other)
        with jax.enable_x64(True):
            x = jnp.asarray(np.asarray(x, np.float64) - lo).astype(dtype)
            x_hat = jnp.asarray(np.asarray(x_hat, np.float64) - lo).astype(dtype)
    tab = tables(n, width, kinds=kinds, order=order, accounting=accounting)
    x = jnp.broadcast_to(x.astype(dtype), (*batch, n, d)).reshape(-1, n, d)
    if x_hat.ndim == 2:  # one prediction for every block: keep it unbatched (vmap in_axes=None)
        x_hat = x_hat.astype(dtype)
    else:
        x_hat = jnp.broadcast_to(x_hat.astype(dtype), (*batch, n, d)).reshape(-1, n, d)
    tab = device_tables(tab, np.dtype(dtype))
    return x, x_hat, tab, batch, dtype, lo


TILE_ENTRIES = 1_000_000  # public tuning constant: candidate-table entries K·(nd+1) per tile of blocks (see `_map_blocks`)


def _map_blocks(block_fn, per_block, x_hat, tab):
    """``vmap(block_fn)`` over the leading axis of the arrays in `per_block`, in tiles of blocks.

    ``block_fn(*per_block_slices, x_hat_block, tab)``. The blocks are processed as a `lax.map`
    over tiles, each tile one vmapped program, so the ``[tile, K, nd+1]`` candidate tables stay in
    cache instead of streaming ``[B, K, nd+1]`` arrays through memory between XLA ops. Every block
    runs the same per-block computation, so the result does not depend on the tiling except for
    float rounding inside GEMMs at large n·d. Measured on the 2-core CPU (n = 8, 10⁴ blocks):
    39 ms untiled, 25 ms in tiles of ≈ 2,000 blocks (≈ 10⁶ table entries, the rule used here).
    The batch is padded to a whole number of equal tiles (fewer than one block per tile wasted;
    one compiled tile program instead of a second one for a remainder). Padding blocks repeat the
    first blocks (data and keys); their outputs are dropped here and never returned.
    """
    if x_hat.ndim == 3:  # one prediction per block
        per_block = (*per_block, x_hat)
        fn = lambda *a: block_fn(*a, tab)  # noqa: E731
    else:
        fn = lambda *a: block_fn(*a, x_hat, tab)  # noqa: E731
    b = per_block[0].shape[0]
    if b == 0:  # nothing to tile: an empty batch gives empty outputs
        return jax.vmap(fn)(*per_block)
    n, d = x_hat.shape[-2:]
    tile = max(1, min(b, TILE_ENTRIES // (tab.cbrt_gs.shape[0] * (n * d + 1))))
    n_tiles = -(-b // tile)
    tile = -(-b // n_tiles)  # equal tiles, padding < n_tiles
    pad = n_tiles * tile - b

    def tiles(a):
        a = jnp.concatenate([a, a[:pad]]) if pad else a
        return a.reshape(n_tiles, tile, *a.shape[1:])

    out = jax.lax.map(lambda a: jax.vmap(fn)(*a), tuple(tiles(a) for a in per_block))
    return jax.tree_util.tree_map(lambda a: a.reshape(n_tiles * tile, *a.shape[2:])[:b], out)


_DEVICE_CACHE: dict = {}


def device_tables(tab: QuantizerTables, dtype: np.dtype) -> QuantizerTables:
    """Device copies of the (cached, immutable) host tables in the compute dtype, cached too.

    Made concrete even when called under a caller's `jax.jit` or `jax.vmap` (`jax.ensure_compile_time_eval`), and
    never cached as tracers: found in review, `quantize` called inside a user's jit cached a tracer here, and the next
    traced call (another accounting) failed with an UnexpectedTracerError."""
    key = (id(tab), dtype)
    hit = _DEVICE_CACHE.get(key)
    if hit is None or hit[0] is not tab:
        with jax.ensure_compile_time_eval():
            conv = jax.tree_util.tree_map(lambda a: jnp.asarray(a, dtype if a.dtype.kind == "f" else a.dtype), tab)
        if any(isinstance(a, jax.core.Tracer) for a in jax.tree_util.tree_leaves(conv)):
            return conv  # (not cached: it belongs to the trace under way)
        if len(_DEVICE_CACHE) > 64:
            _DEVICE_CACHE.clear()
        hit = _DEVICE_CACHE[key] = (tab, conv)
    return hit[1]


@jax.jit
def _mse_jit(x, x_hat, tab, eps_laplace):
    return _map_blocks(lambda xb, hb, t: _mse_block(xb, hb, t, eps_laplace), (x,), x_hat, tab)


def mse_table(
    x: Float[Array, "*batch n d"],
    x_hat: Float[Array, "*batch n d"],
    bounds,
    *,
    kinds=_DEFAULT_KINDS,
    order: str = "zigzag",
    eps_laplace: float = 1.0,
    accounting: str = "paper",
) -> Float[Array, "*batch K nd1"]:
    """Quantization MSE ξ(ε*, O, t, σ) for every candidate transform and every t = 0 … n·d.

    Theorem 1 with the observed coefficients (as the paper's scores use them): the Laplace term
    ``(2/ε_QL²)(Σ_{k≤t} GS_k^{2/3})³ ρ_t²`` plus the removal term ``Σ_{k>t} c_k²``. Values of `x`
    and `x_hat` outside the domain are clamped first, as `quantize` does.

    Args:
      x: block(s) of shape ``[..., n, d]`` (private data; this table is **not** DP output).
      x_hat: prediction block(s), broadcastable to `x`.
      bounds: public domain, ``[d]`` widths or ``[2, d]`` (lo, hi).
      kinds: candidate transforms, a tuple of K names from ``("dct", "dst", "dht", "identity")``.
      order: ``"zigzag"`` or ``"diagonal"``.
      eps_laplace: Laplace budget ε_QL > 0.
      accounting: ``"paper"`` (Theorem 1) or ``"joint"`` (exact joint loss, DESIGN note 4).

    Returns:
      Array of shape ``[..., K, n*d + 1]``; entry ``[..., s, t]`` is ξ for kind ``kinds[s]`` and t.

    Raises:
      ValueError / TypeError: bad shapes, dtypes, bounds, ε or option names.
    """
    kinds = _validate.kinds(kinds)
    _validate.positive_scalar("eps_laplace", eps_laplace)
    x, x_hat, tab, batch, dtype, _ = _prepare(x, x_hat, bounds, kinds, order, accounting)
    out = _mse_jit(x, x_hat, tab, jnp.asarray(eps_laplace, dtype))
    return out.reshape(*batch, *out.shape[1:])


def _check_theta(theta):
    if isinstance(theta, (bool, np.bool_)) or not isinstance(theta, (int, float, np.integer, np.floating)):
        raise TypeError(f"theta must be the number 0.5 or 1.0, got {type(theta).__name__}.")  # (review: True was 1)
    if theta not in (0.5, 1.0):
        raise ValueError(f"theta must be 0.5 or 1.0 (Lemma 3 gives sensitivities only for these), got {theta!r}.")
    return float(theta)


@functools.partial(jax.jit, static_argnames=("theta",))
def _probabilities_jit(x, x_hat, tab, eps_laplace, eps_select, *, theta):
    return _map_blocks(
        lambda xb, hb, t: _probabilities_block(xb, hb, t, eps_laplace, eps_select, theta), (x,), x_hat, tab
    )


def selection_probabilities(
    x: Float[Array, "*batch n d"],
    x_hat: Float[Array, "*batch n d"],
    bounds,
    *,
    eps_laplace: float,
    eps_select: float,
    theta: float = 1.0,
    kinds=_DEFAULT_KINDS,
    order: str = "zigzag",
    accounting: str = "paper",
) -> Float[Array, "*batch K nd1"]:
    """The exact PMF ``p_TΣ(t, σ; θ)`` of Algorithm 1's exponential mechanism (paper Fig. 5).

    Returns an array of shape ``[..., K, n*d + 1]`` summing to one over the last two axes. This
    reads the private block and is **not** DP output; it is for analysis and tests.
    """
    kinds = _validate.kinds(kinds)
    theta = _check_theta(theta)
    _validate.positive_scalar("eps_laplace", eps_laplace)
    _validate.positive_scalar("eps_select", eps_select)
    x, x_hat, tab, batch, dtype, _ = _prepare(x, x_hat, bounds, kinds, order, accounting)
    out = _probabilities_jit(
        x, x_hat, tab, jnp.asarray(eps_laplace, dtype), jnp.asarray(eps_select, dtype), theta=theta
    )
    return out.reshape(*batch, *out.shape[1:])


@functools.partial(jax.jit, static_argnames=("theta",))
def _quantize_jit(keys, x, x_hat, tab, eps_laplace, eps_select, *, theta):
    return _map_blocks(
        lambda kb, xb, hb, t: quantize_block_core(kb, xb, hb, t, eps_laplace, eps_select, theta), (keys, x), x_hat, tab
    )


def quantize(
    key: jax.Array,
    x: Float[Array, "*batch n d"],
    x_hat: Float[Array, "*batch n d"],
    bounds,
    *,
    eps_laplace: float,
    eps_select: float,
    theta: float = 1.0,
    kinds=_DEFAULT_KINDS,
    order: str = "zigzag",
    accounting: str = "paper",
) -> tuple[Float[Array, "*batch n d"], QuantizeInfo]:
    """Algorithm 1 end to end: choose (t, σ) privately, add Laplace noise, inverse transform.

    Privacy:
      Protects any one record (row) of each block, replaced by another record inside the public
      domain ``[lo, hi]``. The choice of (t, σ) is the exponential mechanism on ω_θ with the
      Lemma 3 sensitivity bound (ε_QE = `eps_select`); the retained coefficients get Laplace
      noise calibrated by Lemma 1 and Theorem 1 (ε_QL = `eps_laplace`); by sequential
      composition each block is ``(eps_laplace + eps_select)``-DP (paper Theorem 2, first part).
      Blocks in a batch are independent mechanisms: if they hold distinct people, parallel
      composition applies; if one person appears in several blocks, their budgets add up.
      ``accounting="joint"`` scales the noise so that the *exact* joint loss of the t noisy
      coefficients equals ε_QL (DESIGN note 4); it is never above the paper's noise.
      `x_hat` must be public (a function of already-protected output): it is clamped into the
      domain (DESIGN note 2). Inputs outside the domain (or NaN/inf) are clamped (not counted: a
      count would be an exact function of the private data). The Laplace sampler is the textbook float one (DESIGN note 5).

    Args:
      key: typed PRNG key (`jax.random.key`). A single key is split into one key per block; or
        pass keys whose shape equals the batch shape ``[...]``.
      x: block(s) of shape ``[..., n, d]``.
      x_hat: prediction block(s) broadcastable to `x` (e.g. ``zeros``, or the domain midpoint).
      bounds: public domain, ``[d]`` widths (domain ``[0, Λ]``) or ``[2, d]`` (lo, hi).
      eps_laplace: ε_QL > 0, the Laplace budget.
      eps_select: ε_QE > 0, the budget of the (t, σ) selection.
      theta: score exponent θ: 1.0 (ω_1, paper's reported choice) or 0.5 (ω_½).
      kinds: candidate transforms (tuple of names).
      order: scan order, ``"zigzag"`` or ``"diagonal"``.
      accounting: ``"paper"`` or ``"joint"``.

    Returns:
      ``(x_tilde, info)``: the released block(s) ``x̂ + ẽ`` of shape ``[..., n, d]`` (not clipped
      to the domain; clipping it is free post-processing) and a `QuantizeInfo`.

    Raises:
      ValueError / TypeError: bad key, shapes, dtypes, bounds, ε, θ or option names.
    """
    _validate.key(key)
    kinds = _validate.kinds(kinds)
    theta = _check_theta(theta)
    _validate.positive_scalar("eps_laplace", eps_laplace)
    _validate.positive_scalar("eps_select", eps_select)
    x, x_hat, tab, batch, dtype, lo = _prepare(x, x_hat, bounds, kinds, order, accounting)
    if key.shape == ():
        keys = jax.random.split(key, x.shape[0])
    elif tuple(key.shape) == tuple(batch):
        keys = key.reshape(-1)
    else:
        raise ValueError(
            f"key must be a single key or have the batch shape {tuple(batch)} of x; got shape {tuple(key.shape)}."
        )
    x_tilde, info = _quantize_jit(
        keys, x, x_hat, tab, jnp.asarray(eps_laplace, dtype), jnp.asarray(eps_select, dtype), theta=theta
    )
    n, d = x_tilde.shape[-2:]
    if np.any(lo != 0):  # back from the coded [0, Λ] coordinates (post-processing of the release)
        with jax.enable_x64(True):
            x_tilde = jnp.asarray(np.asarray(x_tilde, np.float64) + lo).astype(dtype)
    x_tilde = x_tilde.reshape(*batch, n, d)
    info = jax.tree_util.tree_map(lambda a: a.reshape(batch), info)
    return x_tilde, info
