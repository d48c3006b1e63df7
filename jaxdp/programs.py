"""jaxdp's cache of its own compiled programs on disk, so that a new process skips XLA's compilation.

A first call of a jaxdp release compiles an XLA program (P-HP at 4,096 bins: ≈ 1–2.5 s on a 2-core CPU,
most of it LLVM code generation). The library's public release programs (histograms: `lpa`, `fpa`,
`spa`, `efpa`, `php`, `release_histogram`; w-event: `run`) are `Program` objects: the first call in a
process traces and lowers the program (≈ 0.1–0.7 s), looks its compiled executable up on disk under a
hash of the lowered program text, the function's name, the JAX/jaxlib versions, the device, the CPU's
model and flags and ``XLA_FLAGS``, and compiles and stores it only when it is not there. Later calls in
the same process reuse the loaded executable.

What is stored: XLA executables of jaxdp's release programs, built from their *shapes and static
options* (sizes, method names, dtypes). Data, keys and budgets are runtime arguments of these programs,
never compiled in (`tests/test_programs.py` checks that no data value, key word or budget reaches a cache
file, and that the check catches a program that closes over data). `Program` is for such functions only: a
function that closes over data would write it to disk. The cache is not JAX's global persistent
compilation cache: a user's own jitted functions are never written to disk by jaxdp.

Where: ``$JAXDP_PROGRAM_CACHE`` if set (``off``, ``0`` or an empty value turn the cache off), else
``$XDG_CACHE_HOME/jaxdp/programs`` or ``~/.cache/jaxdp/programs``; `set_cache_dir` overrides both for the
process. Folders are created private to the user (mode 0700, missing parents too); a folder owned by another
user or writable by others is not used, nor one under a folder others may write (unless it is sticky, as /tmp
is) — links are resolved and every folder up to the root is checked (a program loaded from the cache is trusted
like the installed package: loading runs its code). A folder that cannot be created or written is skipped
silently (programs are then compiled as usual); an entry is read only if it is a regular file of the user
that no one else can write, opened without following links, and is recompiled and replaced if its SHA-256
(over its file name and body) does not match. The entry's name hashes the lowered program, the function's
name, the JAX/jaxlib versions, the device, the CPU, ``XLA_FLAGS`` and JAX's compile options. The folder keeps at most
`MAX_BYTES` (least recently used entries are removed first).

The cache stands aside (plain ``jax.jit``) under another transformation or trace, in processes with several
devices or inputs committed to another device, on hosts whose CPU it cannot identify (not Linux), under
JAX's debugging modes (``disable_jit``, ``debug_key_reuse``, ``debug_nans``/``debug_infs``,
``enable_checks``, which its compiled path would skip), and when JAX's own persistent compilation cache is on
(``jax_compilation_cache_dir`` set, as the CLI and the test suite do): that cache then covers every program,
and an executable that XLA loaded from it cannot be serialized again faithfully (measured: such entries
failed to run in a later process, "Function … not found"; jaxdp also never stores an executable that JAX
reports as a hit in its cache).
"""

from __future__ import annotations

import collections
import functools
import hashlib
import inspect
import os
import re
import tempfile
import time

import jax

from jaxdp._folders import private_folder, read_private_file

__all__ = ["Program", "program", "public_table", "cache_dir", "set_cache_dir", "cache_info", "trim", "MAX_BYTES"]

MAX_BYTES = 512 * 2**20
_LOADED_PER_PROGRAM = 64  # executables a Program keeps in memory (least recently used dropped)
_ENV = "JAXDP_PROGRAM_CACHE"
_OFF = ("", "0", "off", "false", "no", "none")
_override: list = []  # [path or None] once set_cache_dir was called
_counts = {"loaded": 0, "compiled": 0, "stored": 0}
_jax_cache_hits = [0]


def cache_info() -> dict:
    """This process's counts: executables ``loaded`` from the cache, ``compiled`` (not found there) and
    ``stored`` (written after compiling). Calls that bypassed the cache (see the module docstring) are not
    counted."""
    return dict(_counts)


_ENVIRONMENT = object()


def set_cache_dir(path=_ENVIRONMENT) -> None:
    """Use `path` for this process's program cache (None: no cache), whatever the environment says;
    ``set_cache_dir()`` goes back to the environment's setting."""
    if path is _ENVIRONMENT:
        _override.clear()
        return
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"set_cache_dir takes a folder path or None, got {path!r}.")
    _override[:] = [None if path is None else os.fspath(path)]


def cache_dir() -> str | None:
    """The folder of the program cache, or None when it is off (see the module docstring)."""
    if _override:
        return _override[0]
    value = os.environ.get(_ENV)
    if value is not None:
        return None if value.strip().lower() in _OFF else os.path.expanduser(value)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jaxdp", "programs")


@functools.lru_cache(maxsize=None)
def _cpu_features() -> str | None:
    """The host CPU's model and instruction-set flags (XLA's CPU code is compiled for them); None if unknown."""
    try:
        with open("/proc/cpuinfo") as f:
            lines = [ln for ln in f if ln.startswith(("model name", "flags", "Features", "CPU part", "CPU implementer"))]
    except OSError:
        return None
    return "".join(sorted(set(lines))) or None


@functools.lru_cache(maxsize=None)
def _environment() -> bytes:
    import jaxlib

    dev = jax.devices()[0]
    parts = (jax.__version__, jaxlib.__version__, dev.platform, getattr(dev, "device_kind", ""),
             getattr(dev.client, "platform_version", ""), os.environ.get("XLA_FLAGS", ""), _cpu_features())  # fmt: skip
    return "\x00".join(map(str, parts)).encode()


_CONTEXT = ("jax_enable_x64", "jax_numpy_dtype_promotion", "jax_default_matmul_precision", "jax_numpy_rank_promotion",
            "jax_threefry_partitionable", "jax_default_prng_impl", "jax_default_device")  # fmt: skip
# compile options that change the executable but not the lowered text (found in review: an executable compiled
# under JAX_DISABLE_MOST_OPTIMIZATIONS=1 was loaded by a later default process): part of every entry's name
_COMPILE = ("jax_disable_most_optimizations", "jax_optimization_level", "jax_memory_fitting_level",
            "jax_exec_time_optimization_effort", "jax_memory_fitting_effort", "jax_compiler_enable_remat_pass")
_DEBUG = ("jax_disable_jit", "jax_debug_key_reuse", "jax_debug_nans", "jax_debug_infs", "jax_enable_checks")


def _config(name):
    value = getattr(jax.config, name, None)
    if value is None:  # flags such as jax_disable_most_optimizations are not attributes of jax.config
        value = getattr(jax.config, "values", {}).get(name)
    return value


def _on_jax_event(event: str, **kwargs) -> None:
    if event == "/jax/compilation_cache/cache_hits":
        _jax_cache_hits[0] += 1


jax.monitoring.register_event_listener(_on_jax_event)


def _trace_clean() -> bool:
    try:
        from jax._src import core

        return bool(core.trace_state_clean())
    except Exception:  # a JAX without it: assume a trace may be under way (plain jit is always right)
        return False


def _usable(leaves) -> bool:
    if jax.config.jax_compilation_cache_dir or jax.device_count() != 1 or _cpu_features() is None:
        return False
    if any(_config(name) for name in _DEBUG) or not _trace_clean():
        return False
    device = jax.devices()[0]
    for x in leaves:
        if isinstance(x, jax.core.Tracer):
            return False
        if isinstance(x, jax.Array) and x.committed and x.devices() != {device}:
            return False
    return True


class Program:
    """A jitted function whose compiled executables are kept on disk (see the module docstring).

    Called like ``jax.jit(fun, static_argnames=..., keep_unused=True)``; wherever the cache stands aside it
    is that jitted function. ``program.over_keys(keys [R], *args, **kw)`` is the same program vmapped over a
    leading key axis (one compiled program for R repetitions), cached the same way. Only for functions of
    their arguments: a closed-over array would be compiled in and written to disk.
    """

    def __init__(self, fun, *, static_argnames=()):
        self._fun = fun
        self._static = tuple(static_argnames)
        # keep_unused: the lowered text must take every argument, or two programs that differ only in which
        # argument they ignore would lower to the same text (and share an entry)
        self._jit = jax.jit(fun, static_argnames=self._static, keep_unused=True)
        self._name = f"{getattr(fun, '__module__', '')}.{getattr(fun, '__qualname__', repr(fun))}".encode()
        try:  # static arguments passed by position go to plain jax.jit (found in review: they crashed the cache)
            params = list(inspect.signature(fun).parameters)
            self._first_static = min((params.index(n) for n in self._static if n in params), default=None)
        except (TypeError, ValueError):
            self._first_static = 0
        self._loaded: collections.OrderedDict = collections.OrderedDict()
        self._batched = None
        functools.update_wrapper(self, fun)

    def lower(self, *args, **kwargs):
        return self._jit.lower(*args, **kwargs)

    @property
    def over_keys(self) -> Program:
        if self._batched is None:
            fun = self._fun

            def batched(keys, *args, **kwargs):
                return jax.vmap(lambda k: fun(k, *args, **kwargs))(keys)

            batched.__module__ = getattr(fun, "__module__", "")
            batched.__name__ = batched.__qualname__ = f"{getattr(fun, '__qualname__', 'program')}.over_keys"
            self._batched = Program(batched, static_argnames=self._static)
        return self._batched

    def __call__(self, *args, **kwargs):
        folder = cache_dir()
        dynamic = {k: v for k, v in kwargs.items() if k not in self._static}
        leaves, tree = jax.tree.flatten((args, dynamic))
        positional_static = self._first_static is not None and len(args) > self._first_static
        if folder is None or positional_static or not _usable(leaves):
            return self._jit(*args, **kwargs)
        try:
            # with each value's type: 1 and 1.0 are equal but compile differently, as under jax.jit (found in review)
            static = tuple(sorted((k, type(v), v) for k, v in kwargs.items() if k in self._static))
            signature = (tree, static, tuple(jax.typeof(x) for x in leaves), tuple(_config(c) for c in _CONTEXT),
                         tuple(_config(c) for c in _COMPILE))
            hash(signature)
        except TypeError:  # an unhashable static value or a leaf JAX cannot type: let jax.jit say what is wrong
            return self._jit(*args, **kwargs)
        compiled = self._loaded.get(signature)
        if compiled is None:
            compiled = _load_or_compile(self._jit.lower(*args, **kwargs), self._name, folder)
            self._loaded[signature] = compiled
            while len(self._loaded) > _LOADED_PER_PROGRAM:
                self._loaded.popitem(last=False)
        else:
            self._loaded.move_to_end(signature)
        return compiled(*args, **dynamic)


def program(fun=None, *, static_argnames=()):
    """Decorator: ``@program(static_argnames=("noise",))`` makes `fun` a `Program`."""
    if fun is None:
        return functools.partial(program, static_argnames=static_argnames)
    return Program(fun, static_argnames=static_argnames)


def _write(path: str, blob: bytes) -> bool:
    """Write `blob` to `path` atomically (a concurrent reader sees the old entry or the whole new one)."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=_TMP_PREFIX, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
        return True
    except OSError:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return False


def _checksum(path: str, body: bytes) -> bytes:
    """SHA-256 of the entry's file name and body: an entry copied over another's name does not check (found in
    review: another program's whole entry, of the same shapes, was loaded and run)."""
    return hashlib.sha256(os.path.basename(path).encode() + b"\x00" + body).digest()


def _read_checked(path: str) -> bytes | None:
    """The body of an entry written as `_checksum` + body, or None if absent, unreadable, damaged, another entry's,
    or not a regular file of this user that no one else can write (`read_private_file`)."""
    blob = read_private_file(path)
    if blob is None:
        return None
    digest, body = blob[:32], blob[32:]
    return body if _checksum(path, body) == digest else None


def _signature(args_info, out_info):
    """Shapes and dtypes of a program's arguments and results (what a loaded executable must match)."""
    leaves = jax.tree.leaves((args_info, out_info), is_leaf=lambda a: hasattr(a, "shape") and hasattr(a, "dtype"))
    return [(tuple(a.shape), str(a.dtype)) for a in leaves]


def _fits(compiled, lowered) -> bool:
    """Whether a loaded executable takes and returns what `lowered` does. Found in review: an entry with a valid
    checksum that held another program (copied over it) was loaded and ended in JAX's TypeError at the call."""
    try:
        return _signature(compiled.args_info, compiled.out_info) == _signature(lowered.args_info, lowered.out_info)
    except Exception:  # a JAX without these: trust the entry's name (a hash of the lowered text)
        return True


def _load_or_compile(lowered, name: bytes, folder: str):
    from jax.experimental import serialize_executable

    options = repr(tuple(_config(c) for c in _COMPILE)).encode()
    digest = hashlib.sha256(_environment() + b"\x00" + options + b"\x00" + name + b"\x00"
                            + lowered.as_text().encode()).hexdigest()  # fmt: skip
    folder = private_folder(folder)  # resolved: no link left to swap after the check
    sub = private_folder(os.path.join(folder, digest[:2])) if folder else None
    usable = sub is not None
    path = os.path.join(sub, digest + ".xla") if usable else None
    payload = _read_checked(path) if usable else None
    if payload is not None:
        try:
            compiled = serialize_executable.deserialize_and_load(payload, lowered.in_tree, lowered.out_tree)
            if not _fits(compiled, lowered):
                raise ValueError("the entry holds another program")
            _counts["loaded"] += 1
            try:
                os.utime(path)  # most recently used (kept by `trim`)
            except OSError:
                pass
            return compiled
        except Exception:  # an entry this JAX cannot load, or another program's: compile (and replace it)
            pass
    hits = _jax_cache_hits[0]
    compiled = lowered.compile()
    _counts["compiled"] += 1
    if usable and _jax_cache_hits[0] == hits:  # never re-serialize an executable JAX loaded from its own cache
        try:
            body, _, _ = serialize_executable.serialize(compiled)
        except Exception:  # an executable this JAX cannot serialize: it still runs, it is just not kept
            return compiled
        if _write(path, _checksum(path, body) + body):
            _counts["stored"] += 1
            trim(folder)
    return compiled


def public_table(name: str, compute, *, size: int):
    """``compute()``, a float64 NumPy array of `size` values computed from public sizes only (e.g.
    `dft_sensitivity`'s table), kept in the cache folder under `name` and jaxdp's version with a SHA-256 of
    its bytes: an entry whose checksum or size does not match is recomputed and replaced. Without a (private,
    writable) cache folder, just ``compute()``. Give a new `name` whenever `compute` changes."""
    import numpy as np

    from jaxdp import __version__

    folder = cache_dir()
    folder = None if folder is None else private_folder(folder)
    tables = None if folder is None else private_folder(os.path.join(folder, "tables"))
    if tables is None:
        return compute()
    path = os.path.join(tables, f"{name}-jaxdp{__version__}.f64")
    body = _read_checked(path)
    if body is not None and len(body) == 8 * size:
        return np.frombuffer(body, np.float64).copy()
    out = np.ascontiguousarray(compute(), np.float64)
    if out.shape != (size,):
        raise ValueError(f"public_table({name!r}): compute() gave shape {out.shape}, expected ({size},).")
    _write(path, _checksum(path, out.tobytes()) + out.tobytes())
    return out


_TMP_PREFIX = "jaxdp-"  # temporary files of interrupted writes: only these are ever removed as stale
_ENTRY = re.compile(r"[0-9a-f]{64}\.xla|[^/]+-jaxdp[0-9][0-9A-Za-z.+_-]*\.f64")  # executables, tables


def _own_subfolder(name: str) -> bool:
    """Only jaxdp's own subfolders are trimmed: two hex digits (executables) and ``tables``. Found in review:
    with the cache pointed at an existing folder (``JAXDP_PROGRAM_CACHE=$HOME``) trim removed an unrelated
    ``*.tmp`` file an hour old, and once over the limit any ``*.xla``/``*.f64`` file of any subfolder."""
    return name == "tables" or (len(name) == 2 and all(c in "0123456789abcdef" for c in name))


def trim(folder: str, *, limit: int = MAX_BYTES) -> None:
    """Remove the least recently used entries of the program cache in `folder` (executables and tables) until
    it holds at most `limit` bytes, and temporary files left by interrupted writes (older than an hour)."""
    entries = []
    stale = time.time() - 3600
    try:
        subs = [e.path for e in os.scandir(folder) if e.is_dir(follow_symlinks=False) and _own_subfolder(e.name)]
    except OSError:
        return
    for sub in subs:
        try:
            files = list(os.scandir(sub))
        except OSError:
            continue
        for e in files:
            try:
                st = e.stat()
                if e.name.startswith(_TMP_PREFIX) and e.name.endswith(".tmp"):
                    if st.st_mtime < stale:
                        os.unlink(e.path)
                elif _ENTRY.fullmatch(e.name):
                    entries.append((st.st_mtime, st.st_size, e.path))
            except OSError:  # removed by another process meanwhile
                continue
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= limit:
            break
        try:
            os.unlink(path)
            total -= size
        except OSError:
            pass
