"""Command line of jaxdp.

* ``jaxdp anonymize [INPUT] -o OUT …`` (the main job): publish a record stream with the
  hybrid-video-coding anonymizer, reading and writing in chunks (CSV — plain or gzip/bz2/xz/zstd —,
  Parquet, Arrow IPC, or ``-`` for stdin/stdout); with no input it runs on the bundled Census data.
* ``jaxdp demo``: the quantizer of Algorithm 1 alone on blocks of the bundled Census data, with a
  data-independent prediction, beside plain Laplace noise on every record (PLN) and the midpoint.

Exit codes: 0 success, 2 bad input or options (a message says what to fix; never a traceback),
130 interrupted. Arguments and files are checked before JAX starts; outputs are written through a
temporary file that is renamed into place only when the run succeeds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

from jaxdp import __version__
from jaxdp.datasets.io import (
    InputError,
    TableWriter,
    atomic_write_text,
    check_writable,
    detect_format,
    id_values,
    open_table,
)

MAX_BLOCK = 128  # records per block: compile time grows with n (measured on 2 cores: n = 64 15 s, 128 35 s, 256 2 min)
MAX_HISTORY = 16  # past blocks the predictor sees (compile time grows with it)
MAX_SEED = 2**64 - 1

PREDICTION_MODES = ("frame_mean", "midpoint", "column_mean", "last_record", "history_mean", "inter")  # as hvc.predict.MODES
_MODES_HELP = ("frame_mean, midpoint, column_mean, last_record, history_mean, inter (comma-separated; default: "
               "frame_mean, the frame-mean layer; --paper: the paper's modes)")
_KINDS = ("dct", "dst", "dht", "identity")


# ------------------------------------------------------------------------------------------------
# demo
# ------------------------------------------------------------------------------------------------
def _demo_bounds(text: str | None, data: np.ndarray) -> tuple[np.ndarray, str]:
    from jaxdp import datasets

    if text is None:  # it used to default to the paper's 1.5 x max rule (NOT private)
        return datasets.census_bounds()[1], "jaxdp's public domain for the bundled Census (jaxdp.datasets.census_bounds)"
    if text == "data":
        return (
            datasets.bounds_from_data(data, 1.5),
            "1.5 x data max (paper Sec. 5.4) -- NOT private: these bounds read the data. "
            "Pass --bounds for a private release.",
        )
    try:
        widths = np.asarray([float(v) for v in text.split(",")])
    except ValueError as err:
        raise InputError(f"--bounds must be comma-separated numbers (one width per attribute): {err}") from None
    if not np.all(np.isfinite(widths)) or np.any(widths <= 0):
        raise InputError(f"--bounds widths must be finite and > 0 (the domain of attribute k is [0, w_k]), got {text!r}.")
    return widths, "public widths given with --bounds"


def _pln(key, data, widths, epsilon):
    """Laplace noise per record with per-attribute budgets ∝ Λ^{2/3} (Theorem 1 with n = 1), on the records
    clamped into the domain [0, Λ] first, as `jaxdp.pln` does (found in review: unclamped records outside
    `--bounds` had sensitivity beyond Λ, so the baseline was not private).

    A tighter variant of the paper's PLN (`jaxdp.pln` adds ``Lap(ΣΛ/ε)`` to every attribute); the demo
    uses it because it is the stronger per-record baseline at the same ε.
    """
    import jax.numpy as jnp

    from jaxdp import mechanisms

    data = np.clip(data, 0.0, widths)
    g23 = widths ** (2.0 / 3.0)
    eps_k = epsilon * g23 / g23.sum()  # Theorem 1 with n = 1: attribute k gets ε·Λ_k^(2/3)/ΣΛ^(2/3)
    return data + np.asarray(mechanisms.laplace_noise(key, data.shape, epsilon=eps_k, sensitivity=widths, dtype=jnp.float32))


def demo(args: argparse.Namespace) -> int:
    from jaxdp import datasets

    data = datasets.load_census().astype(np.float64)
    widths, how = _demo_bounds(args.bounds, data)
    if widths.shape != (data.shape[1],):
        raise InputError(f"--bounds needs {data.shape[1]} widths, got {widths.shape[0]}.")
    n, eps = args.n, args.epsilon
    if n < 1 or n > data.shape[0]:
        raise InputError(f"--n must be in [1, {data.shape[0]}], got {n}.")
    if not (np.isfinite(eps) and eps > 0):
        raise InputError(f"--epsilon must be a finite number > 0, got {eps}.")
    from jaxdp._domain import epsilon_unfit, unfit

    reason = epsilon_unfit(eps, np.float32)  # the range `anonymize` takes (found in review: 1e30 printed inf, nan)
    if reason:
        raise InputError(f"--{reason}.")
    if args.seed is not None and not 0 <= args.seed <= MAX_SEED:
        raise InputError(f"--seed must be in [0, 2**64), got {args.seed}. Omit --seed for a private release.")
    reason = unfit(np.zeros_like(widths), widths, np.float32)  # (found in review: too narrow or wide: a traceback)
    if reason:
        raise InputError(f"--bounds: {reason}; rescale the widths.")
    try:
        return _demo_run(args, data, widths, how, n, eps)
    except ValueError as err:  # a budget the mechanisms refuse (found in review: --epsilon 1e-30 ended in a traceback)
        raise InputError(f"{err}") from None


def _demo_run(args, data, widths, how, n, eps) -> int:
    import jax

    from jaxdp import keys
    from jaxdp.hvc import quantize

    full = (data.shape[0] // n) * n
    pieces = [data[:full].reshape(-1, n, data.shape[1])]
    if full < data.shape[0]:
        pieces.append(data[full:][None])  # the last, shorter block: nothing is dropped
    mid = widths / 2.0

    print(f"jaxdp {__version__} demo | JAX {jax.__version__} on {jax.devices()[0].platform.upper()}")
    print(f"data: bundled Census, {data.shape[0]} records x {data.shape[1]} attributes; blocks of n = {n}")
    print(f"bounds: {how}")
    print(f"budget: epsilon = {eps} per record (eps_laplace = eps_select = {eps / 2}); theta = {args.theta}")
    key = keys.fresh_key() if args.seed is None else keys.key_from_seed(args.seed)
    print("key: fresh from OS entropy (secret)" if args.seed is None else
          f"key: from --seed {args.seed} -- reproducible, NOT private (anyone with the seed can remove the noise)")
    rows = []
    for accounting in ("paper", "joint"):
        key, sub = jax.random.split(key)
        start = time.perf_counter()
        outs, ts = [], []
        for piece_key, piece in zip(jax.random.split(sub, len(pieces)), pieces):
            x_tilde, info = quantize.quantize(
                piece_key, piece, np.broadcast_to(mid, piece.shape[1:]), widths,
                eps_laplace=eps / 2, eps_select=eps / 2, theta=args.theta, accounting=accounting,
            )  # fmt: skip
            outs.append(np.asarray(x_tilde).reshape(-1, data.shape[1]))
            ts.append(np.asarray(info.t))
        elapsed = time.perf_counter() - start
        released = np.concatenate(outs)
        assert released.shape == data.shape
        t = np.concatenate(ts)
        rows.append((f"Algorithm 1 ({accounting})", np.sum((released - data) ** 2), elapsed, f"median t = {np.median(t):.0f}"))
    key, sub = jax.random.split(key)
    start = time.perf_counter()
    pln = _pln(sub, data, widths, eps)
    rows.append(("PLN, budgets ∝ Λ^(2/3)", np.sum((pln - data) ** 2), time.perf_counter() - start, ""))
    rows.append(("midpoint (no budget)", np.sum((mid - data) ** 2), 0.0, ""))

    base = rows[2][1]
    print("\nCURATOR-ONLY comparison (the SSE column compares each release with the raw records; nothing here is"
          " for publication):")
    print(f"{'method':28s} {'SSE':>12s} {'log2 SSE':>9s} {'vs PLN':>8s} {'time s':>8s}")
    for name, sse, secs, note in rows:
        with np.errstate(divide="ignore", invalid="ignore"):  # an SSE of 0 at a huge ε: -inf and nan, no warnings
            print(f"{name:28s} {sse:12.4e} {np.log2(sse):9.2f} {sse / base:8.3f} {secs:8.3f}  {note}")
    return 0


# ------------------------------------------------------------------------------------------------
# Arguments (checked before JAX is imported)
# ------------------------------------------------------------------------------------------------
def _positive_int(name, value, lo=1, hi=None):
    if value is None:
        return None
    if value < lo or (hi is not None and value > hi):
        bound = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise InputError(f"--{name} must be an integer {bound}, got {value}.")
    return value


def _finite(name, value, positive=True):
    if not math.isfinite(value) or (positive and value <= 0):
        raise InputError(f"--{name} must be a finite number{' > 0' if positive else ''}, got {value}.")
    return value


def _parse_number(text: str, what: str) -> float:
    """A plain decimal number (no Python-only syntax such as 1_000 or 'inf')."""
    t = text.strip()
    try:
        if "_" in t:
            raise ValueError
        v = float(t)
    except ValueError:
        raise InputError(f"{what}: {text!r} is not a number.") from None
    if not math.isfinite(v):
        raise InputError(f"{what}: {text!r} is not a finite number.")
    return v


def _delimiter(text: str) -> str:
    """--delimiter: one character; the two characters ``\\t`` (what a shell passes for '\\t') and "tab" mean a tab
    (found in review: '\\t' was refused as two characters)."""
    return "\t" if text in ("\\t", "tab", "TAB") else text


def _bounds_count_hint(columns: list[str], d_bounds: int) -> str:
    """What a --bounds count that does not match the columns may mean: an unnamed column (a trailing delimiter, or
    the index pandas' ``to_csv`` writes) or an id column not named with --ids-column (found in review: the message
    only listed the columns)."""
    hints = []
    unnamed = [i + 1 for i, c in enumerate(columns) if not c.strip()]
    if unnamed:
        hints.append(f"column {unnamed[0]} has no name (a delimiter at the end of every line, or the index that pandas' "
                     "to_csv writes: drop it, or write with index=False)")
    ids = [c for c in columns if c.strip().lower() in ("id", "ids") or c.strip().lower().endswith(("_id", " id"))]
    if ids and d_bounds < len(columns):
        hints.append(f"if {ids[0]!r} holds subject ids, pass --ids-column {ids[0]!r} (it is then not an attribute)")
    return ("; " + "; ".join(hints)) if hints else ""


def _parse_bounds(text: str | None, columns: list[str]):
    """(lo, hi) float64 arrays from 'w1,..,wd' (domain [0, w]) or 'lo:hi,..'; None for 'data'/absent."""
    if text is None or text == "data":
        return None
    parts = [p.strip() for p in text.split(",")]
    d = len(columns)
    if len(parts) != d:
        raise InputError(f"--bounds gives {len(parts)} attributes but the data has {d} columns ({columns})"
                         f"{_bounds_count_hint(columns, len(parts))}.")
    lo, hi = np.zeros(d), np.zeros(d)
    for j, part in enumerate(parts):
        if ":" in part:
            a, _, b = part.partition(":")
            lo[j], hi[j] = _parse_number(a, f"--bounds, column {columns[j]!r}"), _parse_number(b, f"--bounds, column {columns[j]!r}")
        else:
            hi[j] = _parse_number(part, f"--bounds, column {columns[j]!r}")
        if not hi[j] > lo[j]:
            raise InputError(f"--bounds, column {columns[j]!r}: the domain [{lo[j]:g}, {hi[j]:g}] needs hi > lo "
                             "(positive widths).")  # fmt: skip
    return lo, hi


def _check_range(bounds, noise):
    """float32 holds ±3.4e38: wider domains need --noise float64 (a narrow domain far from zero is fine)."""
    if noise == "float64":
        return
    from jaxdp._domain import unfit

    # the codec's own check, made here before JAX starts (found in review: a domain whose squared widths overflow
    # float32 — e.g. nanosecond timestamps — ended in a traceback)
    reason = unfit(bounds[0], bounds[1], np.float32)
    if reason:
        raise InputError(f"{reason}: pass --noise float64, or rescale the data.")


def _parse_split(text):
    if text is None:
        return None
    parts = text.split(",")
    if len(parts) != 3:
        raise InputError(f"--split needs three fractions eps_QL,eps_QE,eps_E summing to 1, got {text!r}.")
    return tuple(_parse_number(p, "--split") for p in parts)


def _parse_seed(text):
    if text is None:
        return None
    t = text.strip()
    if not t.isdigit():
        raise InputError(f"--seed must be a non-negative integer below 2**64, got {text!r}.")
    v = int(t)
    if v > MAX_SEED:
        raise InputError(f"--seed must be in [0, 2**64), got {text}. Omit --seed for a private release.")
    return v


def _same_file(a: str, b: str) -> bool:
    if a == "-" or b == "-":
        return False
    try:
        return os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b) or os.path.abspath(a) == os.path.abspath(b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _check_anonymize_args(args):
    """Everything that can be checked without reading data or starting JAX."""
    _positive_int("block", args.block, 1, MAX_BLOCK)
    if args.history is not None:
        _positive_int("history", args.history, 1, MAX_HISTORY)
    _positive_int("target-length", args.target_length)
    _positive_int("records-per-subject", args.records_per_subject)
    if args.records_per_subject is not None and args.target_length is not None:
        raise InputError("give either --target-length (the paper's accounting: ε·r/l per frame) or "
                         "--records-per-subject (ε/k per frame), not both.")  # fmt: skip
    _positive_int("delay", args.delay)
    _positive_int("chunk", args.chunk)
    _finite("epsilon", args.epsilon)
    delay = args.delay if args.delay is not None else 12 * args.block
    if delay % args.block:
        raise InputError(f"--delay must be a positive multiple of --block ({args.block}); got {delay}.")
    split = _parse_split(args.split)
    seed = _parse_seed(args.seed)
    if args.input is not None and args.input != "-" and _same_file(args.input, args.output):
        raise InputError("-o names the input file: choose another output (the input would be overwritten).")
    if args.report is not None:
        if args.report in ("", "-"):  # found in review: "" wrote nothing silently, "-" made a file named "-"
            raise InputError("--report needs a file name (the summary goes to stderr; the report is a JSON file).")
        if _same_file(args.report, args.output) or (args.input and _same_file(args.report, args.input)):
            raise InputError("--report must differ from the input and from -o.")
        folder = os.path.dirname(os.path.abspath(args.report))
        if not os.path.isdir(folder):
            raise InputError(f"the --report folder {folder} does not exist: create it first.")
        if not os.access(folder, os.W_OK):  # found in review: found only after the run, with the output written
            raise InputError(f"the --report folder {folder} is not writable: choose another.")
        if os.path.isdir(args.report):
            raise InputError(f"--report {args.report} is a folder: give a file name (e.g. {args.report}/report.json).")
    if args.output not in (None, "-") and os.path.isdir(args.output):
        raise InputError(f"-o {args.output} is a folder: give a file name.")
    if args.output not in (None, "-"):
        out_folder = os.path.dirname(os.path.abspath(args.output))
        if os.path.isdir(out_folder) and not os.access(out_folder, os.W_OK):  # found in review: after the run
            raise InputError(f"the output folder {out_folder} is not writable: choose another.")
    if args.output not in (None, "-"):
        check_writable(args.output, "the output")
    if args.report is not None:
        check_writable(args.report, "the --report")
    out_fmt, _ = detect_format(args.output, args.output_format, output=True)
    if args.output == "-" and out_fmt in ("parquet", "arrow"):  # found in review: it crashed after the whole run
        raise InputError(f"-o - writes CSV to stdout; {out_fmt} needs a file name (e.g. -o out.{out_fmt}).")
    if args.kinds:
        bad = [k for k in args.kinds.split(",") if k not in _KINDS]
        if bad:
            raise InputError(f"--kinds: unknown transform(s) {bad}; choose from {_KINDS}.")
    if args.modes:  # found in review: the config's message did not name the option
        bad = [m for m in args.modes.split(",") if m not in PREDICTION_MODES]
        if bad:
            raise InputError(f"--modes: unknown mode(s) {bad}; choose from {PREDICTION_MODES}.")
    return delay, split, seed


# ------------------------------------------------------------------------------------------------
# The main job
# ------------------------------------------------------------------------------------------------
def _bundled_census_path() -> str:
    from importlib import resources

    return str(resources.files("jaxdp").joinpath("data/census.csv"))


def _scan(reader):
    """One pass over the data: (rows, column max, column min) — for the default target length and --bounds data."""
    rows, mx, mn = 0, None, None
    for x, _, _ in reader.batches():
        rows += x.shape[0]
        if x.shape[0]:
            bmx, bmn = x.max(axis=0), x.min(axis=0)
            mx = bmx if mx is None else np.maximum(mx, bmx)
            mn = bmn if mn is None else np.minimum(mn, bmn)
    return rows, mx, mn


def _released_with_ids(reader, m: int) -> tuple[int, int]:
    """(rows, records the stream anonymizer will release) for a table with subject ids and frames of m records.

    A subject's later records within a buffer are updates (the latest is kept), so fewer records than rows are
    released; the default target length l is this number, so that the whole ε is spent. It depends only on
    the ids and their arrival order, which jaxdp treats as public (README, "What is assumed public").
    """
    from jaxdp.hvc.stream import Planner, subject_keys

    planner, rows, released = Planner(m, None), 0, 0
    for x, ids, _ in reader.batches():
        for j, subject in enumerate(subject_keys(id_values(ids), x.shape[0])):  # the anonymizer's own keys
            released += sum(len(frame) for frame, _ in planner.feed(rows + j, ("id", subject)))
        rows += x.shape[0]
    released += sum(len(frame) for frame, _ in planner.flush(rows - 1)) if rows else 0
    return rows, released


def anonymize_cmd(args: argparse.Namespace) -> int:
    t_start = time.perf_counter()
    delay, split, seed = _check_anonymize_args(args)
    bundled = args.input is None
    path = _bundled_census_path() if bundled else args.input
    reader = open_table(path, fmt=args.input_format, id_column=args.ids_column, delimiter=args.delimiter,
                        encoding=args.encoding, chunk_rows=args.chunk)  # fmt: skip
    columns = reader.columns
    source = "bundled Census" if bundled else path
    if reader.fmt == "csv" and columns and all(_reads_as_number(c) for c in columns):  # (found in review: a file
        # without a header lost its first record silently, taken as the column names)
        print(f"jaxdp anonymize: WARNING: every column name in the first line of {source} reads as a number: if "
              "the file has no header line, its first record was taken as the column names and is not released. "
              "Add a header line.", file=sys.stderr)  # (the names are not printed: they may be a record's values)
    from jaxdp import datasets  # (no JAX: argument and file errors stay fast)

    bundled_domain = bundled and args.bounds is None  # jaxdp's public domain for its own data (private)
    if bundled_domain and args.ids_column is not None:  # (found in review: "--bounds gives 13 attributes", unasked)
        raise InputError(f"--ids-column {args.ids_column!r}: the bundled Census has no subject ids (each row is a "
                         "different person; every one of its 13 columns is an attribute of jaxdp's public domain). "
                         "Drop --ids-column; --records-per-subject 1 states one row per person.")
    if bundled_domain:  # it used to default to the paper's 1.5 x max rule (NOT private)
        args.bounds = ",".join(f"{lo:g}:{hi:g}" for lo, hi in zip(*datasets.census_bounds()))
    if args.bounds is None:
        raise InputError("--bounds is required: give the public domain as widths 'w1,...,wd' (domain [0, w]) or "
                         "'lo:hi,...' pairs, or 'data' for the paper's 1.5 x max rule (NOT private).")  # fmt: skip
    bounds = _parse_bounds(args.bounds, columns)
    target = args.target_length
    per_subject = args.records_per_subject
    by_ids = target is None and per_subject is None and args.ids_column is not None
    need_scan = bounds is None or by_ids or (target is None and per_subject is None and reader.rows is None)
    if need_scan and path == "-":
        raise InputError("reading stdin needs public --bounds and either --target-length (the number of records to "
                         "protect) or --records-per-subject: stdin cannot be read twice.")  # fmt: skip
    rows = reader.rows
    if need_scan:
        again = open_table(path, fmt=args.input_format, id_column=args.ids_column, delimiter=args.delimiter,
                           encoding=args.encoding, chunk_rows=args.chunk)  # fmt: skip
        if bounds is None:
            rows, mx, mn = _scan(again)
        elif not by_ids:  # only the length is needed: count rows without converting numbers
            rows = again.count_rows()
        if by_ids:  # the records that will be released: rows less updates (ids and arrival order: public)
            rows, target = _released_with_ids(open_table(
                path, fmt=args.input_format, id_column=args.ids_column, delimiter=args.delimiter,
                encoding=args.encoding, chunk_rows=args.chunk), delay)  # fmt: skip
        if rows == 0:
            raise InputError(f"{path} has a header but no records.")
        if bounds is None:  # the paper's rule reads the data: NOT private
            if np.any(mn < 0):
                j = int(np.argmin(mn))
                raise InputError(f"--bounds data (1.5 x max, domain [0, 1.5 max]) needs non-negative values; column "
                                 f"{columns[j]!r} has negative ones. Give public bounds 'lo:hi,...' instead.")  # fmt: skip
            width = 1.5 * mx
            width = np.where(width > 0, width, 1.0)
            bounds = (np.zeros(len(columns)), width)
            how = "1.5 x data max (paper Sec. 5.4) -- NOT private: these bounds read the data"
            bounds_public = False
    if per_subject is None:  # the paper's accounting protects l records; with k per subject there is no l
        if target is None and rows == 0:  # found in review: an empty Parquet table said "target_length must be >= 1"
            raise InputError(f"{path} has no records: nothing to anonymize.")
        target = target or rows
    if args.bounds != "data":
        how, bounds_public = "public bounds given with --bounds", True
        if bundled_domain:
            how = ("jaxdp's public domain for the bundled Census (jaxdp.datasets.census_bounds: [0, 1e6] for AFNLWGT, "
                   "[0, 250000] for the money amounts); --bounds data gives the paper's rule (NOT private)")
    _check_range(bounds, args.noise)
    return _anonymize(args, reader, path, source, columns, bounds, how, bounds_public, target, delay, split, seed,
                      rows, t_start)  # fmt: skip


def _anonymize(args, reader, path, source, columns, bounds, how, bounds_public, target, delay, split, seed, rows,
               t_start):
    import warnings

    import jaxdp  # JAX starts here, after every argument and the input were checked
    from jaxdp import keys
    from jaxdp.diagnostics import NOT_PRIVATE_NOTE
    from jaxdp.hvc import codec, cpu_loop
    from jaxdp.hvc.stream import BudgetExhaustedWarning, GridFrameWarning
    from jaxdp.privacy import release_is_private

    n = args.block
    kw = dict(target_length=target, records_per_subject=args.records_per_subject)
    if args.history is not None:  # (found in review: --paper dropped an explicit --history silently)
        kw["history"] = args.history
    if split is not None:
        kw["split"] = split
    for name in ("theta", "accounting", "order"):
        if getattr(args, name) is not None:
            kw[name] = getattr(args, name)
    if args.kinds:
        kw["kinds"] = tuple(args.kinds.split(","))
    if args.modes:
        kw["modes"] = tuple(args.modes.split(","))
    if args.no_prune:
        kw["prune"] = False
    if args.no_clip:
        kw["clip_output"] = False
    if args.noise:
        kw["noise"] = args.noise
    try:
        if args.paper:
            config = jaxdp.HVCConfig.paper(n, delay // n, **kw)
        else:
            config = jaxdp.HVCConfig(n, delay // n, **kw)
    except (ValueError, TypeError, NotImplementedError) as err:
        raise InputError(str(err)) from None
    key = keys.fresh_key() if seed is None else keys.key_from_seed(seed)
    seeded = seed is not None
    private = release_is_private(public_bounds=bounds_public, reorder=config.reorder, reproducible_seed=seeded)
    lo, hi = (np.asarray(b, np.float64) for b in bounds)
    strict = args.strict_bounds
    diag = _Diagnostics(lo, hi, len(columns)) if args.diagnostics else None
    content = _Content(lo, hi)

    if not args.no_compilation_cache:  # compiled programs only (never data); a user's own setting is kept
        if cpu_loop.enable_compilation_cache() is None and not args.quiet:
            print("jaxdp anonymize: NOTE: the compilation cache (~/.cache/jaxdp/xla, $XDG_CACHE_HOME/jaxdp/xla or "
                  "JAX's configured folder) could not be created or it, or a folder above it, is writable by others, "
                  "so it is not used (compiled again each run); chmod 700 it, or pass --no-compilation-cache.",
                  file=sys.stderr)  # fmt: skip
    previous = cpu_loop.fuse_cpu_loops(not args.no_fuse_loops)
    loops_before = codec.loops_run.copy()
    t_run = time.perf_counter()
    progress = _progress(rows, args.quiet)
    try:
        sa = jaxdp.StreamAnonymizer(key, config, epsilon=args.epsilon, bounds=bounds)
        id_of: dict[int, object] = {}
        with TableWriter(args.output, reader.names, id_column=args.ids_column, fmt=args.output_format,
                         delimiter=args.delimiter) as writer, warnings.catch_warnings():  # fmt: skip
            writer.float_types = reader.float_types  # float columns keep their type (or the release's, if wider)
            warnings.simplefilter("ignore", BudgetExhaustedWarning)  # said below, in plain words
            warnings.simplefilter("ignore", GridFrameWarning)  # likewise (found in review: a warning's traceback)
            for x, ids, row0 in _prefetch(reader.batches()):
                if strict:
                    _strict_check(reader, x, row0, lo, hi, columns)
                if ids is not None and writer.id_type is None:
                    writer.id_type = ids.type  # released ids are written back in the input's type
                id_list = None if ids is None else id_values(ids)
                if id_list is not None:
                    id_of.update(zip(range(row0, row0 + len(id_list)), id_list))
                if diag is not None:
                    diag.remember(x, row0)
                writer.check()  # a signal stops the run here (between batches), with no output
                res = sa.push(x, ids=id_list)
                _emit(writer, res.records, res.index, id_of, args.ids_column, diag, content)
                if id_list is not None or diag is not None:  # forget ids and rows no buffered record can need
                    keep = set(sa.pending)
                    if id_list is not None:
                        id_of = {r: v for r, v in id_of.items() if r in keep}
                    if diag is not None:
                        diag.keep_only(keep)
                progress.update(x.shape[0])
            res = sa.flush()
            _emit(writer, res.records, res.index, id_of, args.ids_column, diag, content)
            empty = np.zeros((0, len(columns)), np.dtype(sa.dtype))
            writer.check()
            writer.commit(empty, [] if args.ids_column else None)
        ran = codec.loops_run - loops_before  # the loops this release's codec runs used
        one_kernel = ran["one_kernel"] > 0 and ran["default"] == 0
    except ValueError as err:  # the anonymizer's refusals (found in review: a traceback, exit 1): an ε outside the
        # dtype's range, a grid budget the exact sampler cannot take, ids it refuses; nothing is left written
        raise InputError(str(err)) from None
    finally:
        cpu_loop.fuse_cpu_loops(previous)
        progress.close()
    elapsed = time.perf_counter() - t_run
    eps_f = np.asarray(sa.epsilon_spent)
    reasons = _not_private_reasons(bounds_public=bounds_public, config=config, seeded=seeded)
    records_in = sa.rows_seen
    carries, carries_words = content.verdict(sa, writer.rows)
    report = {
        "jaxdp": __version__,
        "input": source,
        "output": args.output,
        "private": bool(private),
        "not_private_because": reasons,
        # found in review: "private" stood beside the float default with nothing saying which kind of ε-DP it is
        "sampler": _sampler_note(config.noise),
        "reproducible_seed": bool(seeded),
        "records_in": int(records_in),
        "records_out": int(writer.rows),
        "superseded": int(sa.superseded),
        "dropped": int(sa.dropped),
        "capped": int(sa.capped),
        "budget_exhausted": bool(sa.dropped > 0),
        "unit_of_privacy": (f"a subject with at most {config.records_per_subject} released records (ε/k per frame)"
                            if config.records_per_subject else f"a record among l = {target} (ε·r/l per frame of r)"),
        "epsilon_total": float(args.epsilon),
        # with k records per subject the frames' ε/k add up over other subjects: a subject pays ≤ epsilon_total
        "epsilon_spent": float(eps_f.sum()) if not config.records_per_subject else None,
        "epsilon_spent_per_subject_max": float(min(args.epsilon, eps_f.sum())) if config.records_per_subject
        else float(eps_f.sum()),
        "epsilon_per_frame_max": float(eps_f.max()) if eps_f.size else 0.0,
        "frames": int(eps_f.size),
        "frames_without_query": int(sa.frames_without_query),  # grid: budgets the exact sampler cannot take (public)
        "bounds": how,
        # a domain from --bounds data is 1.5 × each column's maximum, i.e. the data (found in review): the report
        # keeps it only under a curator-only name
        ("domain" if bounds_public else "domain_from_data_NOT_PRIVATE"): {"lo": [float(v) for v in lo],
                                                                          "hi": [float(v) for v in hi]},
        # run time depends on the input's bytes (parsing) and, with --noise grid, on the data (rejection sampling):
        # found in review, it sat among the publishable numbers
        "timing_curator_only": {"seconds": elapsed,
                                "records_per_second": float(records_in / elapsed) if elapsed > 0 else None,
                                "note": "run time depends on the input: do not publish it with the release"},
        "codec_loop_one_kernel": one_kernel,
        "release_carries": carries,
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in _config_dict(config).items()},
    }
    if diag is not None:
        report["curator_diagnostics_NOT_PRIVATE"] = diag.summary(eps_f, np.asarray(sa.frame_sizes), NOT_PRIVATE_NOTE)
    if args.report:
        try:
            atomic_write_text(args.report, json.dumps(report, indent=2))
        except OSError as err:  # (checked before the run; a disk that fills up or a folder removed since can still
            # fail here): the release is removed too, so a failed run leaves nothing behind (found in review)
            if args.output != "-" and os.path.isfile(args.output):
                os.unlink(args.output)
            raise InputError(f"cannot write the --report {args.report}: {err.strerror or err}; the output "
                             f"{args.output} was removed with it (nothing is left of this run). Free space or choose "
                             "another --report, and run again with a fresh key.") from None
    out = sys.stderr if args.output == "-" else sys.stdout
    print(f"jaxdp {__version__} anonymize | {source} -> {args.output}", file=out)
    print(f"  bounds: {how}", file=out)
    print(f"  n = {n}, delay = {delay} records, frames = {eps_f.size}", file=out)
    print(f"  run time (curator only: it depends on the input): {elapsed:.1f} s "
          f"({records_in / max(elapsed, 1e-9):,.0f} records/s)", file=out)  # fmt: skip
    print(f"  key: {'reproducible seed: NOT private' if seeded else 'fresh from the operating system (secret, not stored)'}",
          file=out)  # fmt: skip
    print(f"  records in {records_in}, out {writer.rows}, superseded {sa.superseded}, dropped {sa.dropped}"
          + (f", capped {sa.capped}" if config.records_per_subject else ""), file=out)  # fmt: skip
    if config.records_per_subject:
        print(f"  epsilon {args.epsilon:g} per subject: {args.epsilon / config.records_per_subject:.4g} per frame, "
              f"at most {config.records_per_subject} released record(s) per subject", file=out)  # fmt: skip
    else:
        print(f"  epsilon spent {eps_f.sum():.4g} of {args.epsilon:g} (at most {report['epsilon_per_frame_max']:.4g} "
              "per frame)", file=out)  # fmt: skip
    print(f"  unit of privacy: {report['unit_of_privacy']}", file=out)  # (found in review: only in the report)
    print(f"  private: {'yes' if private else 'NO'}"
          + (f" ({report['sampler']['guarantee']})" if private else ""), file=out)
    for reason in reasons:
        print(f"jaxdp anonymize: WARNING: this release is NOT differentially private: {reason}.", file=sys.stderr)
    if sa.dropped:
        print(f"jaxdp anonymize: WARNING: the budget is spent after {target} records (--target-length): {sa.dropped} "
              "later records were dropped and are not in the output. Release them separately with a new budget, "
              "or raise --target-length.", file=sys.stderr)  # fmt: skip
    if sa.frames_without_query:  # public: frame sizes and budgets
        print(f"jaxdp anonymize: NOTE: {sa.frames_without_query} frame(s) (e.g. a short last one) had a budget the exact "
              "sampler (--noise grid) cannot take and were released as the running estimate of earlier frames, "
              "without a query of their own. Raise --epsilon to give them one.", file=sys.stderr)  # fmt: skip
    print(f"  release carries: {carries}", file=out)
    if carries_words:
        print(f"jaxdp anonymize: NOTE: {carries_words}", file=sys.stderr)
    if diag is not None:
        d = report["curator_diagnostics_NOT_PRIVATE"]
        print(f"  {NOT_PRIVATE_NOTE.upper()}:", file=out)
        print(f"    values clipped into the domain: {d['values_clipped']}", file=out)
        if d["sse_vs_midpoint"] is not None:
            print(f"    SSE {d['sse']:.4e} = {d['sse_vs_midpoint']:.3g} x releasing the midpoint (1 = no better than "
                  "releasing nothing)", file=out)  # fmt: skip
            for name, r in zip(columns, d["sse_vs_midpoint_per_column"]):
                if r is not None:
                    words = "closer to the data than the midpoint" if r < 1 else "NO closer to the data than the midpoint"
                    print(f"    column {name!r}: squared error {r:.3g} x releasing the midpoint ({words})", file=out)
    return 0


def _prefetch(batches, depth: int = 2):
    """Read (parse) the next batches in a background thread while the codec works on the current one
    (pyarrow and XLA release the GIL). Errors are re-raised in the caller's thread, in order."""
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=depth)
    done = object()
    stop = threading.Event()

    def work():
        try:
            for item in batches:
                if stop.is_set():
                    return
                q.put(item)
            q.put(done)
        except BaseException as err:  # noqa: BLE001 - handed to the consumer
            q.put(err)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # let the reader finish its current batch
            try:
                q.get_nowait()
            except queue.Empty:
                thread.join(timeout=0.05)


class _Content:
    """What the released values carry, read from the output only (so it may be reported): whether every
    released record is the domain midpoint."""

    def __init__(self, lo, hi):
        self.mid = 0.5 * (lo + hi)
        self.all_midpoint = True

    def add(self, out):
        if self.all_midpoint and out.shape[0]:
            self.all_midpoint = bool(np.all(np.asarray(out, np.float64) == self.mid.astype(out.dtype)))

    def verdict(self, sa, records_out):
        """``(key, plain words or None)``."""
        # (found in review: the advice named --records-per-subject when it was already given)
        declared = sa.config.records_per_subject is not None
        if sa.rows_seen == 0:  # (found in review: an empty input read "per-record detail in 0 % of blocks")
            return "no records", "the input has no records: the output holds the header only."
        if records_out and self.all_midpoint:
            return "nothing", (
                "the release carries no information from the data: every released record is the domain "
                "midpoint. Raise --epsilon" + (" or lengthen --delay (more records per frame)." if declared else
                ", lengthen --delay (more records per frame), or, if each person has one row, declare "
                "--records-per-subject 1 (ε per frame instead of ε·m/l).")
            )
        if records_out and sa.blocks_coded == 0:
            return "frame means only", (
                "every released record is its frame's noisy column means (no block kept per-record detail): "
                "the release shows how column averages move from frame to frame, not individual records. "
                + _detail_advice(sa, declared)
            )
        share = sa.blocks_coded / max(sa.blocks_done, 1)
        return f"per-record detail in {100 * share:.0f} % of blocks", None


def _detail_advice(sa, declared: bool) -> str:
    """What per-record detail would take, in numbers: the frame budget ε_f at which the codec's blocks go live (from
    public values, and from the noisy column variances the frame layer released: post-processing), against this
    run's. Found in review: the advice "raise --epsilon or --delay" was given where neither helped at any plausible
    size (the bundled Census over its public domain needs ε_f in the hundreds)."""
    eps_f = max(sa.epsilon_spent, default=0.0)
    anything, seen = sa.frame_means.frame_epsilon_for_blocks()
    need = seen if seen is not None else anything
    if not (eps_f > 0 and np.isfinite(need)):
        return "For per-record detail raise --epsilon" + (" or --delay." if not declared else ".")
    factor = need / eps_f
    at = (f"about {need:.3g} at the spread of the data seen through its noisy variances" if seen is not None else
          f"at least {need:.3g} (whatever the data; more where the data spread less than the domain allows)")
    how = (f"each frame spends ε/k, so raise --epsilon about {factor:.3g}× (--delay does not change ε_f)" if declared
           else f"each frame spends ε·m/l, so raise --epsilon or --delay about {factor:.3g}× in all, or, if each "
           "person has one row, declare --records-per-subject 1 (each frame then spends ε)")
    far = (" That is out of reach at a usual ε: a narrower public domain (--bounds closer to where the values lie) "
           "helps most." if factor > 30 else "")
    return f"Per-record detail needs a frame budget ε_f of {at}; this run's frames had at most {eps_f:.3g}: {how}.{far}"


def _emit(writer, out, idx, id_of, id_column, diag, content=None):
    if content is not None:
        content.add(out)
    if diag is not None:
        diag.add(out, idx)
    ids = [id_of[int(r)] for r in idx] if id_column is not None else None
    if out.shape[0]:
        writer.write(out, ids)


def _strict_check(reader, x, row0, lo, hi, columns):
    """The message names where (to fix the file) and the public domain, never the value (messages end up in
    logs)."""
    bad = np.argwhere((x < lo) | (x > hi))
    if bad.size:
        r, c = bad[0]
        side = "below" if x[r, c] < lo[c] else "above"
        raise InputError(
            f"--strict-bounds: a value is outside the domain at {reader.where(row0 + r)}, column {columns[c]!r}: "
            f"{side} [{lo[c]:g}, {hi[c]:g}]. Widen --bounds or drop --strict-bounds to clip them."
        )


class _Diagnostics:
    """Curator-only numbers (`--diagnostics`), accumulated while streaming: they read the raw data."""

    def __init__(self, lo, hi, d):
        self.lo, self.hi = lo, hi
        self.raw: dict[int, np.ndarray] = {}  # input row → its values, for rows of earlier batches still buffered
        self.batch, self.row0 = np.zeros((0, d)), 0  # the batch being pushed
        self.sse = np.zeros(d)
        self.mid = np.zeros(d)
        self.clipped = np.zeros(d, np.int64)

    def remember(self, x, row0):
        self.batch, self.row0 = x, row0

    def keep_only(self, rows):
        """After a push: keep copies of the rows still buffered, forget the batch and every row that will never be
        released (superseded, dropped, capped). Found in review: every input row was kept in a dict, as a view of
        its batch, until it was released — those never released to the end of the run (memory grew with the
        file), and each batch's rows cost ≈ 200 bytes each on top of the batch."""
        self.raw = {r: v for r, v in self.raw.items() if r in rows}
        end = self.row0 + self.batch.shape[0]
        self.raw.update((r, self.batch[r - self.row0].copy()) for r in rows if self.row0 <= r < end)
        self.batch = self.batch[:0]

    def add(self, out, idx):
        if not len(idx):
            return
        idx = np.asarray(idx)
        here = (idx >= self.row0) & (idx < self.row0 + self.batch.shape[0])
        x = np.empty((idx.size, self.batch.shape[1]))
        x[here] = self.batch[idx[here] - self.row0]
        if not here.all():
            x[~here] = np.stack([self.raw.pop(int(r)) for r in idx[~here]])
        self.sse += np.sum((out.astype(np.float64) - x) ** 2, axis=0)
        self.mid += np.sum((0.5 * (self.lo + self.hi) - x) ** 2, axis=0)
        self.clipped += np.sum((x < self.lo) | (x > self.hi), axis=0)

    def summary(self, eps_f, frame_sizes, note):
        width = self.hi - self.lo
        pln = float(np.sum(frame_sizes * len(width) * 2.0 * (width.sum() / eps_f) ** 2)) if eps_f.size else 0.0
        sse, mid = float(self.sse.sum()), float(self.mid.sum())
        return {
            "note": note,
            "values_clipped": int(self.clipped.sum()),
            "values_clipped_per_column": self.clipped.astype(int).tolist(),
            "sse": sse,
            "sse_midpoint": mid,
            "sse_vs_midpoint": sse / mid if mid > 0 else None,
            "sse_vs_midpoint_per_column": [float(a / b) if b > 0 else None for a, b in zip(self.sse, self.mid)],
            "sse_pln_expected": pln,
            "sse_vs_pln_expected": sse / pln if pln > 0 else None,
        }


def _reads_as_number(name: str) -> bool:
    try:
        float(name)
    except ValueError:
        return False
    return True


def _sampler_note(noise: str) -> dict:
    """What kind of ε-DP the samplers give (README, "Samplers"): pure ε-DP under finite arithmetic with the exact
    samplers, otherwise ε-DP of the real-valued mechanism, with floating-point samplers whose low bits and cut
    tails are not accounted for."""
    if noise == "grid":
        return {"noise": noise, "exact": True, "guarantee": "pure epsilon-DP under finite arithmetic: exact samplers"}
    return {"noise": noise, "exact": False,
            "guarantee": "epsilon-DP of the real-valued mechanism, drawn with floating-point samplers (not exact: "
                         "--noise grid for pure epsilon-DP under finite arithmetic)"}


def _not_private_reasons(*, bounds_public: bool, config, seeded: bool) -> list[str]:
    reasons = []
    if not bounds_public:
        reasons.append("the bounds were derived from the data (pass public --bounds)")
    if config.reorder != "none":
        reasons.append("the paper's reordering (--paper) computes permutations from the raw data")
    if seeded:
        reasons.append("--seed makes the noise reproducible by anyone who knows the seed (omit it)")
    return reasons


def _config_dict(config) -> dict:
    import dataclasses

    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


class _NoProgress:
    def update(self, n):
        pass

    def close(self):
        pass


def _progress(total, quiet: bool):
    if quiet or not sys.stderr.isatty():
        return _NoProgress()
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="rec", unit_scale=True, file=sys.stderr)


# ------------------------------------------------------------------------------------------------
# Parser
# ------------------------------------------------------------------------------------------------
_VALUE_OPTIONS = ("--bounds", "--split", "--delimiter")


def _join_negative_values(argv):
    """'--bounds -5:5,...' → '--bounds=-5:5,...' (argparse would take the value for an option)."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a in _VALUE_OPTIONS and i + 1 < len(argv) and argv[i + 1].startswith("-") and argv[i + 1] != "-":
            out.append(f"{a}={argv[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxdp", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"jaxdp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="Algorithm 1 on the bundled Census data, beside PLN")
    p.add_argument("--n", type=int, default=8, help="records per block (default 8)")
    p.add_argument("--epsilon", type=float, default=1.0, help="budget per record (default 1.0)")
    p.add_argument("--theta", type=float, default=1.0, choices=[0.5, 1.0], help="score exponent (default 1)")
    p.add_argument("--bounds", default=None, help="comma-separated public attribute widths (domain [0, w]; default: "
                   "jaxdp's public domain for Census), or 'data' for the paper's 1.5 x max rule (NOT private)")
    p.add_argument("--seed", type=int, default=None, help="reproducible seed (default: a fresh key from the OS)")
    a = sub.add_parser(
        "anonymize", help="publish a record stream with the HVC anonymizer (main job)",
        description="Publish a numeric record stream with the hybrid-video-coding anonymizer (differential "
                    "privacy), reading and writing in chunks. Exit code 2 with a message on bad input.",
    )  # fmt: skip
    g = a.add_argument_group("input and output")
    g.add_argument("input", nargs="?", default=None,
                   help="table with a header row: .csv (optionally .gz/.bz2/.xz/.zst), .parquet, .arrow, or '-' for "
                        "CSV on stdin (default: the bundled Census data)")
    g.add_argument("-o", "--output", default="anonymized.csv",
                   help="output table, format from the suffix like the input, '-' for CSV on stdout "
                        "(default anonymized.csv); written to a temporary name and renamed on success")
    g.add_argument("--input-format", default=None, choices=["csv", "parquet", "arrow"], help="override the input suffix")
    g.add_argument("--output-format", default=None, choices=["csv", "parquet", "arrow"], help="override the output suffix")
    g.add_argument("--delimiter", default=",", type=_delimiter,
                   help="CSV field delimiter (default ','; '\\t' or 'tab' for a tab)")
    g.add_argument("--encoding", default="utf-8", help="CSV text encoding (default utf-8; a BOM is skipped)")
    g.add_argument("--ids-column", default=None,
                   help="column holding subject ids (any values); kept in the output; a subject updated within a "
                        "buffer keeps its latest record. Ids are compared as written: 1, 1.0 and ' 1' are three "
                        "subjects, so write each subject's id one way (with --records-per-subject a subject written "
                        "two ways gets twice the records and twice epsilon). Empty ids and missing-value markers "
                        "(NaN, NA, null, None, N/A, ...) are refused")
    g.add_argument("--chunk", type=int, default=131_072, help="records read per chunk (default 131072)")
    g.add_argument("--report", default=None, help="write a JSON report here")
    g.add_argument("--quiet", action="store_true", help="no progress bar (it is also off when stderr is not a terminal)")
    g = a.add_argument_group("privacy")
    g.add_argument("--epsilon", type=float, default=1.0, help="total budget ε for the target length (default 1)")
    g.add_argument("--bounds", default=None,
                   help="public domain: widths 'w1,..,wd' (domain [0, w]) or 'lo:hi,..' (negative values fine), or "
                        "'data' for the paper's 1.5 x max rule (reads the data: NOT private). Required for your data")
    g.add_argument("--target-length", type=int, default=None,
                   help="records to protect l (default: the number of input rows, or with --ids-column the number "
                        "of records that will be released, rows less updates; needed for stdin); later records are "
                        "dropped")
    g.add_argument("--records-per-subject", type=int, default=None, metavar="K",
                   help="unit of privacy: a subject with at most K released records; each frame spends ε/K and the "
                        "stream may be of any length (with --ids-column a subject's records beyond its K-th are "
                        "dropped; without ids, K is your declaration). Exclusive with --target-length")
    g.add_argument("--seed", default=None,
                   help="reproduce a release from this integer seed in [0, 2**64) -- NOT private: anyone who knows "
                        "the seed can recompute the noise. Default: a fresh secret key from the operating system")
    g.add_argument("--noise", default=None, choices=["float", "float32", "float64", "grid"],
                   help="samplers: float (default, fast float32), float64, or grid (exact discrete Laplace and an "
                        "exact exponential mechanism: pure DP under finite arithmetic, slower)")
    g.add_argument("--strict-bounds", action="store_true",
                   help="refuse the run if any value lies outside the bounds, instead of clipping it (a curator's check: "
                        "whether a release happens then depends on the data, so epsilon-DP holds only for data whose "
                        "values all lie inside the bounds). The check runs as the input is read: with -o - the "
                        "records released before the first value outside the bounds may already be on standard "
                        "output when the run stops")  # fmt: skip
    g.add_argument("--diagnostics", action="store_true",
                   help="also compute curator-only diagnostics from the raw data (values clipped, SSE vs the "
                        "midpoint and PLN): NOT private, never publish them")
    g = a.add_argument_group("coding")
    g.add_argument("--block", type=int, default=8, help=f"records per block n (1..{MAX_BLOCK}, default 8)")
    g.add_argument("--delay", type=int, default=None, help="delay δ = frame size m, a multiple of n (default 12 n)")
    g.add_argument("--split", default=None, help="eps_QL,eps_QE,eps_E fractions of each block's budget (default 1/3 each)")
    g.add_argument("--theta", type=float, default=None, choices=[0.5, 1.0], help="score exponent θ of Algorithm 1 (default 0.5)")
    g.add_argument("--accounting", default=None, choices=["joint", "paper"],
                   help="joint (exact joint loss, default) or paper (Theorem 1)")
    g.add_argument("--order", default=None, choices=["zigzag", "diagonal"], help="coefficient scan order (default zigzag)")
    g.add_argument("--kinds", default=None, help=f"comma-separated transforms from {', '.join(_KINDS)} (default dct,dst,dht)")
    g.add_argument("--modes", default=None, help=f"comma-separated prediction modes: {_MODES_HELP}")
    g.add_argument("--history", type=int, default=None,
                   help=f"past blocks seen by the predictor π (1..{MAX_HISTORY}, default 2; also with --paper)")
    g.add_argument("--no-prune", action="store_true", help="keep hopeless (t, σ) candidates")
    g.add_argument("--no-clip", action="store_true", help="do not clip released records to the domain")
    g.add_argument("--paper", action="store_true",
                   help="paper-faithful preset (θ=1, Theorem 1, no pruning, the paper's reordering: NOT private)")
    g.add_argument("--no-compilation-cache", action="store_true",
                   help="do not use JAX's persistent compilation cache (default: ~/.cache/jaxdp/xla; it stores compiled "
                        "programs, never data)")
    g.add_argument("--no-fuse-loops", action="store_true",
                   help="compile the codec loop with XLA's default instead of one CPU kernel")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(_join_negative_values(argv))
    if args.command == "demo":
        try:
            return demo(args)
        except InputError as err:
            print(f"jaxdp demo: error: {err}", file=sys.stderr)
            return 2
    try:
        return anonymize_cmd(args)
    except InputError as err:
        print(f"jaxdp anonymize: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("jaxdp anonymize: interrupted; no output was written.", file=sys.stderr)
        return 130
    except OSError as err:  # reading or writing failed during the run (disk full, a file removed, …): a message, never a
        # traceback; the output's temporary file is removed on the way out (found in review: a traceback, exit 1)
        where = f" ({err.filename})" if getattr(err, "filename", None) else ""
        print(f"jaxdp anonymize: error: {err.strerror or err}{where}; no output was written.", file=sys.stderr)
        return 2
    except SystemExit as stop:  # SIGTERM (and other signals) stop the run between batches: say so, as for SIGINT
        if isinstance(stop.code, int) and stop.code > 128:  # (found in review: SIGTERM exited 143 silently)
            print(f"jaxdp anonymize: stopped by signal {stop.code - 128}; no output was written.", file=sys.stderr)
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
