"""anonymize_streams: independent streams as one program, sharded over (simulated) devices."""

import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import jaxdp

SCRIPT = textwrap.dedent(
    """
    import sys, jax, numpy as np, jaxdp
    from jaxdp import datasets
    data = datasets.load_census()[:200].astype(np.float64)
    streams = np.stack([data, data[::-1], data * 0.9, data[:, ::1] * 0.5, data])
    cfg, bounds = jaxdp.HVCConfig(8, 3), (np.zeros(13), 1.5 * datasets.load_census().max(axis=0))
    keys = jax.random.split(jax.random.key(11), 5)
    sharded = jaxdp.anonymize_streams(keys, streams, cfg, epsilon=20.0, bounds=bounds, shard=True)
    plain = jaxdp.anonymize_streams(keys, streams, cfg, epsilon=20.0, bounds=bounds, shard=False)
    single = jaxdp.anonymize(keys[2], streams[2], cfg, epsilon=20.0, bounds=bounds)
    np.save(sys.argv[1], np.stack([sharded.records, plain.records]))
    np.save(sys.argv[1] + ".info.npy", np.stack([np.stack([sharded.info.t, sharded.info.kind, sharded.info.mode]),
                                                 np.stack([plain.info.t, plain.info.kind, plain.info.mode])]))
    np.save(sys.argv[2], single.records)
    print(jax.device_count())
    """
)


@pytest.mark.slow  # a second JAX process with 8 devices (≈ 9–14 s of one worker): in CI's second step
def test_sharded_over_8_cpu_devices_equals_unsharded_and_single_runs(tmp_path, lean_worker):
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    a, b = tmp_path / "many.npy", tmp_path / "single.npy"
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(a), str(b)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "8"
    many = np.load(a)
    info = np.load(str(a) + ".info.npy")
    # Every private choice (t, transform, mode) is identical; values agree to float32 rounding (XLA blocks
    # the GEMMs differently for 1 stream per device than for 5 at once, so the last bit can differ).
    np.testing.assert_array_equal(info[0], info[1])
    np.testing.assert_allclose(many[0], many[1], rtol=2e-6, atol=0.05)
    np.testing.assert_allclose(many[0][2], np.load(b), rtol=1e-5, atol=1e-2)  # == anonymize on that stream


def test_anonymize_streams_checks_its_input(key):
    cfg = jaxdp.HVCConfig(4, 2)
    keys = jax.random.split(key, 2)
    res = jaxdp.anonymize_streams(keys, np.full((2, 10, 3), 0.5), cfg, epsilon=1.0, bounds=np.ones(3))
    assert res.records.shape == (2, 10, 3)
    with pytest.raises(ValueError, match="keys"):
        jaxdp.anonymize_streams(jax.random.split(key, 3), np.zeros((2, 10, 3)), cfg, epsilon=1.0, bounds=np.ones(3))
    with pytest.raises(ValueError, match="public bounds"):
        jaxdp.anonymize_streams(keys, np.zeros((2, 10, 3)), jaxdp.HVCConfig(4, 2), epsilon=1.0, bounds="data")
    with pytest.raises(ValueError, match="shape"):
        jaxdp.anonymize_streams(keys, np.zeros((10, 3)), cfg, epsilon=1.0, bounds=np.ones(3))
