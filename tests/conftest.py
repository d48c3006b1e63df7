"""Shared fixtures: strict dtype promotion, typed keys, float32/float64 (x64) parametrization.

Compiled programs are kept in JAX's persistent compilation cache (``$JAXDP_TEST_CACHE``, default a folder
in the temporary directory), so parallel workers (pytest-xdist) and later runs reuse each other's
compilations; the cache never changes what a program computes. jaxdp's own program cache
(`jaxdp.programs`, ``$JAXDP_PROGRAM_CACHE``) is kept in the temporary directory as well.
"""

import gc
import os
import sys
import tempfile

import jax
import numpy as np
import pytest

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_compilation_cache_dir", os.environ.get("JAXDP_TEST_CACHE", os.path.join(tempfile.gettempdir(), "jaxdp-test-jax-cache")))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
# jaxdp's own program cache (jaxdp.programs): in the temporary directory too, never the user's ~/.cache
os.environ.setdefault("JAXDP_PROGRAM_CACHE", os.path.join(tempfile.gettempdir(), f"jaxdp-test-programs-{getattr(os, 'getuid', lambda: '')()}"))


@pytest.fixture
def key():
    """A fresh typed PRNG key; tests split it for every use."""
    return jax.random.key(20261122)


@pytest.fixture(params=["float32", "float64"])
def dtype(request):
    """Run the test in float32 and in float64 (with jax_enable_x64 on for the latter)."""
    if request.param == "float64":
        with jax.enable_x64(True):
            yield np.float64
    else:
        yield np.float32


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield


def rtol_for(dtype):
    return 1e-5 if np.dtype(dtype) == np.float32 else 1e-11


_RSS_LIMIT_MB = float(os.environ.get("JAXDP_TEST_RSS_MB", "600"))


def _malloc_trim():
    """glibc's ``malloc_trim(0)`` where there is one (no-op elsewhere)."""
    try:
        import ctypes

        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return lambda: None
    return lambda: trim(0)


_LIBC_TRIM = _malloc_trim()


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):  # not Linux: never clear
        return 0.0


def _release_memory():
    jax.clear_caches()
    if "jaxdp.hvc.codec" in sys.modules:  # the codec's one-kernel programs are compiled explicitly and kept apart
        sys.modules["jaxdp.hvc.codec"].one_kernel_programs.clear()
    gc.collect()
    _LIBC_TRIM()  # hand the freed heap back to the OS (glibc keeps it otherwise)
    if "pyarrow" in sys.modules:  # the CLI's readers and writers: pyarrow's own allocator keeps freed memory too
        sys.modules["pyarrow"].default_memory_pool().release_unused()


@pytest.fixture
def mechanism_calls(monkeypatch):
    """Every draw through `mechanisms.laplace_mechanism`, `mechanisms.exponential_mechanism` and
    `mechanisms.l2_norm_noise` during the test, recorded from a fresh trace as ``(name, key words, epsilon,
    sensitivity)`` (single keys; a draw in a branch not taken is not recorded). Caches are cleared before and after,
    so no other test reuses a recording program."""
    import jax.numpy as jnp

    from jaxdp import mechanisms

    calls = []

    def record(name, key, epsilon, sensitivity):
        jax.debug.callback(lambda kd, e, s: calls.append((name, tuple(np.asarray(kd).ravel().tolist()),
                                                         np.asarray(e, np.float64), np.asarray(s, np.float64))),
                           jax.random.key_data(key), jnp.asarray(epsilon), jnp.asarray(sensitivity))

    real = {n: getattr(mechanisms, n) for n in ("laplace_mechanism", "exponential_mechanism", "l2_norm_noise")}

    def laplace(key, x, *, epsilon, sensitivity, **kw):
        record("laplace", key, epsilon, sensitivity)
        return real["laplace_mechanism"](key, x, epsilon=epsilon, sensitivity=sensitivity, **kw)

    def exponential(key, scores, *, epsilon, sensitivity, **kw):
        record("exponential", key, epsilon, sensitivity)
        return real["exponential_mechanism"](key, scores, epsilon=epsilon, sensitivity=sensitivity, **kw)

    def l2(key, shape, *, epsilon, sensitivity=1.0, **kw):
        record("l2", key, epsilon, sensitivity)
        return real["l2_norm_noise"](key, shape, epsilon=epsilon, sensitivity=sensitivity, **kw)

    for name, fake in (("laplace_mechanism", laplace), ("exponential_mechanism", exponential), ("l2_norm_noise", l2)):
        monkeypatch.setattr(mechanisms, name, fake)
    jax.clear_caches()  # trace afresh, through the recording mechanisms
    try:
        yield calls
    finally:
        monkeypatch.undo()
        jax.clear_caches()  # no later test may reuse a recording program


@pytest.fixture
def lean_worker():
    """Release this worker's compiled programs and free heap before a test that starts another JAX process
    (the notebook's kernel, the sharding and program-cache subprocesses), so that the two do not add up to
    the run's peak memory."""
    _release_memory()
    yield


@pytest.fixture(autouse=True)
def _release_compiled_programs():
    """Drop JAX's in-memory caches and the codec's one-kernel programs (which `jax.clear_caches` does not
    reach), collect and ``malloc_trim`` after a test once this worker holds more than 600 MB
    (``$JAXDP_TEST_RSS_MB``): keeping every compiled program held ≈ 2.5 GB per worker (4.8 GB for the run).
    Without the trim, glibc kept the freed heap; without clearing the one-kernel programs a worker kept a
    floor of ≈ 0.7 GB. With both (and `lean_worker`) the warm run peaked at 1.96 GB (README "Testing"). The
    persistent cache above keeps the programs on disk, so a cleared program is reloaded, not recompiled — but
    re-traced and re-lowered: at 400 MB the warm run took 5:09–7:06, at 600 MB 3:52–4:07 with the same peak
    (1.91 GB summed PSS both; measured 2026-11-24, README "Testing")."""
    yield
    if _rss_mb() > _RSS_LIMIT_MB:
        _release_memory()
