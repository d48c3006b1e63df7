"""Curator-only diagnostics: numbers computed from the raw data, **never to be published**.

A release carries the released records, the ε spent and the public configuration. Anything that
compares the release with the input — how many input values lay outside the domain, the error of
the release, how it compares with releasing the midpoint — is an exact function of the private
data: one out-of-domain value changes the clip count from 0 to 1 in every run. jaxdp therefore
never puts such numbers into a `Result`, a report or a summary unless they are asked for, and then
only under a name that says they are not private.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["CuratorDiagnostics", "curator_diagnostics", "released_inputs", "release_sse", "NOT_PRIVATE_NOTE"]

NOT_PRIVATE_NOTE = (
    "curator-only diagnostics computed from the raw data: NOT differentially private, do not publish them"
)


@dataclasses.dataclass(frozen=True)
class CuratorDiagnostics:
    """Error and clipping of a release, per attribute. **Not private**: for the curator's eyes only.

    Arrays have a trailing attribute axis ``[d]`` (and a leading ``[R]`` for R repetitions).

    Attributes:
      clipped: input values of the released rows outside ``[lo, hi]`` or not finite (clamped
        before coding).
      sse: sum of squared errors of the released records against their input rows (a non-finite input value
        taken as the mechanism codes it: NaN as the midpoint, ±inf as the bound).
      sse_midpoint: the same for releasing the domain midpoint (spending nothing).
    """

    clipped: np.ndarray
    sse: np.ndarray
    sse_midpoint: np.ndarray

    @property
    def clipped_total(self) -> np.ndarray:
        return np.sum(self.clipped, axis=-1)

    @property
    def sse_total(self) -> np.ndarray:
        return np.sum(self.sse, axis=-1)

    @property
    def relative_to_midpoint(self) -> np.ndarray:
        """SSE / SSE of the midpoint, per attribute (below 1: the release says more than nothing)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.sse_midpoint > 0, self.sse / self.sse_midpoint, np.where(self.sse > 0, np.inf, 1.0))


def released_inputs(result, records) -> np.ndarray:
    """The raw input row of every released record, shaped like ``result.records``. **Reads the raw data.**

    Args:
      result: a `Result` of `jaxdp.anonymize` (one key or R keys), `anonymize_streams`, or a baseline.
      records: the raw input the result was computed from: the stream ``[N, d]``, or for `anonymize_streams`
        every stream ``[S, N, d]`` (a release of S streams is compared stream by stream).

    Returns:
      float64 ``[N_out, d]``, ``[R, N_out, d]`` or ``[S, N_out, d]``.

    Raises:
      ValueError: `records` does not fit the result (found in review: the streams of `anonymize_streams` were
        indexed along the stream axis, and one stream was compared with every stream's release).
    """
    if not (hasattr(result, "records") and hasattr(result, "index")):  # found in review: an AttributeError
        raise TypeError(f"result must be a jaxdp Result (of anonymize, anonymize_streams or a baseline), got "
                        f"{type(result).__name__}: pass the result first, then the raw records it was made from.")
    x = np.asarray(records, np.float64)
    released = np.asarray(result.records)
    index = np.asarray(result.index)
    if x.ndim not in (2, 3):
        raise ValueError(f"records must be the input stream [N, d] (or, for anonymize_streams, every stream "
                         f"[S, N, d]), got shape {x.shape}.")
    streams = bool(getattr(result, "streams", False))
    if streams and x.ndim == 2:  # found in review: one stream was compared with every stream's release
        raise ValueError(f"this result of anonymize_streams holds {released.shape[0]} streams: pass every stream "
                         f"[S, N, d], not one stream of shape {x.shape}.")
    if not streams and x.ndim == 3 and released.ndim == 3:  # and R repetitions with R different inputs
        raise ValueError(f"this result holds {released.shape[0]} repetitions of one stream: pass that stream [N, d], "
                         f"not records of shape {x.shape}.")
    if x.ndim == 3 and (released.ndim != 3 or x.shape[0] != released.shape[0]):
        raise ValueError(f"records of shape {x.shape} hold {x.shape[0]} streams, but the result holds "
                         f"{released.shape[0] if released.ndim == 3 else 1}: pass the input the result was made from.")
    if x.shape[-1] != released.shape[-1]:
        raise ValueError(f"records have d = {x.shape[-1]} attributes, the result has {released.shape[-1]}.")
    if index.size and int(index.max()) >= x.shape[-2]:
        raise ValueError(f"the result released input row {int(index.max())}, but records have {x.shape[-2]} rows: "
                         "pass the input the result was made from.")
    if x.ndim == 2:
        return x[index]
    if index.ndim == 1:
        return x[:, index]
    return np.take_along_axis(x, index[..., None], axis=1)


def _as_coded(x, lo, hi):
    """Non-finite input values as the mechanism codes them: NaN → the midpoint, ±inf → the bound."""
    return np.where(np.isnan(x), 0.5 * (lo + hi), np.where(np.isposinf(x), hi, np.where(np.isneginf(x), lo, x)))


def release_sse(result, records) -> np.ndarray:
    """Σ (released − input)² per release (``[]``, or ``[R]``/``[S]``), non-finite inputs taken as coded (NaN the
    midpoint, ±inf the bound): what `Result.sse` returns. **Reads the raw data: not private.**"""
    x = released_inputs(result, records)
    x = _as_coded(x, np.asarray(result.lo, np.float64), np.asarray(result.hi, np.float64))
    return np.sum((np.asarray(result.records, np.float64) - x) ** 2, axis=(-2, -1))


def curator_diagnostics(result, records) -> CuratorDiagnostics:
    """Compare a `jaxdp.Result` with the raw input it was made from. **Not differentially private.**

    Args:
      result: a `Result` of `jaxdp.anonymize`, `anonymize_streams` or a baseline.
      records: the raw input the result was computed from, as in `released_inputs`: ``[N, d]``, or every
        stream ``[S, N, d]`` for `anonymize_streams` (then the diagnostics have a leading stream axis).

    Returns:
      A `CuratorDiagnostics`.
    """
    x = released_inputs(result, records)
    lo, hi = np.asarray(result.lo, np.float64), np.asarray(result.hi, np.float64)
    bad = ~np.isfinite(x) | (x < lo) | (x > hi)
    released = np.asarray(result.records, np.float64)
    # a non-finite input value is compared as the mechanism coded it (NaN → the midpoint, ±inf → the bound): found in
    # review, one NaN or inf made its column's SSEs NaN or inf (and overflowed), wiping out the column's diagnostics
    center = 0.5 * (lo + hi)
    x = _as_coded(x, lo, hi)
    err = np.sum((released - x) ** 2, axis=-2)
    mid = np.sum((center - x) ** 2, axis=-2)
    clipped = np.sum(bad, axis=-2)
    if released.ndim == 3:
        mid = np.broadcast_to(mid, err.shape)
        clipped = np.broadcast_to(clipped, err.shape)
    return CuratorDiagnostics(clipped=np.asarray(clipped), sse=err, sse_midpoint=np.asarray(mid))
