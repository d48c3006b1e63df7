"""Plain float64 NumPy/SciPy references, written independently of jaxdp's implementation."""

import itertools

import numpy as np
import scipy.fft


def matrix(kind, n):
    eye = np.eye(n)
    if kind == "dct":
        return scipy.fft.dct(eye, type=2, norm="ortho", axis=0)
    if kind == "dst":
        return scipy.fft.dst(eye, type=1, norm="ortho", axis=0)
    if kind == "dht":
        f = np.fft.fft(eye, axis=0) / np.sqrt(n)
        return f.real - f.imag
    return eye


def forward(x, kind):
    n, d = x.shape[-2:]
    return matrix(kind, n) @ x @ matrix(kind, d).T


def zigzag_pairs(n, d):
    """0-based (row, col) pairs of the JPEG zig-zag, by simulation of the moving cursor."""
    out, r, c, up = [], 0, 0, True
    while len(out) < n * d:
        out.append((r, c))
        if up:  # moving up-right
            if c == d - 1:
                r, up = r + 1, False
            elif r == 0:
                c, up = c + 1, False
            else:
                r, c = r - 1, c + 1
        else:  # moving down-left
            if r == n - 1:
                c, up = c + 1, True
            elif c == 0:
                r, up = r + 1, True
            else:
                r, c = r + 1, c - 1
    return out


def lemma1_bruteforce(kind, n, width):
    """max over rows r and record pairs at the box's vertices of |c_ij - c'_ij| (3^d differences)."""
    d = len(width)
    an, ad = matrix(kind, n), matrix(kind, d)
    best = np.zeros((n, d))
    for signs in itertools.product((-1.0, 0.0, 1.0), repeat=d):
        delta = np.asarray(signs) * width
        for r in range(n):
            diff = np.zeros((n, d))
            diff[r] = delta
            best = np.maximum(best, np.abs(an @ diff @ ad.T))
    return best


def joint_loss_bruteforce(kind, n, width, order, scales):
    """max over rows and all 3^d vertex differences of Σ_k |Δc_{O(k)}| / b_k (first len(scales))."""
    d = len(width)
    an, ad = matrix(kind, n), matrix(kind, d)
    t = len(scales)
    idx = np.asarray(order)[:t]
    best = 0.0
    for signs in itertools.product((-1.0, 0.0, 1.0), repeat=d):
        delta = np.asarray(signs) * width
        for r in range(n):
            diff = np.zeros((n, d))
            diff[r] = delta
            dc = (an @ diff @ ad.T).reshape(-1)[idx]
            best = max(best, float(np.sum(np.abs(dc) / scales)))
    return best


def gs_table(kind, n, width):
    an, ad = matrix(kind, n), matrix(kind, len(width))
    return np.abs(an).max(axis=1)[:, None] * (np.abs(ad) @ width)[None, :]


def mse_loop(x, x_hat, width, kind, order, eps):
    """ξ(ε*, O, t) for t = 0..nd by a direct loop over t (Theorem 1 allocation, observed c)."""
    n, d = x.shape
    c = forward(x - x_hat, kind).reshape(-1)[order]
    g = gs_table(kind, n, width).reshape(-1)[order]
    out = []
    for t in range(n * d + 1):
        if t:
            w = g[:t] ** (2 / 3)
            eps_k = w / w.sum() * eps
            lap = 2 * np.sum((g[:t] / eps_k) ** 2)
        else:
            lap = 0.0
        out.append(lap + np.sum(c[t:] ** 2))
    return np.asarray(out)
