"""Shared fixtures: strict dtype promotion, typed keys, float32/float64 (x64) parametrization.

Compiled programs are kept in JAX's persistent compilation cache (``$JAXDP_TEST_CACHE``, default a folder
in the temporary directory), so parallel workers (pytest-xdist) and later runs reuse each other's
compilations; the cache never changes what a program computes.
"""

import os
import tempfile

import jax
import numpy as np
import pytest

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_compilation_cache_dir", os.environ.get("JAXDP_TEST_CACHE", os.path.join(tempfile.gettempdir(), "jaxdp-test-jax-cache")))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


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


_RSS_LIMIT_MB = float(os.environ.get("JAXDP_TEST_RSS_MB", "500"))


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):  # not Linux: never clear
        return 0.0


@pytest.fixture(autouse=True)
def _release_compiled_programs():
    """Drop JAX's in-memory caches after a test once this worker holds more than 500 MB
    (``$JAXDP_TEST_RSS_MB``): keeping every compiled program held ≈ 2.5 GB per worker (4.8 GB for the run);
    at 900 MB the run peaked at 3.1 GB, at 500 MB at 2.6 GB in about the same time, at 300 MB at 2.6 GB but
    30 % slower. The persistent cache above keeps the programs on disk, so a cleared program is reloaded,
    not recompiled."""
    yield
    if _rss_mb() > _RSS_LIMIT_MB:
        jax.clear_caches()
