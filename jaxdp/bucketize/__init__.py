"""F′-privacy bucketization (Wang, Wang, Fu & Wong, "Inferential or differential: privacy laws dictate").

Not a noise mechanism: a table T(QI, SA) is published as QIT(QI, BID) and ST(BID, SA) so that, for every
sensitive value x_i, no bucket holds x_i with a frequency above f′_i (Definition 3.6). Everything here is
exact combinatorics on the per-value counts o_i:

* `valid_one_size` (Lemma 4.13(4): o_i ≤ ⌊f′_i S⌋·b) and `round_robin` (RRA);
* `valid_two_size` (Theorem 4.17: PC, FC, CC), vectorized over many (S1, b1, S2, b2) at once;
* `assignment_exists`: an exact test for *any* number of sizes by max-flow (values → size classes with
  capacities a_ij and s(B_j)); it shows Example 5.32's three-size conditions are not sufficient;
* `record_partition` (Section 4.3), `two_size_bucketing` (Algorithm 1 with loss-based pruning, Lemma
  5.25, and privacy-based pruning by vectorized binary searches, Theorem 5.30), `multi_size_bucketing`
  (Algorithm 2), `optimal_bucketing` (the exact integer program, solved by SciPy's HiGHS `milp`);
* `anatomy` (ℓ-diversity buckets of size ℓ or more, each value at most once; the eligibility check is reported,
  records are never dropped), `publish` (QIT/ST, optional σ fake values per bucket against the corruption attack, Sec. 6);
* metrics `loss`, `mse` (Definition 3.9), `relative_error` of random count queries (Section 7.2.2);
* `inference_moments` / `simulate_inference`: the differential inference theorem (Theorem 2).

Floors ⌊f′_i S⌋ are taken with a relative slack of 2⁻⁵⁰ (f′ = 0.29, S = 100 must give 29, not 28), so the F′ bound
holds to about f′·(1 + 2⁻⁵⁰).

Modules: `validity`, `heuristics`, `optimal`, `metrics`, `data`, `tables`.
"""

from __future__ import annotations

from jaxdp.bucketize.data import eia_table, load_table, synthetic_table
from jaxdp.bucketize.heuristics import (
    Bucketing,
    anatomy,
    assign_records,
    multi_size_bucketing,
    two_size,
    two_size_bucketing,
)
from jaxdp.bucketize.metrics import (
    inference_moments,
    loss,
    mse,
    relative_error,
    simulate_inference,
)
from jaxdp.bucketize.optimal import optimal, optimal_bucketing
from jaxdp.bucketize.tables import PublishedTables, publish
from jaxdp.bucketize.validity import (
    assignment_exists,
    check_fprime,
    fprime_of,
    fprime_linear,
    is_fprime_private,
    record_partition,
    round_robin,
    valid_one_size,
    valid_two_size,
    value_counts,
)

__all__ = ['Bucketing', 'PublishedTables', 'anatomy', 'assignment_exists', 'check_fprime', 'eia_table', 'fprime_linear', 'fprime_of', 'inference_moments', 'is_fprime_private', 'load_table', 'loss', 'mse', 'multi_size_bucketing', 'optimal', 'optimal_bucketing', 'publish', 'record_partition', 'relative_error', 'round_robin', 'simulate_inference', 'synthetic_table', 'two_size', 'two_size_bucketing', 'valid_one_size', 'valid_two_size', 'value_counts']
