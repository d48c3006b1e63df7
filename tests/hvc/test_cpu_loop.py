"""The codec loop as one CPU kernel (`jaxdp.hvc.cpu_loop`): when it is used, what XLA makes of it, same release."""

import collections
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxdp
from jaxdp import cli, datasets
from jaxdp.hvc import codec, cpu_loop

CENSUS = datasets.load_census().astype(np.float64)
HI = 1.5 * CENSUS.max(axis=0)


@pytest.fixture(autouse=True)
def _restore_setting():
    previous = cpu_loop.cpu_loops_fused()
    yield
    cpu_loop.fuse_cpu_loops(previous)


def _config(n, **kw):
    kw.setdefault("accounting", "paper")  # the joint-accounting tables at n = 48 take seconds to build
    return jaxdp.HVCConfig(n, max(1, 96 // n), **kw)


def _entry_computation(config, n, dtype):
    """The optimized HLO of the single-stream loop's entry computation (64 blocks)."""
    prm = codec.params(config, np.zeros(13), HI, dtype)
    blocks = jnp.zeros((64, n, 13), dtype)
    keys = jax.random.split(jax.random.key(0), 64)
    text = codec.run_program(codec.static_config(config), n * 13).lower(
        codec.static_config(config), prm, codec.init(config, 13, dtype), blocks, keys,
        codec.BlockInputs(jnp.ones(64, dtype), jnp.zeros((64, 13), dtype), jnp.full(64, jnp.inf, dtype)),
    ).compile().as_text()
    entry = text[text.index("ENTRY"):]
    return entry[: entry.index("\n}")]


def test_setting_is_a_bool_and_returns_the_previous_one():
    assert cpu_loop.cpu_loops_fused()  # on by default
    assert jaxdp.fuse_cpu_loops(False) is True
    assert not cpu_loop.cpu_loops_fused()
    assert jaxdp.fuse_cpu_loops(True) is False
    with pytest.raises(TypeError, match="True or False"):
        jaxdp.fuse_cpu_loops("yes")
    assert codec.one_kernel_loop(_config(8), 104)
    assert not codec.one_kernel_loop(_config(48), 624)  # large blocks: library-call matrix products
    assert not codec.one_kernel_loop(_config(8, reorder="paper"), 104)  # host callback in the loop


def _codec_loop_ops(entry, n):
    """Entry-computation ops carrying the codec state (history f32[2, n, 13]): (while loops, marked calls).
    The other `while` loops of the entry are the vectorized threefry draws before the block loop."""
    lines = [line for line in entry.splitlines() if f"[2,{n},13]" in line.split("=")[1]]
    loops = [line for line in lines if " while(" in line]
    calls = [line for line in lines if 'xla_cpu_small_call="true"' in line]
    return loops, calls


def test_small_block_loop_compiles_to_one_kernel_call_and_large_or_disabled_to_a_loop():
    # n = 8: the block loop is a call marked for XLA's one-kernel emitter, not a loop of kernels.
    loops, calls = _codec_loop_ops(_entry_computation(_config(8), 8, jnp.float32), 8)
    assert not loops and len(calls) == 1
    # n = 48 and the setting off: a `while` loop of separate kernels, nothing marked.
    for n, enabled in ((48, True), (8, False)):
        jaxdp.fuse_cpu_loops(enabled)
        entry = _entry_computation(_config(n), n, jnp.float32)
        loops, calls = _codec_loop_ops(entry, n)
        assert len(loops) == 1 and not calls and "xla_cpu_small_call" not in entry


def test_one_kernel_loop_releases_the_same_as_the_default_loop(dtype):
    data = CENSUS[:480]
    cfg = _config(8, accounting="joint")
    out = {}
    for enabled in (True, False):
        jaxdp.fuse_cpu_loops(enabled)
        out[enabled] = jaxdp.anonymize(jax.random.key(3), data.astype(dtype), cfg, epsilon=20.0, bounds=(np.zeros(13), HI))
    assert out[True].records.dtype == dtype
    a, b = out[True], out[False]
    for name in ("mode", "kind", "t"):
        np.testing.assert_array_equal(getattr(a.info, name), getattr(b.info, name))
    np.testing.assert_allclose(a.records, b.records, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6 * HI.max())


def test_refused_one_kernel_loop_warns_once_and_falls_back_for_that_program_only(monkeypatch):
    data = CENSUS[:240]
    cfg = _config(8)
    jaxdp.fuse_cpu_loops(False)
    expected = jaxdp.anonymize(jax.random.key(5), data, cfg, epsilon=20.0, bounds=(np.zeros(13), HI))
    jaxdp.fuse_cpu_loops(True)

    class Refusing:  # an XLA that refuses the marked loop when it is compiled
        def lower(self, *args):
            return self

        def compile(self):
            raise jax.errors.JaxRuntimeError("INVALID_ARGUMENT: No such compile option (simulated)")

    monkeypatch.setattr(codec, "run_jit_one_kernel", Refusing())
    monkeypatch.setattr(codec, "one_kernel_programs", collections.OrderedDict())
    monkeypatch.setattr(cpu_loop, "refusal_warned", False)
    with pytest.warns(RuntimeWarning, match="could not compile the codec loop as one CPU kernel"):
        got = jaxdp.anonymize(jax.random.key(5), data, cfg, epsilon=20.0, bounds=(np.zeros(13), HI))
    np.testing.assert_array_equal(got.records, expected.records)
    assert cpu_loop.cpu_loops_fused()  # no process-wide switch is flipped
    assert list(codec.one_kernel_programs.values()) == [None]  # this program remembers the refusal
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second attempt, no second warning
        jaxdp.anonymize(jax.random.key(5), data, cfg, epsilon=20.0, bounds=(np.zeros(13), HI))


def _loop_args(config, n, dtype=jnp.float32):
    prm = codec.params(config, np.zeros(13), HI, dtype)
    blocks = jnp.zeros((64, n, 13), dtype)
    keys = jax.random.split(jax.random.key(0), 64)
    pub = codec.BlockInputs(jnp.ones(64, dtype), jnp.zeros((64, 13), dtype), jnp.full(64, jnp.inf, dtype))
    return prm, codec.init(config, 13, dtype), blocks, keys, pub


def test_the_screen_keeps_callbacks_and_the_ops_xla_refuses_out_of_a_one_kernel_loop():
    # today's small-block loop holds none of the ops XLA's own pass screens out
    assert codec.one_kernel_screen(_config(8), *_loop_args(_config(8), 8)) == ()
    # the paper's reordering calls back to the host inside the loop: a custom call, screened out
    paper = _config(8, reorder="paper")
    assert "stablehlo.custom_call" in codec.one_kernel_screen(paper, *_loop_args(paper, 8))


def test_cli_reports_the_default_loop_when_xla_refuses_the_one_kernel_loop(tmp_path, monkeypatch):
    """Found in review: the report said `codec_loop_one_kernel: true` whenever the loop was asked for, also where
    XLA refused it and the default loop ran. A refusal is simulated here (this XLA accepts the loop)."""

    class Refusing:  # what `_one_kernel_program` compiles: refused as an XLA error would be
        def lower(self, *args, **kwargs):
            raise RuntimeError("simulated XLA refusal")

    monkeypatch.setattr(codec, "run_jit_one_kernel", Refusing())
    monkeypatch.setattr(cpu_loop, "refusal_warned", True)  # (its warning is tested elsewhere)
    monkeypatch.setattr(codec, "one_kernel_programs", type(codec.one_kernel_programs)())
    rep = tmp_path / "rep.json"
    assert cli.main(["anonymize", "-o", str(tmp_path / "o.csv"), "--report", str(rep), "--quiet", "--seed", "1"]) == 0
    assert json.loads(rep.read_text())["codec_loop_one_kernel"] is False


def test_cli_reports_the_loop_and_no_fuse_loops_gives_the_same_output(tmp_path, capsys):
    outputs = {}
    for extra, expected in (([], True), (["--no-fuse-loops"], False)):
        out, rep = tmp_path / f"out{expected}.csv", tmp_path / f"rep{expected}.json"
        args = ["anonymize", "-o", str(out), "--report", str(rep), "--quiet", "--epsilon", "3", "--seed", "1", *extra]
        assert cli.main(args) == 0
        assert json.loads(rep.read_text())["codec_loop_one_kernel"] is expected
        assert cpu_loop.cpu_loops_fused()  # the CLI restores the process setting
        outputs[expected] = np.loadtxt(out, delimiter=",", skiprows=1)
    np.testing.assert_allclose(outputs[True], outputs[False], rtol=1e-5, atol=1e-3)


def test_the_compilation_cache_keeps_a_directory_the_user_configured(tmp_path):
    # conftest configured one for the test run: enabling it again must keep it (a user's choice wins)
    current = jax.config.jax_compilation_cache_dir
    assert current and cpu_loop.enable_compilation_cache(str(tmp_path / "other")) == current
    assert jax.config.jax_compilation_cache_dir == current and not (tmp_path / "other").exists()


def test_one_kernel_programs_follow_jax_settings_and_a_configured_cache_folder_is_checked(tmp_path):
    """Found in review: the stored one-kernel programs were keyed on the config and argument types only, so after
    `jax_threefry_partitionable` was changed the one-kernel loop drew the old bits and the default loop the new ones
    (the two loops promise the same release for a key); a JAX cache folder configured by the user was used
    unchecked, even world-writable (programs loaded from it run like the package's code); history had no limit
    (10**9 ran out of memory inside XLA); np.True_ was refused by fuse_cpu_loops."""
    x = np.random.default_rng(0).uniform(0, 1, (64, 3))
    bounds = (np.zeros(3), np.ones(3))
    cfg = jaxdp.HVCConfig(4, 2, modes=("midpoint", "column_mean"))

    def run():
        return np.asarray(jaxdp.anonymize(jax.random.key(7), x, cfg, epsilon=300.0, bounds=bounds).records)

    saved = jax.config.jax_threefry_partitionable
    jaxdp.fuse_cpu_loops(True)
    run()  # stores the one-kernel program under the current setting
    try:
        jax.config.update("jax_threefry_partitionable", not saved)
        out = {}
        for enabled in (np.True_, False):
            jaxdp.fuse_cpu_loops(enabled)
            out[bool(enabled)] = run()
        np.testing.assert_allclose(out[True], out[False], rtol=1e-5, atol=1e-6)
    finally:
        jax.config.update("jax_threefry_partitionable", saved)
        jaxdp.fuse_cpu_loops(True)
    with pytest.raises(ValueError, match="history must be at most"):
        jaxdp.HVCConfig(4, 2, history=10**9, modes=("inter", "midpoint"))
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    current = jax.config.jax_compilation_cache_dir
    try:
        jax.config.update("jax_compilation_cache_dir", str(shared))
        assert cpu_loop.enable_compilation_cache() is None and not jax.config.jax_compilation_cache_dir
    finally:
        jax.config.update("jax_compilation_cache_dir", current)
