"""The API convention every system follows (README "API conventions"): a typed key first where a call draws
randomness, everything after the data keyword-only, the budget ``epsilon=`` keyword-only at every release call,
and the system's result type where it has one."""

import inspect

import pytest

import jaxdp
from jaxdp import bucketize, compressive, histogram, hvc, mechanisms, wevent

SYSTEMS = (hvc, wevent, histogram, compressive, bucketize, mechanisms)

# every call that draws randomness, per system (listed so that a new one has to be added here)
RELEASES = {
    hvc: ["anonymize", "anonymize_streams", "pln", "frame_mean", "microaggregate", "StreamAnonymizer"],
    wevent: ["run", "run_partitioned", "WEventStream"],
    histogram: ["lpa", "fpa", "spa", "efpa", "php", "publish", "release_histogram"],
    compressive: ["compressive", "laplace_identity", "tree_counter", "TreeCounter",
                  "continual_identity", "cmco", "projection"],
    bucketize: ["simulate_inference", "publish"],
    mechanisms: ["laplace_mechanism", "exponential_mechanism", "exponential", "exponential_exact",
                 "exponential_segments", "laplace_noise", "add_laplace", "grid_laplace", "l2_norm_noise"],
}  # fmt: skip
RESULT_TYPES = {
    "anonymize": jaxdp.Result, "anonymize_streams": jaxdp.Result, "pln": jaxdp.Result, "frame_mean": jaxdp.Result,
    "microaggregate": jaxdp.Result, "run": wevent.WEventResult, "run_partitioned": wevent.PartitionedResult,
    "compressive": compressive.CompressiveResult, "lpa": histogram.HistogramResult, "fpa": histogram.HistogramResult,
    "spa": histogram.HistogramResult, "efpa": histogram.HistogramResult, "php": histogram.HistogramResult,
    "publish": histogram.HistogramResult, "release_histogram": histogram.HistogramResult,
}  # fmt: skip


def _params(fn):
    target = fn.__init__ if inspect.isclass(fn) else fn
    params = list(inspect.signature(target).parameters.values())
    return params[1:] if inspect.isclass(fn) else params


def _public_callables():
    for mod in SYSTEMS:
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj) and not (inspect.isclass(obj) and (name.endswith(("Config", "Result", "Info")) or
                                                                 issubclass(obj, tuple))):
                yield mod, name, obj


@pytest.mark.parametrize("mod,name", [(m, n) for m, names in RELEASES.items() for n in names],
                         ids=lambda v: getattr(v, "__name__", v))
def test_every_release_takes_the_key_first(mod, name):
    params = _params(getattr(mod, name))
    assert params[0].name in ("key", "keys"), f"{mod.__name__}.{name}: first parameter {params[0].name!r}"
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and params[0].default is inspect.Parameter.empty


def _convention_breaches(label, obj):
    """What `obj` breaks of the key/ε convention: a key not first, ε not keyword-only, a default key."""
    bad = []
    params = _params(obj)
    names = [p.name for p in params]
    for k in ("key", "keys"):
        if k in names and names.index(k) != 0:
            bad.append(f"{label}: {k} is not first")
    for p in params:
        if p.name == "epsilon" and p.kind is not inspect.Parameter.KEYWORD_ONLY:
            bad.append(f"{label}: epsilon is not keyword-only")
        if p.name in ("key", "keys") and p.default is not inspect.Parameter.empty:
            bad.append(f"{label}: a default key")
    return bad


def test_every_key_parameter_is_first_and_every_epsilon_keyword_only():
    bad = [b for mod, name, obj in _public_callables() for b in _convention_breaches(f"{mod.__name__}.{name}", obj)]
    assert not bad, "\n".join(bad)


def test_every_release_with_a_budget_takes_it_keyword_only():
    # every release names its budget epsilon=, HVC's included (its config holds the static structure only)
    for mod, names in RELEASES.items():
        for name in names:
            params = {p.name: p for p in _params(getattr(mod, name))}
            budget = params.get("epsilon")
            no_budget = name in ("projection", "laplace_noise", "add_laplace", "grid_laplace") or (
                mod is bucketize and name == "publish"  # F′-privacy: a shuffle and fake values, no ε
            )
            assert budget is not None and budget.kind is inspect.Parameter.KEYWORD_ONLY or no_budget, f"{mod.__name__}.{name}"


@pytest.mark.parametrize("name", sorted(RESULT_TYPES))
def test_releases_return_their_systems_result_type(name):
    mod = next(m for m, names in RELEASES.items() if name in names)
    ann = inspect.signature(getattr(mod, name)).return_annotation
    assert ann in (RESULT_TYPES[name], RESULT_TYPES[name].__name__), f"{name} -> {ann}"


def test_streaming_objects_return_their_batch_calls_result_type():
    assert inspect.signature(jaxdp.StreamAnonymizer.push).return_annotation in (jaxdp.Result, "Result")
    assert inspect.signature(jaxdp.StreamAnonymizer.flush).return_annotation in (jaxdp.Result, "Result")
    assert inspect.signature(wevent.WEventStream.push).return_annotation in (wevent.WEventResult, "WEventResult")


def test_hvc_config_holds_no_budget():
    """Budget and domain are call arguments, not configuration: one config serves any data set at any ε."""
    import dataclasses

    assert not {"epsilon", "bounds"} & {f.name for f in dataclasses.fields(jaxdp.HVCConfig)}
    with pytest.raises(TypeError):
        jaxdp.HVCConfig(8, 2, 1.0)  # the old positional ε is refused, not taken as something else


def test_the_check_catches_each_breach_of_the_convention():
    # mutants of the convention (found in an audit of the tests: the check itself was never run on one)
    def late_key(records, key, *, epsilon):
        return records

    def positional_eps(key, records, epsilon):
        return records

    def default_key(key=None, *, epsilon):
        return key

    def good(key, records, *, epsilon):
        return records

    assert _convention_breaches("m", late_key) == ["m: key is not first"]
    assert _convention_breaches("m", positional_eps) == ["m: epsilon is not keyword-only"]
    assert _convention_breaches("m", default_key) == ["m: a default key"]
    assert _convention_breaches("m", good) == []


GENERATORS = {
    "wevent.synthetic_counts": (lambda seed, size: wevent.synthetic_counts(seed, timestamps=size, columns=3)),
    "histogram.synthetic_histogram": (lambda seed, size: histogram.synthetic_histogram(seed, n=size)),
    "compressive.synthetic_compressible": (lambda seed, size: compressive.synthetic_compressible(seed, n=size)),
    "bucketize.synthetic_table": (lambda seed, size: bucketize.synthetic_table(seed, n=size)),
}


@pytest.mark.parametrize("name", GENERATORS)
def test_seeded_generators_check_seed_and_size(name):
    """Found in review: a string, float or negative seed and a negative or huge size ended in NumPy's own errors
    (or a MemoryError), and True was taken as seed 1."""
    make = GENERATORS[name]
    first = make(3, 64)
    assert first.shape[0] == 64 if not isinstance(first, tuple) else first[1].shape == (64,)
    for seed in ("3", 3.0, -1, True, None):
        with pytest.raises(TypeError, match="seed"):
            make(seed, 64)
    for size in (0, -5):
        with pytest.raises(ValueError, match=">= 1"):
            make(3, size)
    with pytest.raises(ValueError, match="exceeds"):
        make(3, 1 << 40)
