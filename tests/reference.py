"""Plain float64 NumPy/SciPy references, written independently of jaxdp's implementation."""

import itertools
import math

import numpy as np
import scipy.fft


def matrix(kind, n):
    eye = np.eye(n)
    if kind == "dct":
        return scipy.fft.dct(eye, type=2, norm="ortho", axis=0)
    if kind == "dst":
        return scipy.fft.dst(eye, type=1, norm="ortho", axis=0)
    if kind == "dht":
        f = np.fft.fft(eye, axis=0) / np.sqrt(n)
        return f.real - f.imag
    return eye


def forward(x, kind):
    n, d = x.shape[-2:]
    return matrix(kind, n) @ x @ matrix(kind, d).T


def zigzag_pairs(n, d):
    """0-based (row, col) pairs of the JPEG zig-zag, by simulation of the moving cursor."""
    out, r, c, up = [], 0, 0, True
    while len(out) < n * d:
        out.append((r, c))
        if up:  # moving up-right
            if c == d - 1:
                r, up = r + 1, False
            elif r == 0:
                c, up = c + 1, False
            else:
                r, c = r - 1, c + 1
        else:  # moving down-left
            if r == n - 1:
                c, up = c + 1, True
            elif c == 0:
                r, up = r + 1, True
            else:
                r, c = r + 1, c - 1
    return out


def lemma1_bruteforce(kind, n, width):
    """max over rows r and record pairs at the box's vertices of |c_ij - c'_ij| (3^d differences)."""
    d = len(width)
    an, ad = matrix(kind, n), matrix(kind, d)
    best = np.zeros((n, d))
    for signs in itertools.product((-1.0, 0.0, 1.0), repeat=d):
        delta = np.asarray(signs) * width
        for r in range(n):
            diff = np.zeros((n, d))
            diff[r] = delta
            best = np.maximum(best, np.abs(an @ diff @ ad.T))
    return best


def joint_loss_bruteforce(kind, n, width, order, scales):
    """max over rows and all 3^d vertex differences of Σ_k |Δc_{O(k)}| / b_k (first len(scales))."""
    d = len(width)
    an, ad = matrix(kind, n), matrix(kind, d)
    t = len(scales)
    idx = np.asarray(order)[:t]
    best = 0.0
    for signs in itertools.product((-1.0, 0.0, 1.0), repeat=d):
        delta = np.asarray(signs) * width
        for r in range(n):
            diff = np.zeros((n, d))
            diff[r] = delta
            dc = (an @ diff @ ad.T).reshape(-1)[idx]
            best = max(best, float(np.sum(np.abs(dc) / scales)))
    return best


def gs_table(kind, n, width):
    an, ad = matrix(kind, n), matrix(kind, len(width))
    return np.abs(an).max(axis=1)[:, None] * (np.abs(ad) @ width)[None, :]


def mse_loop(x, x_hat, width, kind, order, eps):
    """ξ(ε*, O, t) for t = 0..nd by a direct loop over t (Theorem 1 allocation, observed c)."""
    n, d = x.shape
    c = forward(x - x_hat, kind).reshape(-1)[order]
    g = gs_table(kind, n, width).reshape(-1)[order]
    out = []
    for t in range(n * d + 1):
        if t:
            w = g[:t] ** (2 / 3)
            eps_k = w / w.sum() * eps
            lap = 2 * np.sum((g[:t] / eps_k) ** 2)
        else:
            lap = 0.0
        out.append(lap + np.sum(c[t:] ** 2))
    return np.asarray(out)


# ------------------------------------------------------------------ TwoSizeBucketing, the paper's sequential scan
# (the scalar form of jaxdp.bucketize.two_size_bucketing: size pairs in order, loss-based pruning, one
# Theorem 5.30 search per pair; kept here to check that the vectorized search returns the same setting)
def _floor(x):
    return np.floor(np.asarray(x, np.float64) + 1e-9).astype(np.int64)


def _seq_gamma(total, s1, s2):
    """Lemma 5.21: (b1⁰, b2⁰, Δ1, Δ2, k) of Γ(S1, S2), or None if S1 b1 + S2 b2 = |T| has no solution."""
    g = math.gcd(s1, s2)
    if total % g:
        return None
    lcm = s1 * s2 // g
    d1, d2 = lcm // s1, lcm // s2
    # smallest b2 ≥ 0 with (total − S2 b2) divisible by S1 and ≥ 0
    for b2 in range(0, d2):
        if (total - s2 * b2) % s1 == 0:
            break
    else:
        return None
    if total - s2 * b2 < 0:
        return None
    b1 = (total - s2 * b2) // s1
    return b1, b2, d1, d2, b1 // d1


def _seq_first_true(pred, lo, hi):
    """Smallest j in [lo, hi] with pred(j) true for a predicate that is monotone (F…F T…T) in j; hi + 1 if
    none. Vectorized: lo, hi and pred's result are arrays over values."""
    lo = np.asarray(lo, np.int64).copy()
    hi = np.asarray(hi, np.int64) + 1
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        ok = pred(np.minimum(mid, hi - 1)) & (lo < hi)
        hi = np.where(ok, mid, hi)
        lo = np.where(~ok & (lo < hi), mid + 1, lo)
    return lo


def _seq_first_valid(o, fp, s1, s2, gam, kprime):
    """Theorem 5.30: the first valid pair of Γ′ by binary searches (FC(S1) monotone, FC(S2) anti-monotone,
    PC(x_i) valid on a prefix ∪ a suffix whose ends are found by binary search). Returns j or None."""
    b10, b20, d1, d2, _ = gam
    c1 = _floor(fp * s1)
    c2 = _floor(fp * s2)
    m = o.size

    def b1(j):
        return b10 - j * d1

    def b2(j):
        return b20 + j * d2

    zero, top = np.zeros(1, np.int64), np.full(1, kprime, np.int64)
    fc1 = _seq_first_true(lambda j: np.minimum(c1 * b1(j[0]), o).sum(keepdims=True) >= s1 * b1(j), zero, top)[0]
    # FC(S2) anti-monotone: last j where it holds = first j where it fails − 1
    fc2_fail = _seq_first_true(lambda j: np.minimum(c2 * b2(j[0]), o).sum(keepdims=True) < s2 * b2(j), zero, top)[0]
    lo, hi = fc1, fc2_fail - 1
    if lo > hi:
        return None
    zeros, tops = np.zeros(m, np.int64), np.full(m, kprime, np.int64)
    a_end = _seq_first_true(lambda j: c1 * b1(j) < o, zeros, tops)  # c1 b1 ≥ o holds on [0, a_end)
    b_start = _seq_first_true(lambda j: c2 * b2(j) >= o, zeros, tops)  # c2 b2 ≥ o holds on [b_start, k′]
    eq15 = lambda j: c1 * b1(j) + c2 * b2(j) >= o  # noqa: E731
    mono = c2 * d2 >= c1 * d1  # Eq. (16): PC monotone in the middle part
    mid_hi = np.maximum(b_start - 1, a_end - 1)
    first_hold = _seq_first_true(eq15, a_end, mid_hi)  # used where monotone
    first_fail = _seq_first_true(lambda j: ~eq15(j), a_end, mid_hi)  # used where anti-monotone
    # forbidden interval per value: [f_lo, f_hi) (empty when f_lo >= f_hi)
    f_lo = np.where(mono, a_end, first_fail)
    f_hi = np.where(mono, np.minimum(first_hold, b_start), b_start)
    j = lo
    for _ in range(m + 1):
        bad = (f_lo <= j) & (j < f_hi)
        if not bad.any():
            return int(j) if j <= hi else None
        j = int(f_hi[bad].max())
        if j > hi:
            return None
    return None


def two_size_bucketing_sequential(o, fp, *, m_min: int | None = None, m_max: int = 50) -> tuple | None:
    """TwoSizeBucketing (the paper's Algorithm 1): the optimal valid ⟨(S1, b1), (S2, b2)⟩ with
    M ≤ S1 < S2 ≤ M′ (b1 or b2 may be 0, so one-size settings are included), or None if none exists.

    Loss-based pruning (Lemma 5.25) cuts Γ(S1, S2) to the prefix that can beat the best loss so far;
    privacy-based pruning finds the first valid pair of that prefix by binary searches (Theorem 5.30).

    Args:
      o: counts o_i ``[m]``. fp: f′_i ``[m]``. m_min: M (default min_i ⌈1/f′_i⌉). m_max: M′.

    Returns:
      ``((S1, b1), (S2, b2), loss)`` or None.
    """
    o = np.asarray(o, np.int64)
    fp = np.asarray(fp, np.float64)
    total = int(o.sum())
    m_min = int(np.min(np.ceil(1.0 / fp - 1e-9))) if m_min is None else int(m_min)
    m_min = max(m_min, 1)
    if m_max <= m_min:
        raise ValueError(f"need M′ > M, got M = {m_min}, M′ = {m_max}.")
    best, best_loss = None, math.inf
    for s1 in range(m_min, m_max):
        for s2 in range(s1 + 1, m_max + 1):
            gam = _seq_gamma(total, s1, s2)
            if gam is None:
                continue
            b10, b20, d1, d2, k = gam
            loss0 = b10 * (s1 - 1) ** 2 + b20 * (s2 - 1) ** 2
            if loss0 >= best_loss:
                continue
            step = d2 * (s2 - 1) ** 2 - d1 * (s1 - 1) ** 2  # > 0 (Lemma 5.24)
            kstar = k if best_loss == math.inf else max(0, math.floor((best_loss - loss0 - 1e-9) / step))
            j = _seq_first_valid(o, fp, s1, s2, gam, min(k, kstar))
            if j is None:
                continue
            b1, b2 = b10 - j * d1, b20 + j * d2
            lo = b1 * (s1 - 1) ** 2 + b2 * (s2 - 1) ** 2
            if lo < best_loss:
                best, best_loss = ((s1, int(b1)), (s2, int(b2))), lo
    return None if best is None else (*best, int(best_loss))




def record_partition_loop(o, fp, s1, b1, s2, b2):
    """Section 4.3's record partition as the paper writes it (one record moved at a time, values in round
    robin), for a valid setting: the reference for jaxdp.bucketize.record_partition's closed form."""
    o = np.asarray(o, np.int64)
    a1 = np.minimum(_floor(np.asarray(fp) * s1) * b1, o)
    a2 = np.minimum(_floor(np.asarray(fp) * s2) * b2, o)
    n1 = a1.copy()
    n2 = o - n1
    need = s2 * b2 - n2.sum()
    while need > 0:
        for i in np.flatnonzero((n2 < a2) & (n1 > 0)):
            if need == 0:
                break
            n1[i] -= 1
            n2[i] += 1
            need -= 1
    return n1, n2


def assign_records_loop(values_idx, classes):
    """The records' buckets as Section 4.1 writes it, record by record: class after class, each value's next n_i
    records (in table order) join the class, and within a class the t-th record of x_i goes to bucket
    (n_1 + … + n_{i−1} + t) mod b (RRA): the reference for jaxdp.bucketize.assign_records."""
    values_idx = np.asarray(values_idx)
    bucket = np.full(values_idx.size, -1, np.int64)
    pools = [list(np.flatnonzero(values_idx == i)) for i in range(int(values_idx.max()) + 1)]
    offset = 0
    for _, b, n in classes:
        t = 0
        for i, k in enumerate(n):
            for _ in range(int(k)):
                bucket[pools[i].pop(0)] = offset + t % b
                t += 1
        offset += b
    return bucket


def haar_reference(n):
    """The orthonormal Haar basis from its definition: the constant 1/√n, then for each support length
    L = n, n/2, …, 2 (coarsest first) the wavelets +1/√L on the first half of [k·L, (k+1)·L) and −1/√L on the
    second, in order of position k."""
    rows = [np.full(n, 1 / math.sqrt(n))]
    length = n
    while length >= 2:
        for k in range(n // length):
            w = np.zeros(n)
            w[k * length : k * length + length // 2] = 1 / math.sqrt(length)
            w[k * length + length // 2 : (k + 1) * length] = -1 / math.sqrt(length)
            rows.append(w)
        length //= 2
    return np.array(rows)
