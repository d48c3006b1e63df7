"""QIT/ST publication of a bucketing, with optional fake values (Sec. 6)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import _validate
from jaxdp.bucketize.heuristics import Bucketing
from jaxdp.bucketize.validity import _kind, is_fprime_private, value_counts

__all__ = ['PublishedTables', 'publish']


class PublishedTables(NamedTuple):
    """The two published tables, QIT(QI, BID) and ST(BID, SA), and the curator-only fake-row marks.

    Attributes:
      qi: the QI rows ``[N, …]`` (QIT), in a random order. bucket: their bucket ids ``[N]`` (QIT's BID).
      st_bucket: ST's BID column ``[M]`` (M = N + σ·buckets). st_value: ST's SA column ``[M]``, shuffled
        within every bucket.
      is_fake: ``[M]``, True on the σ fake rows of each bucket — **for evaluation only: never publish it**
        (it tells the corruption attack of Sec. 6 which values to ignore).
      row: ``[N]``, the input row of each QIT row — **for evaluation only: never publish it** (with the input
        order it links QI rows to records).
    """

    qi: np.ndarray
    bucket: np.ndarray
    st_bucket: np.ndarray
    st_value: np.ndarray
    is_fake: np.ndarray
    row: np.ndarray


def publish(key: jax.Array, qi, sa, bucketing: Bucketing, *, fake: int = 0, domain=None, fprime=None) -> PublishedTables:
    """QIT (QI rows + BID) and ST (BID, SA), rows of ST shuffled per bucket.

    The records of one SA value are dealt to that value's places in the buckets at random, and QIT's rows are
    published in a random order: each bucket keeps the SA values the bucketing gave it (so F′-privacy is
    unchanged), but which record of a value sits in which bucket, and where a QI row stands, no longer follows
    the input order. Found in review: QIT kept the input order, and the round-robin assignment put the k-th
    record of a value in bucket (c_v + k) mod b — on a table sorted by SA, matching each bucket's QIT rows to its
    sorted ST values recovered every record's SA (100 %; 80 % on a shuffled table, where ST alone allows 28 %).

    Before anything is drawn, the bucketing is re-checked on this `sa` against the f′ it was built for
    (`Bucketing.fprime`, or `fprime`). Found in review: a bucketing computed for the table and published with the
    table's rows in another order (e.g. sorted by SA) broke F′-privacy without complaint.

    With ``fake = σ > 0`` every bucket's ST also gets σ fake SA values (Section 6), drawn uniformly without
    replacement from the SA domain (`domain`, default the values present) minus the values already in
    the bucket: distinct in the bucket and from the domain, as the paper asks. **They are not indistinguishable
    from the real values** to an adversary who knows the SA distribution (it can be read off ST itself): real
    values follow it, fake ones are uniform, so the rarest value of a bucket is usually the fake one. Measured
    (review, `synthetic_table(3, n=5000, m=50)`, θ = 8, MultiSize, σ = 1): that guess finds the fake in 96–97 % of
    buckets (a random guess: 42.5 %; `tests/bucketize` checks > 90 %). The defence holds only against an adversary
    who cannot rank values by frequency.

    The shuffle and the fake values are secret randomness, drawn from `key` as every jaxdp release is:
    pass `jaxdp.fresh_key()` for a publication (anyone who knows the key can tell fake rows from real
    ones), `jaxdp.keys.key_from_seed` only to reproduce one.

    Args:
      key: typed PRNG key, used once. qi: QI rows ``[N, …]``. sa: SA values ``[N]``.
      bucketing: a `Bucketing` of the N records. fake: σ ≥ 0 fake values per bucket.
      domain: the SA domain the fake values come from (default: the values in `sa`).
      fprime: dict SA value → f′ to check the bucketing against (default: the f′ it was built for; needed for a
        hand-made `Bucketing`).

    Returns:
      `PublishedTables`.

    Raises:
      ValueError: shapes that disagree, σ < 0, a bucket with fewer than σ SA values left, NaN SA values, a
        `domain` that lacks some SA value of the table, or a bucketing that is not F′-private for this `sa`.
    """
    _validate.key(key)
    if key.ndim:
        raise ValueError(f"key must be one typed key (a publication is one draw), got shape {key.shape}.")
    qi = np.asarray(qi)
    if qi.ndim < 1:  # (found in review: a bare IndexError)
        raise ValueError(f"qi must hold one row of quasi-identifiers per record, got a scalar of shape {qi.shape}.")
    if np.size(sa):
        value_counts(sa)  # one kind of SA value (NumPy would merge 1 and "1")
    sa = np.asarray(sa)
    if not hasattr(bucketing, "bucket"):  # found in review: an array of bucket ids ended in an AttributeError
        raise TypeError(f"bucketing must be a Bucketing (from multi_size_bucketing, two_size, optimal or anatomy), "
                        f"got {type(bucketing).__name__}: pass the Bucketing itself, not its .bucket.")
    bid = np.asarray(bucketing.bucket)
    if sa.ndim != 1 or sa.size == 0:
        raise ValueError(f"sa must be a non-empty 1-D array of SA values, got shape {sa.shape}.")
    if bid.ndim != 1 or not np.issubdtype(bid.dtype, np.integer):
        raise ValueError(f"the bucketing's ids must be a 1-D integer array, got shape {bid.shape}, dtype {bid.dtype}.")
    if qi.shape[0] != sa.shape[0] or bid.shape[0] != sa.shape[0]:
        raise ValueError("qi, sa and the bucketing must have one entry per record.")
    if isinstance(fake, bool) or not isinstance(fake, (int, np.integer)) or fake < 0:
        raise ValueError(f"fake must be an int >= 0 (fake values per bucket), got {fake!r}.")
    # values that equal themselves and sort: a NaN is never "in" a bucket for setdiff1d, so a fake NaN could
    # repeat a real one (found in review); mixed types do not sort (the error named NumPy's internals)
    try:
        real = np.unique(sa)
    except TypeError:
        raise ValueError("sa mixes types that cannot be ordered: give one type (e.g. all strings).") from None
    if real.dtype.kind in "fc" and not np.all(np.isfinite(real)):
        raise ValueError("sa contains NaN or inf: give every record a real SA value (or a code for 'missing').")
    if domain is not None:  # the public domain must hold every real value, in their type (found in review: a
        # domain without them made every fake value one no record has, so the fakes were visible)
        domain = np.asarray(domain)
        # by the values' kinds, as `value_counts` reads them (found in review: strings in an object array, as pandas
        # gives them, were refused beside a list of strings)
        kinds = {_kind(v) for v in domain.reshape(-1)} | {_kind(v) for v in real}
        if len(kinds) > 1:
            raise ValueError(f"domain has values of type {domain.dtype}, the SA values {real.dtype}: give one type.")
        if np.setdiff1d(real, domain).size:
            raise ValueError("domain must contain every SA value of the table (fake values drawn from a domain "
                             "without them would be told apart); pass domain=None to use the table's values.")
    fp = fprime if fprime is not None else (dict(bucketing.fprime) if getattr(bucketing, "fprime", None) else None)
    if fp is None:
        raise ValueError("this Bucketing carries no f′ (it was not built by multi_size_bucketing, two_size, optimal or "
                         "anatomy): pass fprime={SA value: f′, …} so publish can check F′-privacy before publishing.")
    try:
        private = is_fprime_private(sa, bid, fp)
    except ValueError as e:  # an SA value without an f′ (or an f′ outside (0, 1]): named by position, never by value
        raise ValueError(f"the bucketing's f′ does not cover every SA value of this sa ({e}): bucketize the table you "
                         "publish, or pass fprime=.") from None
    if not private:
        raise ValueError("the bucketing is not F′-private for this sa: some bucket holds an SA value above its f′. Was it "
                         "computed for another table, or for these records in another order? Bucketize the table you "
                         "publish, in the order you pass it.")
    # NumPy's generator, seeded from the key's bits (all of its entropy): the per-bucket draws are host work
    words = np.asarray(jax.random.bits(key, (4,), jnp.uint32)).tolist()
    rng = np.random.default_rng(np.random.SeedSequence(words))
    # each SA value's records dealt to its places in the buckets at random (every bucket keeps its SA multiset): the
    # records grouped by value in input order take the bucket ids of the same groups in a random order
    value = np.searchsorted(real, sa)
    dealt = np.empty_like(bid)
    shuffled = rng.permutation(sa.size)  # a uniform order within each value (random floats could tie)
    dealt[shuffled[np.argsort(value[shuffled], kind="stable")]] = bid[np.argsort(value, kind="stable")]
    bid = dealt
    row = rng.permutation(sa.size)  # QIT's rows in a random order
    domain = real if domain is None else np.unique(domain)
    st_b, st_v, st_f = [], [], []
    for g in np.unique(bid):
        vals = sa[bid == g]
        extra = np.setdiff1d(domain, vals)
        if fake > extra.size:
            raise ValueError(f"bucket {g} has only {extra.size} SA values left for {fake} distinct fake values (fake "
                             "values must differ from the bucket's own): pass a larger domain= (every value the SA can "
                             "take, not only those present) or a smaller fake.")
        fk = rng.choice(extra, fake, replace=False) if fake else extra[:0]
        v = np.concatenate([vals, fk])
        f = np.concatenate([np.zeros(vals.size, bool), np.ones(fk.size, bool)])
        perm = rng.permutation(v.size)
        st_b.append(np.full(v.size, g)), st_v.append(v[perm]), st_f.append(f[perm])
    return PublishedTables(qi[row], bid[row], np.concatenate(st_b), np.concatenate(st_v), np.concatenate(st_f), row)
