"""Reordering of a block's rows before prediction (paper Sec. 4.5, problem (17), Algorithm 2).

**Not differentially private as the paper uses it (DESIGN note 3).** The permutation ψ_φ is
computed from the raw block, so the candidate set of the encoder control depends on the data (a
neighbouring block can make an output impossible: unbounded privacy loss), and a reordered block
can differ from its neighbour's in many rows, which Lemma 1 does not cover. jaxdp offers it, as
``reorder="paper"``, only to reproduce the paper; results computed with it are flagged
``private=False``. The default ``reorder="none"`` is the identity (c_R = 0).

Problem (17) for one prediction X̂: ``min_ψ ‖ψX − X̂‖²_F`` s.t. the Spearman footrule
``F(ψ) = Σ_k |ψ(k) − k| ≤ c_R`` — a linear assignment problem with one side constraint (APSC,
Lemma 4; NP-complete). Solved here on the host with SciPy's `linear_sum_assignment`:

* ``c_R ≥ ⌊n²/2⌋`` (the largest possible footrule, Eq. 21): the unconstrained assignment;
* ``c_R = 0``: the identity;
* otherwise: a Lagrangian heuristic: assignments of ``cost + λ·|k − i|`` with λ found by bisection;
  the best *feasible* assignment seen is returned, so the constraint always holds (λ → ∞ gives the
  identity). With ``strategy="s1"`` the block is split into r sub-blocks solved separately with
  budgets c_R/r (paper S1); ``"s2"`` forbids matches across sub-blocks in one problem (paper S2).
"""

from __future__ import annotations

import numpy as np
import scipy.optimize

from jaxdp import _validate

__all__ = ["footrule", "max_footrule", "best_permutation", "permutations"]


def footrule(perm) -> int:
    """Spearman footrule ``Σ_k |perm[k] − k|`` of a permutation (block position k holds input row perm[k])."""
    perm = np.asarray(perm)
    return int(np.abs(perm - np.arange(perm.shape[-1])).sum(axis=-1)) if perm.ndim == 1 else np.abs(
        perm - np.arange(perm.shape[-1])
    ).sum(axis=-1)


def max_footrule(n: int) -> int:
    """⌊n²/2⌋, the largest footrule of a permutation of n items (paper Eq. 21)."""
    return (n * n) // 2


def _assign(cost: np.ndarray) -> np.ndarray:
    rows, cols = scipy.optimize.linear_sum_assignment(cost)
    perm = np.empty(cost.shape[0], np.int64)
    perm[rows] = cols  # position k (row of cost) takes input row perm[k]
    return perm


def _constrained(cost: np.ndarray, bound: float, iters: int = 30) -> np.ndarray:
    n = cost.shape[0]
    k = np.arange(n)
    dist = np.abs(k[:, None] - k[None, :]).astype(np.float64)
    free = _assign(cost)
    if footrule(free) <= bound:
        return free
    best = k.copy()  # identity: always feasible
    best_val = float(np.trace(cost))
    lo, hi = 0.0, max(1.0, float(np.ptp(cost))) * 2.0
    for _ in range(iters):
        lam = 0.5 * (lo + hi)
        perm = _assign(cost + lam * dist)
        if footrule(perm) <= bound:
            val = float(cost[k, perm].sum())
            if val < best_val:
                best, best_val = perm, val
            hi = lam
        else:
            lo = lam
    return best


def best_permutation(x, x_hat, cost_bound: int, *, strategy: str = "lagrangian", parts: int = 2) -> np.ndarray:
    """The permutation ψ of (17) for one block and one prediction (host, float64).

    Args:
      x: block ``[n, d]``; x_hat: prediction ``[n, d]``; cost_bound: c_R ≥ 0.
      strategy: ``"lagrangian"``, ``"s1"`` or ``"s2"`` (paper Sec. 4.5.1; r = `parts`).

    Returns:
      int64 array ``[n]``: position k of the reordered block holds input row ``perm[k]``; its footrule
      is ≤ c_R.
    """
    x = np.asarray(x, np.float64)
    x_hat = np.asarray(x_hat, np.float64)
    # (found in review: a 1-D block raised IndexError, an unknown strategy fell back to the Lagrangian silently)
    if x.ndim != 2 or x_hat.shape != x.shape:
        raise ValueError(f"x and x_hat must be blocks of the same shape [n, d], got {x.shape} and {x_hat.shape}.")
    if strategy not in ("lagrangian", "s1", "s2"):
        raise ValueError(f'strategy must be "lagrangian", "s1" or "s2", got {strategy!r}.')
    parts = _validate.size("parts", parts)
    n = x.shape[0]
    cost = ((x_hat[:, None, :] - x[None, :, :]) ** 2).sum(-1)  # [position k, input row i]
    if cost_bound <= 0 or n == 1:
        return np.arange(n)
    if cost_bound >= max_footrule(n):
        return _assign(cost)
    if strategy == "s1":
        edges = np.linspace(0, n, parts + 1).astype(int)
        perm = np.arange(n)
        for a, b in zip(edges[:-1], edges[1:]):
            perm[a:b] = a + _constrained(cost[a:b, a:b], cost_bound / parts)
        return perm
    if strategy == "s2":
        edges = np.linspace(0, n, parts + 1).astype(int)
        part = np.searchsorted(edges, np.arange(n), side="right") - 1
        big = 1e3 * (np.abs(cost).max() + 1.0) * n
        blocked = cost + np.where(part[:, None] == part[None, :], 0.0, big)
        perm = _constrained(blocked, cost_bound)
        if np.any(part[perm] != part):  # no feasible within-part solution beat the identity
            return np.arange(n)
        return perm
    return _constrained(cost, cost_bound)


def permutations(x, preds, cost_bound: int, strategy: str = "lagrangian") -> np.ndarray:
    """`best_permutation` for every candidate prediction: ``preds [P, n, d]`` → int32 ``[P, n]``."""
    x = np.asarray(x)
    return np.stack([best_permutation(x, p, cost_bound, strategy=strategy) for p in np.asarray(preds)]).astype(
        np.int32
    )
