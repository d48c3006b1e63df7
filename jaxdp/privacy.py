"""When a release may be called differentially private: one rule for every front end.

A release of the hybrid-video-coding anonymizer is ε-DP (for the unit of privacy stated in the
README) only if all of these hold:

1. **The domain bounds are public**, i.e. chosen without looking at the data. ``bounds="data"``
   (the paper's 1.5 × max rule) reads the data.
2. **No reordering**: ``reorder="none"``. The paper's Algorithm 2 computes its permutation from the
   raw block, so a neighbouring block can make an output impossible: its releases are outside the
   guarantee.
3. **The key is secret**: drawn from the operating system (`jaxdp.keys.fresh_key`) or otherwise
   unknown to anyone else, and used for one release only. A release made from a seed that can be
   known or guessed (``jaxdp anonymize --seed``) is a deterministic function of the data.

`Result.private`, `StreamAnonymizer.private` and the CLI's report all apply this rule. The Python
front ends cannot see where a key came from, so they check (1) and (2) and leave (3) to the caller;
the CLI knows whether it was given ``--seed`` and checks all three.

What ``private`` does not distinguish: the noise's arithmetic. With ``noise="grid"`` (exact samplers) the
release is pure ε-DP under finite arithmetic; with the default ``noise="float"`` (and ``"float64"``) it is ε-DP
of the textbook real-valued mechanism, whose floating-point draws leak through their low-order bits (Mironov,
"On significance of the least significant bits for differential privacy", CCS 2012) — the README's float
caveats state the measured size of that gap. ``private=True`` with float noise means "the mechanism's
conditions hold", not "pure ε-DP bit for bit".

What the guarantee assumes public (it protects the *values* of the records, not these): the number
of records, their arrival order, subject ids and hence who updated a record within a buffer
(``index``, ``delay``, ``frame``, ``superseded``, ``dropped``, ``capped`` reveal them: ``capped`` counts the rows of
subjects past the public `records_per_subject`), the configuration and
the domain bounds. Running R repetitions and publishing all of them spends R·ε.
"""

from __future__ import annotations

__all__ = ["release_is_private"]


def release_is_private(*, public_bounds: bool, reorder: str, reproducible_seed: bool = False) -> bool:
    """The rule above: bounds public, ``reorder == "none"``, and no reproducible seed."""
    return bool(public_bounds) and reorder == "none" and not reproducible_seed
