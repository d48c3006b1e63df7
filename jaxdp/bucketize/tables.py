"""QIT/ST publication of a bucketing, with optional fake values (Sec. 6)."""

from __future__ import annotations

import numpy as np

from jaxdp.bucketize.heuristics import Bucketing

__all__ = ['publish']


# --------------------------------------------------------------------------------------- publication, checks
def publish(qi, sa, bucketing: Bucketing, *, fake: int = 0, seed: int | None = None, domain=None):
    """The two published tables: QIT (QI rows + BID) and ST (BID, SA), rows of ST shuffled per bucket.

    With ``fake = σ > 0`` every bucket's ST also gets σ fake SA values (Section 6), drawn without
    replacement from the SA domain minus the values already in the bucket (so they are indistinguishable
    by value). Returns ``(qit, st, is_fake)`` where `is_fake` marks the fake ST rows (for evaluation only:
    never publish it).

    The shuffle and the fake values are secret randomness: by default they come from a generator seeded
    with fresh operating-system entropy (NumPy's `default_rng()`, 128 bits). Pass `seed` only to
    reproduce a result: anyone who knows the seed can tell fake rows from real ones.
    """
    qi = np.asarray(qi)
    sa = np.asarray(sa)
    bid = np.asarray(bucketing.bucket)
    if qi.shape[0] != sa.shape[0] or bid.shape[0] != sa.shape[0]:
        raise ValueError("qi, sa and the bucketing must have one entry per record.")
    rng = np.random.default_rng(seed)  # seed=None: fresh OS entropy
    domain = np.unique(sa) if domain is None else np.asarray(domain)
    st_b, st_v, st_f = [], [], []
    for g in np.unique(bid):
        vals = sa[bid == g]
        extra = np.setdiff1d(domain, vals)
        if fake > extra.size:
            raise ValueError(f"bucket {g} has only {extra.size} SA values left for {fake} distinct fake values.")
        fk = rng.choice(extra, fake, replace=False) if fake else extra[:0]
        v = np.concatenate([vals, fk])
        f = np.concatenate([np.zeros(vals.size, bool), np.ones(fk.size, bool)])
        perm = rng.permutation(v.size)
        st_b.append(np.full(v.size, g)), st_v.append(v[perm]), st_f.append(f[perm])
    qit = (qi, bid)
    st = (np.concatenate(st_b), np.concatenate(st_v))
    return qit, st, np.concatenate(st_f)
