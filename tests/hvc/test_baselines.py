import functools

import jax
import numpy as np
import pytest

import jaxdp
from jaxdp import datasets

CENSUS = datasets.load_census()
WIDTH = datasets.bounds_from_data(CENSUS)
BOUNDS = np.stack([np.zeros(13), WIDTH])


@pytest.mark.parametrize("release", ["frame_mean", "microaggregate"])
def test_baselines_match_a_numpy_reference_and_repeat_over_keys(key, release, x64):
    cfg = jaxdp.HVCConfig(4, 2, records_per_subject=1)
    data = CENSUS[:20].astype(np.float64)
    fn = getattr(jaxdp, release)
    if release == "microaggregate":
        fn = functools.partial(fn, group=4)
    keys = jax.random.split(key, 3)
    many = fn(keys, data, cfg, epsilon=2.0, bounds=BOUNDS)
    for r in range(3):
        np.testing.assert_array_equal(many.records[r], fn(keys[r], data, cfg, epsilon=2.0, bounds=BOUNDS).records)
    # zero-noise limit: ε → ∞ gives the exact frame means (running, weighted by size²) / group centroids
    exact = fn(key, data, cfg, epsilon=1e12, bounds=BOUNDS).records
    frames = [data[0:8], data[8:16], data[16:20]]
    if release == "frame_mean":
        w = np.asarray([len(f) ** 2 for f in frames], np.float64)
        means = np.stack([f.mean(0) for f in frames])
        want = np.concatenate([np.repeat((np.cumsum(means * w[:, None], 0) / np.cumsum(w)[:, None])[i:i + 1], len(f), 0)
                               for i, f in enumerate(frames)])  # fmt: skip
    else:
        want = np.concatenate([np.repeat(data[i:i + 4].mean(0, keepdims=True), 4, 0) for i in range(0, 20, 4)])
    np.testing.assert_allclose(exact, want, rtol=1e-6)
