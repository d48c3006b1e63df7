"""XLA CPU settings for the codec's sequential loop.

The codec is one `lax.scan` whose step is ≈ 50 small XLA operations on a block of n·d values.
With XLA's default CPU runtime every operation is a separate kernel launch ("thunk") costing
≈ 0.2-0.3 µs, which is most of a step at small n. XLA can instead compile a whole `while` loop
into **one** kernel (its *small-while-loop hoisting* pass), but only for loops whose bytes
accessed stay under a threshold (1 kB by default) and that contain no library-call ("custom")
fusions. The threshold can only be raised through the ``XLA_FLAGS`` environment variable, read
once when JAX starts its CPU backend, and it then applies to every loop of the process.

`fuse_cpu_loops` raises it (the CLI does this itself). When it is raised, jaxdp compiles its
single-stream codec loop for small blocks (n·d ≤ `SMALL_BLOCK_ENTRIES`) without library-call
fusions, so that XLA can hoist it; larger blocks keep them (their matrix products are faster as
library calls than inside a hoisted loop: 1.7-1.8× slower hoisted at n = 48, about even at
n = 32). Without the flag nothing changes (hoisting is impossible, and the library calls are
≈ 7 % faster). Results are the same computation; the compiled code differs, so outputs may differ
in the last bits of float rounding from a run without the flag.
"""

from __future__ import annotations

import os

import jax

__all__ = ["fuse_cpu_loops", "cpu_loops_fused", "SMALL_BLOCK_ENTRIES"]

_OPTION = "xla_cpu_small_while_loop_byte_threshold"
_FLAG = f"--xla_backend_extra_options={_OPTION}={2**62}"
SMALL_BLOCK_ENTRIES = 256  # n·d up to which the codec loop is compiled to be hoistable (n ≤ 16 at d = 13)
# Per-compilation option: no YNNPACK library-call fusions in the loop (those keep XLA from hoisting it).
_NO_LIBRARY_FUSIONS = {"xla_cpu_experimental_ynn_fusion_type": ""}


def cpu_loops_fused() -> bool:
    """Whether ``XLA_FLAGS`` raises XLA's small-while-loop threshold (`fuse_cpu_loops` or by hand)."""
    return _OPTION in os.environ.get("XLA_FLAGS", "")


def _backends_started() -> bool:
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):  # pragma: no cover - private API moved: assume started
        return True


def fuse_cpu_loops() -> bool:
    """Let XLA compile whole `lax.scan` loops into one CPU kernel (call before any JAX computation).

    Appends ``--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=2⁶²`` to
    ``XLA_FLAGS``. Measured on a 2-core CPU (`benchmarks/bench_scale.py`): the codec loop at n = 8
    takes ≈ 10 µs per block instead of ≈ 15-16 µs. It affects every `while` loop of the process
    (XLA then compiles each loop without library calls inside into a single kernel), which can be
    slower for loops around large matrix products; it has no effect on GPUs.

    Equivalent by hand, before starting Python::

        export XLA_FLAGS="--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=4611686018427387904"

    Returns:
      True if the flag is set now (or was already).

    Raises:
      RuntimeError: JAX has already started its backends (the flag is read only at start-up); call
        this right after ``import jaxdp``, before creating arrays, or set ``XLA_FLAGS`` by hand.
    """
    if cpu_loops_fused():
        return True
    if _backends_started():
        raise RuntimeError(
            "fuse_cpu_loops() must run before JAX's first computation (XLA reads XLA_FLAGS once, at "
            "start-up). Call it right after `import jaxdp`, or set XLA_FLAGS before starting Python: "
            f'export XLA_FLAGS="{_FLAG}"'
        )
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_FLAG}".strip()
    return True


def _hoistable_codec_loop(block_entries: int) -> bool:
    """Whether a single-stream codec loop on blocks of `block_entries` = n·d values is compiled
    without library-call fusions (`_NO_LIBRARY_FUSIONS`), so that XLA can make it one kernel."""
    return block_entries <= SMALL_BLOCK_ENTRIES and cpu_loops_fused() and jax.default_backend() == "cpu"
