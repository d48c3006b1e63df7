import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference as ref
from conftest import rtol_for

from jaxdp import transforms

KINDS = ("dct", "dst", "dht", "identity")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 8, 13, 16, 31, 48, 64])
def test_matrix_matches_scipy_reference_and_is_orthonormal(kind, n):
    a = transforms.matrix(kind, n)
    assert a.shape == (n, n) and a.dtype == np.float64
    np.testing.assert_allclose(a, ref.matrix(kind, n), atol=1e-13)
    np.testing.assert_allclose(a @ a.T, np.eye(n), atol=1e-12)
    np.testing.assert_allclose(a.T @ a, np.eye(n), atol=1e-12)


def test_matrix_paper_formulas_spot_values():
    # DCT-II row 1 is constant 1/sqrt(n); DHT(n=4) row 2 = cas(2π·1·(j-1)/4)/2 = [1, 1, -1, -1]/2.
    np.testing.assert_allclose(transforms.matrix("dct", 5)[0], np.full(5, 1 / np.sqrt(5)))
    np.testing.assert_allclose(transforms.matrix("dht", 4)[1], [0.5, 0.5, -0.5, -0.5], atol=1e-15)
    np.testing.assert_allclose(transforms.matrix("dst", 1), [[1.0]])


@pytest.mark.parametrize("make", [lambda n: transforms.matrix("dct", n), transforms.haar_matrix])
@pytest.mark.parametrize("n", [1, 4])
def test_matrix_is_read_only(make, n):
    with pytest.raises(ValueError):
        make(n)[0, 0] = 1.0


@pytest.mark.parametrize("make", [lambda n: transforms.matrix("dct", n), transforms.haar_matrix])
def test_large_matrices_are_not_held_after_use(make):
    """Found in a memory profile of the tests: every matrix was cached for the life of the process (256 entries), so
    a 128 MiB DCT matrix of n = 4096 stayed in memory after its one use (2 GiB at n = 16,384). Small ones are kept."""
    import gc
    import weakref

    a = make(2048)  # beyond the sizes kept
    with pytest.raises(ValueError):
        a[0, 0] = 1.0  # read-only as the kept ones
    big = weakref.ref(a)
    del a
    gc.collect()
    assert big() is None
    assert make(8) is make(8)  # block sizes the codecs use are built once


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(1, 1), (8, 13), (5, 3, 4), (2, 3, 16, 1)])
def test_forward_inverse_against_reference(kind, shape, dtype):
    rng = np.random.default_rng(0)
    x64 = rng.uniform(-1000, 5000, size=shape)
    x = jnp.asarray(x64, dtype)
    c = transforms.forward(x, kind)
    assert c.dtype == dtype and c.shape == shape
    want = ref.forward(np.asarray(x, np.float64), kind)
    scale = np.abs(want).max()
    np.testing.assert_allclose(np.asarray(c, np.float64), want, rtol=rtol_for(dtype), atol=rtol_for(dtype) * scale)
    back = transforms.inverse(c, kind)
    np.testing.assert_allclose(
        np.asarray(back, np.float64), np.asarray(x, np.float64), rtol=rtol_for(dtype), atol=2 * rtol_for(dtype) * scale
    )


@pytest.mark.parametrize("kind", KINDS)
def test_forward_jit_equals_no_jit(kind):
    x = jnp.asarray(np.random.default_rng(1).normal(size=(3, 8, 13)), jnp.float32)
    jitted = transforms.forward(x, kind)
    with jax.disable_jit():
        eager = transforms.forward(x, kind)
    np.testing.assert_allclose(jitted, eager, rtol=1e-5, atol=1e-5)
    looped = jnp.stack([transforms.forward(xi, kind) for xi in x])
    np.testing.assert_allclose(jitted, looped, rtol=1e-6, atol=1e-6)


def test_integer_input_is_cast_to_default_float():
    c = transforms.forward(np.arange(12).reshape(3, 4), "dct")
    assert c.dtype == jnp.float32


@pytest.mark.parametrize(
    "args, err",
    [
        ((np.ones((2, 2)), "fft"), ValueError),
        ((np.ones((2, 2)), 3), TypeError),
        ((np.ones(4), "dct"), ValueError),
        ((np.ones((2, 2), bool), "dct"), TypeError),
        ((np.ones((0, 3)), "dct"), ValueError),
    ],
)
def test_bad_input_is_rejected(args, err):
    with pytest.raises(err):
        transforms.forward(*args)


@pytest.mark.parametrize("n", [0, -1, 2.0])
def test_bad_size_is_rejected(n):
    with pytest.raises((ValueError, TypeError)):
        transforms.matrix("dct", n)


def test_rdft_promotes_integers_to_the_default_float():
    # found in review: rdft(np.arange(5)) came back int32, truncated
    c = transforms.rdft(np.arange(5))
    assert c.dtype == np.float32
    np.testing.assert_allclose(np.asarray(transforms.irdft(c)), np.arange(5), atol=1e-5)


@pytest.mark.parametrize("make", [lambda n: transforms.matrix("dct", n), transforms.haar_matrix])
def test_dense_matrices_refuse_sizes_beyond_the_limit_before_allocating(make):
    # found in review: matrix("dct", 10**5) asked NumPy for 75 GiB (a MemoryError or the machine swapping)
    with pytest.raises(ValueError, match="at most 16,384.*8·n² bytes"):
        make(1 << 20)
    assert make(16).shape == (16, 16)


def test_forward_and_inverse_refuse_blocks_their_dense_matrices_cannot_hold():
    """Found in review: `forward`/`inverse` build dense n × n and d × d matrices with no size check (a 10⁶-record
    block asked for 7,451 GiB), and `matrix`'s message called them fast transforms that take any size."""
    big = np.zeros((16385, 1), np.float32)  # one past `_validate.MAX_MATRIX_SIZE`
    for fn in (transforms.forward, transforms.inverse):
        with pytest.raises(ValueError, match="at most 16,384"):
            fn(big, "dct")
