"""Shared fixtures: strict dtype promotion, typed keys, float32/float64 (x64) parametrization."""

import jax
import numpy as np
import pytest

jax.config.update("jax_numpy_dtype_promotion", "strict")


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
