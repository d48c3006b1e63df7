"""Public configuration of the hybrid-video-coding stream anonymizer (a frozen dataclass)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from jaxdp import _validate, mechanisms
from jaxdp.hvc import predict
from jaxdp.transforms import orders

__all__ = ["HVCConfig", "VARIANCE_SHARE"]

MAX_HISTORY = 64  # π: past protected blocks a prediction may use
VARIANCE_SHARE = 0.05  # of each frame's budget ε_f, spent on the frame's noisy column variances (out of the share)

_REORDERS = ("none", "paper")
_STRATEGIES = ("lagrangian", "s1", "s2")

MAX_BLOCK_SIZE = _validate.MAX_BLOCK_SIZE  # records per block n: the codec builds n × n tables per transform


@dataclasses.dataclass(frozen=True)
class HVCConfig:
    """Configuration of `jaxdp.anonymize`, `jaxdp.StreamAnonymizer` and `jaxdp.pln`.

    The configuration is the method's static structure. What a release protects and where is given at each
    call: the budget ``epsilon=`` (as everywhere in jaxdp; ε below) and the public domain ``bounds=``
    (`jaxdp.anonymize(key, records, config, epsilon=…, bounds=…)`), so one config serves any data set and budget.

    The defaults are private and utility-safe: identity reordering (the paper's reordering is not
    DP, DESIGN note 3), exact joint accounting, hopeless (t, σ) candidates pruned by a public
    rule, released blocks clipped to the domain (free post-processing).

    Attributes:
      block_size: n, records per block (>= 1).
      frame_blocks: b, blocks per frame; a frame holds m = n·b records and the delay is δ = m.
      target_length: l, the number of records to protect (the paper's accounting: each frame of r
        records spends ε·r/l, the whole stream ε); None = the length of the input stream (batch only:
        `StreamAnonymizer` needs it, or `records_per_subject`). Records beyond l are dropped and counted.
      records_per_subject: k, the unit-of-privacy accounting: a subject contributes at most k released
        records, so each frame spends ε/k (frames hold distinct subjects) and the stream may be
        unbounded. With subject ids, a subject's records beyond its k-th are dropped and counted
        (`Result.capped`); without ids every row is taken as its own subject and k is the curator's
        declaration that no person has more than k rows. Exclusive with `target_length`.
      split: fractions (ε_QL, ε_QE, ε_E) of each block's budget for the Laplace noise, the
        (t, σ) selection and the mode selection; must sum to 1. With a single prediction mode the
        ε_E share is given to the other two in proportion.
      kinds: candidate transforms.
      order: scan order, ``"zigzag"`` or ``"diagonal"``.
      theta: score exponent θ of Algorithm 1, 0.5 or 1.0.
      accounting: ``"joint"`` (exact joint loss, DESIGN note 4) or ``"paper"`` (Theorem 1).
      reorder: ``"none"`` (identity, the private default) or ``"paper"`` (Algorithm 2's permutation
        minimizing ``‖ψX − X̂(φ)‖²`` s.t. footrule ≤ c_R, computed on the host; **outside the DP
        guarantee**, DESIGN note 3: results are flagged ``private=False``).
      reorder_cost: c_R, the footrule bound (0 with ``reorder="none"``; ⌊n²/2⌋ = unconstrained).
      reorder_strategy: ``"lagrangian"`` (default), ``"s1"`` or ``"s2"`` (paper Sec. 4.5.1, r = 2).
      history: π, how many past protected blocks the predictor sees (1 … `MAX_HISTORY` = 64).
      modes: prediction modes, a tuple from `jaxdp.hvc.predict.MODES`. The default ``("frame_mean",)``
        predicts every block from the frame-mean layer (below); ``predict.PAPER_MODES`` lists the paper's
        modes (midpoint, column mean, last record, history mean, inter), of which `HVCConfig.paper` uses four
        (midpoint, column mean, last record, inter).
      frame_mean_share: the share s of each frame's budget ε_f spent on the frame's noisy column means
        (one query per column over the frame's r records, sensitivity Λ_j/r, the means' budget split over the
        columns ∝ Λ_j^{2/3} as in Theorem 1, after the variance query below); the blocks get (1 − s)·ε_f. The
        noisy means of all frames so far are combined by a local-level filter (`hvc.stream.local_level`:
        inverse-variance weights unless a drift estimated from the released means is positive, then recent frames
        weighted more) into the estimate that the ``"frame_mean"`` mode predicts from — post-processing of
        released values.
        None: 0.5 when ``"frame_mean"`` is a mode, else 0 (no such query). Where blocks may be coded, a part
        `VARIANCE_SHARE` (0.05) of ε_f out of s goes to the frame's noisy column variances, so s must exceed it.
      prune: drop (t, σ) candidates whose Laplace error alone exceeds the largest possible
        removal error ``Σ max(hi - x̂, x̂ - lo)²`` (public values only) before selection.
      clip_output: clip released blocks to the domain (post-processing).
      noise: the samplers (`jaxdp.mechanisms.NOISES`): ``"float"`` (default; textbook float Laplace
        and a two-stage float exponential mechanism in the default dtype: fast, with the float
        caveats of the README's privacy section; ``"float32"`` is accepted as an alias), ``"float64"``
        (the whole codec in float64), or ``"grid"`` (exact: coefficients snapped to a power-of-two grid
        plus exact discrete Laplace noise, and an exact exponential mechanism on integer scores;
        pure ε-DP under finite arithmetic; see `jaxdp.mechanisms.exact`).
    """

    block_size: int
    frame_blocks: int
    _: dataclasses.KW_ONLY
    target_length: int | None = None
    records_per_subject: int | None = None
    split: tuple[float, float, float] = (1 / 3, 1 / 3, 1 / 3)
    kinds: tuple[str, ...] = ("dct", "dst", "dht")
    order: str = "zigzag"
    theta: float = 0.5
    accounting: str = "joint"
    reorder: str = "none"
    reorder_cost: int = 0
    reorder_strategy: str = "lagrangian"
    history: int = 2
    modes: tuple[str, ...] = predict.DEFAULT_MODES
    frame_mean_share: float | None = None
    prune: bool = True
    clip_output: bool = True
    noise: str = "float"

    def __post_init__(self):
        # found in review: block_size = 10⁵ asked NumPy for 74.5 GiB of tables
        _validate.block_size("block_size", self.block_size)
        _validate.size("frame_blocks", self.frame_blocks)
        if self.target_length is not None:
            _validate.size("target_length", self.target_length)
        if self.records_per_subject is not None:
            _validate.size("records_per_subject", self.records_per_subject)
            if self.target_length is not None:
                raise ValueError(
                    "give either target_length (the paper's accounting: ε·r/l per frame of r records) or "
                    "records_per_subject (ε/k per frame), not both."
                )
        for name in ("split", "kinds", "modes"):  # found in review: None or a number said "object is not iterable"
            value = getattr(self, name)
            if not isinstance(value, str) and not hasattr(value, "__iter__"):
                raise TypeError(f"{name} must be a tuple (see HVCConfig's docstring), got {value!r}.")
        if isinstance(self.split, (str, bytes)) or not all(
                isinstance(s, (int, float, np.integer, np.floating)) and not isinstance(s, (bool, np.bool_))
                for s in self.split):  # found in review: split="abc" said "could not convert string to float"
            raise TypeError(f"split must be three numbers (ε_QL, ε_QE, ε_E fractions), got {self.split!r}.")
        split = tuple(float(s) for s in self.split)
        if len(split) != 3 or any(not math.isfinite(s) or s < 0 for s in split):
            raise ValueError(f"split must be three non-negative fractions (ε_QL, ε_QE, ε_E), got {self.split!r}.")
        if abs(sum(split) - 1.0) > 1e-9 or split[0] <= 0 or split[1] <= 0:
            raise ValueError(f"split must sum to 1 with ε_QL, ε_QE > 0; got {self.split!r}.")
        total = sum(split)  # normalized (found in review: a sum of 1 + 9e-10 was accepted and spent as given)
        object.__setattr__(self, "split", tuple(s / total for s in split))
        object.__setattr__(self, "kinds", _validate.kinds(self.kinds))
        _validate.option("order", self.order, orders.ORDERS)
        for name in ("prune", "clip_output"):  # found in review: prune="no" was accepted (a non-empty string is true)
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}.")
        if isinstance(self.theta, (bool, np.bool_)) or np.ndim(self.theta) != 0 or self.theta not in (0.5, 1.0):
            raise ValueError(f"theta must be 0.5 or 1.0, got {self.theta!r}.")  # (True == 1.0 in Python)
        object.__setattr__(self, "theta", float(self.theta))  # found in review: np.array(0.5) was kept, unhashable
        _validate.option("accounting", self.accounting, _validate.ACCOUNTINGS)
        _validate.option("reorder", self.reorder, _REORDERS)
        _validate.option("reorder_strategy", self.reorder_strategy, _STRATEGIES)
        object.__setattr__(self, "noise", mechanisms.check_noise(self.noise))
        if isinstance(self.reorder_cost, bool) or not isinstance(self.reorder_cost, (int, np.integer)):
            raise TypeError(f"reorder_cost must be an int, got {self.reorder_cost!r}.")
        if self.reorder == "none" and self.reorder_cost != 0:
            raise ValueError('reorder_cost must be 0 with reorder="none".')
        if self.reorder_cost < 0:
            raise ValueError(f"reorder_cost must be >= 0, got {self.reorder_cost}.")
        _validate.size("history", self.history, hi=MAX_HISTORY, why="the inter mode adds one candidate per past "
                       "block, each compiled and scored (found in review: 10**9 ran out of memory inside XLA)")
        modes = tuple(self.modes) if not isinstance(self.modes, str) else (self.modes,)
        if not modes or any(m not in predict.MODES for m in modes) or len(set(modes)) != len(modes):
            raise ValueError(f"modes must be distinct names from {predict.MODES}, got {self.modes!r}.")
        object.__setattr__(self, "modes", modes)
        share = self.frame_mean_share
        if share is None:
            share = 0.5 if "frame_mean" in modes else 0.0
        if isinstance(share, bool) or not isinstance(share, (int, float, np.floating)) or not 0.0 <= share < 1.0:
            raise ValueError(f"frame_mean_share must be a fraction in [0, 1), got {self.frame_mean_share!r}.")
        if ("frame_mean" in modes) != (share > 0):
            raise ValueError('frame_mean_share > 0 exactly when "frame_mean" is one of the modes (the query would '
                             "otherwise be wasted or missing).")  # fmt: skip
        if 0 < share <= VARIANCE_SHARE:  # the share pays for the variance query too: a smaller one overspends ε_f
            raise ValueError(f"frame_mean_share must exceed {VARIANCE_SHARE} (it includes the frame's variance "
                             f"query, {VARIANCE_SHARE} of ε_f), got {share!r}.")
        object.__setattr__(self, "frame_mean_share", float(share))
        if self.split[2] <= 0 and self.n_candidates > 1:
            raise ValueError("split gives the mode selection (ε_E) no budget but there are several modes.")

    @classmethod
    def paper(
        cls, block_size: int, frame_blocks: int, *, reorder_cost: int | None = None, **overrides
    ) -> HVCConfig:
        """The paper-faithful preset: θ = 1, Theorem 1 accounting, no pruning, no output clipping,
        Algorithm 2's reordering with c_R = ⌊n²/2⌋/2 by default (the paper's Sec. 5.5 setting).

        Its reordering is **not DP** (DESIGN note 3); pass ``reorder="none"`` for a private variant.
        """
        if reorder_cost is None:
            reorder_cost = (block_size * block_size // 2) // 2
        kw = dict(
            theta=1.0, accounting="paper", prune=False, clip_output=False, frame_mean_share=0.0,
            modes=("midpoint", "column_mean", "last_record", "inter"), history=2,
            reorder="paper", reorder_cost=reorder_cost,
        )  # fmt: skip
        if overrides.get("reorder") == "none":
            kw["reorder_cost"] = 0
        kw.update(overrides)
        return cls(block_size, frame_blocks, **kw)

    @property
    def frame_size(self) -> int:
        """m = n·b records per frame (also the delay bound δ)."""
        return self.block_size * self.frame_blocks

    @property
    def n_candidates(self) -> int:
        """Number of prediction candidates P."""
        return len(predict.mode_names(self.modes, self.history))

    @property
    def budget_split(self) -> tuple[float, float, float]:
        """(ε_QL, ε_QE, ε_E) fractions actually used (ε_E redistributed when there is one mode)."""
        ql, qe, e = self.split
        if self.n_candidates == 1:
            return ql / (ql + qe), qe / (ql + qe), 0.0
        return ql, qe, e
