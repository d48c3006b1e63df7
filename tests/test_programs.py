"""jaxdp's program cache (`jaxdp.programs`): same releases, no data on disk, robust to damage.

The test suite turns JAX's own persistent cache on (conftest), and the program cache then stands aside, so
these tests run fresh Python processes with JAX's cache off and the program cache in a temporary folder.
"""

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdp import programs

# float32 sentinels the histogram holds consecutively (12 bytes that would appear in a program that
# compiled the data in), the key's two 32-bit words, and the budget
SENTINELS = (1234567.0, 7654321.0, 2345678.0)
KEY_WORDS = (0x9E3779B9, 0x7F4A7C15)
EPSILON = 0.7312

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import jax, jax.numpy as jnp, numpy as np
    from jaxdp import histogram as H, programs, wevent

    SENTINELS, KEY_WORDS, EPSILON, OUT, MUTANT = json.loads(sys.argv[1])
    hist = np.zeros(64, np.float32)
    hist[10:13] = SENTINELS
    key = jax.random.wrap_key_data(jnp.asarray(KEY_WORDS, jnp.uint32))
    keys = jax.random.split(key, 3)
    counts = np.tile(np.asarray(SENTINELS, np.float32), (20, 2))
    outs = {
        "php": H.php(key, hist, epsilon=EPSILON).counts,
        "php_keys": H.php(keys, hist, epsilon=EPSILON).counts,
        "efpa": H.efpa(key, hist, epsilon=EPSILON).counts,
        "spa": H.spa(key, hist, epsilon=EPSILON).counts,
        "lpa": H.lpa(key, hist, epsilon=EPSILON).counts,
        "fpa": H.fpa(key, hist, epsilon=EPSILON, k=5).counts,
        "release": H.release_histogram(key, hist, [8, 16, 40], epsilon=EPSILON).counts,
        "wevent_bd": wevent.run(key, counts, method="bd", w=4, epsilon=EPSILON).releases,
        "wevent_keys": wevent.run(keys, counts, method="uniform", w=4, epsilon=EPSILON).releases,
    }
    np.savez(OUT, **{k: np.asarray(v) for k, v in outs.items()})
    if MUTANT:  # a broken program that closes over the data: its entry must hold the sentinels
        programs.set_cache_dir(MUTANT)
        data = jnp.asarray(hist)
        leaky = programs.Program(lambda k, e: data * e + jax.random.uniform(k))
        np.asarray(leaky(key, EPSILON))
    print(json.dumps(programs.cache_info()))
    """
)


def _run(tmp_path, cache, out, mutant=""):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "JAXDP_", "XLA_"))}
    env["JAXDP_PROGRAM_CACHE"] = str(cache)
    args = json.dumps([SENTINELS, KEY_WORDS, EPSILON, str(out), str(mutant)])
    done = subprocess.run([sys.executable, str(script), args], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Warning" not in done.stderr, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), dict(np.load(out))


def _entries(folder):
    return sorted(os.path.join(d, f) for d, _, files in os.walk(folder) for f in files if f.endswith(".xla"))


def _leaks(folder):
    patterns = [np.asarray(SENTINELS, np.float32).tobytes(), np.asarray(SENTINELS, np.float64).tobytes(),
                np.asarray(KEY_WORDS, np.uint32).tobytes(), np.float64(EPSILON).tobytes()]  # fmt: skip
    found = []
    for path in _entries(folder):
        with open(path, "rb") as f:
            blob = f.read()
        found += [(os.path.basename(path), i) for i, p in enumerate(patterns) if p in blob]
    return found


@pytest.mark.slow  # three JAX processes (25–54 s of one worker), an audit of the cache: in CI's second step
def test_cached_programs_release_the_same_and_hold_no_data(tmp_path, lean_worker):
    cache, mutant = tmp_path / "cache", tmp_path / "mutant"
    first, a = _run(tmp_path, cache, tmp_path / "a.npz", mutant)
    assert first["compiled"] >= 9 and first["stored"] == first["compiled"] and first["loaded"] == 0
    second, b = _run(tmp_path, cache, tmp_path / "b.npz")
    assert second["compiled"] == 0 and second["loaded"] == first["compiled"] - 1  # all but the mutant's
    off, c = _run(tmp_path, "off", tmp_path / "c.npz")
    assert off == {"loaded": 0, "compiled": 0, "stored": 0}  # plain jax.jit
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
        np.testing.assert_array_equal(a[name], c[name], err_msg=name)
    assert a["php_keys"].shape == (3, 64) and a["wevent_keys"].shape[0] == 3
    # no data value, key word or budget in any entry; the audit catches the mutant that compiled the data in
    assert _entries(cache) and _leaks(cache) == []
    assert [i for _, i in _leaks(mutant)] == [0]


@pytest.mark.slow
def test_damaged_or_unwritable_cache_recompiles_and_releases_the_same(tmp_path, lean_worker):
    cache = tmp_path / "cache"
    _, a = _run(tmp_path, cache, tmp_path / "a.npz")
    for path in _entries(cache):
        with open(path, "r+b") as f:
            f.truncate(100)
    info, b = _run(tmp_path, cache, tmp_path / "b.npz")
    assert info["loaded"] == 0 and info["compiled"] == info["stored"] >= 9  # every damaged entry replaced
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    info, c = _run(tmp_path, blocked / "cache", tmp_path / "c.npz")
    assert info["stored"] == 0 and info["compiled"] >= 9
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
        np.testing.assert_array_equal(a[name], c[name], err_msg=name)


def test_cache_folder_setting(monkeypatch, tmp_path):
    programs.set_cache_dir()
    monkeypatch.setenv("JAXDP_PROGRAM_CACHE", "off")
    assert programs.cache_dir() is None
    monkeypatch.setenv("JAXDP_PROGRAM_CACHE", str(tmp_path))
    assert programs.cache_dir() == str(tmp_path)
    monkeypatch.delenv("JAXDP_PROGRAM_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert programs.cache_dir() == str(tmp_path / "xdg" / "jaxdp" / "programs")
    programs.set_cache_dir(None)
    assert programs.cache_dir() is None
    programs.set_cache_dir()
    assert programs.cache_dir() == str(tmp_path / "xdg" / "jaxdp" / "programs")
    with pytest.raises(TypeError, match="folder path or None"):
        programs.set_cache_dir(3)


def test_trim_keeps_the_newest_entries_under_the_limit(tmp_path):
    for i in range(6):
        sub = tmp_path / f"{i:02d}"
        sub.mkdir()
        path = sub / f"{i:02d}{'0' * 62}.xla"  # jaxdp's names: a SHA-256 digest in a folder of its first two digits
        path.write_bytes(b"x" * 1000)
        os.utime(path, (1000 + i, 1000 + i))
    old = tmp_path / "00" / "jaxdp-left.tmp"  # an interrupted write, hours ago
    old.write_bytes(b"x")
    os.utime(old, (1000, 1000))
    programs.trim(str(tmp_path), limit=3500)
    assert [os.path.basename(p)[:2] for p in _entries(tmp_path)] == ["03", "04", "05"]
    assert not old.exists()


def test_public_table_is_checked_and_recomputed_when_damaged(tmp_path):
    programs.set_cache_dir(str(tmp_path))
    try:
        calls = []

        def compute():
            calls.append(1)
            return np.arange(5, dtype=np.float64) / 3

        first = programs.public_table("t", compute, size=5)
        again = programs.public_table("t", compute, size=5)
        assert len(calls) == 1
        np.testing.assert_array_equal(first, again)
        (path,) = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs]
        with open(path, "r+b") as f:  # flip one byte of the values: the checksum no longer matches
            f.seek(40)
            byte = f.read(1)
            f.seek(40)
            f.write(bytes([byte[0] ^ 1]))
        np.testing.assert_array_equal(programs.public_table("t", compute, size=5), first)
        assert len(calls) == 2
        np.testing.assert_array_equal(programs.public_table("t", compute, size=5), first)
        assert len(calls) == 2  # the replaced entry is read
        with pytest.raises(ValueError, match="expected"):
            programs.public_table("u", compute, size=6)
    finally:
        programs.set_cache_dir()


@pytest.fixture
def in_process_cache(tmp_path):
    """The program cache on in this process (the suite turns JAX's own cache on, which it stands aside for)."""
    saved = jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", None)
    programs.set_cache_dir(str(tmp_path / "cache"))
    try:
        yield tmp_path / "cache"
    finally:
        programs.set_cache_dir()
        jax.config.update("jax_compilation_cache_dir", saved)


def test_programs_that_ignore_different_arguments_do_not_share_an_entry(in_process_cache):
    first = programs.Program(lambda a, b: a * 2)
    second = programs.Program(lambda a, b: b * 2)  # same name, same text were unused arguments dropped
    x, y = jnp.ones(3), jnp.full(3, 5.0)
    before = programs.cache_info()
    np.testing.assert_array_equal(first(x, y), 2 * x)
    np.testing.assert_array_equal(second(x, y), 2 * y)
    assert programs.cache_info()["compiled"] - before["compiled"] == 2


def test_debug_modes_and_traces_get_plain_jit(in_process_cache, key):
    prog = programs.Program(lambda k, x: x + jax.random.uniform(k))
    np.testing.assert_array_equal(prog(key, 1.0), jax.jit(prog.__wrapped__)(key, 1.0))  # loaded or compiled
    with jax.disable_jit():
        assert float(prog(key, 1.0)) == float(prog.__wrapped__(key, 1.0))
    with jax.debug_key_reuse(True):
        prog(key, 1.0)
        with pytest.raises(Exception, match="reuse|consumed"):
            prog(key, 1.0)
    before = programs.cache_info()
    traced = jax.jit(lambda: prog(key, 2.0))()  # concrete arguments under an outer trace: inlined, not run eagerly
    assert float(traced) == float(prog.__wrapped__(key, 2.0)) and programs.cache_info() == before


def test_trim_touches_only_its_own_entries(tmp_path):
    """Found in review: with the cache pointed at an existing folder, trim removed an unrelated hour-old ``*.tmp``
    file and, over the size limit, any ``*.xla``/``*.f64`` file of any subfolder."""
    import time

    own = [("ab", "0" * 64 + ".xla"), ("tables", "x-jaxdp0.1.0.f64"), ("ab", "jaxdp-1.tmp")]
    theirs = [("Documents", "thesis.tmp"), ("Documents", "paper.xla"), ("ab", "other.tmp")]
    for sub, name in own + theirs:
        (tmp_path / sub).mkdir(exist_ok=True)
        (tmp_path / sub / name).write_bytes(b"x" * 100)
        os.utime(tmp_path / sub / name, (time.time() - 7200,) * 2)
    programs.trim(str(tmp_path), limit=0)
    assert [n for s, n in own if (tmp_path / s / n).exists()] == []
    assert [n for s, n in theirs if not (tmp_path / s / n).exists()] == []


SWAP_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import jax.numpy as jnp, numpy as np
    from jaxdp import programs

    def double(x):
        return 2.0 * x

    def other(x):
        return x[:2] * 3.0

    def entries():
        return sorted(os.path.join(d, f) for d, _, fs in os.walk(sys.argv[1]) for f in fs if f.endswith(".xla"))

    x = jnp.arange(3.0)
    assert np.array_equal(programs.Program(double)(x), 2 * x)
    (mine,) = entries()
    programs.Program(other)(jnp.ones(5))  # the same argument tree, other shapes
    (theirs,) = set(entries()) - {mine}
    with open(theirs, "rb") as src, open(mine, "wb") as dst:
        dst.write(src.read())  # checksum valid: it is another program's whole entry
    before = programs.cache_info()
    again = programs.Program(double)(x)  # a new Program: nothing loaded in memory
    after = programs.cache_info()
    print(json.dumps({"same": bool(np.array_equal(again, 2 * x)), "loaded": after["loaded"] - before["loaded"],
                      "compiled": after["compiled"] - before["compiled"],
                      "replaced": open(mine, "rb").read() != open(theirs, "rb").read()}))
    """
)


def test_an_entry_holding_another_program_is_recompiled(tmp_path):
    """Found in review: an entry with a valid checksum that held another program (copied over it) was loaded,
    and the call ended in JAX's TypeError. Such an entry is now compiled again and replaced. (A fresh process
    with JAX's own cache off, as the tests above: with it on, the program cache stands aside.)"""
    script, cache = tmp_path / "swap.py", tmp_path / "cache"
    script.write_text(SWAP_SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "JAXDP_", "XLA_"))}
    env["JAXDP_PROGRAM_CACHE"] = str(cache)
    done = subprocess.run([sys.executable, str(script), str(cache)], env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"same": True, "loaded": 0, "compiled": 1,
                                                                 "replaced": True}  # fmt: skip


def test_a_cache_under_a_folder_others_can_write_is_not_used_and_parents_are_made_private(tmp_path):
    """Found in review: only the cache's own folder was checked. Folders above it that `makedirs` created had the
    umask's mode (group-writable under umask 002), and a cache inside a world-writable, non-sticky folder was used:
    whoever can write a parent can swap the cache folder for a link to their own entries, which are loaded and run.
    Every folder up to the root is now checked (others may write only where the sticky bit is set, as in /tmp),
    missing parents are made 0700, and an entry that is a link or not this user's file is not read."""
    calls = []

    def compute():
        calls.append(1)
        return np.arange(3, dtype=np.float64)

    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # world-writable, no sticky bit
    old = os.umask(0o002)
    try:
        for folder, cached in ((shared / "cache", False), (tmp_path / "a" / "b" / "cache", True)):
            programs.set_cache_dir(str(folder))
            calls.clear()
            programs.public_table("t", compute, size=3)
            programs.public_table("t", compute, size=3)
            assert len(calls) == (1 if cached else 2), folder
        for made in (tmp_path / "a", tmp_path / "a" / "b"):
            assert os.stat(made).st_mode & 0o077 == 0, oct(os.stat(made).st_mode)
        # the stored entry swapped for a link to a file elsewhere (a valid entry, even): not followed, recomputed
        (entry,) = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path / "a") for f in fs]
        elsewhere = tmp_path / "elsewhere.f64"
        os.replace(entry, elsewhere)
        os.symlink(elsewhere, entry)
        calls.clear()
        programs.public_table("t", compute, size=3)
        assert len(calls) == 1
    finally:
        os.umask(old)
        programs.set_cache_dir()


def test_an_entry_copied_over_another_name_is_not_read(tmp_path):
    """Found in review: the checksum covered the body only, so another entry copied whole over this one's name was
    read (an executable of the same shapes was loaded and run, returning another program's results). The
    checksum now covers the entry's name."""
    programs.set_cache_dir(str(tmp_path))
    try:
        programs.public_table("a", lambda: np.zeros(4), size=4)
        programs.public_table("b", lambda: np.ones(4), size=4)
        files = {f.split("-")[0]: os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs}
        with open(files["a"], "rb") as src, open(files["b"], "wb") as dst:
            dst.write(src.read())
        np.testing.assert_array_equal(programs.public_table("b", lambda: np.ones(4), size=4), np.ones(4))
    finally:
        programs.set_cache_dir()


def test_program_keys_static_values_by_type_and_position_and_compile_options(in_process_cache):
    """Found in review: `Program` served the executable of k=1 to a call with k=1.0 (equal, but jax.jit compiles
    them apart), crashed on a static argument passed by position, and loaded an executable compiled under other
    JAX compile options (e.g. jax_disable_most_optimizations)."""

    def f(x, k):
        return x + (100.0 if isinstance(k, float) else 1.0) * k

    p = programs.Program(f, static_argnames=("k",))
    x = jnp.zeros(1)
    for k in (1, 1.0, 2, 2.0):
        np.testing.assert_array_equal(p(x, k=k), f(x, k))
        np.testing.assert_array_equal(p(x, k), f(x, k))  # by position: plain jax.jit
    q = programs.Program(lambda x: jnp.sin(x) * 2.0)
    q(jnp.ones(4))
    before = programs.cache_info()
    saved = jax.config.values.get("jax_disable_most_optimizations")
    jax.config.update("jax_disable_most_optimizations", True)
    try:
        q(jnp.ones(4))
    finally:
        jax.config.update("jax_disable_most_optimizations", saved)
    after = programs.cache_info()
    assert (after["compiled"] - before["compiled"], after["loaded"] - before["loaded"]) == (1, 0)


def test_a_cache_folder_given_with_a_tilde_is_used(tmp_path, monkeypatch):
    """Found in review of the fix above: "~/x" was created from the expanded path but checked unexpanded, so the
    folder was made and then refused."""
    monkeypatch.setenv("HOME", str(tmp_path))
    calls = []
    programs.set_cache_dir("~/cachex")
    try:
        for _ in range(2):
            programs.public_table("t", lambda: calls.append(1) or np.zeros(2), size=2)
    finally:
        programs.set_cache_dir()
    assert len(calls) == 1 and (tmp_path / "cachex").is_dir()
