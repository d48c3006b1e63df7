"""How the codec's sequential loop is compiled on CPU: one kernel for small blocks.

The codec is one `lax.scan` whose step is ≈ 50 small XLA operations on a block of n·d values.
XLA's CPU runtime launches every operation of a loop body as a separate kernel ("thunk", ≈ 0.2-0.3
µs each), which is most of a step at small n. XLA can instead compile a whole computation into
**one** kernel: it does so itself for `while` loops under 1 kB of accesses (its small-while-loop
hoisting pass, which marks the loop's call ``xla_cpu_small_call``). The codec's loop is larger than
that threshold (its inputs are the whole stream), so jaxdp marks the call around its single-stream
scan itself, per compilation and for nothing else in the process: the scan is a non-inlined call
with the frontend attributes ``inlineable="false"`` and ``xla_cpu_small_call="true"``, compiled
without library-call (YNNPACK) fusions, which such a kernel cannot contain.

This is done for blocks of n·d ≤ `SMALL_BLOCK_ENTRIES` values on the CPU backend (measured on a 2-core
CPU, scan alone: n = 4 2.0×, n = 8 1.7×, n = 16 1.4× faster, n = 32 even, n = 48 1.4× *slower*, its
matrix products being faster as library calls), single streams only (the vmapped repetition and
multi-stream programs keep XLA's default). The discrete choices are the same and records equal to
float rounding (`tests/hvc/test_cpu_loop.py`). The marker is an XLA-internal convention, so jaxdp
guards it twice: (1) before marking, it screens the loop body for the ops XLA's own pass keeps out of a
one-kernel loop (custom calls — host callbacks among them —, scatter, sort, FFT, collectives, host
transfers; `codec.one_kernel_screen`), and (2) it compiles the marked program explicitly, once per
program: if a JAX/XLA version refuses it, jaxdp warns once and that program runs XLA's default loop
(with the same keys: nothing was drawn or released by the refused attempt). Neither changes a
process-wide setting.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np

__all__ = ["fuse_cpu_loops", "cpu_loops_fused", "enable_compilation_cache", "SMALL_BLOCK_ENTRIES"]

SMALL_BLOCK_ENTRIES = 256  # n·d up to which the codec loop is one kernel (n ≤ 16 at d = 13)
# Per-compilation option: no YNNPACK library-call fusions (a one-kernel loop cannot contain them).
_NO_LIBRARY_FUSIONS = {"xla_cpu_experimental_ynn_fusion_type": ""}
# Frontend attributes of the call around the loop: keep it a call, compile it as one kernel.
_ONE_KERNEL_CALL = {"inlineable": "false", "xla_cpu_small_call": "true"}

_enabled = True


def fuse_cpu_loops(enabled: bool = True) -> bool:
    """Whether jaxdp compiles its small-block single-stream codec loop into one CPU kernel (on by default).

    Takes effect for the next `anonymize` / `StreamAnonymizer` call (each setting has its own compiled
    programs, both are cached); it changes nothing else in the process and nothing on GPUs. Measured on
    a 2-core CPU (`benchmarks/bench_scale.py`, same process): the codec loop at n = 8 takes ≈ 7 µs per
    block instead of ≈ 12 µs.

    Args:
      enabled: True (the default setting) for the one-kernel loop, False for XLA's default loop.

    Returns:
      The previous setting.

    Raises:
      TypeError: `enabled` is not a bool.
    """
    global _enabled
    if isinstance(enabled, np.bool_):
        enabled = bool(enabled)
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be True or False, got {enabled!r}")
    previous, _enabled = _enabled, enabled
    return previous


def cpu_loops_fused() -> bool:
    """The current `fuse_cpu_loops` setting."""
    return _enabled


def _one_kernel_codec_loop(block_entries: int) -> bool:
    """Whether a single-stream codec loop on blocks of `block_entries` = n·d values is compiled as one kernel."""
    return _enabled and block_entries <= SMALL_BLOCK_ENTRIES and jax.default_backend() == "cpu"


refusal_warned = False  # whether `_refused` has warned in this process (a test resets it)


def _refused(err: Exception) -> None:
    """XLA refused to compile one one-kernel loop: warn once per process. Only that program falls back to
    XLA's default loop (`jaxdp.hvc.codec`); the setting stays as the user left it."""
    global refusal_warned
    if refusal_warned:
        return
    refusal_warned = True
    warnings.warn(
        f"jaxdp: this JAX/XLA version could not compile the codec loop as one CPU kernel "
        f"({type(err).__name__}: {str(err)[:200]}); using XLA's default loop for it (same results, slower). "
        "Call jaxdp.fuse_cpu_loops(False) to skip the attempt.",
        RuntimeWarning,
        stacklevel=4,
    )


def enable_compilation_cache(path: str | None = None) -> str | None:
    """Turn on JAX's persistent compilation cache, so that a new process reuses programs compiled before.

    Process-wide (it is JAX's setting), so the library never calls it on import; the CLI does for its own
    process (``--no-compilation-cache`` to skip). A cache directory the user has already configured is kept
    and returned. The default is ``$XDG_CACHE_HOME/jaxdp/xla`` (``~/.cache/jaxdp/xla``); every program the
    process compiles is stored. The cache holds compiled programs, never data: jaxdp passes records, counts,
    bounds and keys to its programs as arguments (a CLI test searches the cache for the input's values). The
    folder is created private to the user (mode 0700); one that another user owns or may write to is not used
    (a program loaded from it runs like the package's own code); a folder the user configured is checked the same
    way, and turned off for the process if it fails. Returns the directory, or None if it cannot be created or is
    not private.

    Measured on the 2-core VM: the CLI's main job on the bundled Census (`jaxdp anonymize -o out.csv`) 5.0–5.2 s
    → 2.6–2.8 s wall from the second run on; P-HP's first call at 4,096 bins 2.7 s → 0.7 s.
    """
    import os

    from jaxdp._folders import private_folder

    current = jax.config.jax_compilation_cache_dir
    if current:  # the user's own setting, checked like ours (found in review: JAX_COMPILATION_CACHE_DIR pointing at a
        # world-writable folder was used unchecked, and programs loaded from it run like the package's code)
        checked = private_folder(current)
        if checked is None:
            jax.config.update("jax_compilation_cache_dir", None)
            return None
        if checked != current:
            jax.config.update("jax_compilation_cache_dir", checked)
        return checked
    if path is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = os.path.join(base, "jaxdp", "xla")
    path = private_folder(path)  # resolved, every folder above it checked
    if path is None:
        return None
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return path
