"""Per-value counts, f′ thresholds and the validity conditions (Lemma 4.13, Theorem 4.17, max-flow)."""

from __future__ import annotations

import numpy as np
import scipy.optimize
import scipy.sparse
import scipy.sparse.csgraph
from jaxdp import _validate
from jaxdp._validate import fprime as check_fprime  # the eager checks live in _validate

__all__ = ['value_counts', 'fprime_of', 'fprime_linear', 'check_fprime', 'valid_one_size', 'valid_two_size', 'assignment_exists', 'round_robin', 'record_partition', 'is_fprime_private']


_TOL = 1e-9  # for M = ⌈1/f′⌉ only (1/0.2 = 5.000000000000001 must give 5)


_ULPS = 1.0 + 2.0**-50  # a few ulps of relative slack: f′·S computed in floating point may fall an ulp short


def _bucket_array(bucket) -> np.ndarray:
    """`bucket` as an array of bucket ids; a `Bucketing` (a named tuple of ids, setting and f′) is refused with the
    attribute to pass (found in review: it ended in NumPy's "inhomogeneous shape" error)."""
    if isinstance(bucket, tuple) and hasattr(bucket, "bucket") and hasattr(bucket, "setting"):
        raise TypeError("bucket must be the bucket id of every record [N]: pass `bucketing.bucket`, not the Bucketing.")
    return np.asarray(bucket)


def _floor(x):
    """⌊x⌋ for x = f′·S computed in float64, forgiving a few ulps of rounding (0.29·100 = 28.999999999999996 → 29).
    Found in review: an absolute 10⁻⁹ slack let ⌊(0.29 − 5·10⁻¹²)·100⌋ count as 29, so a bucketing broke f′ and
    `is_fprime_private` (another tolerance) rejected what the algorithms produced."""
    return np.floor(np.asarray(x, np.float64) * _ULPS).astype(np.int64)


# --------------------------------------------------------------------------------------- specification
def _kind(v) -> str:
    if isinstance(v, (str, np.str_)):
        return "strings"
    if isinstance(v, (bytes, np.bytes_)):
        return "bytes"
    if isinstance(v, (int, float, np.integer, np.floating, np.bool_)):  # bool is an int: True == 1 in Python too
        return "numbers"
    return type(v).__name__


def value_counts(sa) -> tuple[np.ndarray, np.ndarray]:
    """(distinct SA values, o_i) of a column, values sorted.

    Raises ValueError for SA values of more than one kind (numbers, strings, …). Found in review: NumPy turned
    ``[1, "1", …]`` into strings, so the int 1 took the f′ of the string "1" and a bucketing that broke int 1's f′
    passed `is_fprime_private` as well; an object array of mixed types ended in NumPy's own TypeError."""
    if not isinstance(sa, np.ndarray) or np.asarray(sa).dtype == object:
        kinds = {_kind(v) for v in (sa.tolist() if isinstance(sa, np.ndarray) else sa)}
        if len(kinds) > 1:
            raise ValueError(f"sa mixes SA values of different kinds ({', '.join(sorted(kinds))}): give one kind "
                             "(e.g. all strings, or integer codes), as NumPy would otherwise merge values like 1 and "
                             "'1'.")
    sa = np.asarray(sa)
    if sa.size == 0:
        raise ValueError("the table is empty: nothing to bucketize.")
    if sa.ndim != 1:
        raise ValueError(f"sa must be one SA value per record (1-D), got shape {sa.shape}.")
    missing = (np.isnan(sa) if sa.dtype.kind in "fc" else np.isnat(sa) if sa.dtype.kind in "mM"
               else np.asarray([v is None or v != v for v in sa]) if sa.dtype == object else None)
    if missing is not None and missing.any():
        # found in review: a NaN SA value ended in a KeyError (NaN is not equal to itself); NaT was counted as a value
        # that no f′ mapping could name
        i = int(np.flatnonzero(missing)[0])
        raise ValueError(f"sa[{i}] is missing (None, NaN or NaT): every record needs its SA value.")
    values, counts = np.unique(sa, return_counts=True)
    return values, counts.astype(np.int64)


MAX_BUCKET_SIZE = 1024  # M′: the two-size search holds ≈ M′²/2 size pairs


def bucket_sizes(fp, m_min, m_max) -> tuple[int, int]:
    """(M, M′) checked: M′ an int in [2, MAX_BUCKET_SIZE], M an int >= 1 (default min_i ⌈1/f′_i⌉), M < M′. Found
    in review: M′ = 10⁵ took > 6 GB (the size pairs), and M = 2.5, "3", True or −5 were coerced silently."""
    m_max = _validate.size("m_max", m_max, hi=MAX_BUCKET_SIZE, why="the search holds about M′²/2 bucket-size pairs "
                           "(the paper uses M′ = 50).")
    m_min = max(int(np.min(np.ceil(1.0 / fp - _TOL))), 1) if m_min is None else _validate.size("m_min", m_min)
    if m_max <= m_min:
        raise ValueError(f"need M′ > M, got M = {m_min}, M′ = {m_max}: raise m_max.")
    return m_min, m_max


def fprime_of(values, fp_of_value) -> np.ndarray:
    """``f′`` of each distinct SA value (`value_counts`' order) from the mapping `fp_of_value`, checked: every
    value has one, and each is a number in (0, 1]. Found in review: a value missing from the mapping ended in a
    KeyError, and `is_fprime_private` with a NaN f′ returned True."""
    if not hasattr(fp_of_value, "__getitem__"):
        raise TypeError(f"fp_of_value must map every SA value to its f′ (a dict), got {type(fp_of_value).__name__}.")
    # a sequence or array (NumPy, JAX) is indexed by position (found in review: a list was indexed by the SA values
    # themselves: codes 1…3 took the f′ of positions 1…3, shifted; text values failed)
    array_like = hasattr(fp_of_value, "shape") and not hasattr(fp_of_value, "keys")  # (a pandas Series has keys)
    if isinstance(fp_of_value, (list, tuple, str, bytes)) or array_like:
        raise TypeError(f"fp_of_value must map every SA value to its f′ (a dict {{value: f′}}), got a "
                        f"{type(fp_of_value).__name__}, which is indexed by position, not by value: pass "
                        "dict(zip(np.unique(sa), fprimes)).")
    out = np.empty(len(values), np.float64)
    for i, v in enumerate(values):
        try:
            f = fp_of_value[v]
        except (KeyError, IndexError):
            raise ValueError(f"fp_of_value has no f′ for the distinct SA value number {i} (np.unique(sa)[{i}]): "
                             "give every SA value its f′.") from None  # fmt: skip
        if isinstance(f, (bool, np.bool_, str, bytes)):
            raise TypeError(f"the f′ of np.unique(sa)[{i}] must be a number in (0, 1], got {type(f).__name__}.")
        out[i] = float(f)
    bad = np.flatnonzero(~(np.isfinite(out) & (out > 0) & (out <= 1)))
    if bad.size:
        raise ValueError(f"every f′ must lie in (0, 1]; the f′ of np.unique(sa)[{int(bad[0])}] does not.")
    return out


def fprime_linear(freq, *, theta: float, b: float = 0.02) -> np.ndarray:
    """The paper's specification ``f′_i = min{1, θ·f_i + b}`` (Section 7: b = 0.02, θ ∈ {2 … 32})."""
    _validate.positive_scalar("theta", theta)  # found in review: θ = NaN gave NaN f′ silently
    if isinstance(b, (bool, np.bool_)) or not isinstance(b, (int, float, np.integer, np.floating)) or not 0 <= b <= 1:
        raise ValueError(f"b must be a number in [0, 1] (the paper uses 0.02), got {b!r}.")
    f = np.asarray(freq)
    if f.dtype.kind not in "iuf":  # (found in review: '0.1' was parsed, NaN and −1 gave f′ of NaN and −2)
        raise TypeError(f"freq must be numbers (value frequencies in [0, 1]), got {f.dtype} values.")
    f = f.astype(np.float64)
    if not np.all((f >= 0) & (f <= 1)):
        raise ValueError("freq must be frequencies in [0, 1] (no NaN); compute them as counts / total.")
    return np.minimum(1.0, theta * f + b)



def valid_one_size(o, fp, s: int, b: int) -> bool:
    """Lemma 4.13: b buckets of size S are valid iff |T| = S·b and o_i ≤ ⌊f′_i S⌋·b for every i."""
    o = np.asarray(o, np.int64)
    return bool(o.sum() == s * b and np.all(o <= _floor(np.asarray(fp) * s) * b))


def valid_two_size(o, fp, s1, b1, s2, b2) -> np.ndarray:
    """Theorem 4.17 (PC, FC and CC) for arrays of settings ``⟨(S1, b1), (S2, b2)⟩`` broadcast together.

    Returns a boolean array of the broadcast shape. O(m) per setting, vectorized.
    """
    o = np.asarray(o, np.int64)
    fp = np.asarray(fp, np.float64)
    s1, b1, s2, b2 = (np.asarray(v, np.int64)[..., None] for v in (s1, b1, s2, b2))
    a1 = np.minimum(_floor(fp * s1) * b1, o)
    a2 = np.minimum(_floor(fp * s2) * b2, o)
    pc = np.all(a1 + a2 >= o, axis=-1)
    fc = (a1.sum(-1) >= (s1 * b1)[..., 0]) & (a2.sum(-1) >= (s2 * b2)[..., 0])
    cc = o.sum() == (s1 * b1 + s2 * b2)[..., 0]
    return pc & fc & cc


def assignment_exists(o, caps, sizes) -> bool:
    """Exact validity of a multi-size setting from per-class capacities.

    `caps[i, j]`: how many records of value i class j may hold (e.g. a_ij = min(⌊f′_i S_j⌋ b_j, o_i));
    `sizes[j]` = s(B_j). By Lemma 4.13/4.15 a valid assignment exists iff the max flow source → values
    (o_i) → classes (caps) → sink (s(B_j)) equals |T| = Σ s(B_j).
    """
    o = np.asarray(o, np.int64)
    caps = np.asarray(caps, np.int64)
    sizes = np.asarray(sizes, np.int64)
    if caps.ndim != 2 or o.shape != (caps.shape[0],) or sizes.shape != (caps.shape[1],):
        # found in review: 3 counts against 2 rows of capacities returned False, 1 count an IndexError
        raise ValueError(f"assignment_exists takes counts o [m], capacities caps [m, q] and sizes [q]; got shapes "
                         f"{o.shape}, {caps.shape} and {sizes.shape}.")
    m, q = caps.shape
    entries_fit = all(a.size == 0 or (a.min() >= 0 and a.max() < 2**31) for a in (o, caps, sizes))
    if not (entries_fit and o.sum() < 2**31 and sizes.sum() < 2**31):
        # found in review: counts of 2**31 ended in NumPy's OverflowError (SciPy's max flow takes int32 capacities)
        raise ValueError("assignment_exists takes counts, capacities and sizes in [0, 2**31), and counts and sizes that "
                         "total below 2**31 (SciPy's maximum flow works in int32): bucketize the table in parts.")
    if o.sum() != sizes.sum():
        return False
    n = m + q + 2
    src, snk = m + q, m + q + 1
    rows, cols, w = [], [], []
    for i in range(m):
        rows.append(src), cols.append(i), w.append(int(o[i]))
        for j in range(q):
            rows.append(i), cols.append(m + j), w.append(int(caps[i, j]))
    for j in range(q):
        rows.append(m + j), cols.append(snk), w.append(int(sizes[j]))
    g = scipy.sparse.csr_matrix((np.asarray(w, np.int32), (rows, cols)), shape=(n, n))
    return int(scipy.sparse.csgraph.maximum_flow(g, src, snk).flow_value) == int(o.sum())


# --------------------------------------------------------------------------------------- assignment
def round_robin(record_values, b: int) -> np.ndarray:
    """RRA (Section 4.1): the t-th record of x_i goes to bucket (o_1 + … + o_{i−1} + t) mod b.

    Args: record_values: SA value index of each record ``[N]``; b: number of buckets.
    Returns: bucket index per record ``[N]``.
    """
    v = np.asarray(record_values)
    b = _validate.size("b", b)  # found in review: b = 0 gave bucket 0 for every record and a RuntimeWarning
    order = np.argsort(v, kind="stable")
    out = np.empty(v.size, np.int64)
    out[order] = np.arange(v.size) % b
    return out


def record_partition(o, fp, s1, b1, s2, b2) -> tuple[np.ndarray, np.ndarray]:
    """Section 4.3: per-value counts (n1, n2) with n1 + n2 = o, n1 valid for B1 and n2 for B2.

    Start with a_i1 records of each value in T1, then move records to T2 one value at a time in round
    robin over the values that still have room (below a_i2), until |T2| = s(B2). Raises if the setting
    is not valid (Theorem 4.17).
    """
    o = np.asarray(o, np.int64)
    if not valid_two_size(o, fp, s1, b1, s2, b2):
        raise ValueError(f"⟨({s1},{b1}),({s2},{b2})⟩ is not a valid setting for these counts (Theorem 4.17).")
    a1 = np.minimum(_floor(np.asarray(fp) * s1) * b1, o)
    a2 = np.minimum(_floor(np.asarray(fp) * s2) * b2, o)
    n1 = a1.copy()
    n2 = o - n1
    need = int(s2 * b2 - n2.sum())
    if need > 0:
        # The paper's loop moves one record per value with room (n2 < a2 and n1 > 0), values in order, pass
        # after pass, until |T2| = s(B2). Value i has room for cap_i moves, so after r full passes it has
        # moved min(r, cap_i): find the last pass r (the smallest with Σ min(r, cap) ≥ need) and give its
        # remaining moves to the first values with cap ≥ r — the loop's result without the loop.
        cap = np.maximum(np.minimum(a2 - n2, n1), 0)
        lo, hi = 1, int(cap.max())  # Σ cap ≥ need: the setting is valid
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if np.minimum(cap, mid).sum() >= need else (mid + 1, hi)
        moved = np.minimum(cap, lo - 1)
        last = np.flatnonzero(cap >= lo)[: need - int(moved.sum())]
        moved[last] += 1
        n1 -= moved
        n2 += moved
    return n1, n2


def is_fprime_private(sa, bucket, fp_of_value) -> bool:
    """Check of Definition 3.6 from the records alone: in every bucket of S records, every SA value x_i occurs at
    most ⌊f′_i·S·(1 + 2⁻⁵⁰)⌋ times.

    Independent of the algorithms in that it recounts every bucket from `sa` and `bucket` (not from the setting the
    algorithm chose); it applies their rounding rule, so the bound holds to a relative ≈ 2⁻⁵⁰ of f′ (f′ = 0.29 written
    in decimal, 0.28999999999999998 in float64, allows 29 records of 100).

    Args:
      sa: SA value of each record ``[N]``. bucket: bucket id of each record ``[N]``. fp_of_value: dict value → f′.

    Returns:
      True iff every bucket meets every value's f′.
    """
    sa = np.asarray(sa)
    bucket = _bucket_array(bucket)
    if bucket.shape != sa.shape:
        raise ValueError(f"bucket must give one bucket id per record: shape {bucket.shape} for sa of shape {sa.shape}.")
    values, _ = value_counts(sa)
    fp = fprime_of(values, fp_of_value)
    value = np.searchsorted(values, sa)
    _, group = np.unique(bucket, return_inverse=True)
    group = group.reshape(-1)
    size = np.bincount(group)
    pairs, count = np.unique(group.astype(np.int64) * values.size + value, return_counts=True)  # (bucket, value) counts
    g, v = np.divmod(pairs, values.size)
    return bool(np.all(count <= _floor(fp[v] * size[g])))  # the algorithms' own rule
