"""w-event privacy for count streams (Kellaris et al., VLDB 2014): Uniform, Sample, BD and BA.

At each timestamp i a vector c_i of d counts arrives (each user contributes to one count, so the
count vector has L1 sensitivity 1 and its mean absolute deviation 1/d), and a release o_i goes out:
either noisy counts or "null", meaning the last non-null release o_l stands for c_i. Every window of
w consecutive timestamps spends at most ε (the paper's Theorem 3); each run returns its budget
ledger so that this is checked, not assumed.

* ``uniform``: ``c_i + Lap(w/ε)`` at every timestamp (ε_i = ε/w).
* ``sample``: ``c_i + Lap(1/ε)`` when ``i mod w = 1`` (1-based), null otherwise.
* ``bd`` (Budget Distribution, Fig. 2): dissimilarity ``dis = MAE(c_i, o_l) + Lap(2w/(εd))`` with
  ε_{i,1} = ε/(2w); remaining budget ``ε_rm = ε/2 − Σ_{k=i−w+1}^{i−1} ε_{k,2}``; publish with
  ``Lap(2/ε_rm)`` (ε_{i,2} = ε_rm/2) iff ``dis > 2/ε_rm``.
* ``ba`` (Budget Absorption, Fig. 4): ε_{i,1} as BD; a publication at l that absorbed budget
  nullifies the next ``ε_{l,2}/(ε/(2w)) − 1`` timestamps; otherwise ``ε_{i,2} = ε/(2w)·min(i − (l +
  to_nullify), w)`` and publish with ``Lap(1/ε_{i,2})`` iff ``dis > 1/ε_{i,2}``.

The whole stream is one `lax.scan` over timestamps (vmappable over keys for repetitions); `WEventStream`
pushes one timestamp at a time with the same output. At i = 1 there is no earlier release and o_l is
the all-zero vector (public); ``initial="publish"`` instead publishes the first timestamp (BD/BA), as
the Java w-event benchmark does. Sec. 4.5's optimizations: ``shift=True`` (ε_{i,1} = ε/d) and
`run_partitioned` (column groups, with a joint ledger — the paper's independent per-group instances do not
bound the loss of a user who moves between groups).

Modules: `methods`, `partitioned`, `metrics`, `data`.
"""

from __future__ import annotations

from jaxdp.wevent.data import load_counts, synthetic_counts
from jaxdp.wevent.methods import (
    INITIAL,
    METHODS,
    SHIFT_AUTO_RATIO,
    CountsClampedWarning,
    CountsRoundedWarning,
    WEventResult,
    WEventStream,
    check_counts,
    count_cap,
    difference_cap,
    run,
)
from jaxdp.wevent.metrics import mae, mre, window_sums
from jaxdp.wevent.partitioned import PartitionedResult, run_partitioned

__all__ = ['CountsClampedWarning', 'CountsRoundedWarning', 'INITIAL', 'METHODS', 'PartitionedResult', 'SHIFT_AUTO_RATIO', 'WEventResult', 'WEventStream', 'check_counts', 'count_cap', 'difference_cap', 'load_counts', 'mae', 'mre', 'run', 'run_partitioned', 'synthetic_counts', 'window_sums']
