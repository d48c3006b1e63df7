"""Prediction of a block from earlier *protected* blocks (paper Sec. 4.4, Fig. 6).

All candidate predictions of one block are computed at once from the codec's history (the last
π released blocks, most recent first). They only read protected output, so they cost no privacy
budget (post-processing), and every prediction is clipped to the domain (DESIGN note 2: Lemma 5
and Lemma 3(ii) assume predictions inside the domain).

Modes (records × attributes analogues of the video-coding intra/inter modes):

* ``"midpoint"``: the domain midpoint ``(lo + hi)/2``, data-independent (the best case of
  Lemma 3 and the first prediction of a stream).
* ``"column_mean"``: H.263-style vertical prediction: every record is the column (attribute)
  means of the previous protected block (Fig. 6, left).
* ``"last_record"``: H.264-style vertical prediction from directly adjacent samples: every
  record repeats the last protected record (Fig. 6, right).
* ``"history_mean"``: a DC prediction: the attribute means over the last π protected blocks.
* ``"inter"``: block matching over the last π protected blocks (this and earlier frames): one
  candidate per past block, the block itself; the encoder control picks among them privately.

Horizontal and diagonal intra modes of H.264 combine samples *across attributes*, which have
different units and scales on records × attributes; they are left out on purpose.
Modes whose history is not yet available fall back to the midpoint, so the candidate set never
depends on the data.
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Float, Int

__all__ = ["MODES", "DEFAULT_MODES", "mode_names", "candidates"]

MODES = ("frame_mean", "midpoint", "column_mean", "last_record", "history_mean", "inter")
PAPER_MODES = ("midpoint", "column_mean", "last_record", "history_mean", "inter")
DEFAULT_MODES = ("frame_mean",)


def mode_names(modes: tuple[str, ...], history: int) -> tuple[str, ...]:
    """The candidate names, with ``"inter"`` expanded to ``inter1 … interπ``."""
    out = []
    for m in modes:
        if m == "inter":
            out.extend(f"inter{k + 1}" for k in range(history))
        else:
            out.append(m)
    return tuple(out)


def candidates(
    hist: Float[Array, "pi n d"],
    valid: Int[Array, ""],
    lo: Float[Array, " d"],
    hi: Float[Array, " d"],
    modes: tuple[str, ...],
    base=None,
) -> Float[Array, "P n d"]:
    """All candidate predictions of the next block, clipped to the domain.

    Args:
      hist: the last π released blocks, most recent first, shape ``[π, n, d]``.
      valid: how many of them exist (0 at the start of a stream).
      lo, hi: domain bounds, shape ``[d]``.
      modes: static tuple of mode names from `MODES`.
      base: ``[d]``, the frame-mean layer's running estimate for this block's frame (mode
        ``"frame_mean"``: every row predicted by it). It is computed from released noisy frame
        means only (`jaxdp.hvc.stream`), so this prediction is post-processing too.

    Returns:
      Array of shape ``[P, n, d]`` with P = ``len(mode_names(modes, π))``.
    """
    pi, n, d = hist.shape
    mid = jnp.broadcast_to(0.5 * (lo + hi), (n, d))
    have = jnp.arange(pi, dtype=jnp.int32) < jnp.asarray(valid, jnp.int32)  # [π]
    out = []
    for m in modes:
        if m == "frame_mean":
            out.append(jnp.broadcast_to(base, (n, d)))
        elif m == "midpoint":
            out.append(mid)
        elif m == "column_mean":
            pred = jnp.broadcast_to(jnp.mean(hist[0], axis=0), (n, d))
            out.append(jnp.where(have[0], pred, mid))
        elif m == "last_record":
            pred = jnp.broadcast_to(hist[0, -1], (n, d))
            out.append(jnp.where(have[0], pred, mid))
        elif m == "history_mean":
            weight = have.astype(hist.dtype)[:, None, None]
            total = jnp.sum(hist * weight, axis=(0, 1))
            count = jnp.maximum(jnp.sum(weight) * n, 1.0)
            out.append(jnp.where(have[0], jnp.broadcast_to(total / count, (n, d)), mid))
        elif m == "inter":
            out.extend(jnp.where(have[k], hist[k], mid) for k in range(pi))
        else:  # pragma: no cover - validated in HVCConfig
            raise ValueError(f"unknown prediction mode {m!r}")
    return jnp.clip(jnp.stack(out), lo, hi)
