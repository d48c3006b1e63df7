"""jaxdp's cache of its own compiled programs on disk, so that a new process skips XLA's compilation.

A first call of a jaxdp release compiles an XLA program (P-HP at 4,096 bins: ≈ 1–2.5 s on a 2-core CPU,
most of it LLVM code generation). The library's public release programs (histograms: `lpa`, `fpa`,
`spa`, `efpa`, `php`, `release_histogram`; w-event: `run`) are `Program` objects: the first call in a
process traces and lowers the program (≈ 0.1–0.4 s), looks its compiled executable up on disk under a
hash of the lowered program text, the JAX/jaxlib versions, the device and ``XLA_FLAGS``, and compiles and
stores it only when it is not there. Later calls in the same process reuse the loaded executable.

What is stored: XLA executables of jaxdp's own programs, built from their *shapes and static options*
(sizes, method names, dtypes). Data, keys and budgets are runtime arguments of these programs, never
compiled in (`tests/test_programs.py` checks that no data value or key word reaches a cache file). The
cache is not JAX's global persistent compilation cache: a user's own jitted functions (which may close
over data as constants) are never written to disk by jaxdp.

Where: ``$JAXDP_PROGRAM_CACHE`` if set (``off``, ``0`` or an empty value turn the cache off), else
``$XDG_CACHE_HOME/jaxdp/programs`` or ``~/.cache/jaxdp/programs``; `set_cache_dir` overrides both for the
process. A folder that cannot be created or written is skipped silently (programs are then compiled as
usual); a damaged entry is recompiled and replaced. The folder keeps at most `MAX_BYTES` (oldest entries
are removed first). The cache is used in single-device processes only (with several devices a program's
executable depends on where its inputs live, so jaxdp leaves compilation to ``jax.jit``), and it stands
aside when JAX's own persistent compilation cache is on (``jax_compilation_cache_dir`` set, as the CLI and
the test suite do): that cache then covers every program, and an executable that XLA loaded from it cannot
be serialized again faithfully (measured: such entries failed to load in a later process).
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile

import jax

__all__ = ["Program", "program", "public_table", "cache_dir", "set_cache_dir", "cache_info", "trim", "MAX_BYTES"]

MAX_BYTES = 512 * 2**20
_ENV = "JAXDP_PROGRAM_CACHE"
_OFF = ("", "0", "off", "false", "no", "none")
_override: list = []  # [path or None] once set_cache_dir was called
_counts = {"loaded": 0, "compiled": 0, "stored": 0}


def cache_info() -> dict:
    """This process's counts: executables ``loaded`` from the cache, ``compiled`` (not found there) and
    ``stored`` (written after compiling). Calls that bypassed the cache (it is off, under a transformation,
    several devices, JAX's cache on) are not counted."""
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
def _environment() -> bytes:
    import jaxlib

    dev = jax.devices()[0]
    parts = (jax.__version__, jaxlib.__version__, dev.platform, getattr(dev, "device_kind", ""),
             getattr(dev.client, "platform_version", ""), os.environ.get("XLA_FLAGS", ""), _cpu_features())  # fmt: skip
    return "\x00".join(map(str, parts)).encode()


def _cpu_features() -> str:
    """The host CPU's model and instruction-set flags: XLA's CPU code is compiled for this machine's CPU."""
    try:
        with open("/proc/cpuinfo") as f:
            lines = [ln for ln in f if ln.startswith(("model name", "flags", "Features"))]
        return "".join(sorted(set(lines)))
    except OSError:
        import platform

        return platform.processor() + platform.machine()


def _trace_context() -> tuple:
    c = jax.config
    return (c.jax_enable_x64, c.jax_numpy_dtype_promotion, c.jax_default_matmul_precision, c.jax_numpy_rank_promotion)


class Program:
    """A jitted function whose compiled executables are kept on disk (see the module docstring).

    Called like ``jax.jit(fun, static_argnames=...)``; under another transformation (vmap, jit, grad) it is
    that jitted function. ``program.over_keys(keys [R], *args, **kw)`` is the same program vmapped over a
    leading key axis (one compiled program for R repetitions), cached the same way.
    """

    def __init__(self, fun, *, static_argnames=()):
        self._fun = fun
        self._static = tuple(static_argnames)
        self._jit = jax.jit(fun, static_argnames=self._static)
        self._loaded: dict = {}
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

            batched.__name__ = batched.__qualname__ = f"{getattr(fun, '__name__', 'program')}_over_keys"
            self._batched = Program(batched, static_argnames=self._static)
        return self._batched

    def __call__(self, *args, **kwargs):
        folder = cache_dir()
        dynamic = {k: v for k, v in kwargs.items() if k not in self._static}
        leaves, tree = jax.tree.flatten((args, dynamic))
        if (folder is None or jax.config.jax_compilation_cache_dir or jax.device_count() != 1
                or any(isinstance(x, jax.core.Tracer) for x in leaves)):
            return self._jit(*args, **kwargs)
        try:
            static = tuple(sorted((k, v) for k, v in kwargs.items() if k in self._static))
            signature = (tree, static, tuple(jax.typeof(x) for x in leaves), _trace_context())
            hash(signature)
        except TypeError:  # an unhashable static value or a leaf JAX cannot type: let jax.jit say what is wrong
            return self._jit(*args, **kwargs)
        compiled = self._loaded.get(signature)
        if compiled is None:
            compiled = self._loaded[signature] = _load_or_compile(self._jit.lower(*args, **kwargs), folder)
        return compiled(*args, **dynamic)


def program(fun=None, *, static_argnames=()):
    """Decorator: ``@program(static_argnames=("noise",))`` makes `fun` a `Program`."""
    if fun is None:
        return functools.partial(program, static_argnames=static_argnames)
    return Program(fun, static_argnames=static_argnames)


def _load_or_compile(lowered, folder: str):
    from jax.experimental import serialize_executable

    digest = hashlib.sha256(_environment() + b"\x00" + lowered.as_text().encode()).hexdigest()
    path = os.path.join(folder, digest[:2], digest + ".xla")
    try:
        with open(path, "rb") as f:
            payload = f.read()
        compiled = serialize_executable.deserialize_and_load(payload, lowered.in_tree, lowered.out_tree)
        _counts["loaded"] += 1
        try:
            os.utime(path)  # most recently used (kept by `trim`)
        except OSError:
            pass
        return compiled
    except Exception:  # absent, unreadable or damaged: compile (and replace it)
        pass
    compiled = lowered.compile()
    _counts["compiled"] += 1
    try:
        payload, _, _ = serialize_executable.serialize(compiled)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
            os.replace(tmp, path)  # atomic: a concurrent reader sees the old entry or the whole new one
        except BaseException:
            os.unlink(tmp)
            raise
        _counts["stored"] += 1
        trim(folder)
    except Exception:  # a read-only or full disk: the program still runs, it is just not kept
        pass
    return compiled


def public_table(name: str, compute):
    """``compute()`` (a float64 NumPy array computed from public sizes only, e.g. `dft_sensitivity`'s
    table), kept in the cache folder under `name` with a SHA-256 of its bytes: an entry whose checksum does
    not match is recomputed and replaced. Without a cache folder, just ``compute()``."""
    import numpy as np

    folder = cache_dir()
    if folder is None:
        return compute()
    path = os.path.join(folder, "tables", f"{name}.f64")
    try:
        with open(path, "rb") as f:
            blob = f.read()
        digest, body = blob[:32], blob[32:]
        if hashlib.sha256(body).digest() == digest:
            return np.frombuffer(body, np.float64).copy()
    except OSError:
        pass
    out = np.ascontiguousarray(compute(), np.float64)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(hashlib.sha256(out.tobytes()).digest() + out.tobytes())
        os.replace(tmp, path)
    except OSError:
        pass
    return out


def trim(folder: str, *, limit: int = MAX_BYTES) -> None:
    """Remove the least recently used entries of the program cache in `folder` until it holds at most
    `limit` bytes (called after every entry jaxdp stores)."""
    entries = []
    for sub in os.scandir(folder):
        if sub.is_dir():
            for e in os.scandir(sub.path):
                if e.name.endswith(".xla"):
                    st = e.stat()
                    entries.append((st.st_mtime, st.st_size, e.path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= limit:
            break
        try:
            os.unlink(path)
            total -= size
        except OSError:
            pass
