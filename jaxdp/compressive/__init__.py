"""The compressive mechanism and its continual-observation version CMCO (Li, Zhang, Winslett & Yang 2011).

**Neighbours** are vectors at L1 distance ≤ Δ (the paper: Δ = 1, e.g. count vectors; pass
``l1_sensitivity`` for vectors in other units). The sparsity basis Ψ (columns = basis vectors,
``D = Ψx``) and every random matrix are public.

* `compressive` (the paper's Algorithm 1): ``y = ΦD`` with Φ ∈ {±1/√k}^{k×n} drawn from an explicit key,
  ``y* = y + Lap(√k·Δ/ε)`` (Appendix A: the k samples move by ≤ √k·Δ in L1), sparse recovery of x in Ψ,
  ``D* = Ψx*``. The sparsity S is either public (all of ε goes to the noise) or chosen by the
  exponential mechanism with the paper's utility Eq. (1) (default split 0.1ε / 0.9ε, Section 7.1.1);
  k = ⌈c_k·S·log(n/S)⌉ (clipped to [1, n]).
* Recovery: normalized iterative hard thresholding (NIHT, Blumensath & Davies 2010) at sparsity S, then a
  least-squares refit on the support by conjugate gradients. Why not a library: scikit-learn's OMP/Lasso
  run dense on the CPU, cannot be vmapped or jitted and would add a dependency; NIHT has the same RIP
  error bound as CoSaMP (the paper's [38]: ``‖x − x*‖₂ ≤ C₂‖x − x_S‖₁/√S + C₃‖e‖₂``), needs only products
  with A = ΦΨ and Aᵀ, and keeps fixed shapes with a traced S (the threshold is the S-th largest |x|).
* `cmco` (Algorithm 2): per time step a public column Φ_t, k binary-tree counters (`tree_counter`,
  Dwork et al.'s continual mechanism, Appendix E) on ``u_t = Φ_t D[t]``, reconstruction of D_t at chosen
  times. `continual_identity` is the baseline (differences of one counter).

Where this implementation departs from the paper (tested):

* **The tree counter is not pan-private.** Appendix C asks for ε-pan-private counters. jaxdp's counter
  (like Dwork et al.'s continual counter without the pan-private extension) keeps each register's
  opening noise and releases the register as it is when its segment closes: an intruder who reads the
  state once and later sees the outputs subtracts the two and learns exact input sums (tested). Its
  outputs alone are ε-DP.
* **CMCO's counters are calibrated jointly.** Appendix C runs each of the k counters ε-pan-privately on
  its own input, which moves by 1/√k, with noise calibrated to that move (its error bound is
  O(log^1.5(T)/(ε√k)) per counter): k counters at ε each spend k·ε in all (counters calibrated to a move
  of 1 would spend √k·ε). In total the k inputs move by √k·Δ in L1; jaxdp calibrates the shared tree noise
  to that joint sensitivity, which is ε-DP: each counter's noise, and the error, are then k times the
  paper's Theorem 2 claim, which is a claim at k·ε (at ε in all, the paper's calibration would give each
  counter ε/k: the same noise).
* **C₅ is computed, not assumed.** The score's data term ``C₂‖x − x_S‖₁/√S`` moves by at most
  ``C₂·Δ·max_j ‖Ψᵀe_j‖₁/√S`` (the tail-sum is 1-Lipschitz in L1): a constant ≈ 2.4·C₂ for Haar, but
  growing like √n for the DCT. `min_c5` computes it; a smaller user C₅ is rejected.

Modules: `mechanism`, `recovery`, `counters`, `data`.
"""

from __future__ import annotations

from jaxdp.compressive.counters import (
    TreeCounter,
    ValuesClampedWarning,
    cmco,
    continual_identity,
    tree_counter,
    value_cap,
)
from jaxdp.compressive.data import (
    BUNDLED,
    bundled_vector,
    load_vector,
    synthetic_compressible,
)
from jaxdp.compressive.mechanism import (
    CompressiveConfig,
    CompressiveResult,
    compressive,
    laplace_identity,
    max_sparsity,
    measure,
    measurements,
    projection,
    sparsity_scores,
)
from jaxdp.compressive.recovery import basis_matrix, kth_largest, min_c5, psi_ops, recover

__all__ = ['BUNDLED', 'CompressiveConfig', 'measure', 'CompressiveResult', 'TreeCounter', 'ValuesClampedWarning', 'basis_matrix', 'bundled_vector', 'cmco', 'compressive', 'continual_identity', 'kth_largest', 'laplace_identity', 'load_vector', 'max_sparsity', 'measurements', 'min_c5', 'projection', 'recover', 'sparsity_scores', 'synthetic_compressible', 'tree_counter', 'value_cap']
