"""Command line: ``jaxdp demo`` runs the quantizer of Algorithm 1 on the bundled Census data.

Until the stream codec lands, the main job is a kernel demo: cut the 1080 Census records into
blocks of n, predict every block by the (data-independent) domain midpoint, and release each
block with Algorithm 1 (transform choice, t choice, Laplace on the retained coefficients),
beside plain Laplace noise on every record (PLN) and the zero-budget midpoint.
"""

from __future__ import annotations

import argparse
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxdp import __version__, datasets, quantize


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
    """Plain Laplace noise per record; per-attribute budgets ∝ Λ^{2/3} (Theorem 1 with n = 1)."""
    g23 = widths ** (2.0 / 3.0)
    scales = widths ** (1.0 / 3.0) * g23.sum() / epsilon  # Σ_k Λ_k / b_k = ε
    return data + np.asarray(scales * jax.random.laplace(key, data.shape, jnp.float32))


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
    key = jax.random.key(args.seed)
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
    rows.append(("PLN (Laplace per record)", np.sum((pln - data) ** 2), time.perf_counter() - start, ""))
    rows.append(("midpoint (no budget)", np.sum((mid - data) ** 2), 0.0, ""))

    base = rows[2][1]
    print(f"\n{'method':28s} {'SSE':>12s} {'log2 SSE':>9s} {'vs PLN':>8s} {'time s':>8s}")
    for name, sse, secs, note in rows:
        print(f"{name:28s} {sse:12.4e} {np.log2(sse):9.2f} {sse / base:8.3f} {secs:8.3f}  {note}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jaxdp", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"jaxdp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="Algorithm 1 on the bundled Census data, beside PLN")
    p.add_argument("--n", type=int, default=8, help="records per block (default 8)")
    p.add_argument("--epsilon", type=float, default=1.0, help="budget per record (default 1.0)")
    p.add_argument("--theta", type=float, default=1.0, choices=[0.5, 1.0], help="score exponent (default 1)")
    p.add_argument("--bounds", default=None, help="comma-separated public attribute widths (domain [0, w])")
    p.add_argument("--seed", type=int, default=0, help="PRNG seed (default 0)")
    args = parser.parse_args(argv)
    return demo(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
