"""Command line of jaxdp.

* ``jaxdp anonymize [INPUT.csv] -o OUT.csv …`` (the main job): publish a record stream with the
  hybrid-video-coding anonymizer; with no input it runs on the bundled Census data.
* ``jaxdp demo``: the quantizer of Algorithm 1 alone on blocks of the bundled Census data, with a
  data-independent prediction, beside plain Laplace noise on every record (PLN) and the midpoint.

Exit codes: 0 success, 2 bad input or options (with a message saying what to fix).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import __version__, backend, codec, datasets, keys, mechanisms, quantize
from jaxdp.diagnostics import NOT_PRIVATE_NOTE
from jaxdp.privacy import release_is_private
from jaxdp.stream import BudgetExhaustedWarning


def _parse_bounds(text: str | None, data: np.ndarray) -> tuple[np.ndarray, str]:
    if text is None:
        return (
            datasets.bounds_from_data(data, 1.5),
            "1.5 x data max (paper Sec. 5.4) -- NOT private: these bounds read the data. "
            "Pass --bounds for a private release.",
        )
    try:
        widths = np.asarray([float(v) for v in text.split(",")])
    except ValueError as err:
        raise SystemExit(f"--bounds must be comma-separated numbers (one width per attribute): {err}") from err
    return widths, "public widths given with --bounds"


def _pln(key, data, widths, epsilon):
    """Laplace noise per record with per-attribute budgets ∝ Λ^{2/3} (Theorem 1 with n = 1).

    A tighter variant of the paper's PLN (`jaxdp.pln` adds ``Lap(ΣΛ/ε)`` to every attribute); the demo
    uses it because it is the stronger per-record baseline at the same ε.
    """
    g23 = widths ** (2.0 / 3.0)
    eps_k = epsilon * g23 / g23.sum()  # Theorem 1 with n = 1: attribute k gets ε·Λ_k^(2/3)/ΣΛ^(2/3)
    return data + np.asarray(mechanisms.laplace_noise(key, data.shape, epsilon=eps_k, sensitivity=widths, dtype=jnp.float32))


def demo(args: argparse.Namespace) -> int:
    data = datasets.load_census().astype(np.float64)
    widths, how = _parse_bounds(args.bounds, data)
    if widths.shape != (data.shape[1],):
        raise SystemExit(f"--bounds needs {data.shape[1]} widths, got {widths.shape[0]}.")
    n, eps = args.n, args.epsilon
    if n < 1 or n > data.shape[0]:
        raise SystemExit(f"--n must be in [1, {data.shape[0]}], got {n}.")
    if not eps > 0:
        raise SystemExit(f"--epsilon must be > 0, got {eps}.")
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
    print(f"\n{'method':28s} {'SSE':>12s} {'log2 SSE':>9s} {'vs PLN':>8s} {'time s':>8s}")
    for name, sse, secs, note in rows:
        print(f"{name:28s} {sse:12.4e} {np.log2(sse):9.2f} {sse / base:8.3f} {secs:8.3f}  {note}")
    return 0


class InputError(Exception):
    """A problem with the user's input, reported with exit code 2."""


def read_csv(path: str, id_column: str | None = None) -> tuple[list[str], np.ndarray, list | None]:
    """Read a numeric CSV with a header row; return (columns, float64 records [N, d], ids or None)."""
    if not os.path.isfile(path):
        raise InputError(f"input file not found: {path}")
    with open(path, newline="") as f:
        reader = csv.reader(f)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise InputError(f"{path} is empty: expected a header row and numeric records.") from None
        id_at = None
        if id_column is not None:
            if id_column not in header:
                raise InputError(f"--ids-column {id_column!r} is not a column of {path} (columns: {header}).")
            id_at = header.index(id_column)
        rows, ids = [], []
        for line_no, row in enumerate(reader, start=2):
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise InputError(f"{path}, line {line_no}: {len(row)} values, but the header has {len(header)} columns.")
            values = []
            for j, cell in enumerate(row):
                if j == id_at:
                    ids.append(cell.strip())
                    continue
                try:
                    v = float(cell)
                except ValueError:
                    raise InputError(
                        f"{path}, line {line_no}, column {header[j]!r}: {cell!r} is not a number "
                        "(all columns but --ids-column must be numeric)."
                    ) from None
                if not np.isfinite(v):
                    raise InputError(f"{path}, line {line_no}, column {header[j]!r}: {cell!r} is not finite (NaN/inf).")
                values.append(v)
            rows.append(values)
    columns = [h for j, h in enumerate(header) if j != id_at]
    if not rows:
        raise InputError(f"{path} has a header but no records.")
    if not columns:
        raise InputError(f"{path} has no numeric columns.")
    return columns, np.asarray(rows, np.float64), (ids if id_at is not None else None)


def _bounds_option(text: str | None, data: np.ndarray, bundled: bool):
    """Return (bounds for HVCConfig, description, private)."""
    d = data.shape[1]
    if text is None:
        if not bundled:
            raise InputError(
                "--bounds is required: give the public domain as widths 'w1,...,wd' (domain [0, w]) or "
                "'lo:hi,...' pairs, or 'data' for the paper's 1.5 x max rule (NOT private)."
            )
        text = "data"
    if text == "data":
        width = datasets.bounds_from_data(data, 1.5)
        return (np.zeros(d), width), "1.5 x data max (paper Sec. 5.4) -- NOT private: these bounds read the data", False
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != d:
        raise InputError(f"--bounds gives {len(parts)} attributes but the data has {d} columns.")
    try:
        if all(":" in p for p in parts):
            lo = np.array([float(p.split(":")[0]) for p in parts])
            hi = np.array([float(p.split(":")[1]) for p in parts])
        else:
            lo, hi = np.zeros(d), np.array([float(p) for p in parts])
    except ValueError:
        raise InputError(f"--bounds must be numbers: {text!r}") from None
    return (lo, hi), "public bounds given with --bounds", True


def _run_stream(config, key, data, ids, quiet: bool):
    """Push `data` through a `StreamAnonymizer` in chunks: (released, index, anonymizer, seconds)."""
    import jaxdp

    sa = jaxdp.StreamAnonymizer(config, key)
    outs, idxs = [], []
    chunk = max(config.frame_size * 16, 4096)
    start = time.perf_counter()
    progress = _progress(data.shape[0], quiet)
    for lo_row in range(0, data.shape[0], chunk):
        part = slice(lo_row, lo_row + chunk)
        o, i = sa.push(data[part], ids=None if ids is None else ids[part])
        outs.append(o)
        idxs.append(i)
        progress.update(min(chunk, data.shape[0] - lo_row))
    o, i = sa.flush()
    outs.append(o)
    idxs.append(i)
    progress.close()
    elapsed = time.perf_counter() - start
    released = np.concatenate(outs)
    index = np.concatenate(idxs)
    return released, index, sa, elapsed


def anonymize_cmd(args: argparse.Namespace) -> int:
    import jaxdp

    bundled = args.input is None
    if bundled:
        columns = list(datasets.CENSUS_COLUMNS)
        data = datasets.load_census().astype(np.float64)
        ids = None
        source = "bundled Census (1080 x 13)"
    else:
        columns, data, ids = read_csv(args.input, args.ids_column)
        source = f"{args.input} ({data.shape[0]} x {data.shape[1]})"
    bounds, how, private = _bounds_option(args.bounds, data, bundled)
    bounds_public = private
    if args.strict_bounds:
        lo_b, hi_b = (np.asarray(b, np.float64) for b in bounds)
        bad = np.argwhere((data < lo_b) | (data > hi_b))
        if bad.size:
            r, c = bad[0]
            raise InputError(
                f"--strict-bounds: {bad.shape[0]} values are outside the domain; first at record {r + 1} "
                f"(line {r + 2}), column {columns[c]!r}: {data[r, c]:g} not in [{lo_b[c]:g}, {hi_b[c]:g}]. "
                "Widen --bounds or drop --strict-bounds to clip and count them."
            )
    n = args.block
    delay = args.delay if args.delay is not None else 12 * n
    if delay % n or delay < n:
        raise InputError(f"--delay must be a positive multiple of --block ({n}); got {delay}.")
    target = args.target_length or data.shape[0]
    kw = dict(target_length=target, bounds=bounds, history=args.history)
    if args.split:
        kw["split"] = tuple(float(v) for v in args.split.split(","))
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
            kw.pop("history")
            config = jaxdp.HVCConfig.paper(n, delay // n, args.epsilon, **kw)
        else:
            config = jaxdp.HVCConfig(n, delay // n, args.epsilon, **kw)
    except (ValueError, TypeError, NotImplementedError) as err:
        raise InputError(str(err)) from None

    key, seeded = _key_option(args.seed)
    private = release_is_private(public_bounds=private, reorder=config.reorder, reproducible_seed=seeded)
    previous = backend.fuse_cpu_loops(not args.no_fuse_loops)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BudgetExhaustedWarning)  # said below, in plain words
            released, index, sa, elapsed = _run_stream(config, key, data, ids, args.quiet)
        codec_loop_one_kernel = codec.one_kernel_loop(config, n * data.shape[1])
    finally:
        backend.fuse_cpu_loops(previous)

    with open(args.output, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        writer.writerows(released.tolist())

    eps_f = np.asarray(sa.epsilon_spent)
    reasons = _not_private_reasons(how_private=bounds_public, config=config, seeded=seeded)
    report = {
        "jaxdp": __version__,
        "input": source,
        "output": args.output,
        "private": bool(private),
        "not_private_because": reasons,
        "reproducible_seed": bool(seeded),
        "records_in": int(data.shape[0]),
        "records_out": int(released.shape[0]),
        "superseded": int(sa.superseded),
        "dropped": int(sa.dropped),
        "budget_exhausted": bool(sa.dropped > 0),
        "epsilon_total": float(config.epsilon),
        "epsilon_spent": float(eps_f.sum()),
        "epsilon_per_frame_max": float(eps_f.max()) if eps_f.size else 0.0,
        "frames": int(eps_f.size),
        "bounds": how,
        "seconds": elapsed,
        "codec_loop_one_kernel": codec_loop_one_kernel,
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in _config_dict(config).items()},
    }
    diag = None
    if args.diagnostics:
        diag = _diagnostics(sa, config, data, released, index, target, eps_f)
        report["curator_diagnostics_NOT_PRIVATE"] = diag
    if args.report:
        with open(args.report, "w") as f:
            json.dump(report, f, indent=2)
    print(f"jaxdp {__version__} anonymize | {source} -> {args.output}")
    print(f"  bounds: {how}")
    print(f"  n = {n}, delay = {delay} records, frames = {eps_f.size}, {elapsed:.1f} s")
    print(f"  key: {'reproducible seed: NOT private' if seeded else 'fresh from the operating system (secret, not stored)'}")
    print(f"  records in {data.shape[0]}, out {released.shape[0]}, superseded {sa.superseded}, dropped {sa.dropped}")
    print(f"  epsilon spent {eps_f.sum():.4g} of {config.epsilon:g} (at most {report['epsilon_per_frame_max']:.4g} per frame)")
    print(f"  private: {'yes' if private else 'NO'}")
    for reason in reasons:
        print(f"jaxdp anonymize: WARNING: this release is NOT differentially private: {reason}.", file=sys.stderr)
    if sa.dropped:
        print(
            f"jaxdp anonymize: WARNING: the budget is spent after {target} records (--target-length): {sa.dropped} later "
            "records were dropped and are not in the output. Release them separately with a new budget, "
            "or raise --target-length.",
            file=sys.stderr,
        )
    if diag is not None:
        print(f"  {NOT_PRIVATE_NOTE.upper()}:")
        print(f"    values clipped into the domain: {diag['values_clipped']}")
        print(f"    SSE {diag['sse']:.4e} = {diag['sse_vs_midpoint']:.3g} x releasing the midpoint, "
              f"{diag['sse_vs_pln_expected']:.3g} x the PLN expectation")
    return 0


def _key_option(seed: str | None):
    """(key, seeded): a fresh OS-entropy key, or the reproducible key of --seed."""
    if seed is None:
        return keys.fresh_key(), False
    try:
        value = int(seed, 10)
    except ValueError:
        raise InputError(f"--seed must be a non-negative integer below 2**64, got {seed!r}.") from None
    if not 0 <= value <= keys.MAX_SEED:
        raise InputError(f"--seed must be in [0, 2**64), got {seed}. Omit --seed for a private release.")
    return keys.key_from_seed(value), True


def _not_private_reasons(*, how_private: bool, config, seeded: bool) -> list[str]:
    reasons = []
    if not how_private:
        reasons.append("the bounds were derived from the data (pass public --bounds)")
    if config.reorder != "none":
        reasons.append("the paper's reordering (--paper) computes permutations from the raw data")
    if seeded:
        reasons.append("--seed makes the noise reproducible by anyone who knows the seed (omit it)")
    return reasons


def _diagnostics(sa, config, data, released, index, target, eps_f) -> dict:
    """Curator-only numbers from the raw data (`jaxdp.diagnostics`): NOT private."""
    lo, hi = sa.lo, sa.hi
    x = data[index]
    width = hi - lo
    sse_col = np.sum((released.astype(np.float64) - x) ** 2, axis=0)
    mid_col = np.sum((0.5 * (lo + hi) - x) ** 2, axis=0)
    frame_sizes = eps_f * target / config.epsilon  # records per frame
    pln_sse = float(np.sum(frame_sizes * data.shape[1] * 2.0 * (width.sum() / eps_f) ** 2)) if eps_f.size else 0.0
    clipped = np.sum((x < lo) | (x > hi), axis=0)
    sse, mid = float(sse_col.sum()), float(mid_col.sum())
    return {
        "note": NOT_PRIVATE_NOTE,
        "values_clipped": int(clipped.sum()),
        "values_clipped_per_column": clipped.astype(int).tolist(),
        "sse": sse,
        "sse_midpoint": mid,
        "sse_vs_midpoint": sse / mid if mid > 0 else None,
        "sse_vs_midpoint_per_column": [float(a / b) if b > 0 else None for a, b in zip(sse_col, mid_col)],
        "sse_pln_expected": pln_sse,
        "sse_vs_pln_expected": sse / pln_sse if pln_sse > 0 else None,
    }


def _config_dict(config) -> dict:
    import dataclasses

    out = {}
    for f in dataclasses.fields(config):
        v = getattr(config, f.name)
        out[f.name] = [list(x) for x in v] if f.name == "bounds" else v
    return out


def _progress(total: int, quiet: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="rec", disable=quiet or total < 20_000, file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jaxdp", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"jaxdp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="Algorithm 1 on the bundled Census data, beside PLN")
    p.add_argument("--n", type=int, default=8, help="records per block (default 8)")
    p.add_argument("--epsilon", type=float, default=1.0, help="budget per record (default 1.0)")
    p.add_argument("--theta", type=float, default=1.0, choices=[0.5, 1.0], help="score exponent (default 1)")
    p.add_argument("--bounds", default=None, help="comma-separated public attribute widths (domain [0, w])")
    p.add_argument("--seed", type=int, default=None, help="reproducible seed (default: a fresh key from the OS)")
    a = sub.add_parser("anonymize", help="publish a record stream with the HVC anonymizer (main job)")
    a.add_argument("input", nargs="?", default=None, help="CSV with a header row (default: bundled Census)")
    a.add_argument("-o", "--output", default="anonymized.csv", help="output CSV (default anonymized.csv)")
    a.add_argument("--epsilon", type=float, default=1.0, help="total budget for the target length (default 1)")
    a.add_argument("--block", type=int, default=8, help="records per block n (default 8)")
    a.add_argument("--delay", type=int, default=None, help="delay δ = frame size m, a multiple of n (default 12 n)")
    a.add_argument("--target-length", type=int, default=None, help="records to protect l (default: all)")
    a.add_argument("--bounds", default=None, help="public domain: widths 'w1,..' or 'lo:hi,..' or 'data' (not private)")
    a.add_argument("--split", default=None, help="eps_QL,eps_QE,eps_E fractions (default 1/3 each)")
    a.add_argument("--theta", type=float, default=None, choices=[0.5, 1.0])
    a.add_argument("--accounting", default=None, choices=["joint", "paper"])
    a.add_argument("--order", default=None, choices=["zigzag", "diagonal"])
    a.add_argument("--kinds", default=None, help="comma-separated transforms (dct,dst,dht,identity)")
    a.add_argument("--modes", default=None, help="comma-separated prediction modes")
    a.add_argument("--history", type=int, default=2, help="past blocks seen by the predictor π (default 2)")
    a.add_argument("--no-prune", action="store_true", help="keep hopeless (t, σ) candidates")
    a.add_argument("--no-clip", action="store_true", help="do not clip released records to the domain")
    a.add_argument("--paper", action="store_true", help="paper-faithful preset (θ=1, Theorem 1, no pruning)")
    a.add_argument("--noise", default=None, choices=["float", "float32", "float64", "grid"],
                   help="samplers: float (default, fast float32), float64, or grid (exact discrete Laplace and an exact "
                        "exponential mechanism: pure DP under finite arithmetic, slower)")
    a.add_argument("--ids-column", default=None, help="column holding subject ids (updates keep the latest tuple)")
    a.add_argument("--report", default=None, help="write a JSON report here")
    a.add_argument("--seed", default=None,
                   help="reproduce a release from this integer seed in [0, 2**64) -- NOT private: anyone who knows "
                        "the seed can recompute the noise. Default: a fresh secret key from the operating system")
    a.add_argument("--diagnostics", action="store_true",
                   help="also compute curator-only diagnostics from the raw data (values clipped, SSE vs the "
                        "midpoint and PLN): NOT private, never publish them")
    a.add_argument("--quiet", action="store_true", help="no progress bar")
    a.add_argument("--strict-bounds", action="store_true", help="refuse values outside the bounds instead of clipping")
    a.add_argument("--no-fuse-loops", action="store_true",
                   help="compile the codec loop with XLA's default instead of one CPU kernel (see jaxdp.fuse_cpu_loops)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(args)
    try:
        return anonymize_cmd(args)
    except InputError as err:
        print(f"jaxdp anonymize: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
