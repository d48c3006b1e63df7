"""Eager (Python-level) validation of public arguments — all of jaxdp's argument and data checks
(scalars, options, bounds, keys, and each system's data: count streams, histograms, F′ specifications,
vectors; the systems re-export theirs as `wevent.check_counts`, `histogram.check_histogram`,
`bucketize.check_fprime`).

Every public entry point of jaxdp validates what it can *before* any computation and raises
`ValueError`/`TypeError` with a message that says how to fix the call. Values that are traced
(inside a user's `jit`/`vmap`) cannot be inspected; they pass through unchecked, which is
documented on each public function.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

KINDS = ("dct", "dst", "dht", "identity")
ORDERS = ("zigzag", "diagonal")
ACCOUNTINGS = ("paper", "joint")


def is_concrete(value: Any) -> bool:
    """True when `value` holds a known value (not a tracer under jit/vmap/grad)."""
    return not isinstance(value, jax.core.Tracer)


def all_concrete(*values: Any) -> bool:
    """True when none of `values` is traced: a mechanism core called eagerly then runs its compiled program (one per
    shape) instead of dispatching its operations one by one; traced calls stay inline in the caller's program."""
    return not any(isinstance(v, jax.core.Tracer) for v in values)


def positive_scalar(name: str, value: Any) -> Any:
    """Check that `value` is a finite scalar > 0 when it is concrete; return it unchanged."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a positive real number, got a bool ({value!r}).")
    if not is_concrete(value):
        return value
    arr = np.asarray(value)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got an array of shape {arr.shape}.")
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}.")  # complex: review
    v = float(arr)
    if not math.isfinite(v) or v <= 0.0:
        raise ValueError(f"{name} must be a finite number > 0, got {v!r}.")
    if v < np.finfo(np.float64).tiny:  # subnormal: scales built from it flush to 0 (found in review: no noise)
        raise ValueError(f"{name} = {v!r} is below float64's smallest normal number; rescale the problem.")
    return value


def eager(where: str, way_out: str = "call it outside them, with a key array [R] (jax.random.split(key, R)) for R "
          "repetitions", **values: Any) -> None:
    """Refuse traced inputs (`jax.jit`, `jax.vmap`) of a release that checks its input and plans on the host, with
    the way out. Found in review: `anonymize`, the baselines, `StreamAnonymizer`, `WEventStream` and `tree_counter`
    ended in JAX's TracerArrayConversionError or ConcretizationTypeError under `jax.jit` or `jax.vmap`."""
    for name, value in values.items():
        if isinstance(value, jax.core.Tracer):
            raise TypeError(f"{where} runs eagerly (it checks its input and plans on the host), and its {name} is traced "
                            f"by jax.jit or jax.vmap: {way_out}.")


def eager_epsilon(value: Any, where: str) -> Any:
    """`positive_scalar` for a release that runs eagerly (its budgets and checks are Python numbers): a traced ε is
    refused with the way out. Found in review: under `jax.jit` a traced ε ended in JAX's ConcretizationTypeError."""
    if not is_concrete(value):
        raise TypeError(f"{where} runs eagerly and needs a concrete epsilon (a Python or NumPy number): call it outside "
                        "jax.jit, and pass a key array [R] (jax.random.split(key, R)) for R repetitions.")
    return positive_scalar("epsilon", value)


def kind(value: Any, allowed: tuple[str, ...] = KINDS) -> str:
    if not isinstance(value, str):
        raise TypeError(f"transform kind must be a string, one of {allowed}; got {value!r}.")
    if value not in allowed:
        raise ValueError(f"unknown transform kind {value!r}; choose one of {allowed}.")
    return value


def kinds(values: Any) -> tuple[str, ...]:
    if isinstance(values, str):
        values = (values,)
    values = tuple(values)
    if not values:
        raise ValueError(f"kinds must name at least one transform of {KINDS}.")
    for v in values:
        kind(v)
    if len(set(values)) != len(values):
        raise ValueError(f"kinds must not repeat a transform, got {values}.")
    return values


def option(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; choose one of {allowed}.")
    return value


def size(name: str, value: Any, hi: int | None = None, why: str = "") -> int:
    """An int >= 1 (and <= `hi`, with `why` saying what the limit protects)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be a Python int >= 1, got {value!r}.")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}.")
    if hi is not None and value > hi:
        raise ValueError(f"{name} must be at most {hi:,}, got {value:,}" + (f": {why}" if why else "."))
    return int(value)


def bounds(value: Any, d: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Normalize public domain bounds to float64 arrays `(lo, hi)` of shape `[d]`.

    Accepted forms:
      * shape `[d]`: widths Λ, the domain of attribute k is `[0, Λ_k]` (the paper's convention);
      * shape `[2, d]`: rows `lo` and `hi`, the domain of attribute k is `[lo_k, hi_k]`.

    A 2 × 2 Python list (two attributes) that also reads as one ``[lo, hi]`` pair per attribute is refused:
    ``[[lo_1, hi_1], [lo_2, hi_2]]`` and ``[[lo_1, lo_2], [hi_1, hi_2]]`` (rows) look alike; give a tuple ``(lo, hi)``
    or a NumPy array of rows instead.

    Bounds are public input: they must not be computed from the private data (see
    `jaxdp.datasets.bounds_from_data` for the paper's explicitly non-private rule).
    """
    if not is_concrete(value):
        raise TypeError(
            "bounds must be concrete (NumPy or Python numbers), not traced: they are public "
            "configuration. Pass them from outside jit/vmap."
        )
    # found in review: complex bounds lost their imaginary part with only NumPy's warning, booleans read as widths 1;
    # a list is looked at element by element (NumPy turns [True, 10] into integers before any dtype shows it)
    try:
        raw = np.asarray(value, dtype=object if isinstance(value, (list, tuple)) else None)
    except (TypeError, ValueError):  # ragged: refused below
        raw = None
    if raw is not None and (raw.dtype.kind in "bcmM" or raw.dtype.kind == "O" and any(
            isinstance(v, (bool, np.bool_, complex, np.complexfloating)) for v in raw.reshape(-1))):
        raise TypeError("bounds must be real numbers, got booleans, complex numbers, dates or times.")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"bounds must be numeric, got {value!r}.") from err
    nested = isinstance(value, list) and all(isinstance(e, (list, tuple)) for e in value)  # (rows given as arrays,
    # [lo, hi], are the documented form: found in review, refusing them broke it)
    if nested and arr.shape == (2, 2) and np.all(arr[:, 0] < arr[:, 1]):
        # found in review: [[-20, 45], [0, 60]] meant as one [lo, hi] pair per column was read as rows lo, hi, and the
        # two-column release lay in the wrong domains while marked private (with three columns it is a shape error)
        if np.all(arr[0] < arr[1]):
            raise ValueError("bounds given as a 2 × 2 list are ambiguous for two attributes: [[lo_1, hi_1], [lo_2, "
                             "hi_2]] (a pair per attribute) or [[lo_1, lo_2], [hi_1, hi_2]] (rows lo and hi)? Pass a "
                             "tuple (lo, hi) of the two rows, e.g. ((lo_1, lo_2), (hi_1, hi_2)), or a NumPy array of "
                             "shape [2, d] (rows lo and hi).")
        raise ValueError("bounds read as rows lo and hi give an empty domain (hi <= lo), but read as one [lo, hi] pair "
                         "per attribute they do not: for pairs, pass np.array(pairs).T (rows lo and hi).")
    if arr.ndim == 1:
        lo, hi = np.zeros_like(arr), arr
    elif arr.ndim == 2 and arr.shape[0] == 2:
        lo, hi = arr[0], arr[1]
    else:
        raise ValueError(
            "bounds must have shape [d] (widths Λ, domain [0, Λ]) or [2, d] (rows lo and hi); "
            f"got shape {arr.shape}."
        )
    if lo.shape[0] < 1:
        raise ValueError("bounds must describe at least one attribute (d >= 1).")
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError("bounds must be finite: found NaN or inf. Give every attribute a finite domain.")
    width = hi - lo
    if np.any(width <= 0):
        bad = np.flatnonzero(width <= 0).tolist()
        raise ValueError(
            f"bounds must be positive widths (hi > lo) for every attribute; attributes {bad} are not."
        )
    if d is not None and lo.shape[0] != d:
        raise ValueError(f"bounds describe {lo.shape[0]} attributes but the data has d = {d} columns.")
    lo.flags.writeable = False
    hi.flags.writeable = False
    return lo, hi


def block(name: str, x: Any, *, min_rank: int = 2) -> jax.Array:
    """Check a data block `[..., n, d]` and return it as a floating JAX array."""
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        try:
            x = np.asarray(x)
        except Exception as err:  # noqa: BLE001 - report any conversion failure as a TypeError
            raise TypeError(f"{name} must be an array of shape [..., n, d], got {type(x).__name__}.") from err
    if x.ndim < min_rank:
        raise ValueError(f"{name} must have shape [..., n, d] (rank >= {min_rank}), got shape {tuple(x.shape)}.")
    if x.shape[-1] < 1 or x.shape[-2] < 1:
        raise ValueError(f"{name} must have n >= 1 records and d >= 1 attributes, got shape {tuple(x.shape)}.")
    dt = np.dtype(x.dtype)
    if dt == np.bool_ or not (jnp.issubdtype(dt, jnp.floating) or np.issubdtype(dt, np.integer)):
        raise TypeError(f"{name} must hold real numbers (float or int), got dtype {dt}.")
    if np.issubdtype(dt, np.integer) or jnp.finfo(dt).bits < 32:
        # integers, and float16 / bfloat16, compute in the default float (found in review: float16 blocks gave
        # all-NaN probability tables at width 40, and bfloat16 was refused as not real)
        return jnp.asarray(x).astype(float_dtype())
    return jnp.asarray(x)


def float_dtype() -> np.dtype:
    """The default JAX float dtype: float64 when x64 is enabled, else float32."""
    return np.dtype(jax.dtypes.canonicalize_dtype(jnp.float64))


def key(value: Any, name: str = "key", max_ndim: int | None = None) -> jax.Array:
    """Check that `value` is a typed PRNG key array (`jax.random.key`), of at most `max_ndim` axes (0: one key,
    1: one key or a key array ``[R]`` of repetitions; found in review: a key array ``[2, 3]`` ended in JAX's
    "accepts a single key" traceback)."""
    dt = getattr(value, "dtype", None)
    if dt is None or not jnp.issubdtype(dt, jax.dtypes.prng_key):
        raise TypeError(
            f"{name} must be a typed PRNG key made with jax.random.key(seed) (and split for every use); "
            f"got {type(value).__name__} with dtype {dt}. Legacy uint32 keys from jax.random.PRNGKey are "
            "not accepted: wrap them with jax.random.wrap_key_data."
        )
    if max_ndim is not None and value.ndim > max_ndim:
        what = "one key" if max_ndim == 0 else "one key or a 1-D key array [R] (one key per repetition)"
        raise ValueError(f"{name} must be {what}, got a key array of shape {tuple(value.shape)}; "
                         + ("jax.vmap over the keys." if max_ndim == 0 else "reshape it to [R]."))
    if getattr(value, "ndim", 0) >= 1 and value.size == 0:  # (found in review: NumPy's stack error, or empty results)
        raise ValueError(f"{name} array is empty: give at least one key (jax.random.split(key, R) with R >= 1).")
    if getattr(value, "ndim", 0) >= 1 and value.size > 1 and not isinstance(value, jax.core.Tracer):
        words = np.asarray(jax.random.key_data(value)).reshape(value.size, -1)
        if np.unique(words, axis=0).shape[0] < value.size:
            raise ValueError(f"{name} array holds the same key more than once: every release needs its own key "
                             "(jax.random.split(key, R) gives R distinct ones).")
    return value


def counts(counts, *, dtype=None, with_max: bool = False):
    """Validate a count stream ``[T, d]``: numeric, finite, non-negative, not empty.

    Returns a float64 NumPy array, or with `dtype` the JAX array of that dtype, cast and checked in one
    chunked pass (`jaxdp._host.device_array_range`). A JAX array that already has `dtype` is checked where it
    lives (one reduction) and used as it is: no copy, no trip through host memory. Raises `ValueError` naming the
    first bad entry. Counts beyond what the dtype holds exactly (2²⁴ in float32, 2⁵³ in float64) are refused,
    unless `with_max`: then ``(array, its maximum)`` is returned and the caller clamps them (w-event does, so that
    a stream never stops on a value of the data).
    """
    if isinstance(counts, jax.core.Tracer):
        raise TypeError("counts must be a concrete array (validate before jit/vmap; vmap over keys instead).")
    if dtype is not None and isinstance(counts, jax.Array) and counts.dtype == np.dtype(dtype):
        return _exact_in(*_device_counts(counts), dtype=dtype, with_max=with_max)
    try:
        kind = np.asarray(counts).dtype
    except (TypeError, ValueError):  # ragged rows: reported below
        kind = np.dtype(np.float64)
    if kind.kind in "cUSmMV":  # (found in review: dates were taken as days since 1970)
        raise TypeError(f"counts must be real numbers, got {kind} values (parse or convert them first).")
    try:
        arr = np.asarray(counts, dtype=np.float64)
    except (TypeError, ValueError) as err:
        if any(t in str(err) for t in ("NAType", "NaTType", "NoneType")):  # found in review: pandas' NA was reported
            # as ragged rows
            raise ValueError("counts contain a missing value (None or pandas NA): fill or drop it first, e.g. "
                             "df.fillna(0) where a missing count means none.") from None
        # (NumPy's message is not repeated: it quotes the cell, e.g. "could not convert string to float: 'x7'" — a value
        # of the data, found in review)
        raise ValueError("counts must be a rectangular numeric array [T, d]: ragged rows, or a value that is not a "
                         "number.") from None
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"counts must have shape [T, d] with T, d >= 1, got {arr.shape}.")
    if dtype is None:
        out, lo, hi = arr, arr.min(), arr.max()  # two reductions without temporaries (NaN propagates into both)
    else:
        from jaxdp import _host

        try:
            # with_max: the caller clamps, so a value past the dtype's range becomes inf here and is clamped there
            # (found in review: it raised, which could stop a stream on a data value)
            out, lo, hi = _host.device_array_range(arr, dtype, overflow="inf" if with_max else "raise")
        except ValueError as err:
            raise ValueError(f"counts: {err}") from None
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError("counts contain NaN or inf.")
    if lo < 0:
        t, j = np.argwhere(arr < 0)[0]  # the position, never the value (messages end up in logs)
        raise ValueError(f"counts must be non-negative; a negative count at row {t} (0-based; timestamp {t + 1} of "
                         f"this call, 1-based), column {j}.")
    return _exact_in(out, hi, dtype=np.float64 if dtype is None else dtype, with_max=with_max)


def _exact_in(out, hi, *, dtype, with_max=False):
    if with_max:
        return out, float(hi)
    float32_exact(hi, dtype, "counts reach")
    if hi > 2**53:  # float64 holds every integer only up to 2**53 (found in review: 2**60 + 383 and + 384 256 apart)
        raise ValueError("counts reach beyond 2**53, where float64 rounds neighbouring counts apart by more than the "
                         "sensitivity: scale or split them.")
    return out


def float32_exact(magnitude: float, dtype, what: str) -> None:
    """Refuse, in float32, values or sums beyond 2²⁴: float32 holds every integer only up to there, so neighbours
    one apart could round apart by 2 or more, past the sensitivity the noise is calibrated to. `what` starts the
    message ("counts reach", "the stream's values sum to", …); the message names the public limit, not the data's
    value (error messages end up in logs)."""
    if np.dtype(dtype) == np.float32 and magnitude > 2**24:
        raise ValueError(f"{what} beyond 2**24 = 16,777,216, where float32 rounds neighbouring inputs apart by more "
                         'than the sensitivity: use noise="float64".')

@jax.jit
def _range(x):
    return jnp.min(x), jnp.max(x)


def _device_counts(counts: jax.Array) -> tuple[jax.Array, float]:
    """`counts` for a JAX array already of the kernel's dtype: checked on its device, returned as it is (with
    its maximum)."""
    if counts.ndim != 2 or counts.shape[0] == 0 or counts.shape[1] == 0:
        raise ValueError(f"counts must have shape [T, d] with T, d >= 1, got {counts.shape}.")
    lo, hi = (float(v) for v in _range(counts))
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError("counts contain NaN or inf.")
    if lo < 0:
        arr = np.asarray(counts)
        t, j = np.argwhere(arr < 0)[0]  # the position, never the value
        raise ValueError(f"counts must be non-negative; a negative count at row {t} (0-based; timestamp {t + 1} of "
                         f"this call, 1-based), column {j}.")
    return counts, hi


def histogram(hist, *, integer: bool = True) -> np.ndarray:
    """Eager validation of a histogram of counts: 1-D, non-empty, finite, ≥ 0, integer-valued.

    Returns a float64 NumPy copy. Raises `ValueError` with the offending bin.
    """
    if isinstance(hist, jax.core.Tracer):
        raise TypeError("hist must be a concrete array (validate before jit/vmap; vmap over keys instead).")
    if isinstance(hist, np.ma.MaskedArray):  # (found in review: np.asarray dropped the mask, masked values were used)
        raise TypeError("hist is a masked array: fill it first (e.g. hist.filled(0)) so that every bin has a count.")
    h = np.asarray(hist)
    if h.dtype == object or not (np.issubdtype(h.dtype, np.number) or h.dtype == bool) or np.iscomplexobj(h):
        raise TypeError(f"hist must be real numeric counts, got dtype {h.dtype}.")
    if h.dtype.kind in "iu" and h.size and h.sum(dtype=np.float64) >= 2**52 and int(h.astype(object).sum()) > 2**53:
        # the exact sum (in Python integers, only near the limit), before float64
        # rounds it (found in review: an int64 bin of 2**53 + 1 was rounded to 2**53 and passed, 2**53 + 2 refused)
        raise ValueError("hist's counts sum beyond 2**53, where float64 rounds neighbouring histograms apart by more "
                         "than the sensitivity: scale or split them.")
    h = h.astype(np.float64)
    if h.ndim != 1:
        raise ValueError(f"hist must be a 1-D array of bin counts, got shape {h.shape}.")
    if h.size == 0:
        raise ValueError("hist is empty: a histogram needs at least one bin.")
    bad = ~np.isfinite(h)
    if bad.any():
        raise ValueError(f"hist has a NaN/inf count at bin {int(np.argmax(bad))}.")
    if (h < 0).any():  # positions, never values (messages end up in logs)
        i = int(np.argmax(h < 0))
        raise ValueError(f"hist has a negative count at bin {i}; counts must be >= 0.")
    if integer and (h != np.round(h)).any():
        i = int(np.argmax(h != np.round(h)))
        raise ValueError(f"hist has a non-integer count at bin {i}; pass integer counts (round or scale them).")
    if h.sum() > 2**53:  # float64 holds every integer (and these sums) only up to 2**53
        raise ValueError("hist's counts sum beyond 2**53, where float64 rounds neighbouring histograms apart by more "
                         "than the sensitivity: scale or split them.")
    return h

# Irrational transforms (a DFT, the compressive ±1/√k projection) round in proportion to their values, while the
# sensitivity is absolute: found in review, at totals near 2⁵³ float64 moved neighbours' DFT coordinates by up to
# 2.3× their Δ₁. Measured (random neighbours, n = 8…4,096): 1 + 1.1·10⁻⁴ at a total of 2⁴⁰, 1 + 3·10⁻⁶ at 2³⁶ — a
# float caveat like the textbook Laplace sampler's (`noise="grid"` absorbs it in its grid slack); beyond 2⁴⁰ refused.
ROUNDED_TOTAL_LIMIT = 2**40


def rounded_total(total: float, what: str, computed: str = "in the transform") -> None:
    """Refuse a total (Σh, ‖D‖₁/Δ) beyond `ROUNDED_TOTAL_LIMIT` for a release whose values round in proportion to it
    (`computed` says where: an irrational transform, P-HP's segment errors); the message names the limit, not the
    value (messages end up in logs)."""
    if total > ROUNDED_TOTAL_LIMIT:
        raise ValueError(f"{what} beyond 2**40, where float64 rounding {computed} moves neighbouring releases by a "
                         "measurable part of the sensitivity: scale or split the data.")


def noise_fits(scale: float, dtype, what: str) -> None:
    """Refuse a noise scale (public: ε, Δ and sizes) whose draws, up to ≈ 2¹² times the scale, would overflow the
    release dtype (found in review: `laplace_identity` at ε = 1e-40 released inf in float32)."""
    top = float(np.finfo(dtype).max)
    if not scale * 2.0**12 <= top:
        raise ValueError(f"epsilon is too small for {what}: its noise scale {scale:.3g} would overflow "
                         f"{np.dtype(dtype).name} (up to {top * 2.0**-12:.3g}); raise epsilon or use noise=\"float64\".")


MAX_BLOCK_SIZE = 1024  # HVC's records per block n: the codec builds n × n tables per transform
MAX_MATRIX_SIZE = 16384  # a dense n × n float64 transform matrix: 2 GiB at this n
MAX_GENERATED = 1 << 27  # entries of a seeded synthetic data set (1 GiB of float64)


def matrix_size(name: str, value: Any) -> int:
    """The size of a dense transform matrix: an int in [1, MAX_MATRIX_SIZE] (found in review: n = 10⁵ asked NumPy
    for 75 GiB)."""
    return size(name, value, hi=MAX_MATRIX_SIZE, why="a dense n × n float64 matrix needs 8·n² bytes (2 GiB at "
                "the limit); `jaxdp.transforms.rdft` (an FFT) takes any size.")


def seed(name: str, value: Any) -> int:
    """A seed of a synthetic data generator: a Python int >= 0 (found in review: a string, a float or −1 ended in
    NumPy's own errors, True was taken as 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise TypeError(f"{name} must be an int >= 0 (the generator's seed), got {value!r}.")
    return int(value)


def shape(value: Any) -> tuple[int, ...]:
    """An array shape: an int or a sequence of ints >= 0, as a tuple (found in review: `laplace(key, 1.0, 3)` ended
    in "'int' object is not iterable", and shape (-1,) in JAX's internal iota error)."""
    def index(v):  # Python, NumPy and JAX integers alike (anything `operator.index` takes), never a bool
        if isinstance(v, (bool, np.bool_)) or getattr(v, "dtype", None) == bool:
            raise TypeError
        return operator.index(v)

    try:
        dims = (index(value),)
    except TypeError:
        dims = value
    try:
        dims = tuple(index(v) for v in dims)
    except TypeError:
        raise ValueError(f"shape must be an int or a tuple of ints >= 0, got {value!r}.") from None
    if any(v < 0 for v in dims):
        raise ValueError(f"shape must be an int or a tuple of ints >= 0, got {value!r}.")
    return dims


def generated(shape: dict) -> tuple[int, ...]:
    """The sizes of a seeded synthetic data set, each an int >= 1, with at most MAX_GENERATED entries in all."""
    sizes = tuple(size(k, v) for k, v in shape.items())
    if math.prod(sizes) > MAX_GENERATED:
        names = " × ".join(shape)
        raise ValueError(f"{names} = {math.prod(sizes):,} entries exceeds {MAX_GENERATED:,} (1 GiB of float64); "
                         "generate the data in parts.")
    return sizes


def block_size(name: str, value: Any) -> int:
    """HVC's block size n: an int in [1, MAX_BLOCK_SIZE] (found in review: n = 10⁵ asked NumPy for 74.5 GiB of
    tables, through `HVCConfig` and through `quantize.tables` alike)."""
    return size(name, value, hi=MAX_BLOCK_SIZE, why="the codec's tables hold n × n matrices per transform, and "
                "compile time grows with n (n = 256: about 2 minutes on 2 CPU cores).")


def budget(name: str, value: Any) -> None:
    """For the traceable mechanism cores: where ε or Δ (a scalar or an array) is concrete, every entry must be a
    finite real number > 0. Found in review: the cores checked nothing, so ε = 0, −1, NaN, inf or a string were
    accepted (ε = inf or Δ = 0 made the exponential mechanism always return one fixed candidate; ε = 0 released
    ±inf). Traced values are checked where they are made concrete, by the public front ends."""
    if not is_concrete(value):
        return
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise TypeError(f"{name} must be a positive real number (or an array of them), got {type(value).__name__}.")
    a = np.asarray(value)
    if a.dtype.kind not in "iuf":
        if not jnp.issubdtype(a.dtype, jnp.floating):  # bfloat16 is "V" to NumPy (found in review)
            raise TypeError(f"{name} must be a positive real number (or an array of them), got dtype {a.dtype}.")
        a = a.astype(np.float64)
    with np.errstate(invalid="ignore"):
        ok = a.size > 0 and bool(np.all(np.isfinite(a) & (a > 0)))
    if not ok:
        raise ValueError(f"{name} must be finite and > 0 (every entry).")


def mechanism_core(key_value, *, epsilon=None, sensitivity=None) -> None:
    """The checks a traceable mechanism core can make on its arguments: one typed key (also under vmap, where
    it is one key per example), and a concrete ε and Δ finite and > 0 (`budget`)."""
    key(key_value, max_ndim=0)
    if epsilon is not None:
        budget("epsilon", epsilon)
    if sensitivity is not None:
        budget("sensitivity", sensitivity)


def one_key(value, what: str):
    """`value` checked as one typed key (a key array is refused with the fix)."""
    key(value)
    if value.ndim != 0:
        raise ValueError(f"{what} takes one typed key, got a key array of shape {value.shape}: call it once per key "
                         "(or jax.vmap over the keys).")
    return value


MAX_RECORDS = 2**40  # records of a table to bucketize (F′-privacy)


def fprime(o, fp, values=None) -> None:
    """Raise if no F′-private bucketization exists (Lemma 3.7: needs f′_i ≥ f_i), naming the value."""
    raw = np.asarray(o)
    if raw.dtype.kind not in "iuf" or raw.dtype == np.bool_ or raw.size == 0 or not np.all(np.isfinite(raw)) \
            or np.any(raw < 0) or np.any(raw != np.round(raw)) or raw.sum() < 1:
        # found in review: counts of 1.5 were truncated silently and empty counts ended in a NumPy error
        raise ValueError("the counts o_i must be non-negative whole numbers, not all zero.")
    total = raw.astype(np.float64).sum()  # in float64: an integer sum can wrap around (uint64 [2⁶³, 2⁶³, 3] sums to 3)
    if np.any(raw > MAX_RECORDS) or total > MAX_RECORDS:
        # found in review: at 2**53 records the integer program's float64 counts and the two-size search's int64 loss
        # (≤ N·M′) rounded or overflowed into a setting that placed the wrong number of records
        raise ValueError(f"the counts total {total:.6g} records, more than the 2**40 that the bucketings' exact arithmetic "
                         "(float64 f′·S, an int64 loss up to N·M′) holds: bucketize the table in parts.")
    o = raw.astype(np.int64)
    fp_raw = np.asarray(fp)
    if fp_raw.dtype.kind not in "iuf" or fp_raw.dtype == np.bool_:
        # found in review: f′ given as text ("0.5") was parsed and booleans read as 1, where `fprime_of` refuses both
        raise TypeError(f"f′ must be numbers in (0, 1], got dtype {fp_raw.dtype}.")
    fp = fp_raw.astype(np.float64)
    if o.shape != fp.shape or o.ndim != 1:
        raise ValueError(f"counts and f′ must be 1-D of equal length, got {o.shape} and {fp.shape}.")
    if np.any(~np.isfinite(fp)) or np.any(fp <= 0) or np.any(fp > 1):
        raise ValueError("every f′_i must lie in (0, 1].")
    # o_i ≤ ⌊f′_i·N⌋ up to a few ulps, the bucketing's own rule (found in review: an absolute 10⁻⁹ slack let an f′
    # just below a value's frequency through, and the bucketing broke it)
    bad = np.flatnonzero(o > np.floor(fp * o.sum() * (1.0 + 2.0**-50)))
    if bad.size:
        i = int(bad[0])
        name = f"np.unique(sa)[{i}]" if values is not None else f"number {i}"  # the position, never the value
        # neither its frequency nor its f′ is printed (found in review: a number read from the data, left in logs; and
        # an f′ = θ·f + b printed to 10 digits gave the count back)
        raise ValueError(f"no F′-private bucketization exists: the SA value {name} is more frequent than its f′ "
                         "allows (Lemma 3.7); raise its f′ or merge values.")

def real_values(values, name: str) -> None:
    """Refuse values NumPy's float cast would misread: complex numbers (their imaginary part dropped), text and
    bytes (parsed: "1" became 1.0), dates and times (days since 1970) and records (found in review: the tree
    counters and CMCO took complex and text input, w-event took datetime64 counts)."""
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):  # ragged: the caller's cast says so
        return
    bad = arr.dtype.kind in "cUSmMV"
    if arr.dtype.kind == "O":
        bad = any(isinstance(x, (str, bytes, complex, np.complexfloating, np.datetime64, np.timedelta64))
                  for x in arr.reshape(-1))  # fmt: skip
    if bad:
        raise TypeError(f"{name} must be real numbers, got {arr.dtype} values (parse or convert them first).")


def vector(d, name="d", *, check_l1: bool = True) -> np.ndarray:
    """A finite 1-D float64 vector. With `check_l1`, one whose L1 norm float64 holds (callers that clamp each
    value to a public cap first pass False: the refusal would then depend on the data for nothing)."""
    if isinstance(d, jax.core.Tracer):
        raise TypeError(f"{name} must be concrete (vmap over keys, not over data).")
    real_values(d, name)
    v = np.asarray(d, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError(f"{name} must be a 1-D vector, got shape {v.shape}.")
    if v.size == 0:
        raise ValueError(f"{name} is empty.")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} contains NaN or inf.")
    if check_l1 and np.abs(v).sum() > 2**53:  # float64 holds every integer (and these sums) only up to 2**53
        raise ValueError(f"{name}'s L1 norm is beyond 2**53, where float64 rounds neighbours apart by more than the "
                         "sensitivity: scale the data down.")
    return v


def text_lines(path) -> list[str]:
    """The lines of a UTF-8 text file, with file errors as `ValueError`s that name the file and line but never
    quote its content (found in review: a missing file or a folder raised OSError, an int path was opened as a
    file descriptor, and a bad byte was quoted)."""
    import os

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file name (str or path-like), got {type(path).__name__}.")
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror or type(err).__name__}.") from None
    try:
        return raw.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: not valid UTF-8 text; convert the file to UTF-8.") from None


def csv_float(text: str) -> float:
    """A number as CSV writes it: Python's `float` without its digit separators ("1_000" is not 1000 in a CSV
    file; a `ValueError` as for any text that is not a number)."""
    if "_" in text:
        raise ValueError("digit separators are not CSV numbers")
    return float(text)


def read_number_column(path: str) -> np.ndarray:
    """Numbers from a text file: one per line, or the last field of CSV rows (every row with as many fields);
    blank lines and ``#`` comments are skipped, and a non-numeric first line is taken as a header. float64 ``[N]``.

    Raises `ValueError` naming the file and line of a field that is not a number.
    """
    vals, first, fields = [], True, None
    for lineno, line in enumerate(text_lines(path), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(",")
        if fields is not None and len(parts) != fields:  # (found in review: "1,234" was read as 234 beside "15")
            raise ValueError(f"{path}:{lineno}: {len(parts)} field(s) where the rows above have {fields}; write "
                             "numbers without thousands separators, one row layout for the whole file.")
        field = parts[-1].strip()
        try:
            vals.append(csv_float(field))
        except ValueError:
            if first:  # the first line with content (found in review: after a comment it was not taken as one)
                first = False
                continue  # header
            raise ValueError(f"{path}:{lineno}: the last field is not a number.") from None  # not the value: logs
        first, fields = False, len(parts)
    return np.asarray(vals, np.float64)
