"""Differentially private histograms by lossy compression (Ács, Castelluccia & Chen, ICDM 2012).

Methods (``publish(key, hist, method=…, epsilon=…)`` or the functions below); each returns a
`HistogramResult` (``counts``, the released size ``k``, ``segment_starts``, ``epsilon_spent``, ``private``),
and a key array ``[R]`` gives R independent releases as one vmapped program:

* ``lpa``  — Laplace per bin, ``Lap(1/ε)`` (the paper's Theorem 1 with Δ₁ = 1).
* ``fpa``  — Rastogi & Nath's Fourier perturbation with a fixed number ``k`` of retained coefficients,
  ``Lap(Δ₁(k)/ε)`` on each, inverse transform of the zero-padded vector. Δ₁(k) is the exact L1 sensitivity
  of the first k orthonormal coordinates (`dft_sensitivity`, ≈ 0.9·k/√n; the default ``accounting="exact"``)
  or the paper's √k (Theorem 3; ``accounting="paper"``).
* ``spa``  — Rastogi & Nath's sampling perturbation (the paper's Algorithm 1): ``k`` drawn by the
  exponential mechanism with ``U(H, k)`` (Eq. 1) at ε/2, noise with density ∝ ``exp(−(ε/2)‖z‖₂/Δ₂(k))`` drawn
  as a Gaussian scale mixture (Δ₂ exact by default, 1 with ``accounting="paper"``).
* ``efpa`` — the paper's Algorithm 2: real DFT, ``k`` drawn with ``u(H, k)`` (Eq. 3) at ε/2,
  ``Lap(2Δ₁(z)/ε)`` on the z retained real coordinates (2√z/ε with ``accounting="paper"``), inverse real DFT.
  The penalty term of u is ``penalty="consistent"`` by default (the error bound of the noise actually added)
  or the paper's printed one (``penalty="paper"``).
* ``php``  — P-HPartition (Algorithm 4): private hierarchical bisection with the exponential
  mechanism, then ReleaseHistogram (Algorithm 3) of the chosen clustering at ε/2.

**Neighbouring histograms** differ by 1 in one bin (one record added or removed): L1 and L2
sensitivity 1. Bin edges (the domain and the number of bins) are public.

Where this implementation is more careful than the paper (each has a test):

* All Fourier methods use the *orthonormal real* DFT (`jaxdp.transforms.rdft`): the coordinates
  ``[F_0, √2 Re F_1, √2 Im F_1, …]`` are real, and every retained real coordinate is perturbed. The
  paper's Algorithm 2 says "the real-valued noise is only added to the magnitude of coefficients";
  leaving the phase (imaginary part) unperturbed would release it exactly, which is not DP.
* EFPA's z counts the real degrees of freedom of ``F_0 … F_{k−1}``: ``z = 2k − 1`` (``n`` for the
  last k of an even n). The paper writes ``z = 2k + 1``; ``√z`` is the L1 sensitivity of z
  orthonormal coordinates, so the smaller z is still exact, not an approximation.
* SPA splits ε evenly between the choice of k and the noise (the paper's Algorithm 1 uses ε in both
  steps without saying how they compose). U's perturbation term as printed, ``k√n/ε``, is written for the
  unnormalized DFT and overstates the noise of orthonormal coordinates ≥ √n-fold (SPA then keeps k ≈ 1):
  the default ``penalty="consistent"`` uses ``k·Δ₂(k)/ε``; ``penalty="paper"`` keeps the printed term.
* P-HP uses one depth limit ``d = ⌈log₂ n⌉`` both for stopping and for dividing the bisection budget
  (the text says ``⌊log₂ n⌋`` in one place; a mismatch would overspend). The FIFO queue of the
  algorithm is executed level by level: every partition's choice depends only on its own bins and
  its own key, so processing one tree level at once gives exactly the algorithm's output
  distribution, and the sequence of saved configurations (line 19) is rebuilt in queue order.

Modules: `compression`, `partition`, `release`, `metrics`, `data`.
"""

from __future__ import annotations

from jaxdp.histogram._common import METHODS, HistogramResult, check_histogram
from jaxdp.histogram.compression import (
    ACCOUNTINGS,
    EFPA_PENALTIES,
    PENALTIES,
    dft_sensitivity,
    efpa,
    efpa_core,
    efpa_scores,
    efpa_scores_core,
    fpa,
    lpa,
    spa,
    spa_core,
    spa_scores,
)
from jaxdp.histogram.data import (
    BUNDLED,
    bin_values,
    bundled_histogram,
    load_histogram,
    synthetic_histogram,
)
from jaxdp.histogram.metrics import kl_divergence, l2_error, range_query_mse
from jaxdp.histogram.partition import (
    PrefixTree,
    abs_deviation,
    configuration_error,
    hpartition,
    php,
    php_core,
    php_depth,
    prefix_tree,
    release_core,
    release_histogram,
)
from jaxdp.histogram.release import clamp, publish

__all__ = ['ACCOUNTINGS', 'BUNDLED', 'EFPA_PENALTIES', 'METHODS', 'PENALTIES', 'HistogramResult', 'bin_values', 'bundled_histogram', 'check_histogram', 'clamp', 'configuration_error', 'dft_sensitivity', 'efpa', 'efpa_scores', 'fpa', 'hpartition', 'kl_divergence', 'l2_error', 'load_histogram', 'lpa', 'php', 'php_depth', 'publish', 'range_query_mse', 'release_histogram', 'spa', 'spa_scores', 'synthetic_histogram']
