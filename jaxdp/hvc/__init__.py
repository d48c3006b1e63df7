"""The hybrid-video-coding anonymizer (Parra-Arnau, Strufe & Domingo-Ferrer, Knowledge-Based Systems 2022).

A record stream is cut into blocks; each block is predicted from earlier *protected* blocks, the
prediction error is transform-coded, the exponential mechanism picks the transform, the number of
retained coefficients and the prediction mode, and Laplace noise protects the retained coefficients.

Data flow through the modules:

* `config` — `HVCConfig`, the public configuration (static structure, validated on construction);
* `sensitivity` — Lemma 1 / 3 / 5 sensitivity tables and the exact joint privacy loss;
* `quantize` — Theorem 1's budget split, MSE tables and Algorithm 1 on one block;
* `predict` — candidate predictions from protected blocks (intra / inter modes);
* `reorder` — Algorithm 2's footrule-constrained reordering (not DP; opt-in);
* `codec` — the closed loop: one block step, a `lax.scan` over blocks;
* `cpu_loop` — how that loop is compiled on CPU (one kernel for small blocks);
* `stream` — frames, budgets, the frame-mean layer, record updates: `anonymize`, `StreamAnonymizer`;
* `baselines` — PLN, the running noisy frame mean, DP microaggregation, the midpoint.
"""

from __future__ import annotations

from jaxdp.hvc.baselines import frame_mean, microaggregate, midpoint, pln
from jaxdp.hvc.config import HVCConfig
from jaxdp.hvc.stream import (
    BudgetExhaustedWarning,
    GridFrameWarning,
    Result,
    StreamAnonymizer,
    anonymize,
    anonymize_streams,
)

__all__ = [
    "BudgetExhaustedWarning", "GridFrameWarning", "HVCConfig", "Result", "StreamAnonymizer", "anonymize", "anonymize_streams", "frame_mean",
    "microaggregate", "midpoint", "pln",
]  # fmt: skip
