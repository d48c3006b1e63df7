"""The closed loop of the hybrid-video-coding anonymizer: one block step, and a scan over blocks.

``step(state, block, key) → (state, released_block, info)`` combines Algorithm 2 (encoder
control: the exponential mechanism picks a prediction mode, score ``-‖X - X̂(φ)‖²_F``,
sensitivity ``‖Λ‖²₂`` by Lemma 5, valid because predictions are clipped) and Algorithm 1 (the
quantizer: transform, (t, σ) selection, Laplace noise, inverse transform). The released block is
stored in the history from which later blocks are predicted (DPCM: the loop is sequential), and
the whole stream is one `lax.scan` over blocks.

Privacy (per block, paper Theorem 2): ``ε_E + ε_QE + ε_QL = ε_block``; blocks of one frame hold
distinct subjects (parallel composition), and the stream driver charges each frame once.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from jaxdp import _validate, mechanisms
from jaxdp.hvc import cpu_loop, predict, quantize
from jaxdp.hvc.config import HVCConfig

_UNROLL = 1  # lax.scan unroll factor. 4 was ≈ 20 % faster on CPU but compiles the remainder iterations differently, which broke bit-identity between the batch and streaming front ends (different scan lengths)

__all__ = ["CodecState", "BlockInfo", "BlockInputs", "CodecParams", "params", "init", "step", "run", "one_kernel_loop"]


class CodecState(NamedTuple):
    """Carried between blocks: the last π released blocks (most recent first) and how many exist."""

    history: Float[Array, "pi n d"]
    valid: Int[Array, ""]


class BlockInfo(NamedTuple):
    """Per block: prediction mode index (into `predict.mode_names`), transform index (into
    ``config.kinds``), retained coefficients t, ε spent, and the row permutation applied before
    coding (position k holds block row perm[k]; identity unless ``reorder="paper"``).

    Mode, kind and t are outputs of the exponential mechanism and ε is public, so all of it may be
    published with the release — except ``perm`` under ``reorder="paper"`` (not DP, DESIGN note 3).
    Nothing here counts raw data (e.g. values clamped into the domain): see `jaxdp.diagnostics`."""

    mode: Int[Array, "*blocks"]
    kind: Int[Array, "*blocks"]
    t: Int[Array, "*blocks"]
    epsilon: Float[Array, "*blocks"]
    perm: Int[Array, "*blocks n"]


def empty_info(block_size: int) -> BlockInfo:
    """A `BlockInfo` of no blocks (a streaming call that released nothing)."""
    z = np.zeros(0, np.int32)
    return BlockInfo(z, z, z, np.zeros(0, np.float64), np.zeros((0, block_size), np.int32))


class BlockInputs(NamedTuple):
    """Per-block public inputs of the loop: the block's budget ε, the frame-mean estimate (`[d]`,
    the running estimate of the column means of the block's frame, in the codec's coordinates; zeros
    when the frame-mean layer is off) and `energy`, a released estimate of the block's squared distance
    to that estimate (+inf when unknown), which prunes (t, σ) candidates that cannot beat it. Leading
    axes ``[B]`` (and ``[R]``/``[S]`` for the base rows and energies of repetitions or streams)."""

    eps: Float[Array, " B"]
    base: Float[Array, "B d"]
    energy: Float[Array, " B"]


class CodecParams(NamedTuple):
    """Public arrays of a configuration (device copies)."""

    tables: quantize.QuantizerTables
    lo: Float[Array, " d"]
    hi: Float[Array, " d"]
    mode_sensitivity: Float[Array, ""]


def resolve_bounds(bounds, records: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(lo, hi, public)`` of the public domain given to a release: ``(lo, hi)`` arrays of length d, widths Λ
    (domain ``[0, Λ]``), or ``"data"`` for the paper's 1.5 × max rule, which reads the data (``public`` False).

    Raises:
      ValueError: bounds missing or malformed (the message says what to pass), or ``"data"`` without records.
    """
    if bounds is None:
        raise ValueError('bounds are required: give the public domain as (lo, hi) or widths; bounds="data" (paper '
                         "rule, not private) only by explicit request.")  # fmt: skip
    if isinstance(bounds, str):
        if bounds != "data":
            raise ValueError(f'bounds must be (lo, hi), widths, or "data"; got {bounds!r}.')
        if records is None:
            raise ValueError('bounds="data" needs the whole data set (batch anonymize only).')
        from jaxdp.datasets import bounds_from_data

        width = bounds_from_data(records, 1.5)
        return np.zeros_like(width), width, False
    lo, hi = _validate.bounds(bounds)
    return np.asarray(lo, np.float64), np.asarray(hi, np.float64), True


def params(config: HVCConfig, lo: np.ndarray, hi: np.ndarray, dtype) -> CodecParams:
    """Build the public tables of `config` for domain ``[lo, hi]`` in `dtype`."""
    bounds = np.stack([lo, hi])
    tab = quantize.tables(
        config.block_size, bounds, kinds=config.kinds, order=config.order, accounting=config.accounting
    )
    dtype = np.dtype(dtype)
    tab = quantize.device_tables(tab, dtype)
    width = hi - lo
    return CodecParams(tab, jnp.asarray(lo, dtype), jnp.asarray(hi, dtype), jnp.asarray(np.sum(width**2), dtype))


def init(config: HVCConfig, d: int, dtype=None) -> CodecState:
    """The state before the first block: empty history (predictions fall back to the midpoint)."""
    dtype = dtype or jnp.zeros(()).dtype
    return CodecState(jnp.zeros((config.history, config.block_size, d), dtype), jnp.zeros((), jnp.int32))


class _StepDraws(NamedTuple):
    """The random numbers of one codec step: the mode draw's two uniforms and Algorithm 1's (with
    noise="grid": keys, from which the exact samplers draw as many words as they need)."""

    mode: Float[Array, "2"]
    quant: quantize._BlockDraws


def _step_draws(config: HVCConfig, key, nd: int, dtype) -> _StepDraws:
    """Everything random in one step, from the block's key. `_scan` draws these for all blocks in
    one vectorized call before the loop (JAX's CPU threefry is a rolled loop: inside the scan it
    cost more than half of each step)."""
    k_mode, k_quant = jax.random.split(key)
    noise = "grid" if config.noise == "grid" else "float"
    mode = k_mode if noise == "grid" else mechanisms.exponential_uniforms(k_mode, dtype)  # grid: exact draws, own key
    return _StepDraws(mode, quantize._block_draws(k_quant, nd, dtype, noise))


def _step(config: HVCConfig, prm: CodecParams, state: CodecState, block, key, pub: BlockInputs):
    """One block: Algorithm 2 (mode) then Algorithm 1 (quantizer). Pure and traceable."""
    draws = _step_draws(config, key, block.shape[0] * block.shape[1], block.dtype)
    return step_drawn(config, prm, state, block, draws, pub)


def step_drawn(config: HVCConfig, prm: CodecParams, state: CodecState, block, draws: _StepDraws, pub: BlockInputs):
    """`_step` with the step's random numbers drawn beforehand (`_step_draws`)."""
    ql, qe, e = config.budget_split
    # A block with ε = 0 (the frame-mean layer found its blocks hopeless and spent the frame on the means)
    # releases the "frame_mean" prediction and uses no data: the mechanisms below run at a placeholder
    # budget and their outputs are discarded by `live` (a public value).
    live = pub.eps > 0
    eps_block = jnp.where(live, pub.eps, jnp.ones_like(pub.eps))
    preds = predict.candidates(state.history, state.valid, prm.lo, prm.hi, config.modes, base=pub.base)
    n = block.shape[0]
    xc = jnp.clip(jnp.where(jnp.isnan(block), 0.5 * (prm.lo + prm.hi), block), prm.lo, prm.hi)
    if config.reorder == "paper":  # NOT DP (DESIGN note 3): permutations computed from the raw block
        perms = paper_permutations(xc, preds, config.reorder_cost, config.reorder_strategy)
        xs = xc[perms]  # [P, n, d]: ψ_φ X for every mode
    else:
        perms = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32), (preds.shape[0], n))
        xs = jnp.broadcast_to(xc, preds.shape)
    if preds.shape[0] > 1:
        score = -jnp.sum((xs - preds) ** 2, axis=(1, 2))  # κ = -‖ψX - X̂(φ)‖²_F, sensitivity ‖Λ‖²₂ (Lemma 5)
        if config.noise == "grid":
            mode = mechanisms.exponential_exact_core(draws.mode, score, e * eps_block, prm.mode_sensitivity)
        else:
            _, mode = mechanisms.exponential_drawn(
                draws.mode, score[None, :], epsilon=e * eps_block, sensitivity=prm.mode_sensitivity
            )
    else:
        mode = jnp.zeros((), jnp.int32)
    names = predict.mode_names(config.modes, config.history)
    fm = names.index("frame_mean") if "frame_mean" in names else 0
    mode = jnp.where(live, mode, fm).astype(jnp.int32)
    x_hat = preds[mode]
    perm = perms[mode]
    energy = pub.energy  # the frame-mean layer's estimate is about the "frame_mean" prediction only
    if names != ("frame_mean",):
        energy = jnp.where(mode == fm, energy, jnp.inf)
    block = block[perm]
    released, qinfo = quantize._quantize_block_drawn(
        draws.quant, block, x_hat, prm.tables, ql * eps_block, qe * eps_block, config.theta, config.prune,
        "grid" if config.noise == "grid" else "float", energy,
    )
    released = jnp.where(live, released, x_hat)
    if config.clip_output:
        released = jnp.clip(released, prm.lo, prm.hi)
    history = jnp.concatenate([released[None], state.history[:-1]], axis=0)
    state = CodecState(history, jnp.minimum(state.valid + 1, config.history).astype(jnp.int32))
    # a block that spends nothing reports no choice (found in review: its kind came from the quantizer's run at a
    # placeholder budget, i.e. from the raw block, uncharged)
    info = BlockInfo(
        mode, jnp.where(live, qinfo.kind, 0).astype(qinfo.kind.dtype), jnp.where(live, qinfo.t, 0).astype(jnp.int32),
        pub.eps.astype(block.dtype), perm,
    )
    return state, released, info


def paper_permutations(xc, preds, cost_bound: int, strategy: str):
    """Host callback: Algorithm 2's permutation for every candidate prediction (`jaxdp.hvc.reorder`)."""
    from jaxdp.hvc import reorder

    shape = jax.ShapeDtypeStruct(preds.shape[:2], jnp.int32)
    return jax.pure_callback(
        lambda x, p: reorder.permutations(x, p, cost_bound, strategy), shape, xc, preds, vmap_method="sequential"
    )


def step(
    config: HVCConfig, prm: CodecParams, state: CodecState, block: Float[Array, "n d"], key, eps_block, base=None,
    energy=None,
) -> tuple[CodecState, Float[Array, "n d"], BlockInfo]:
    """One jitted codec step ``(state, block, key) → (state, released, info)`` for budget `eps_block` (and
    the frame-mean layer's estimate `base` ``[d]`` and residual `energy` when the "frame_mean" mode is used)."""
    dtype = prm.lo.dtype
    base = jnp.zeros(prm.lo.shape, dtype) if base is None else jnp.asarray(base, dtype)
    energy = jnp.asarray(jnp.inf if energy is None else energy, dtype)
    pub = BlockInputs(jnp.asarray(eps_block, dtype), base, energy)
    return _step_jit(static_config(config), prm, state, jnp.asarray(block, dtype), key, pub)


@functools.partial(jax.jit, static_argnums=(0,))
def _step_jit(config, prm, state, block, key, pub):
    return _step(config, prm, state, block, key, pub)


def _all_draws(config, blocks, keys):
    # Memory: the random numbers of every block are held at once, ≈ the size of `blocks` (2× with
    # noise="grid"), per repetition when vmapped.
    nd = blocks.shape[-2] * blocks.shape[-1]
    return jax.vmap(lambda k: _step_draws(config, k, nd, blocks.dtype))(keys)  # all randomness, one call


def _scan_drawn(config, prm, state, blocks, draws, pub):
    def body(carry, xs):
        block, drawn, p = xs
        carry, released, info = step_drawn(config, prm, carry, block, drawn, p)
        return carry, (released, info)

    return jax.lax.scan(body, state, (blocks, draws, pub), unroll=_UNROLL)


def _scan(config, prm, state, blocks, keys, eps):
    return _scan_drawn(config, prm, state, blocks, _all_draws(config, blocks, keys), eps)


_run_jit = jax.jit(_scan, static_argnums=(0,))

# The loop as its own (non-inlined) call: the jit here only makes the call boundary that XLA
# compiles as one CPU kernel (`jaxdp.hvc.cpu_loop`).
_scan_call = jax.jit(_scan_drawn, static_argnums=(0,))


def _run_one_kernel(config, prm, state, blocks, keys, eps):
    from jax.experimental.xla_metadata import set_xla_metadata

    draws = _all_draws(config, blocks, keys)  # outside the kernel: large vectorized threefry
    with set_xla_metadata(**cpu_loop._ONE_KERNEL_CALL):
        return _scan_call(config, prm, state, blocks, draws, eps)


run_jit_one_kernel = jax.jit(_run_one_kernel, static_argnums=(0,), compiler_options=cpu_loop._NO_LIBRARY_FUSIONS)


def _pub_axes(pub: BlockInputs, lead: int):
    """vmap axes of `pub`: base rows and energies carry a leading repetition/stream axis when they have one."""
    return BlockInputs(
        0 if pub.eps.ndim == lead + 1 else None,
        0 if pub.base.ndim == lead + 2 else None,
        0 if pub.energy.ndim == lead + 1 else None,
    )


@functools.partial(jax.jit, static_argnums=(0,))
def _run_many_jit(config, prm, state, blocks, keys, pub):
    # keys: [R, B]; independent repetitions of the same stream (one vmapped program); the frame-mean
    # estimates differ per repetition (their noise does): pub.base [R, B, d].
    return jax.vmap(lambda s, k, p: _scan(config, prm, s, blocks, k, p), in_axes=(None, 0, _pub_axes(pub, 1)))(
        state, keys, pub
    )


@functools.partial(jax.jit, static_argnums=(0,))
def _run_streams_jit(config, prm, state, blocks, keys, pub):
    # blocks: [S, B, n, d], keys: [S, B], pub.base [S, B, d]; independent streams (one vmapped program).
    return jax.vmap(lambda b, k, p: _scan(config, prm, state, b, k, p), in_axes=(0, 0, _pub_axes(pub, 1)))(
        blocks, keys, pub
    )


def run_streams(config: HVCConfig, prm: CodecParams, state: CodecState, blocks, keys, pub: BlockInputs):
    """The closed loop over S independent streams at once: ``blocks [S, B, n, d]``, ``keys [S, B]``.

    Inputs may be sharded over the stream axis (`jax.sharding`); the computation then runs on all
    devices of the mesh, each on its share of the streams.
    """
    return _run_streams_jit(static_config(config), prm, state, blocks, keys, pub)


def static_config(config: HVCConfig) -> HVCConfig:
    """The part of a config the compiled loop depends on (ε, l, bounds and b enter as arrays)."""
    return dataclasses.replace(
        config, target_length=None, records_per_subject=None, frame_blocks=1,
        frame_mean_share=0.5 if "frame_mean" in config.modes else 0.0,  # the driver spends it, not the loop
    )  # fmt: skip


def run(
    config: HVCConfig,
    prm: CodecParams,
    state: CodecState,
    blocks: Float[Array, "B n d"],
    keys,
    pub: BlockInputs,
) -> tuple[CodecState, tuple[Float[Array, "B n d"], BlockInfo]]:
    """The closed loop over a sequence of blocks: one `lax.scan` (jitted; config static).

    `keys` has shape ``[B]`` (one per block) or ``[R, B]`` for R independent repetitions run as
    one vmapped program (outputs then gain a leading ``[R]`` axis; `pub.base` may then be ``[R, B, d]``).
    """
    static = static_config(config)
    if keys.ndim == 2:
        return _run_many_jit(static, prm, state, blocks, keys, pub)
    if run_program(static, blocks.shape[-2] * blocks.shape[-1]) is run_jit_one_kernel:
        program = _one_kernel_program(static, prm, state, blocks, keys, pub)
        if program is not None:
            loops_run["one_kernel"] += 1
            return program(prm, state, blocks, keys, pub)
    loops_run["default"] += 1
    return _run_jit(static, prm, state, blocks, keys, pub)


# single-stream runs of `run` in this process by the loop that ran them ("one_kernel", "default"): what the CLI
# reports (found in review: it reported the loop it asked for, though the screen or XLA may refuse it)
loops_run: collections.Counter = collections.Counter()


# Ops XLA's own small-while-loop pass refuses to put into a one-kernel loop (custom calls — host
# callbacks among them —, scatter, sort, FFT, collectives, host transfers); jaxdp applies the same screen
# to the loop body before it marks it.
_NOT_IN_ONE_KERNEL = (
    "stablehlo.custom_call", "stablehlo.scatter", "stablehlo.sort", "stablehlo.fft", "stablehlo.all_reduce",
    "stablehlo.all_gather", "stablehlo.all_to_all", "stablehlo.reduce_scatter", "stablehlo.collective_permute",
    "stablehlo.collective_broadcast", "stablehlo.send", "stablehlo.recv", "stablehlo.infeed", "stablehlo.outfeed",
)  # fmt: skip
# (static config, argument types) → compiled one-kernel program, or None; the most recent
# `_ONE_KERNEL_CACHE` programs are kept (each holds compiled code: an unbounded dict would outlive
# `jax.clear_caches()`)
one_kernel_programs: collections.OrderedDict = collections.OrderedDict()
_ONE_KERNEL_CACHE = 32


def one_kernel_screen(config: HVCConfig, prm, state, blocks, keys, pub) -> tuple[str, ...]:
    """The ops of the codec loop body (for these argument types) that a one-kernel CPU loop cannot hold
    (`_NOT_IN_ONE_KERNEL`, the screen of XLA's own pass); empty when the loop may be one kernel."""
    static = static_config(config)
    draws = jax.eval_shape(lambda b, k: _all_draws(static, b, k), blocks, keys)
    body = _scan_call.lower(static, prm, state, blocks, draws, pub).as_text()
    return tuple(op for op in _NOT_IN_ONE_KERNEL if op + " " in body or op + "(" in body or op + "\"" in body)


def _one_kernel_program(static, prm, state, blocks, keys, pub):
    """The compiled one-kernel loop for these argument types, compiled once; None where the screen or
    XLA refuses it (then this program, and only this one, uses XLA's default loop, with the same keys:
    nothing has been drawn or released by the refused attempt)."""
    args = (prm, state, blocks, keys, pub)
    leaves, tree = jax.tree_util.tree_flatten(args)
    # with JAX's trace-affecting settings, as jax.jit keys its programs (found in review: after
    # jax_threefry_partitionable was changed the stored program drew the old bits, the default loop the new ones)
    from jax._src import config as jax_config

    sig = (static, tree, tuple((tuple(a.shape), str(a.dtype), bool(getattr(a, "weak_type", False))) for a in leaves),
           jax_config.trace_context())
    if sig in one_kernel_programs:
        one_kernel_programs.move_to_end(sig)
        return one_kernel_programs[sig]
    program = None
    if not one_kernel_screen(static, *args):
        try:
            program = run_jit_one_kernel.lower(static, *args).compile()
        except (RuntimeError, ImportError) as err:  # an XLA/JAX that refuses the marked loop (XLA errors are RuntimeErrors)
            cpu_loop._refused(err)
    one_kernel_programs[sig] = program
    while len(one_kernel_programs) > _ONE_KERNEL_CACHE:
        one_kernel_programs.popitem(last=False)
    return program


def run_program(config: HVCConfig, block_entries: int):
    """The jitted single-stream loop for blocks of `block_entries` = n·d values (`jaxdp.hvc.cpu_loop`)."""
    return run_jit_one_kernel if one_kernel_loop(config, block_entries) else _run_jit


def one_kernel_loop(config: HVCConfig, block_entries: int) -> bool:
    """Whether a single stream of `config` on blocks of n·d = `block_entries` values runs its codec loop
    as one CPU kernel (`jaxdp.hvc.cpu_loop`; never with reordering: a host callback inside the loop)."""
    # not with reordering (a host callback inside the loop) nor with noise="grid" (the exact samplers'
    # while loops gather and scatter, which XLA cannot emit inside one kernel)
    return config.reorder != "paper" and config.noise != "grid" and cpu_loop._one_kernel_codec_loop(block_entries)


def padded_length(count: int) -> int:
    """Scan length for `count` blocks: at least 64, else `count` rounded up to 1/8 of its power of
    two (≤ 12.5 % padding), so that all lengths share ≈ 8 compiled programs per octave."""
    if count <= 64:
        return 64
    step = 1 << (count.bit_length() - 4)
    return -(-count // step) * step
