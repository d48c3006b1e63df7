import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdp import keys


def test_fresh_key_refuses_to_be_compiled_into_a_program():
    """Found in review: `fresh_key()` under `jax.jit` was traced once: its secret words became a constant of the
    program (readable in its text, and in any compiled cache), and every call reused that key — the difference
    of two releases gave the difference of the inputs exactly. It now refuses while JAX traces, with the fix."""

    @jax.jit
    def release(x):
        return x + jax.random.laplace(keys.fresh_key(), x.shape)

    with pytest.raises(RuntimeError, match="pass it in as an argument"):
        release(jnp.zeros(3))
    with pytest.raises(RuntimeError, match="traces"):
        jax.vmap(lambda x: keys.fresh_key())(jnp.zeros(2))
    a, b = keys.fresh_key(), keys.fresh_key()  # outside a trace: fresh every call
    assert not np.array_equal(jax.random.key_data(a), jax.random.key_data(b))


def test_fresh_key_holds_every_word_the_os_gave(monkeypatch):
    """A fresh key's words are the OS entropy, all of it: with `secrets.token_bytes` replaced by known bytes, the key
    data holds every one of them (found in an audit of the tests: `token_bytes(4) * words`, 32 bits of entropy
    repeated, passed the check that two keys differ)."""
    asked = []

    def known(n):
        asked.append(n)
        return bytes(range(1, n + 1))

    monkeypatch.setattr(keys.secrets, "token_bytes", known)
    data = np.asarray(jax.random.key_data(keys.fresh_key()))
    assert asked == [data.size * 4]
    np.testing.assert_array_equal(data.reshape(-1), np.frombuffer(bytes(range(1, data.size * 4 + 1)), np.uint32))
    assert np.unique(data).size == data.size


def test_key_from_seed_is_jax_random_key_as_documented():
    """`key_from_seed(s)` is `jax.random.key(s)` below 2³² and the (hi, lo) words of s above (as `jax.random.key` makes
    them under x64). Found in an audit of the tests: the two words swapped passed, as the CLI tests compare a seed
    with the same function."""
    for s in (0, 7, 2**31 + 5, 2**32 - 1):
        np.testing.assert_array_equal(jax.random.key_data(keys.key_from_seed(s)), jax.random.key_data(jax.random.key(s)))
    for s in (2**32, 2**40 + 3, 2**64 - 1):
        np.testing.assert_array_equal(jax.random.key_data(keys.key_from_seed(s)), [s >> 32, s & 0xFFFFFFFF])
        with jax.enable_x64(True):
            np.testing.assert_array_equal(jax.random.key_data(keys.key_from_seed(s)),
                                          jax.random.key_data(jax.random.key(np.uint64(s))))
