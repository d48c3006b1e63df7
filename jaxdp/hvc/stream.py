"""Stream driver: buffering into frames, budgets, record updates, batch and streaming front ends.

Records arrive one by one (input row i has timestamp i). A buffer collects them; when it holds
m = n·b distinct subjects — or when the arrival that opened it has waited m - 1 further arrivals, so
that no record waits more than δ = m - 1 < m for its release or its subject's later update's — it is
emitted as a frame, cut into blocks of n
consecutive records (the last block of a frame is padded with public midpoint rows that are never
released), and run through the codec's closed loop. A subject updated while still buffered keeps
only its latest tuple; the earlier one is *superseded* (counted, not released). After
`target_length` = l records have been protected the stream ends; later records are *dropped*
(counted). Nothing is lost silently: every input row is released exactly once, superseded, or
dropped.

Budget (paper Sec. 4.1): a frame of r records spends ε·r/l (ε_j = ε·m/l for a full frame), all of
it on each of its blocks (parallel composition: a frame holds distinct subjects). Summed over the
stream this is ε·(records released)/l ≤ ε.

Both front ends, `anonymize` (batch) and `StreamAnonymizer` (push/flush), derive block k's key as
``jax.random.fold_in(key, k)`` and run the same jitted codec scan, so they give the same output
for the same key and input.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import unicodedata
import warnings
from collections import OrderedDict
from fractions import Fraction
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import _host
from jaxdp._domain import epsilon_unfit, unfit
from jaxdp.hvc import codec
from jaxdp.hvc.config import VARIANCE_SHARE, HVCConfig
from jaxdp.privacy import release_is_private

__all__ = ["Result", "anonymize", "anonymize_streams", "StreamAnonymizer", "BudgetExhaustedWarning"]


class GridFrameWarning(UserWarning):
    """With ``noise="grid"``, frames the exact sampler cannot take at their budget (public sizes and budgets) were
    released from the running estimate of earlier frames, without a query of their own."""


class BudgetExhaustedWarning(UserWarning):
    """Records arrived after the budget of `target_length` records was spent: they are dropped."""


def _warn_dropped(dropped: int, limit: int, stacklevel: int = 3) -> None:
    import warnings

    warnings.warn(
        f"the budget is spent: {limit} records (target_length) have been protected, so {dropped} later "
        "record(s) were dropped and are not released. Release them separately with a new budget and a "
        "fresh key, or set target_length to the number of records to protect.",
        BudgetExhaustedWarning,
        stacklevel=stacklevel,
    )


@dataclasses.dataclass(frozen=True)
class Result:
    """What an anonymizer released, and the accounting of every input row.

    Attributes:
      records: released records, ``[N_out, d]`` (``[R, N_out, d]`` for R repetitions), in release order.
      index: input row of each released record, ``[N_out]`` (``[R, N_out]`` when reordering differs
        between repetitions).
      delay: records that arrived after each released record before it was released, ``[N_out]``.
      footrule: displacement |k − ψ(k)| of each record by reordering within its block (0 with
        ``reorder="none"``; their sum per block is the block's footrule ≤ c_R), ``[N_out]``.
      superseded: input rows replaced by a later update of the same subject within a buffer.
      dropped: input rows after the target length l was reached (the budget is spent).
      capped: input rows dropped because their subject already had `records_per_subject` released
        records (contribution bounding; only with subject ids).
      epsilon_spent: ε spent per frame, ``[F]``. With the paper's accounting its sum is ≤ the `epsilon` of the
        call; with ``records_per_subject=k`` every frame spends ε/k on *other* subjects' records, so the sum
        grows with the stream while a subject, in at most k frames, pays ≤ ε.
      frame: frame number of each released record, ``[N_out]``.
      info: per-block `codec.BlockInfo` (mode, kind, t, epsilon, perm), ``[B]`` (or ``[R, B]``).
      private: the rule of `jaxdp.privacy`: False when the bounds were derived from the data
        (``bounds="data"``) or the paper's reordering was used (``reorder="paper"``). It cannot
        know whether your key is secret: a release made from a known seed is not private either.
      lo, hi: the domain used.
      streams: True for `anonymize_streams` (the leading axis of ``records`` is the stream), False otherwise
        (then a leading axis holds repetitions of one stream); `sse` and `jaxdp.diagnostics` use it to refuse
        an input of the other kind.

    Everything here is either released by the mechanism or public (arrival order, ids, the
    configuration; see `jaxdp.privacy`). Numbers that compare the release with the raw input
    (values clipped, errors) are curator-only: `jaxdp.diagnostics.curator_diagnostics`.
    """

    records: np.ndarray
    index: np.ndarray
    delay: np.ndarray
    footrule: np.ndarray
    superseded: int
    dropped: int
    capped: int
    epsilon_spent: np.ndarray
    frame: np.ndarray
    info: object
    private: bool
    lo: np.ndarray
    hi: np.ndarray
    streams: bool = False

    def sse(self, records) -> np.ndarray:
        """Sum of squared errors against the input rows each released record came from.

        Curator-only diagnostic, NOT private: it reads the raw records (for benchmarks and tuning; never publish
        it with the release; `jaxdp.diagnostics` holds the others)."""
        from jaxdp.diagnostics import release_sse

        return release_sse(self, records)  # records [N, d], or every stream [S, N, d] for anonymize_streams


# ----------------------------------------------------------------------------------------------
# Frame planning (host side, public bookkeeping only)
# ----------------------------------------------------------------------------------------------


class Planner:
    """Incremental buffer: decides which input rows form each frame and when it is emitted."""

    def __init__(self, m: int, limit: int | None, cap: int | None = None):
        self.m = m
        self.limit = limit  # l, or None for "no limit"
        self.cap = cap  # k records per subject, or None
        self.buffer: OrderedDict = OrderedDict()  # subject -> input row (latest tuple)
        self.accepted = 0  # distinct records released or buffered
        self.per_subject: dict = {}  # subject -> records accepted (only with a cap)
        self.superseded = 0
        self.dropped = 0
        self.capped = 0
        self.full = False  # the limit l is reached while subjects with ids are buffered: only their updates enter
        self.closed = False
        # the arrival that opened the buffer: the delay runs from it. Found in review: the delay ran from the oldest
        # record *still* buffered, and an update moves its subject's record to the end, so subjects that kept
        # updating were never released before flush (nothing came out of 30 arrivals of two subjects at m = 4)
        self.opened: int | None = None

    def feed(self, row: int, subject) -> list[tuple[list[int], int]]:
        """Add input row `row` of `subject`; return the frames emitted ``(rows, release_row)``."""
        if self.closed:
            self.dropped += 1
            return []
        if subject in self.buffer:
            del self.buffer[subject]
            self.superseded += 1
        else:
            if self.full:  # no new record after the l-th; a buffered subject's update still replaces its record
                self.dropped += 1
                return self._overdue(row)
            if self.cap is not None:  # contribution bounding: at most k released records per subject
                seen = self.per_subject.get(subject, 0)
                if seen >= self.cap:
                    self.capped += 1
                    return self._overdue(row)
                self.per_subject[subject] = seen + 1
            self.accepted += 1
        self.buffer[subject] = row
        if self.opened is None:
            self.opened = row
        at_limit = self.limit is not None and self.accepted >= self.limit
        # at the limit, a frame of subjects with ids waits for their updates (the usual rules or the end emit
        # it); a frame of rows without ids cannot change any more, so it is emitted at once
        hold = at_limit and subject[0] == "id"
        if len(self.buffer) >= self.m or row - self.opened >= self.m - 1 or (at_limit and not hold):
            self.closed = at_limit
            return [self._emit(row)]
        self.full = at_limit
        return []

    def feed_distinct(self, first_row: int, count: int) -> tuple[list[tuple[list[int], int]], int]:
        """`feed` of rows ``first_row … first_row + count - 1``, each a new subject ``("row", r)``,
        in O(frames) steps (frames that start and end inside the call skip the buffer and hold
        their rows as an int array). Returns the frames emitted and how many rows came before the
        limit closed the stream (the rest are dropped)."""
        frames = []
        i = 0
        while i < count:
            if self.closed:
                self.dropped += count - i
                return frames, i
            if self.full:  # the limit is reached while subjects with ids are buffered: a new row is dropped and the
                # buffer emitted once its opener has waited m − 1 arrivals, as `feed` does (found in review: it was
                # emitted at once, a row early; at most m − 1 rows pass here before it closes)
                self.dropped += 1
                frames += self._overdue(first_row + i)
                i += 1
                continue
            size = len(self.buffer)
            if self.limit is not None and self.accepted >= self.limit and not size:  # nothing may enter
                self.closed = True
                continue
            j = i + (self.m - size) - 1  # the buffer reaches m records at offset j ...
            if size:  # ... or the arrival that opened it waits m - 1 rows ...
                j = min(j, max(i, self.opened + self.m - 1 - first_row))
            if self.limit is not None:  # ... or the limit l is reached
                j = min(j, i + (self.limit - self.accepted) - 1)
            stop = min(j, count - 1)
            self.accepted += stop - i + 1
            if stop == j and not size:  # a whole frame inside this call: no need to pass through the buffer
                self.closed = self.limit is not None and self.accepted >= self.limit
                frames.append((np.arange(first_row + i, first_row + j + 1), first_row + j))
                i = stop + 1
                continue
            for r in range(first_row + i, first_row + stop + 1):
                self.buffer[("row", r)] = r
            if self.opened is None:
                self.opened = first_row + i
            if stop == j:
                self.closed = self.limit is not None and self.accepted >= self.limit
                frames.append(self._emit(first_row + j))
            i = stop + 1
        return frames, count

    def _overdue(self, row: int) -> list[tuple[list[int], int]]:
        """An arrival that enters no frame (dropped or capped) still counts toward the delay: the buffer is
        emitted once the arrival that opened it has waited m − 1 arrivals (found in review: it waited until flush)."""
        if self.buffer and row - self.opened >= self.m - 1:
            self.closed = self.full  # at the limit nothing new can enter after this frame
            return [self._emit(row)]
        return []

    def flush(self, last_row: int) -> list[tuple[list[int], int]]:
        self.closed = self.closed or self.full  # the limit was reached: nothing new may enter after this
        return [self._emit(last_row)] if self.buffer else []

    def _emit(self, release_row: int) -> tuple[list[int], int]:
        rows = list(self.buffer.values())
        self.buffer.clear()
        self.opened = None
        return rows, release_row


def _column_names(records) -> tuple | None:
    """The column names of a pandas DataFrame or a pyarrow Table / RecordBatch, else None."""
    if hasattr(records, "column_names") and hasattr(records, "num_rows"):
        return tuple(str(c) for c in records.column_names)
    if hasattr(records, "to_numpy") and hasattr(records, "dtypes") and hasattr(records, "columns"):
        return tuple(str(c) for c in records.columns)
    return None


def _table_to_array(records):
    """A pandas DataFrame or a pyarrow Table of numeric columns as a float64 array [N, d] (column order kept)."""
    if hasattr(records, "column_names") and hasattr(records, "num_rows"):  # pyarrow Table / RecordBatch
        import pyarrow as pa

        cols = []
        for name, col in zip(records.column_names, records.columns):
            if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
                raise TypeError(f"column {name!r} has type {col.type}: pass only numeric columns (ids go to `ids=`).")
            cols.append(np.asarray(col.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64))
        return np.stack(cols, axis=1) if cols else np.zeros((records.num_rows, 0))
    if hasattr(records, "to_numpy") and hasattr(records, "dtypes") and hasattr(records, "columns"):  # DataFrame
        bad = [c for c, t in zip(records.columns, records.dtypes) if getattr(t, "kind", "O") not in "iuf"]
        if bad:
            raise TypeError(f"columns {bad} are not numeric: pass only numeric columns (ids go to `ids=`), e.g. "
                            "df[numeric_columns].to_numpy().")  # fmt: skip
        return records.to_numpy(dtype=np.float64)
    return records


def _check_records(records, d: int | None = None) -> np.ndarray:
    records = _table_to_array(records)
    if not hasattr(records, "shape"):
        try:
            records = np.asarray(records)
        except ValueError:  # found in review: NumPy's "inhomogeneous shape" message for ragged lists
            raise ValueError("records must be a rectangular [N, d] table: every record needs the same d attributes.") from None
    if records.ndim != 2 or records.shape[1] < 1:
        raise ValueError(f"records must have shape [N, d] with d >= 1, got {tuple(records.shape)}.")
    dt = np.dtype(records.dtype)
    if dt == np.bool_ or not (np.issubdtype(dt, np.floating) or np.issubdtype(dt, np.integer)):
        raise TypeError(f"records must be numeric, got dtype {dt}.")
    if d is not None and records.shape[1] != d:
        raise ValueError(f"records have {records.shape[1]} attributes, the stream has d = {d}.")
    return np.asarray(records)


def subject_keys(ids, n: int):
    """The planner's key of each record's subject: one key for equal ids in any of their forms (`_subject_key`),
    checked (one id per record, none missing); None for no ids. Every front end groups subjects by these keys,
    and so does the CLI when it counts the records a table with ids will release (found in review: it counted raw
    ids, so nanosecond timestamps truncated to microseconds merged subjects, and one string in two Unicode forms
    split one)."""
    if ids is None:
        return None
    if hasattr(ids, "to_pylist"):  # a pyarrow array
        ids = ids.to_pylist()
    elif hasattr(ids, "to_numpy") and not hasattr(ids, "shape"):
        ids = ids.to_numpy()
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__") or hasattr(ids, "shape") and np.ndim(ids) == 0:
        raise TypeError(f"ids must give one subject id per record (a list or array), got {type(ids).__name__}.")
    if hasattr(ids, "shape"):  # datetime64/timedelta64 keep their type (tolist() turns [ns] values into plain ints)
        arr = np.asarray(ids)
        if arr.ndim == 1 and arr.size == n and arr.dtype.kind in "iub":  # plain Python ints: already canonical keys
            return arr.tolist()
        if arr.ndim == 1 and arr.size == n and arr.dtype.kind in "mM" and not np.isnat(arr).any():
            ns = arr.astype(arr.dtype.str[:3] + "[ns]")  # whole-array keys, as `_subject_key` gives one by one
            if np.array_equal(ns.astype(arr.dtype), arr):  # (exact: no value beyond the ns range, none finer)
                tag = "datetime" if arr.dtype.kind == "M" else "timedelta"
                return [(tag, v) for v in ns.astype(np.int64).tolist()]
        ids = list(arr) if arr.dtype.kind in "mM" else arr.tolist()
    else:
        ids = list(ids)
    if len(ids) != n:
        raise ValueError(f"ids must give one subject per record: {len(ids)} ids for {n} records.")
    # a missing id (None, NaN) names no subject: each NaN would count as a new subject and escape the
    # per-subject bound (found in review); the message gives the position, never an id
    missing = next((i for i, v in enumerate(ids) if type(v) not in (str, int) and _missing_id(v)), None)
    if missing is not None:
        raise ValueError(f"ids[{missing}] is missing (None, NaN, NA or NaT): every record needs its subject's id (drop "
                         "those records, or give them ids), or pass no ids (then records_per_subject is your "
                         "declaration).")  # fmt: skip
    return [_subject_key(v) for v in ids]


_NS_PER_UNIT = {"W": 604_800 * 10**9, "D": 86_400 * 10**9, "h": 3_600 * 10**9, "m": 60 * 10**9, "s": 10**9,
                "ms": 10**6, "us": 10**3, "ns": 1}  # fmt: skip


def _ticks(t) -> Fraction:
    """A NumPy datetime64/timedelta64 as an exact count of nanoseconds (any unit; calendar units via days)."""
    unit, count = np.datetime_data(t.dtype)
    if unit in ("Y", "M"):  # calendar units: their days are exact
        t, unit, count = t.astype(t.dtype.str[:-3] + "[D]"), "D", 1
    step = {"ps": Fraction(1, 10**3), "fs": Fraction(1, 10**6), "as": Fraction(1, 10**9)}.get(unit)
    return int(t.astype(np.int64)) * count * (Fraction(_NS_PER_UNIT[unit]) if step is None else step)


def _subject_key(v):
    """The key that groups a subject's records: one key for equal ids in any of their forms. Found in review: the
    planner grouped ids with a dict, and equal ids that hash differently were two subjects, each released up to k
    times (a subject paid 2ε with ``records_per_subject=1``, release reported private) — the same dates pushed as a
    datetime64 array (``tolist()`` gives dates or ints) and as a list of its elements (NumPy scalars), a
    ``datetime.date`` beside a ``datetime64``, and one string in two Unicode forms (NFC/NFD). Now NumPy scalars
    become Python values, naive dates and times (``datetime``, ``date``, ``datetime64``, pandas' ``Timestamp``) and
    durations become exact nanosecond counts, and strings their NFC form. Keys stay inside the library (the CLI
    writes the ids as it read them). Merging two forms is safe: fewer records per key, never more."""
    if isinstance(v, str):
        return unicodedata.normalize("NFC", v)
    if isinstance(v, tuple):
        return tuple(_subject_key(e) for e in v)
    if isinstance(v, frozenset):
        return frozenset(_subject_key(e) for e in v)
    if hasattr(v, "to_datetime64") and getattr(v, "tzinfo", None) is None:  # pandas' Timestamp (keeps its ns)
        v = v.to_datetime64()
    elif hasattr(v, "to_timedelta64"):  # pandas' Timedelta
        v = v.to_timedelta64()
    if isinstance(v, datetime.date) and getattr(v, "tzinfo", None) is None:  # naive datetime and date
        v = np.datetime64(v)
    elif isinstance(v, datetime.timedelta):
        v = np.timedelta64(v)
    if isinstance(v, np.datetime64):
        return ("datetime", _ticks(v))
    if isinstance(v, np.timedelta64):
        return ("timedelta", _ticks(v))
    return v.item() if isinstance(v, np.generic) else v


def _missing_id(v) -> bool:
    """Whether an id names no subject: None, pandas' NA and NaT, and every value unequal to itself — a NaN of any
    type (Python, NumPy float32/64, Decimal, complex) and NumPy's NaT. Found in review: only Python floats were
    checked, so distinct float32 NaNs (what ``list(float32_array)`` gives), Decimal or complex NaNs each counted as
    a new subject (escaping the per-subject bound, release reported private), while pandas' NA / NaT merged their
    records into one subject. An id that cannot be hashed is refused."""
    if v is None or type(v).__name__ in ("NAType", "NaTType"):
        return True
    if isinstance(v, (tuple, frozenset)):  # found in review: ("a", NaN) ids each counted as a new subject
        return any(_missing_id(e) for e in v)
    try:
        hash(v)
    except TypeError:
        raise ValueError(f"ids must be hashable values (numbers, strings, tuples), got a {type(v).__name__}.") from None
    try:
        return bool(v != v)
    except ArithmeticError:  # a signalling Decimal NaN
        return True
    except (TypeError, ValueError):
        return False


class _Frames:
    """Frames as padded blocks, ready for the codec."""

    def __init__(self, config: HVCConfig, epsilon: float, lo, hi, limit: int, dtype):
        self.config, self.epsilon, self.lo, self.hi, self.limit = config, epsilon, lo, hi, limit
        self.dtype = dtype

    def blocks(self, get_rows, frames: list[tuple[list[int], int]]):
        """Padded blocks of `frames`; ``get_rows(rows)`` returns the raw records ``[k, d]`` of input rows.

        Returns ``(blocks [B, n, d], rows [B, n] (input row, -1 for padding), eps [B], frame [B])``; the
        blocks hold ``record − lo`` (float64 on the host), the coordinates the codec works in.
        Each frame is cut into ⌈r/n⌉ blocks; its last block is padded with the domain midpoint.
        """
        n = self.config.block_size
        mid = 0.5 * (self.lo + self.hi)
        d = mid.shape[0]
        if not frames:
            return (np.zeros((0, n, d)), np.zeros((0, n), np.int64), np.zeros(0), np.zeros(0, np.int64))
        sizes = np.fromiter((len(f[0]) for f in frames), np.int64, len(frames))
        per_frame = -(-sizes // n)  # blocks per frame
        first_slot = (np.cumsum(per_frame) - per_frame) * n  # flat slot of each frame's first record
        flat_rows = np.concatenate([np.asarray(f[0], np.int64) for f in frames])
        slots = np.repeat(first_slot - (np.cumsum(sizes) - sizes), sizes) + np.arange(flat_rows.shape[0])
        total = int(per_frame.sum()) * n
        rows = np.full(total, -1, np.int64)
        rows[slots] = flat_rows
        data = np.broadcast_to(mid - self.lo, (total, d)).copy()  # coded relative to lo (see `_shift_params`)
        data[slots] = get_rows(flat_rows) - self.lo
        eps = np.repeat(_frame_epsilon(self.config, self.epsilon, sizes, self.limit), per_frame)
        frame = np.repeat(np.arange(len(frames)), per_frame)
        return data.reshape(-1, n, d), rows.reshape(-1, n), eps, frame


def _block_keys(key, start: int, count: int, length: int | None = None):
    """Key of block j = fold_in(key, j) for j = start … start + count - 1 (``[count]`` or ``[R, count]``).

    With `length` > count, the keys are padded to `length` by repeating the last block's key (for
    padding steps whose outputs are dropped, see `_run_padded`). The indices are a host array, so
    this compiles once per length, not once per `start` (a `jnp.arange(start, ...)` is a new
    program for every start: one compile per `push`)."""
    length = count if length is None else length
    if start + count > _BASE_STREAMS[1]:
        raise ValueError(
            f"the stream reached block {start + count}: block keys are fold_in(key, j) with j < 2**32 - 2 (the "
            "last two indices key the frame-mean layer). Start a new stream with a fresh key."
        )
    idx = np.minimum(np.arange(start, start + length), start + count - 1)
    idx = idx.astype(np.int32 if start + count < 2**31 else np.int64)
    return _fold_in_jit(key, idx)


@jax.jit
def _fold_in_jit(key, idx):
    # One compiled program per (key shape, length): an eager vmap re-traced on every call (≈ 1.7 ms).
    if key.shape == ():
        return jax.vmap(lambda i: jax.random.fold_in(key, i))(idx)
    return jax.vmap(lambda k: jax.vmap(lambda i: jax.random.fold_in(k, i))(idx))(key)


def _run_padded(config, prm, state, blocks, key, start: int, pub, dtype, pad: bool):
    """`codec.run` on host arrays ``blocks [B, n, d]`` and `codec.BlockInputs` `pub` (``eps [B]``, ``base
    [(R,) B, d]``) with the block keys of `key` from index `start`. Returns ``(state, released
    [(R,) B, n, d], info)``, outputs as NumPy arrays.

    With `pad`, the run is padded to `codec.padded_length(B)` steps (copies of the last block and
    key), so that runs of similar length share one compiled program: a `StreamAnonymizer` fed
    chunks of varying size compiles a few programs, not one per chunk. The padding steps' outputs
    are dropped and their state is not used: the state after the B real steps is rebuilt from the
    released blocks, which is exactly what the codec keeps (the last π released blocks, most
    recent first, and how many exist), so the scan body is the same as without padding.
    """
    count = blocks.shape[0]
    length = codec.padded_length(count) if pad else count
    extra = length - count
    eps, base, energy = np.asarray(pub.eps), np.asarray(pub.base), np.asarray(pub.energy)
    if extra:
        blocks = np.concatenate([blocks, np.broadcast_to(blocks[-1:], (extra, *blocks.shape[1:]))])
        eps = np.concatenate([eps, np.broadcast_to(eps[..., -1:], (*eps.shape[:-1], extra))], axis=-1)
        base = np.concatenate([base, np.broadcast_to(base[..., -1:, :], (*base.shape[:-2], extra, base.shape[-1]))], axis=-2)
        energy = np.concatenate([energy, np.broadcast_to(energy[..., -1:], (*energy.shape[:-1], extra))], axis=-1)
    keys = _block_keys(key, start, count, length)
    pub = codec.BlockInputs(jnp.asarray(eps, dtype), jnp.asarray(base, dtype), jnp.asarray(energy, dtype))
    end_state, (released, info) = codec.run(config, prm, state, _host.device_array(blocks, dtype, overflow="inf"), keys, pub)
    released = np.asarray(released)[..., :count, :, :]
    info = jax.tree_util.tree_map(lambda a: np.asarray(a)[:, :count] if keys.ndim == 2 else np.asarray(a)[:count], info)
    if extra and keys.ndim == 1:
        pi = state.history.shape[0]
        history = np.concatenate([released[::-1][:pi], np.asarray(state.history)])[:pi]
        valid = min(int(state.valid) + count, pi)
        end_state = codec.CodecState(jnp.asarray(history, dtype), jnp.asarray(valid, jnp.int32))
    return end_state, released, info


_EPS_DOWN = 1.0 - 2.0**-45  # frames' budgets shrunk by this: their float sums stay within ε (below)


def _frame_epsilon(config: HVCConfig, epsilon: float, size, limit):
    """ε of a frame of `size` records: ε/k with `records_per_subject` = k, else the paper's ε·size/l — each shrunk
    by 2⁻⁴⁵ (relative), more than the rounding of computing it and of summing any number of them pairwise, so the
    budgets spent (and reported) add up to at most ε (found in review: 0.10000000000000002 of ε = 0.1)."""
    if config.records_per_subject is not None:
        return epsilon / config.records_per_subject * _EPS_DOWN * np.ones_like(np.asarray(size, np.float64))
    return epsilon * np.asarray(size, np.float64) / limit * _EPS_DOWN


def _plan_all(config: HVCConfig, n_rows: int, ids, limit):
    planner = Planner(config.frame_size, limit, config.records_per_subject)
    if ids is None:  # every row its own subject: what `Planner.feed` does, without a loop per row
        return plan_distinct(planner, n_rows), planner
    frames = []
    subjects = range(n_rows) if ids is None else ids
    for row, subject in enumerate(subjects):
        frames.extend(planner.feed(row, ("row", row) if ids is None else ("id", subject)))
    frames.extend(planner.flush(n_rows - 1))
    return frames, planner


def plan_distinct(planner: Planner, n_rows: int) -> list[tuple[np.ndarray, int]]:
    """Frames of `Planner` when all rows have distinct subjects (`Planner.feed_distinct` over all
    rows, then the final flush): consecutive runs of m rows up to the limit l, each released at
    its last row; rows after the limit are dropped."""
    frames, _ = planner.feed_distinct(0, n_rows)
    return frames + planner.flush(n_rows - 1)


_VARIANCE_SHARE = VARIANCE_SHARE  # of each frame's budget ε_f, spent on the frame's noisy column variances
# Blocks are coded only when the first coefficient's Laplace error is at most this fraction of the energy
# a coefficient holds on average (V/d per record for a residual spread evenly over the d columns). 1/4,
# chosen by measurement (benchmarks/bench_utility.py): at 1 the blocks went live on Census at ε_f = 30
# and did worse than spending the frame on its means (1.12× the frame-mean baseline's SSE).
_LIVE_FRACTION = 0.25
_BASE_STREAMS = (2**32 - 1, 2**32 - 2)  # fold_in indices of the layer's two queries (block keys use j < 2³² − 2)


class _FrameMeans:
    """The frame-mean layer: each frame's noisy column means (and variances), and their running estimates.

    Frame f of r records (distinct subjects), budget ε_f, in the codec's coordinates x = record − lo ∈ [0, Λ]:

    1. *Could the blocks help at all?* A public rule: the cheapest one-coefficient block release is worth
       it only if ``lap₁/(ε_QL·ε_f)² ≤ ¼·V/d`` (lap₁ from the public quantizer tables, ε_QL = the blocks'
       Laplace share of (1 − s)·ε_f, V the records' variance summed over columns, V/d the energy per
       coefficient of a residual spread evenly over a block's n·d coefficients). With V ≤ ΣΛ²/4 (bounded
       values) this is checked first on public values only; if it fails, steps 2–3 are skipped.
    2. Otherwise the column variances ``Σ_i (x_i − x̄)²/r + Lap(ΣΛ²/(r·ε_v))``, ε_v = 5 % of ε_f: one record
       changes a column's sum of squared deviations by at most Λ²(1 − 1/r) (brute-force checked in the
       tests), so the vector of variances moves by at most ΣΛ²/r in L1.
    3. The blocks are *live* iff the rule of step 1 holds with V = the running noisy variance (public).
    4. The column means ``x̄_f,j + Lap(Λ_j/(r·ε_μ,j))`` with ε_μ,j = ε_μ·Λ_j^{2/3}/ΣΛ^{2/3} (Theorem 1's split,
       which minimizes the total squared noise; each column's mean has sensitivity Λ_j/r) and
       ε_μ = s·ε_f − ε_v when the blocks are live (they get (1 − s)·ε_f), ε_f − ε_v when not (the blocks then
       release the base and spend nothing).

    The frame spends ε_f in all (sequential composition of its queries; its blocks hold distinct subjects
    and compose in parallel). Keys: ``fold_in(fold_in(key, 2³² − 1 or 2³² − 2), f)`` (block keys are
    ``fold_in(key, j)`` with j < 2³² − 2). The base that the "frame_mean" mode predicts from is the local-level
    filter's estimate y (`local_level`) from the noisy means of frames 1 … f and their public noise variances
    2(unit_j/(r·ε_μ))²: weighted towards recent frames when the drift estimated from the released means is
    positive, else their inverse-variance weighted average (fourteenth session; measured in RESULTS),
    replaced column by column by its posterior mean for a mean uniform on the public domain: the mean of N(y, σ²) truncated to
    [lo, hi], σ² the filter's variance of y (from the public noise variances and the drift estimate). It tends to the
    midpoint where σ ≫ the width, to y where σ is small, and stays near an edge where y is near it (the
    positive-part James–Stein shrinkage towards the midpoint it replaced pulled columns near an edge inward: up to
    1.5× the frame-mean baseline's error over the public Census domain; measured in RESULTS). The blocks' residual
    energy estimate n·V also prunes their hopeless (t, σ) candidates.
    Everything after the queries is post-processing of released values. The running sums are carried
    between calls, so a stream pushed in pieces gets the estimates of one batch call.
    """

    def __init__(self, config: HVCConfig, width: np.ndarray):
        from jaxdp.hvc import quantize

        self.share = config.frame_mean_share
        self.noise = config.noise
        self.n = config.block_size
        self.frame_blocks = config.frame_blocks
        self.width = np.asarray(width, np.float64)
        self.sens = np.asarray([np.sum(self.width), np.sum(self.width**2)])
        self.eps_ql = config.budget_split[0] * (1.0 - self.share)  # blocks' Laplace share of ε_f, when live
        # The means' budget is split over the columns as in Theorem 1 (ε_j ∝ Λ_j^{2/3}, the allocation that
        # minimizes the total squared noise Σ_j 2(Λ_j/(r·ε_j))² under Σ_j ε_j = ε_μ): column j's noise scale is
        # Λ_j^{1/3}·ΣΛ^{2/3}/(r·ε_μ) = scale_unit_j/(r·ε_μ), never more in total than one scale ΣΛ/(r·ε_μ)
        # for all columns, and far less on narrow columns.
        g = self.width ** (2.0 / 3.0)
        self.alloc = g / np.sum(g)
        self.scale_unit = self.width / self.alloc
        if self.share:
            bounds = np.stack([np.zeros_like(self.width), self.width])
            tab = quantize.tables(self.n, bounds, kinds=config.kinds, order=config.order, accounting=config.accounting)
            self.lap1 = float(np.min(tab.laplace_mse[:, 1]))  # Laplace error of t = 1 at ε_QL = 1 (public)
        self.unasked = 0  # frames released without a query of their own (grid: budgets the sampler cannot take)
        self.sums = None  # running weighted sums of the noisy variances [(R,) d]
        self.weights = None  # their total weights [(R,)]
        self.level = None  # the column means' local-level filter (`LevelState`), carried between calls
        self.frames = 0

    def frame_epsilon_for_blocks(self) -> tuple[float, float | None]:
        """The frame budget ε_f the blocks need to go live (step 1 and 3 of the class notes): ``(whatever the data,
        at the spread seen so far)``. The first reads public values only (V at its largest, ΣΛ²/4); the second the
        running noisy column variances released so far (post-processing; None before any variance was asked, or
        with replications). NaN where the layer is off (`frame_mean_share` 0). For the CLI's advice when a release
        carried frame means only (found in review: it said "raise --epsilon or --delay", and neither helped at any
        plausible size on the bundled Census)."""
        if not self.share:
            return float("nan"), None
        d = self.width.shape[0]

        def needed(energy):  # the smallest ε_f with lap₁/(ε_QL·ε_f)² ≤ _LIVE_FRACTION·energy/d (the rule of `estimates`)
            with np.errstate(over="ignore", divide="ignore"):
                return float(np.sqrt(d * self.lap1 / (_LIVE_FRACTION * energy)) / self.eps_ql)

        seen = None
        if self.weights is not None and np.ndim(self.weights) == 0 and self.weights > 0:
            seen = needed(float(np.sum(np.maximum(self.sums / self.weights, 0.0))))  # the running noisy variance
        return needed(np.sum(self.width**2) / 4), seen  # V at its largest, ΣΛ²/4

    def grid_frames(self, sizes, eps_frames, possible):
        """With ``noise="grid"``: ``(asked, possible)`` per frame — the means query is asked where the exact sampler
        takes its budgets and values (ratio b/γ in [1, 2²⁹), means and variances within the grid's range), the
        variance query where, in addition, the blocks could be live. Public values only. Found in review: a frame
        outside the range raised in the middle of a stream after the planner had let go of its rows (lost)."""
        from jaxdp import mechanisms

        d = self.width.shape[0]
        sens_v = self.sens[1] / sizes
        ok_v = mechanisms.grid_ratio_ok(epsilon=_VARIANCE_SHARE * eps_frames, sensitivity=sens_v, coordinates=d)
        ok_v &= np.max(self.width) ** 2 / 4 <= np.asarray([mechanisms.grid_value_limit(sensitivity=s, coordinates=d)
                                                           for s in sens_v])  # fmt: skip
        possible = possible & ok_v

        def means_ok(eps_means):
            ok = np.all(mechanisms.grid_ratio_ok(epsilon=eps_means[:, None] * self.alloc[None, :],
                                                 sensitivity=self.width[None, :] / sizes[:, None]), axis=1)
            return ok & np.all([[w <= mechanisms.grid_value_limit(sensitivity=w / r) for w in self.width]
                                for r in sizes], axis=1)  # fmt: skip

        # the means' budget: s·ε_f − ε_v where the blocks may go live (public rule), else all of ε_f; a frame
        # whose blocks could go live but whose means could then not be sampled gives its blocks up
        possible = possible & means_ok(self.share * eps_frames - _VARIANCE_SHARE * eps_frames)
        # ... and at ε_f − ε_v, what the means get when the noisy variance keeps the blocks off (found in review: that
        # budget was never checked; at large ε_f its ratio fell below the grid's range and more noise was added than
        # the estimate's weights assume)
        possible = possible & means_ok(eps_frames - _VARIANCE_SHARE * eps_frames)
        asked = possible | means_ok(eps_frames)
        return asked, possible

    def check_full_frame(self, eps_full: float, size: int | None = None) -> None:
        """With ``noise="grid"``, refuse before the stream starts a configuration whose full frames (m records at
        ε_f = `eps_full`) the exact sampler cannot take: the refusal names the limit (smaller, partial frames that
        cannot be sampled are released without a query of their own, with a warning)."""
        from jaxdp import mechanisms

        if mechanisms.kernel_noise(mechanisms.check_noise(self.noise)) != "grid" or self.share == 0.0:
            return
        m = float(self.n * self.frame_blocks if size is None else size)
        asked, _ = self.grid_frames(np.asarray([m]), np.asarray([eps_full]), np.asarray([True]))
        if not asked[0]:  # the checks that failed, raising with their messages
            mechanisms.check_grid_ratio(epsilon=eps_full * self.alloc, sensitivity=self.width / m)
            for w in self.width:
                mechanisms.check_grid_values(float(w), sensitivity=w / m, what="frame means")

    def check_largest_frame(self, config: HVCConfig, epsilon: float, frames, limit) -> None:
        """`check_full_frame` for a run's largest frame (smaller ones are released without a query)."""
        if frames:
            largest = max(len(f[0]) for f in frames)
            self.check_full_frame(float(_frame_epsilon(config, epsilon, [largest], limit)[0]), largest)

    def estimates(self, key, moments: np.ndarray, sizes: np.ndarray, eps_frames: np.ndarray):
        """For the next F frames, from the raw ``moments [2, F, d]`` (column means, column variances):
        ``(base [(R,) F, d], energy per record [(R,) F], blocks' share of ε_f [(R,) F])``."""
        f, d = moments.shape[1:]
        if self.share == 0.0 or f == 0:
            reps = key.shape
            return np.zeros((*reps, f, d)), np.full((*reps, f), np.inf), np.ones((*reps, f))
        from jaxdp import mechanisms

        kernel = mechanisms.check_noise(self.noise)
        kernel = mechanisms.kernel_noise(kernel)
        dtype = jnp.zeros(()).dtype
        reps = key.shape
        # F rows padded to a power of two, so that pushes of any size share a few compiled programs: each row
        # draws from its own key (frame index), so the padding rows (budget and sensitivity 1, value 0,
        # dropped) leave the real rows' draws unchanged
        fp = 1 << max(f - 1, 0).bit_length()
        idx = jnp.asarray(np.arange(self.frames, self.frames + fp, dtype=np.uint32))

        # the grid sampler snaps values to its grid γ; in float32 a mean rounds by up to half its ulp first, which
        # exceeds γ in frames of more than 2¹⁶ records, beyond the snap allowance the noise is calibrated for (found
        # in review: 1.06·ε for the means of a frame of 10⁶ records). The exact release runs in float64.
        wide = jax.enable_x64(True) if kernel == "grid" else contextlib.nullcontext()

        def release(q, values, eps, alloc, sens, coordinates, rows_of=sizes):  # values [F, d], eps [(R,) F]
            eps = np.broadcast_to(eps, (*reps, f))[..., None] * alloc  # [(R,) F, d]: column j gets a share
            rows = ((0, fp - f), (0, 0))
            with wide:
                dt = jnp.float64 if kernel == "grid" else dtype
                out = _noisy_rows(key, jnp.asarray(np.pad(values, rows), dt),
                                  jnp.asarray(np.pad(eps, ((0, 0),) * len(reps) + rows, constant_values=1.0), dt),
                                  jnp.asarray(np.pad(sens[None, :] / rows_of[:, None], rows, constant_values=1.0), dt),
                                  idx, np.uint32(_BASE_STREAMS[q]), np.int32(coordinates), kernel)
                return np.asarray(out, np.float64)[..., :f, :]  # fmt: skip

        def running(noisy, w):  # inverse-variance weighted running average over frames (and earlier calls)
            # the carried sums start the cumulative sum, so that a stream pushed in pieces adds in the batch
            # order (found in review: added after it, float64 streams differed from the batch run by 2e-15)
            terms, weights = noisy * w[..., None], np.asarray(w, np.float64)
            if self.sums is not None:
                terms = np.concatenate([self.sums[..., None, :], terms], axis=-2)
                weights = np.concatenate([self.weights[..., None], weights], axis=-1)
                return np.cumsum(terms, axis=-2)[..., 1:, :], np.cumsum(weights, axis=-1)[..., 1:]
            return np.cumsum(terms, axis=-2), np.cumsum(weights, axis=-1)

        # The variance query is asked only where the blocks could be live whatever the data: with V ≤ ΣΛ²/4
        # (the largest variance of values in [0, Λ]); elsewhere (small ε_f) the whole frame goes to the means.
        with np.errstate(over="ignore"):  # a tiny ε_f or a huge domain: inf compares as it should
            possible = self.lap1 / (self.eps_ql * eps_frames) ** 2 <= _LIVE_FRACTION * np.sum(self.width**2) / (4 * d)
        asked = np.ones(f, bool)  # frames whose means are queried
        if kernel == "grid":  # public budgets and sizes: what the exact sampler can take, frame by frame
            asked, possible = self.grid_frames(sizes, eps_frames, possible)
            if not asked.all():  # (a full frame that cannot be sampled is refused before the stream starts)
                self.unasked += int(np.sum(~asked))
                warnings.warn(GridFrameWarning(
                    f"{int(np.sum(~asked))} frame(s) too small for the exact sampler at their budget (the ratio b/γ "
                    "out of its range) were released as the estimate from earlier frames, without a query "
                    "of their own (their budget is unspent, still reported as spent)."), stacklevel=4)  # fmt: skip
        eps_v = np.where(possible, _VARIANCE_SHARE, 0.0) * eps_frames
        w_v = np.broadcast_to((sizes * eps_v) ** 2, (*reps, f))
        masked = np.where(possible[:, None], moments[1], 0.0)  # frames not asked: nothing of the data enters
        # the variances: one joint query (L1 sensitivity ΣΛ²/r over the d columns, all of which may move)
        noisy_v = release(1, masked, np.where(possible, eps_v, 1.0), np.ones(d), np.full(d, self.sens[1]), d)
        v_sum, v_tot = running(noisy_v, w_v)  # zero weight where not asked
        energy = np.sum(np.maximum(v_sum / np.maximum(v_tot, 1e-300)[..., None], 0.0), axis=-1)  # [(R,) F]
        with np.errstate(over="ignore"):
            live = possible & (self.lap1 / (self.eps_ql * eps_frames) ** 2 <= _LIVE_FRACTION * energy / d)
        eps_mu = np.where(live, self.share, 1.0) * eps_frames - eps_v
        # the means: column j its own query (sensitivity Λ_j/r, budget ε_μ·alloc_j); a frame not asked gets a dummy
        # row (value 0, budget 1, one record: in the sampler's range) and no weight
        noisy_mu = release(0, np.where(asked[:, None], moments[0], 0.0), np.where(asked, eps_mu, 1.0), self.alloc,
                           self.width, 1, np.where(asked, sizes, 1.0))  # fmt: skip
        w_mu = np.broadcast_to(np.where(asked, (sizes * eps_mu) ** 2, 0.0), (*reps, f))
        # column j's noise variance 2(unit_j/(r·ε_μ))² (inf: not asked), in units of the column's width, so that
        # the filter's sums of squares neither overflow nor underflow on huge or tiny domains (found in review:
        # above ≈ 10¹⁵³ they overflowed and the estimates turned NaN)
        with np.errstate(over="ignore", divide="ignore"):
            var_mu = np.where(w_mu[..., None] > 0, 2.0 * (self.scale_unit / self.width) ** 2 / w_mu[..., None], np.inf)
        y, var_y, self.level = local_level(noisy_mu / self.width, var_mu, self.level)
        self.sums, self.weights = v_sum[..., -1, :], v_tot[..., -1]
        self.frames += f
        # Each column's estimate y, replaced by its posterior mean for a mean uniform on the domain [0, Λ]
        # given y ~ N(mean, σ²), σ the public s.d. of y: the mean of N(y, σ²) truncated to [0, Λ] (post-processing
        # of released values and public sizes).
        # Found in review: at ε = 1e-4 on a ±1e150 domain an earlier estimate was inf/inf and NaN records were
        # released; `truncated_normal_mean` gives the midpoint (public) wherever y or σ is not finite.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # huge domains: inf/inf handled there
            base = truncated_normal_mean(y * self.width, np.sqrt(var_y) * self.width, self.width)
        return base, energy, np.where(live, 1.0 - self.share, 0.0)


_LEVEL_Z = 3.0  # the local-level filter's drift estimate: standard errors subtracted (below)
_LEVEL_BURN_IN = 3  # ... and the differences of frame means it needs before it is used


class LevelState(NamedTuple):
    """The state of `local_level` after a run of frames (float64 NumPy arrays ``[(R,) d]``; ``count`` ``[(R,) d]``
    integer): the estimate and its variance, the last observed mean and its variance, and the drift statistics."""

    estimate: np.ndarray
    variance: np.ndarray
    last_mean: np.ndarray
    last_variance: np.ndarray
    drift_sum: np.ndarray
    drift_fourth: np.ndarray
    count: np.ndarray


def local_level(means, variances, state: LevelState | None = None, *, z: float = _LEVEL_Z,
                burn_in: int = _LEVEL_BURN_IN) -> tuple[np.ndarray, np.ndarray, LevelState]:
    """A local-level (random walk plus noise) filter over the frames' noisy column means, column by column:
    post-processing of released values and their public noise variances.

    Model: frame f's mean μ_f = μ_{f−1} + drift (variance q), observed as ``means[f] = μ_f + noise`` (variance
    ``variances[f]``; ``inf`` where a frame was not observed). The filter's estimate of μ_f after frame f and its
    variance: with q = 0 they are the inverse-variance weighted average of every observation so far and one over
    the sum of the weights (the frame-mean layer's estimate before the fourteenth session); with q > 0 earlier
    frames weigh less, so a stream whose means move (a season, a trend) is followed. q is estimated from the
    released means themselves: the mean of ``(m_f − m_{f−1})² − v_f − v_{f−1}`` over the consecutive observed
    pairs so far, less `z` standard errors of that sum where q = 0 (the square of a difference of two Laplace
    draws of variances v₁, v₂ has variance 5v₁² + 4v₁v₂ + 5v₂², and consecutive squares share a draw, which adds
    2·5v² per shared frame), clipped at 0, and 0 until `burn_in` differences were seen. A pair of observed frames
    with unobserved ones between them counts as one step. A stationary stream keeps q = 0 throughout in most
    runs (the tests: 88 % of runs of 12 frames × 3 columns; fewer on long streams, measured in RESULTS). What it gains on
    time-ordered data and costs on still data is measured in RESULTS ("Utility against the strongest simple
    baselines"). The statistics are sums of squares of the inputs: pass them in moderate units (the frame-mean
    layer passes them in units of each column's width, so the filter does not depend on the domain's scale).

    Args:
      means: ``[(R,) F, d]`` float64, the frames' noisy column means.
      variances: ``[(R,) F, d]`` float64, their public noise variances (``inf``: not observed).
      state: the state a previous call returned (a stream pushed in pieces gets the estimates of one call).
      z, burn_in: the drift estimate's safety margin and the differences it needs (public constants).

    Returns:
      ``(estimates [(R,) F, d], variances [(R,) F, d], state)``; an estimate is NaN (variance inf) before any
      observation. An unobserved frame (variance inf) leaves the estimate as it was, whatever its mean; a
      zero-variance observation replaces it.
    """
    means = np.asarray(means, np.float64)
    variances = np.asarray(variances, np.float64)
    shape = means.shape[:-2] + means.shape[-1:]
    f = means.shape[-2]
    if state is None:
        nan, inf, zero = np.full(shape, np.nan), np.full(shape, np.inf), np.zeros(shape)
        state = LevelState(nan, inf, nan, inf, zero, zero.copy(), np.zeros(shape, np.int32))
    if f == 0:
        return np.zeros(means.shape), np.zeros(means.shape), state
    # one compiled loop (`lax.scan`, float64) over the frames, padded to a power of two with unobserved frames
    # (variance inf: they change nothing but the variance after the last real frame, which is not used), so that
    # runs of any length share a few programs; sequential, so a stream pushed in pieces gets one call's bits
    fp = 1 << (f - 1).bit_length()
    pad = ((0, 0),) * (means.ndim - 2) + ((0, fp - f), (0, 0))
    with jax.enable_x64(True):
        est, var, carry = _local_level_scan(
            tuple(jnp.asarray(a, jnp.int32 if i == 6 else jnp.float64) for i, a in enumerate(state)),
            jnp.asarray(np.moveaxis(np.pad(means, pad), -2, 0)),
            jnp.asarray(np.moveaxis(np.pad(variances, pad, constant_values=np.inf), -2, 0)),
            jnp.float64(z), jnp.int32(burn_in))  # fmt: skip
        est, var = np.moveaxis(np.asarray(est), 0, -2), np.moveaxis(np.asarray(var), 0, -2)
        carry = [np.asarray(a) for a in carry]
    carry[1] = var[..., f - 1, :]  # the variance after the last real frame (the padding only predicts)
    return est[..., :f, :], var[..., :f, :], LevelState(*carry)


@jax.jit
def _local_level_scan(state, means, variances, z, burn_in):
    """`local_level`'s loop: ``means``, ``variances`` ``[F, (R,) d]`` float64 → the estimates and variances
    ``[F, (R,) d]`` and the final carry."""

    def step(carry, frame):
        x, p, last_m, last_v, d_sum, d_four, count = carry
        m, v = frame
        seen = jnp.isfinite(v)
        pair = seen & jnp.isfinite(last_v)  # a difference of two observed frames' means
        d_sum = jnp.where(pair, d_sum + (m - last_m) ** 2 - v - last_v, d_sum)
        # Var((L₁ − L₂)²) = 5v₁² + 4v₁v₂ + 5v₂² for Laplace noises of variances v₁, v₂, and consecutive squares share
        # a draw: Cov = Var(L²) = 5v² (twice, in the variance of the sum)
        shared = jnp.where(count > 0, 10.0 * last_v**2, 0.0)
        d_four = jnp.where(pair, d_four + 5.0 * v**2 + 4.0 * v * last_v + 5.0 * last_v**2 + shared, d_four)
        count = count + pair.astype(count.dtype)
        q = (d_sum - z * jnp.sqrt(d_four)) / jnp.maximum(count, 1).astype(d_sum.dtype)
        q = jnp.where((count >= burn_in) & jnp.isfinite(q) & (q > 0.0), q, 0.0)  # (inf − inf: no drift estimate)
        first = seen & ~jnp.isfinite(p)
        prior = p + q
        denominator = prior + v
        gain = jnp.where(denominator > 0.0, prior / denominator, 1.0)  # (two zero variances: take the new mean)
        x = jnp.where(first, m, jnp.where(seen, x + gain * (m - x), x))
        p = jnp.where(first, v, jnp.where(seen, (1.0 - gain) * prior, prior))
        last_m, last_v = jnp.where(seen, m, last_m), jnp.where(seen, v, last_v)
        carry = (x, p, last_m, last_v, d_sum, d_four, count)
        return carry, (x, p)

    carry, (est, var) = jax.lax.scan(step, state, (means, variances))
    return est, var, carry


def truncated_normal_mean(y, sd, width) -> np.ndarray:
    """The mean of N(y, sd²) truncated to [0, width], elementwise (float64 NumPy arrays, broadcast): the posterior
    mean of a mean uniform on the domain given a noisy value y. The midpoint where y or sd is not finite, sd is 0,
    or sd > 10¹²·width (it tends to the midpoint).

    Closed form y + sd·(φ(α) − φ(β))/(Φ(β) − Φ(α)), α = −y/sd, β = (width − y)/sd, evaluated stably in the
    interval's standardized centre c = |width/2 − y|/sd ≥ 0 and half-width h = width/(2·sd) (reflected so that y
    lies on the lower side): a narrow interval (h·max(c, 1) < 10⁻⁴) by its expansion, width/2 minus c·h²/3
    standard deviations; an interval wholly on one side of y (c ≥ h) by the Mills ratio (`erfcx`: no underflow,
    no 0/0), as the near edge plus the inward offset, which keeps its digits however far y lies outside (beyond
    10⁴ standard deviations, the offset's exponential limit (1/ℓ)·(1 − t/(eᵗ − 1)), t = 2hℓ, ℓ = c − h); else
    through `ndtr`. Checked against `scipy.stats.truncnorm` in the tests."""
    from scipy.special import erfcx, ndtr  # (imported here: `import jaxdp` stays light)

    y, sd, width = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (y, sd, width)))
    out = np.array(0.5 * width)
    with np.errstate(all="ignore"):
        ok = np.isfinite(y) & np.isfinite(sd) & (sd > 0) & (sd < 1e12 * width)
    if not ok.any():
        return out
    yy, ss, ww = y[ok], sd[ok], width[ok]
    with np.errstate(all="ignore"):
        upper = yy > 0.5 * ww  # y above the centre: reflect, so that the interval lies above y
        c, h = np.abs(0.5 * ww - yy) / ss, 0.5 * ww / ss
        lo, hi = c - h, c + h
        # one-sided (lo ≥ 0): the mean's offset from the near edge, m − lo, from the Mills ratio
        r = np.exp(-2.0 * h * c)  # φ(hi)/φ(lo)
        tail = np.sqrt(2.0 / np.pi) * (1.0 - r) / (erfcx(lo / np.sqrt(2.0)) - r * erfcx(hi / np.sqrt(2.0))) - lo
        t = 2.0 * h * lo
        far = np.where(t > 0, 1.0 - t / np.expm1(t), 0.0) / lo  # its limit far out (relative error ≈ 1/ℓ²)
        inward = np.clip(np.where(lo > 1e4, far, tail), 0.0, 2.0 * h)
        edge = np.where(upper, ww - ss * inward, ss * inward)
        # straddling (lo < 0 < hi, y inside the domain): directly
        phi_lo, phi_hi = np.exp(-0.5 * lo * lo), np.exp(-0.5 * hi * hi)
        m = (phi_lo - phi_hi) / np.sqrt(2.0 * np.pi) / (ndtr(hi) - ndtr(lo))
        inside = yy + np.where(upper, -ss * m, ss * m)
        narrow = 0.5 * ww - np.where(upper, -1.0, 1.0) * ss * c * h * h / 3.0
        est = np.where(h * np.maximum(c, 1.0) < 1e-4, narrow, np.where(lo >= 0.0, edge, inside))
    # a value that is still not finite (overflow at the extremes): the limit, the nearest edge
    out[ok] = np.clip(np.where(np.isfinite(est), est, yy), 0.0, ww)
    return out


@functools.partial(jax.jit, static_argnums=(7,))
def _noisy_rows(key, values, eps, sens, idx, stream, coordinates, noise):
    """``values [F, d]`` + Laplace(sens/eps) (``eps [(R,) F, 1]``), frame f with key ``fold_in(fold_in(key,
    stream), idx[f])``; `key` ``[]`` or ``[R]`` → ``[(R,) F, d]``. `coordinates`: of a row, how many one record
    can move under one budget (`mechanisms.laplace_mechanism`; matters for the grid sampler only). `stream` and
    `coordinates` are traced, not static, so that the means and the variances query share one program (a
    first call compiled it twice)."""
    from jaxdp import mechanisms

    def one(k, e):
        k_q = jax.random.fold_in(k, stream)
        keys = jax.vmap(lambda i: jax.random.fold_in(k_q, i))(idx)
        return jax.vmap(lambda kk, m, ee, s: mechanisms.laplace_mechanism(kk, m, epsilon=ee, sensitivity=s, noise=noise,
                                                                          coordinates=coordinates))(keys, values, e, sens)  # fmt: skip

    return one(key, eps) if key.shape == () else jax.vmap(one)(key, eps)


def _frame_raw_moments(blocks, rows, block_frame, n_frames):
    """Column means and (population) variances of each frame's real records ``[2, F, d]`` (codec
    coordinates) and the frame sizes ``[F]``."""
    real = rows.reshape(-1) >= 0  # [B·n]
    d = blocks.shape[-1]
    fr = np.repeat(block_frame, blocks.shape[1])[real]
    x = blocks.reshape(-1, d)[real]
    sizes = np.bincount(fr, minlength=n_frames).astype(np.float64)
    sums = np.zeros((n_frames, d))
    np.add.at(sums, fr, x)
    mean = sums / np.maximum(sizes, 1.0)[:, None]
    dev = np.zeros((n_frames, d))
    np.add.at(dev, fr, (x - mean[fr]) ** 2)
    return np.stack([mean, dev / np.maximum(sizes, 1.0)[:, None]]), sizes


def _block_inputs(config, epsilon, layer: _FrameMeans, key, blocks, rows, eps, block_frame, frames, limit, dtype):
    """`codec.BlockInputs` for a run: the blocks' budgets and the frame-mean layer's estimates for them
    (base row of the block's frame; residual energy = real rows × the frame's energy per record + the
    public padding rows' squared distance to the base)."""
    eps_frames = _frame_epsilon(config, epsilon, [len(f[0]) for f in frames], limit)
    # what the codec codes: NaN → the midpoint, everything clipped into the domain (as `codec._step` does)
    clamped = np.clip(np.where(np.isnan(blocks), 0.5 * layer.width, blocks), 0.0, layer.width)
    moments, sizes = _frame_raw_moments(clamped, rows, block_frame, len(frames))
    base, energy, share = layer.estimates(key, moments, sizes, eps_frames)  # [(R,) F, d], [(R,) F], [(R,) F]
    base_b = base[..., block_frame, :]  # [(R,) B, d]
    real = np.sum(rows >= 0, axis=1)  # [B]
    pad_energy = (blocks.shape[1] - real) * np.sum((0.5 * layer.width - base_b) ** 2, axis=-1)
    energy_b = real * energy[..., block_frame] + pad_energy
    eps_b = share[..., block_frame] * eps  # 0 for the blocks of a frame whose blocks are not live
    # the budgets rounded toward 0: never above the frame's share (the frames' 2⁻⁴⁵ shrink does not survive a float32
    # cast to nearest: found in an audit of the tests, two frames of ε = 1 spent 1.0000000149)
    return codec.BlockInputs(jnp.asarray(_host.round_toward_zero(eps_b, dtype)), jnp.asarray(base_b, dtype),
                             jnp.asarray(energy_b, dtype))


def _shift_params(config, lo, hi, dtype):
    """Codec tables for the shifted domain ``[0, hi − lo]``.

    The codec works on ``record − lo`` (computed in float64 on the host) and adds ``lo`` back to what it
    releases: every mechanism depends only on the domain's widths (sensitivities, clipping to the domain,
    the midpoint prediction), so the output distribution is the same, but float32 keeps its resolution for
    a narrow domain far from zero (e.g. [10⁹, 10⁹ + 1], where float32 steps are 64 wide).
    """
    return codec.params(config, np.zeros_like(lo), hi - lo, dtype)


def _output_dtype(lo, hi, dtype):
    """float64 when float32 cannot resolve the domain near its ends (|bound| > 2¹⁰ × width), else `dtype`."""
    far = np.max(np.maximum(np.abs(lo), np.abs(hi)) / (hi - lo)) > 2.0**10
    return np.dtype(np.float64) if far else np.dtype(dtype)


def _unshift(x, lo, out_dtype, hi=None):
    """Records back in data coordinates; with `hi` (clip_output) clipped again to [lo, hi] after the shift: the
    codec clips x − lo in its dtype, and lo + x can round past hi (found in review: 1.8e-15 above hi on a narrow
    domain away from zero). Post-processing."""
    out = np.asarray(x, np.float64) + lo
    return out.astype(out_dtype) if hi is None else _cast_within(out, lo, hi, out_dtype)


def _cast_within(x, lo, hi, dtype):
    """float64 records clipped to [lo, hi] and cast to `dtype` so that they stay inside (a bound that `dtype`
    cannot hold is replaced by the nearest value of `dtype` inside the domain). Post-processing."""
    out = np.clip(np.asarray(x, np.float64), lo, hi).astype(dtype)
    if out.dtype != np.float64:  # the cast may round past the bounds: pull those back in
        lo_c, hi_c = (np.asarray(b).astype(dtype) for b in (lo, hi))
        lo_c = np.where(lo_c < lo, np.nextafter(lo_c, np.asarray(np.inf, dtype)), lo_c)
        hi_c = np.where(hi_c > hi, np.nextafter(hi_c, np.asarray(-np.inf, dtype)), hi_c)
        out = np.clip(out, lo_c, hi_c)
    return out


def _release(released, rows, perm, frames, block_frame):
    """Released records of real rows in release order (inside a block: the coded order ψ).

    `perm` is ``[B, n]`` or ``[R, B, n]`` (repetitions); position k of block j holds block row
    ``perm[j, k]``. Padding rows (row −1) are never released.
    """
    rows_b = np.broadcast_to(rows, perm.shape)
    rows_p = np.take_along_axis(rows_b, perm, axis=-1)  # input row at each released position
    disp = np.abs(perm - np.arange(rows.shape[-1]))
    mask = rows_p >= 0
    if perm.ndim == 3:  # repetitions: each block releases the same count, so stacking is safe
        index = np.stack([rows_p[r][mask[r]] for r in range(perm.shape[0])])
        out = np.stack([released[r][mask[r]] for r in range(perm.shape[0])])
        footrule = np.stack([disp[r][mask[r]] for r in range(perm.shape[0])])
        if np.all(index == index[:1]):
            index, footrule = index[0], footrule[0]
    elif mask.all():  # no padding rows: the blocks in order are the release (a copy, no gather)
        index, out, footrule = rows_p.reshape(-1), np.array(released.reshape(-1, released.shape[-1])), disp.reshape(-1)
    else:
        index, out, footrule = rows_p[mask], released[mask], disp[mask]
    blk = np.broadcast_to(np.arange(rows.shape[0])[:, None], rows.shape)[rows >= 0]
    release_row = np.fromiter((f[1] for f in frames), np.int64, len(frames))[block_frame][blk]
    delay = release_row - index
    return out, index, delay.astype(np.int64), footrule.astype(np.int64), block_frame[blk]


def _check_config(config) -> None:
    if not isinstance(config, HVCConfig):  # found in review: a dict or None ended in an AttributeError
        raise TypeError(f"config must be an HVCConfig (e.g. jaxdp.HVCConfig(8, 12)), got {type(config).__name__}.")


def _prepare(records, config: HVCConfig, ids, bounds, epsilon=None):
    """Validate a batch stream and plan its frames (shared by `anonymize` and the baselines)."""
    _check_config(config)
    records = _check_records(records)
    if records.shape[0] == 0:
        raise ValueError("records is empty: nothing to anonymize.")
    ids = subject_keys(ids, records.shape[0])
    lo, hi, private = codec.resolve_bounds(bounds, records)
    if lo.shape[0] != records.shape[1]:
        raise ValueError(f"bounds describe {lo.shape[0]} attributes but records have d = {records.shape[1]}.")
    _check_float_range(lo, hi, _compute_dtype(config), epsilon)
    limit = None if config.records_per_subject is not None else (config.target_length or records.shape[0])
    frames, planner = _plan_all(config, records.shape[0], ids, limit)
    return records, ids, lo, hi, private, limit, frames, planner


def _check_float_range(lo, hi, dtype, epsilon=None):
    """Refuse a domain the codec's float dtype cannot compute with: bounds near its largest value (releases
    became inf) or widths whose squares, summed over a block of columns, overflow (no block was ever coded);
    and an ε outside the range where its budgets and Laplace scales stay finite (ε = 1e-320 released NaN)."""
    reason = None if epsilon is None else epsilon_unfit(epsilon, dtype)
    if reason:
        raise ValueError(f"{reason}.")
    reason = unfit(lo, hi, dtype)  # (`jaxdp._domain`: the CLI makes the same check before JAX starts)
    if reason:
        raise ValueError(f'{reason}: rescale the data, or use noise="float64".')


def anonymize(key: jax.Array, records, config: HVCConfig, *, epsilon: float, bounds, ids=None) -> Result:
    """Publish a record stream with the hybrid-video-coding method (paper Secs. 4.1–4.6).

    Privacy:
      Each released frame is ε_f-DP with respect to one subject's record (bounded DP inside the
      public domain), ε_f = ε·r/l for a frame of r records; a subject with at most one record per
      frame is protected with ε·(records released)/l ≤ ε over the stream (the paper's argument).
      With the default ``modes=("frame_mean",)`` each frame first spends on the frame-mean layer's queries (a
      noisy column-variance query, 5 % of ε_f, where blocks may be coded; the noisy column means), and its
      live blocks spend the rest (`HVCConfig.frame_mean_share`); the queries and the blocks compose
      sequentially to ε_f (blocks hold distinct subjects: parallel across blocks). Per block, the mode choice
      (Lemma 5; with one mode there is none), the (t, σ) choice (Lemma 3) and the Laplace noise (Lemma 1 with
      Theorem 1 or exact joint accounting) compose sequentially (Theorem 2).
      Not private when ``bounds="data"`` or ``reorder="paper"`` (``result.private`` is then False). The bounds are assumed public:
      fixed without looking at the data.

    Args:
      key: typed PRNG key; a key array of shape ``[R]`` runs R independent repetitions as one
        vmapped program (``result.records`` then has shape ``[R, N_out, d]``).
      records: input stream, shape ``[N, d]`` (row order = arrival order).
      config: an `HVCConfig` (the method's static structure: sizes, accounting, modes, samplers).
      epsilon: the total budget ε > 0 (keyword-only, as at every jaxdp release): with the paper's
        accounting it protects `target_length` records (each frame of r records spends ε·r/l); with
        ``config.records_per_subject = k`` it is the budget per subject (ε/k per frame).
      bounds: the public domain: ``(lo, hi)`` arrays of length d, or widths Λ (domain ``[0, Λ]``), or
        ``"data"`` for the paper's 1.5 × max rule, which reads the data and is **not private**
        (``result.private`` is then False). Records are clamped into the domain: NaN is coded as the domain midpoint and ±inf as the nearest bound (an
        imputation, counted only in the curator-only diagnostics: replace missing values first where the midpoint would
        bias the release).
      ids: optional subject id per record (any hashable values); repeated ids within a buffer are
        updates (the latest tuple is kept).

    Returns:
      A `Result`.
    """
    from jaxdp import _validate

    _validate.eager("anonymize", key=key, records=records, epsilon=epsilon, ids=ids)
    _validate.key(key, max_ndim=1)
    epsilon = float(_validate.positive_scalar("epsilon", epsilon))
    records, ids, lo, hi, private, limit, frames, planner = _prepare(records, config, ids, bounds, epsilon)
    if planner.dropped:
        _warn_dropped(planner.dropped, limit)
    with _precision(config):
        return _anonymize_planned(key, records, config, epsilon, ids, lo, hi, private, limit, frames, planner)


def _precision(config: HVCConfig):
    """`noise="float64"` runs the whole codec with 64-bit floats (JAX's x64 mode, scoped)."""
    import contextlib

    return jax.enable_x64(True) if config.noise == "float64" else contextlib.nullcontext()


def _compute_dtype(config: HVCConfig):
    """float64 for ``noise="float64"``, else JAX's default float (float32; float64 in x64 mode) whatever the
    input's dtype: `StreamAnonymizer` does not see its input's dtype before the first push, and both front ends
    must compute alike (found in review: in x64 mode float64 input ran in float64 in batch, float32 streaming)."""
    if config.noise == "float64":
        return np.dtype(np.float64)
    return np.dtype(jnp.zeros(()).dtype)


def _assemble(config, epsilon, released, rows, info, frames, block_frame, lo, hi, dtype, limit, planner, private) -> Result:
    """The `Result` of a batch run (one stream, or many with a leading axis): records back in release order."""
    out, index, delay, footrule, frame = _release(released, rows, info.perm, frames, block_frame)
    out = _unshift(out, lo, _output_dtype(lo, hi, dtype), hi if config.clip_output else None)
    eps_frames = _frame_epsilon(config, epsilon, [len(f[0]) for f in frames], limit)
    return Result(
        records=out, index=index, delay=delay, footrule=footrule, capped=planner.capped,
        superseded=planner.superseded, dropped=planner.dropped, epsilon_spent=eps_frames, frame=frame,
        info=info, private=release_is_private(public_bounds=private, reorder=config.reorder), lo=lo, hi=hi,
    )  # fmt: skip


def _anonymize_planned(key, records, config, epsilon, ids, lo, hi, private, limit, frames, planner):
    dtype = _compute_dtype(config)
    prm = _shift_params(config, lo, hi, dtype)
    fr = _Frames(config, epsilon, lo, hi, limit, dtype)
    data64 = records.astype(np.float64)
    blocks, rows, eps, block_frame = fr.blocks(lambda r: data64[np.asarray(r, np.int64)], frames)
    state = codec.init(config, records.shape[1], dtype)
    layer = _FrameMeans(config, hi - lo)
    layer.check_largest_frame(config, epsilon, frames, limit)
    pub = _block_inputs(config, epsilon, layer, key, blocks, rows, eps, block_frame, frames, limit, dtype)
    _, released, info = _run_padded(config, prm, state, blocks, key, 0, pub, dtype, pad=False)
    return _assemble(config, epsilon, released, rows, info, frames, block_frame, lo, hi, dtype, limit, planner, private)


def anonymize_streams(keys: jax.Array, streams, config: HVCConfig, *, epsilon: float, bounds, shard: bool = True) -> Result:
    """Anonymize S independent streams of equal length as one program, sharded across devices.

    Each stream s is processed as ``anonymize(keys[s], streams[s], config, epsilon=…, bounds=…)`` would (same block
    keys, same frames, same mechanisms), but all streams run in one vmapped `lax.scan`. The released values equal
    that call's up to float rounding, not bit for bit: XLA may order the vmapped arithmetic differently (found in
    review: the same choices and values within one float32 ulp, 4.8·10⁻⁷ at values below 10). With ``shard=True`` the
    stream axis is split over every visible device with a `jax.sharding.Mesh` (streams are padded
    to a multiple of the device count; the padding is dropped). On several hosts, start JAX's own
    runtime with `jax.distributed.initialize()` first; `jax.devices()` then spans all hosts.

    Privacy:
      As `anonymize`, per stream. Streams must hold different people, or their budgets add up.

    Args:
      keys: typed keys, shape ``[S]`` (one per stream; e.g. `jax.random.split`).
      streams: ``[S, N, d]`` records (no subject ids: every record is its own subject).
      config: an `HVCConfig`.
      epsilon: the total budget ε > 0 of each stream, as in `anonymize`.
      bounds: the public domain, as in `anonymize` (``"data"`` is refused: it would read all streams).
      shard: shard the stream axis across `jax.devices()`.

    Returns:
      A `Result` whose ``records`` has shape ``[S, N_out, d]`` (index, delay, frames shared).
    """
    from jaxdp import _validate

    _validate.eager("anonymize_streams", keys=keys, streams=streams, epsilon=epsilon)
    _validate.key(keys, max_ndim=1)
    if not isinstance(config, HVCConfig):  # found in review: a dict ended in an AttributeError
        raise TypeError(f"config must be an HVCConfig, got {type(config).__name__}.")
    if not isinstance(shard, (bool, np.bool_)):  # "no" was taken as True
        raise TypeError(f"shard must be True or False, got {shard!r}.")
    epsilon = float(_validate.positive_scalar("epsilon", epsilon))
    try:
        streams = np.asarray(streams)
    except ValueError:
        raise ValueError("streams must be a rectangular [S, N, d] array (every stream the same N and d).") from None
    if streams.ndim != 3 or streams.shape[0] == 0 or streams.shape[1] == 0:
        raise ValueError(f"streams must have shape [S, N, d] with S, N >= 1, got {streams.shape}.")
    if keys.shape != streams.shape[:1]:
        raise ValueError(f"keys must have shape [S] = {streams.shape[:1]}, got {keys.shape}.")
    if isinstance(bounds, str) and bounds == "data":
        raise ValueError('anonymize_streams needs public bounds; bounds="data" would read every stream.')
    if config.reorder == "paper":
        raise ValueError('anonymize_streams does not support reorder="paper" (a host callback per block).')
    _check_records(streams[0])
    lo, hi, private = codec.resolve_bounds(bounds)
    if lo.shape[0] != streams.shape[2]:
        raise ValueError(f"bounds describe {lo.shape[0]} attributes but streams have d = {streams.shape[2]}.")
    # found in review: anonymize's float-range checks were skipped here, so ε = 1e300 or bounds [0, 1e-30] or ±3e38
    # silently released the midpoint where anonymize refuses
    _check_float_range(lo, hi, _compute_dtype(config), epsilon)
    n_streams, n_rows, d = streams.shape
    limit = None if config.records_per_subject is not None else (config.target_length or n_rows)
    frames, planner = _plan_all(config, n_rows, None, limit)
    if planner.dropped:  # as `anonymize` (found in review: the streams' front end dropped records without a word)
        _warn_dropped(planner.dropped, limit)
    with _precision(config):
        dtype = _compute_dtype(config)
        prm = _shift_params(config, lo, hi, dtype)
        # as `anonymize` (found in review: a budget the exact sampler cannot take released the midpoint)
        _FrameMeans(config, hi - lo).check_largest_frame(config, epsilon, frames, limit)
        fr = _Frames(config, epsilon, lo, hi, limit, dtype)
        data64 = streams.astype(np.float64)
        per = [fr.blocks(lambda r, s=s: data64[s][np.asarray(r, np.int64)], frames) for s in range(n_streams)]
        blocks = np.stack([p[0] for p in per])
        rows, eps, block_frame = per[0][1], per[0][2], per[0][3]
        keys_b = _block_keys(keys, 0, blocks.shape[1])  # [S, B]
        layers = [  # each stream its own frame-mean layer (its own key)
            _block_inputs(config, epsilon, _FrameMeans(config, hi - lo), keys[s_], blocks[s_], rows, eps, block_frame,
                          frames, limit, dtype)
            for s_ in range(n_streams)
        ]  # fmt: skip
        bases = [np.asarray(p.base) for p in layers]
        energy_j = jnp.asarray(np.stack([np.asarray(p.energy) for p in layers]), dtype)
        eps_j = jnp.asarray(np.stack([np.asarray(p.eps) for p in layers]), dtype)
        pad = 0
        blocks_j, keys_j, base_j = jnp.asarray(blocks, dtype), keys_b, jnp.asarray(np.stack(bases), dtype)
        if shard and jax.device_count() > 1:
            from jax.sharding import NamedSharding, PartitionSpec

            ndev = jax.device_count()
            pad = (-n_streams) % ndev
            if pad:
                blocks_j = jnp.concatenate([blocks_j, jnp.repeat(blocks_j[:1], pad, axis=0)])
                keys_j = jnp.concatenate([keys_j, jnp.repeat(keys_j[:1], pad, axis=0)])
                base_j = jnp.concatenate([base_j, jnp.repeat(base_j[:1], pad, axis=0)])
                energy_j = jnp.concatenate([energy_j, jnp.repeat(energy_j[:1], pad, axis=0)])
                eps_j = jnp.concatenate([eps_j, jnp.repeat(eps_j[:1], pad, axis=0)])
            mesh = jax.make_mesh((ndev,), ("streams",), axis_types=(jax.sharding.AxisType.Auto,))
            sharding = NamedSharding(mesh, PartitionSpec("streams"))
            blocks_j = jax.device_put(blocks_j, sharding)
            keys_j = jax.device_put(keys_j, sharding)
            base_j = jax.device_put(base_j, sharding)
            energy_j = jax.device_put(energy_j, sharding)
            eps_j = jax.device_put(eps_j, sharding)
        state = codec.init(config, d, dtype)
        pub = codec.BlockInputs(eps_j, base_j, energy_j)
        _, (released, info) = codec.run_streams(config, prm, state, blocks_j, keys_j, pub)
        released = np.asarray(released)[:n_streams]
        info = jax.tree_util.tree_map(lambda a: np.asarray(a)[:n_streams], info)
    return dataclasses.replace(_assemble(config, epsilon, released, rows, info, frames, block_frame, lo, hi, dtype, limit,
                                         planner, private), streams=True)  # fmt: skip


class StreamAnonymizer:
    """Streaming front end: ``push(records, ids=None)`` returns what is ready; ``flush()`` the rest.

    Gives the same output as `anonymize` for the same key, config and input (same per-block keys,
    same jitted codec). Holds at most one frame of raw records (O(δ·d) memory).

    Args:
      key: typed PRNG key (a single key), first as in every jaxdp release call.
      config: an `HVCConfig` with `target_length` or `records_per_subject` set.
      epsilon: the total budget ε > 0, as in `anonymize` (keyword-only).
      bounds: the public domain, as in `anonymize` (not ``"data"``: a stream cannot be read ahead).

    Raises:
      TypeError: the arguments in the old order ``(config, key)``.
    """

    def __init__(self, key: jax.Array, config: HVCConfig, *, epsilon: float, bounds):
        from jaxdp import _validate

        if isinstance(key, HVCConfig):
            raise TypeError("StreamAnonymizer(key, config, epsilon=...): the key comes first, as in every jaxdp release call.")
        _validate.eager("StreamAnonymizer", way_out="make one per key (each takes a single key), outside jax.jit and jax.vmap", key=key, epsilon=epsilon)
        _validate.key(key)
        if key.shape != ():
            raise ValueError("StreamAnonymizer takes a single key; use anonymize for repetitions.")
        _check_config(config)
        if config.target_length is None and config.records_per_subject is None:
            raise ValueError("StreamAnonymizer needs config.target_length (l: the budget is ε·m/l per frame) or "
                             "config.records_per_subject (k: ε/k per frame, for an unbounded stream).")
        if isinstance(bounds, str) and bounds == "data":
            raise ValueError('bounds="data" reads the whole data set; a stream needs public bounds.')
        self.config, self.key = config, key
        self.epsilon = float(_validate.positive_scalar("epsilon", epsilon))
        self.lo, self.hi, _ = codec.resolve_bounds(bounds)
        self.d = self.lo.shape[0]
        with _precision(config):
            self.dtype = _compute_dtype(config)
            _check_float_range(self.lo, self.hi, self.dtype, self.epsilon)
            self.prm = _shift_params(config, self.lo, self.hi, self.dtype)
            self.state = codec.init(config, self.d, self.dtype)
        self.out_dtype = _output_dtype(self.lo, self.hi, self.dtype)
        self.frame_means = _FrameMeans(config, self.hi - self.lo)
        # a full frame must be one the exact sampler takes: refused here, before any record (smaller frames, e.g. the
        # last, that it cannot take are released without a query of their own)
        self.frame_means.check_full_frame(float(_frame_epsilon(config, self.epsilon, [config.frame_size],
                                                               config.target_length)[0]))
        self.planner = Planner(config.frame_size, config.target_length, config.records_per_subject)
        self.frames_fr = _Frames(config, self.epsilon, self.lo, self.hi, config.target_length, self.dtype)
        self.pending: dict[int, np.ndarray] = {}  # input row -> record, for buffered rows only
        self.rows_seen = 0
        self.blocks_done = 0
        self.blocks_coded = 0  # blocks that released coefficients (t > 0, chosen by the mechanism: public)
        self.frames_done = 0
        self._warned_dropped = False
        self._with_ids = None  # with records_per_subject, whether pushes carry ids: fixed by the first with records
        self._columns = None  # the first pushed table's column names (a DataFrame or Arrow table), kept by later tables
        self._failed = None  # why a push or flush failed after the stream's state had moved (then it is refused)
        self.epsilon_spent: list[float] = []  # ε of each released frame
        self.frame_sizes: list[int] = []  # records of each released frame

    def push(self, records, ids=None) -> Result:
        """Feed records (``[k, d]``, arrival order); return what this call released, as a `Result`.

        The result holds the records released by this call (``records [k', d]``, ``index`` their input rows,
        ``delay``, ``footrule``, ``frame`` the stream-wide frame numbers, ``epsilon_spent`` and ``info`` of
        the frames and blocks released now) and the stream's running counts (``superseded``, ``dropped``,
        ``capped`` so far). Concatenating the results of all pushes and `flush` gives `anonymize`'s.

        Warns (`BudgetExhaustedWarning`, once) when records arrive after `target_length` records were
        protected: they are dropped (counted in `dropped`).

        Records may be an array ``[k, d]``, a pandas DataFrame or a pyarrow Table: the first table pushed fixes the
        column order (by name), and a later table with other names or another order is refused; arrays are taken by
        position.

        Raises:
          ValueError / TypeError: records or ids this stream cannot take (nothing is changed: push again), among them
            with `records_per_subject`, a push with ids after pushes without (or the reverse): a record without an id
            is a new subject, so a subject's rows pushed both ways would escape the bound (found in review).
          RuntimeError: an earlier push or flush failed after its records had entered the stream (see below).

        A failure inside the push once the records have entered the buffer (an exception of the codec or the frame
        layer, memory, an interrupt) leaves frames handed over but not released: this anonymizer then refuses
        every later call, rather than go on with records lost, an ε ledger that misses their frame and frame
        numbers that no longer match the frame layer's (found in review). Start a new `StreamAnonymizer` with a
        fresh key for the records that follow.
        """
        from jaxdp import _validate

        self._check_usable()
        _validate.eager("StreamAnonymizer.push", way_out="make one per key (each takes a single key), outside jax.jit and jax.vmap", records=records, ids=ids)
        names = _column_names(records)
        if names is not None and self._columns is not None and names != self._columns:
            # found in review: a second push of df[["b", "a"]] after df[["a", "b"]] was taken by position, and column
            # a's domain and release got b's values
            raise ValueError(f"this push's columns {list(names)} are not the first table's {list(self._columns)} (in "
                             "that order): select them in the same order, e.g. df[first_columns].")
        records = _check_records(records, self.d)
        ids = subject_keys(ids, records.shape[0])
        if records.shape[0] and self.config.records_per_subject is not None:  # (the paper's accounting holds for any
            # subject in every frame: there ids only mark updates, and rows without them may follow)
            if self._with_ids is not None and self._with_ids != (ids is not None):
                raise ValueError("every push of a stream gives subject ids, or none does: this push "
                                 f"{'has ids' if ids is not None else 'has no ids'}, earlier ones "
                                 f"{'had' if self._with_ids else 'had none'}. A record without an id counts as a new "
                                 "subject, so a subject's records pushed both ways would escape records_per_subject; "
                                 "pass ids= with every push (or with none).")
            self._with_ids = ids is not None
        if names is not None and self._columns is None:
            self._columns = names  # the first table's column order: later tables must keep it
        with self._state_changes():
            out = self._push(records, ids)
            if self.planner.dropped and not self._warned_dropped:  # (inside: found in review, under -W error this
                # warning lost the push's released records and left the stream usable)
                self._warned_dropped = True
                _warn_dropped(self.planner.dropped, self.config.target_length)
        return out

    def _check_usable(self):
        if self._failed is not None:
            raise RuntimeError(f"an earlier push or flush of this StreamAnonymizer failed after its records had entered "
                               f"the stream ({self._failed[:300]}): its frames were handed over but not released, so "
                               "its state is no longer consistent. Start a new StreamAnonymizer with a fresh key for "
                               "the records that follow.")  # fmt: skip

    @contextlib.contextmanager
    def _state_changes(self):
        """Any exception from here on leaves the stream refused (`_check_usable`)."""
        try:
            yield
        except BaseException as err:
            self._failed = f"{type(err).__name__}: {err}"
            raise

    def _push(self, records, ids):
        if ids is None:  # every record a new subject: the planner works per frame, not per record
            first = self.rows_seen
            emitted, n_open = self.planner.feed_distinct(first, records.shape[0])
            self.rows_seen += records.shape[0]
            chunk = np.asarray(records[:n_open], np.float64)
            out = self._process(emitted, chunk, first)  # frames read this chunk directly (no per-row Python)
            # keep own copies of the (< m) raw records still buffered
            self.pending.update((r, chunk[r - first].copy()) for r in self.planner.buffer.values() if r >= first)
            return out
        emitted = []
        for j in range(records.shape[0]):
            row = self.rows_seen
            self.rows_seen += 1
            subject = ("row", row) if ids is None else ("id", ids[j])
            if not self.planner.closed:
                self.pending[row] = np.asarray(records[j], np.float64)
            emitted.extend(self.planner.feed(row, subject))
        return self._compact(self._process(emitted))

    def _compact(self, out):
        """Forget the raw rows that left the buffer, and keep own copies of the (< m) still held, so no pushed chunk
        stays referenced by views. Found in review: rows capped (their subject had k records) or superseded while no
        frame was emitted were never forgotten — 5,000 capped rows stayed in memory, against the O(δ·d) promise."""
        if len(self.pending) > len(self.planner.buffer):  # (a scan only when some raw row is no longer buffered)
            buffered = set(self.planner.buffer.values())
            for r in [r for r in self.pending if r not in buffered]:
                del self.pending[r]
        for r, rec in self.pending.items():
            if rec.base is not None:
                self.pending[r] = rec.copy()
        return out

    def flush(self) -> Result:
        """Protect and release whatever is still buffered (the final, possibly partial, frame), as `push` (and
        refused, as `push`, after a failed call)."""
        self._check_usable()
        with self._state_changes():
            return self._process(self.planner.flush(self.rows_seen - 1))

    @property
    def superseded(self) -> int:
        return self.planner.superseded

    @property
    def capped(self) -> int:
        """Rows dropped because their subject already had `records_per_subject` released records."""
        return self.planner.capped

    @property
    def frames_without_query(self) -> int:
        """Frames released as the running estimate of earlier frames, without a query of their own (``noise="grid"``:
        a frame, e.g. a short last one, whose budget the exact sampler cannot take; public: sizes and budgets)."""
        return self.frame_means.unasked

    @property
    def private(self) -> bool:
        """The rule of `jaxdp.privacy` (bounds are public here; reordering decides). Your key must be secret."""
        return release_is_private(public_bounds=True, reorder=self.config.reorder)

    @property
    def dropped(self) -> int:
        return self.planner.dropped

    def _rows(self, r, chunk, first):
        """Raw records of input rows `r`: from the pushed `chunk` (rows ≥ first) or the buffered `pending`."""
        r = np.asarray(r, np.int64)
        if chunk is None:
            return np.stack([self.pending[i] for i in r])
        out = np.empty((r.shape[0], self.d))
        new = r >= first
        out[new] = chunk[r[new] - first]
        if not new.all():
            out[~new] = np.stack([self.pending[i] for i in r[~new]])
        return out

    def _process(self, frames, chunk=None, first=0):
        """Run the codec on all frames emitted by one call, as one scan (same keys as batch)."""
        if not frames:
            return self._result(np.zeros((0, self.d), self.out_dtype), *(np.zeros(0, np.int64),) * 4,
                                np.zeros(0), codec.empty_info(self.config.block_size))  # fmt: skip
        blocks, rows, eps, block_frame = self.frames_fr.blocks(lambda r: self._rows(r, chunk, first), frames)
        with _precision(self.config):
            pub = _block_inputs(self.config, self.epsilon, self.frame_means, self.key, blocks, rows, eps, block_frame, frames,
                                self.config.target_length, self.dtype)  # fmt: skip
            self.state, released, info = _run_padded(
                self.config, self.prm, self.state, blocks, self.key, self.blocks_done, pub, self.dtype, pad=True
            )
        self.blocks_done += blocks.shape[0]
        self.blocks_coded += int(np.sum(np.asarray(info.t) > 0))
        first_frame = self.frames_done
        self.frames_done += len(frames)
        self.frame_sizes.extend(len(f[0]) for f in frames)
        eps_frames = _frame_epsilon(self.config, self.epsilon, [len(f[0]) for f in frames], self.config.target_length)
        self.epsilon_spent.extend(eps_frames.tolist())
        # forget the raw records of rows that left the buffer (released, or superseded by an update)
        buffered = set(self.planner.buffer.values())
        for r in [r for r in self.pending if r not in buffered]:
            del self.pending[r]
        out, index, delay, footrule, frame = _release(np.asarray(released), rows, np.asarray(info.perm), frames,
                                                      block_frame)  # fmt: skip
        return self._result(_unshift(out, self.lo, self.out_dtype, self.hi if self.config.clip_output else None),
                            index, delay, footrule, frame + first_frame,
                            eps_frames, info)  # fmt: skip

    def _result(self, records, index, delay, footrule, frame, eps_frames, info) -> Result:
        return Result(
            records=records, index=index, delay=delay, footrule=footrule, superseded=self.planner.superseded,
            dropped=self.planner.dropped, capped=self.planner.capped, epsilon_spent=np.asarray(eps_frames, np.float64),
            frame=frame, info=info, private=self.private, lo=self.lo, hi=self.hi,
        )  # fmt: skip
