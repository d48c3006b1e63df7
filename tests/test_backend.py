"""XLA CPU loop settings (`jaxdp.backend`): opt-in flag, which codec loops become one kernel, same results."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jaxdp
from jaxdp import backend

_FLAG = "--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=4611686018427387904"


def test_fuse_cpu_loops_after_start_is_a_clear_error_unless_already_set(monkeypatch):
    import jax.numpy as jnp

    jnp.zeros(1).block_until_ready()  # this process has started JAX
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
    assert not backend.cpu_loops_fused()
    with pytest.raises(RuntimeError, match="before JAX's first computation"):
        jaxdp.fuse_cpu_loops()
    assert os.environ["XLA_FLAGS"] == "--xla_force_host_platform_device_count=1"  # untouched
    monkeypatch.setenv("XLA_FLAGS", _FLAG)
    assert jaxdp.fuse_cpu_loops() and os.environ["XLA_FLAGS"] == _FLAG
    assert backend._hoistable_codec_loop(104) and not backend._hoistable_codec_loop(624)
    monkeypatch.delenv("XLA_FLAGS")
    assert not backend._hoistable_codec_loop(104)  # without the flag: default compilation


SCRIPT = textwrap.dedent(
    """
    import sys, json, jax, jax.numpy as jnp, numpy as np, jaxdp
    from jaxdp import codec, datasets
    if sys.argv[1] == "fuse":
        assert jaxdp.fuse_cpu_loops()
    census = datasets.load_census().astype(np.float64)
    hi = 1.5 * census.max(axis=0)
    data = census[:480]
    entry_while = {}
    out = {}
    for n in (8, 48):
        cfg = jaxdp.HVCConfig(n, 96 // n, 20.0, bounds=(np.zeros(13), hi), accounting="paper")
        r = jaxdp.anonymize(jax.random.key(3), data, cfg)
        out[n] = (r.records, np.stack([r.info.mode, r.info.kind, r.info.t]))
        prm = codec.params(cfg, np.zeros(13), hi, jnp.float32)
        blocks = jnp.zeros((64, n, 13), jnp.float32)
        keys = jax.random.split(jax.random.key(0), 64)
        text = codec._run_fn(n * 13).lower(
            codec._static(cfg), prm, codec.init(cfg, 13, jnp.float32), blocks, keys, jnp.ones(64, jnp.float32)
        ).compile().as_text()
        entry = text[text.index("ENTRY"):]
        entry = entry[: entry.index("\\n}")]
        entry_while[n] = " while(" in entry  # the scan left as a loop of separate kernels
    np.savez(sys.argv[2], r8=out[8][0], i8=out[8][1], r48=out[48][0], i48=out[48][1])
    print(json.dumps(entry_while))
    """
)


def test_fused_loops_make_the_small_block_codec_one_kernel_with_the_same_release(tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    procs = {
        mode: subprocess.Popen([sys.executable, "-c", SCRIPT, mode, str(tmp_path / f"{mode}.npz")], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for mode in ("fuse", "default")
    }
    results = {}
    for mode, proc in procs.items():
        stdout, stderr = proc.communicate()
        assert proc.returncode == 0, stderr[-2000:]
        results[mode] = json.loads(stdout.strip().splitlines()[-1]), np.load(tmp_path / f"{mode}.npz")
    (fused, a), (plain, b) = results["fuse"], results["default"]
    # Default: every codec scan is a while loop of separate kernels. With the flag, the n = 8 loop
    # is compiled into one kernel (no while left in the entry computation); n = 48 stays a loop
    # (its matrix products are faster as library calls).
    assert plain == {"8": True, "48": True}
    assert fused == {"8": False, "48": True}
    # Same computation: same discrete choices, records equal up to float32 rounding.
    for n in (8, 48):
        np.testing.assert_array_equal(a[f"i{n}"], b[f"i{n}"])
        scale = np.abs(b[f"r{n}"]).max()
        np.testing.assert_allclose(a[f"r{n}"], b[f"r{n}"], rtol=1e-4, atol=1e-5 * scale)


def test_cli_anonymize_fuses_loops_unless_told_not_to(tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    procs = {}
    for extra, expected in (([], True), (["--no-fuse-loops"], False)):
        rep = tmp_path / f"rep{expected}.json"
        cmd = [sys.executable, "-m", "jaxdp", "anonymize", "-o", str(tmp_path / f"out{expected}.csv"),
               "--report", str(rep), "--quiet", "--epsilon", "3", *extra]
        procs[rep, expected] = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for (rep, expected), proc in procs.items():
        _, stderr = proc.communicate()
        assert proc.returncode == 0, stderr[-2000:]
        assert json.loads(rep.read_text())["xla_cpu_loops_fused"] is expected
