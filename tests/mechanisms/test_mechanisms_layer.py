"""One mechanisms layer: every noise draw and every exponential-mechanism choice goes through
`jaxdp.mechanisms` (and its exact samplers in `jaxdp.mechanisms.exact`), never a raw `jax.random` sampler in a
system module — each raw call is a place where a mis-calibrated factor could come back."""

import pathlib
import re

import jaxdp

PACKAGE = pathlib.Path(jaxdp.__file__).parent
LAYER = PACKAGE / "mechanisms"
SAMPLERS = re.compile(r"jax\.random\.(laplace|gumbel|exponential|categorical|gamma|normal|choice)\b")


def test_no_module_outside_the_mechanisms_layer_draws_privacy_noise():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if LAYER in path.parents:
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            if SAMPLERS.search(line):
                offenders.append(f"{path.relative_to(PACKAGE)}:{lineno}: {line.strip()}")
    assert not offenders, "raw samplers outside jaxdp.mechanisms:\n" + "\n".join(offenders)


def test_the_check_would_see_a_raw_sampler():
    assert SAMPLERS.search("noise = jax.random.laplace(key, shape) * scale")
    assert SAMPLERS.search("k = jax.random.categorical(k_sel, logits)")
    assert not SAMPLERS.search("bits = jax.random.bits(key, (n,), jnp.uint32)")


def test_every_system_offers_the_same_noise_choices():
    import inspect

    from jaxdp import compressive, histogram, wevent

    assert jaxdp.mechanisms.NOISES == ("float", "float64", "grid")
    for fn in (histogram.lpa, histogram.fpa, histogram.spa, histogram.efpa, histogram.php, histogram.publish,
               histogram.release_histogram, wevent.run, wevent.run_partitioned, wevent.WEventStream,
               compressive.compressive, compressive.laplace_identity,
               compressive.tree_counter, compressive.TreeCounter, compressive.cmco):  # fmt: skip
        param = inspect.signature(fn).parameters["noise"]
        assert param.kind is inspect.Parameter.KEYWORD_ONLY and param.default == "float", fn
    assert jaxdp.HVCConfig(8, 2).noise == "float"
    assert jaxdp.HVCConfig(8, 2, noise="float32").noise == "float"
