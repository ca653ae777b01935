"""framework.testing, the public harness of the conformance suite: comparisons, the one
tolerance table, guarded kernel runs, introspection; and the autograd tier's checks of the
gradient at exact ties (the contract's tie rule) on every device."""

from __future__ import annotations

import os

import numpy as np
import pytest

import framework as fw
from framework import testing


def test_compare_reports_errors_and_the_first_wrong_index():
    want = np.array([[1.0, 2.0, 0.0], [4.0, np.nan, np.inf]], np.float32)
    got = np.array([[1.0, 2.5, 1e-7], [3.0, np.nan, np.inf]], np.float32)
    c = testing.compare(got, want, 1e-5, 1e-6)
    assert not c.ok and c.size == 6
    assert c.wrong == 2 and c.wrong_finite == 2 and c.nan_mismatches == 0 and c.inf_mismatches == 0
    assert c.first_index == (0, 1)
    fin = np.isfinite(want)
    err = np.abs(got[fin].astype(np.float64) - want[fin].astype(np.float64))
    assert c.max_abs_error == pytest.approx(err.max())  # 1.0 at (1, 0)
    assert c.max_rel_error == np.inf  # 1e-7 where 0 was expected
    assert c.worst_wrong_error == pytest.approx(1.0)
    assert "2 of 6 elements wrong; 2 finite off by up to 1" in c.describe()
    close = testing.compare(want + np.float32(1e-6), want, 1e-5, 1e-6)
    assert close.ok and close.first_index is None and close.describe() == ""


def test_compare_is_exact_for_integers_and_zero_tolerance():
    c = testing.compare(np.array([1, 2, 3], np.int32), np.array([1, 5, 3], np.int32), 1e-3, 1e-3)
    assert c.exact and c.wrong == 1 and c.first_index == (1,) and c.max_abs_error == 3.0
    assert testing.compare(np.float32([np.nan, 1]), np.float32([np.nan, 1]), 0, 0).ok
    assert not testing.compare(np.float32([1 + 2**-23]), np.float32([1]), 0, 0).ok


def test_assert_close_names_the_check_and_shows_both_values():
    with pytest.raises(
        testing.CheckFailure,
        match=r"mul: 1 of 3 elements wrong; .* first at index \(2,\): got np.float64\(7.0\), expected np.float64\(6.0\)",
    ) as info:
        testing.assert_close(np.array([1.0, 2.0, 7.0]), np.array([1.0, 2.0, 6.0]), 1e-12, 1e-14, "mul")
    assert info.value.expected.startswith("float64[3]") and "7." in info.value.got
    with pytest.raises(testing.CheckFailure, match="dtype"):
        testing.assert_close(np.zeros(2, np.float32), np.zeros(2), 0, 0, "x")


def test_one_tolerance_table():
    from conformance import opdb

    assert opdb.TOLERANCES is testing.TOLERANCES and opdb.tolerance is testing.tolerance
    assert testing.tolerance("float32") == testing.TOLERANCES["float32"]
    assert testing.tolerance(np.dtype("float16"), 10).rtol == pytest.approx(
        10 * testing.TOLERANCES["float16"].rtol
    )
    assert testing.tolerance("int64") == testing.Tolerance(0.0, 0.0)
    assert testing.tolerance(fw.bfloat16) == testing.TOLERANCES["bfloat16"]
    with pytest.raises(ValueError, match=r"\[testing\] gradients are checked in .*'float16'"):
        testing.gradient_tolerance("float16")


def test_put_offset_view_and_guarded_kernel_run(device):
    x = np.arange(-5, 6, dtype=np.float32) * 0.75
    t = testing.put(x, device, offset_elems=3)
    np.testing.assert_array_equal(t.numpy(), x)
    (y,) = testing.run_kernel_guarded("neg", [t], {}, device)
    np.testing.assert_array_equal(y.numpy(), -x)
    (z,) = testing.run_kernel_guarded("add", [t, testing.put(x[:1], device)], {}, device)  # broadcast input
    np.testing.assert_array_equal(z.numpy(), x + x[0])
    (r,) = testing.run_primitive(
        "arange", [], {"n": 4, "start": 1.0, "step": 0.5, "dtype": np.dtype("float32")}, device
    )
    np.testing.assert_array_equal(r.numpy(), np.float32([1.0, 1.5, 2.0, 2.5]))


def _writes_past_its_output(ctx, outs, ins):
    (y,), (x,) = outs, ins
    np.negative(x, out=y)
    base = y
    while base.base is not None:
        base = base.base
    end = y.__array_interface__["data"][0] - base.__array_interface__["data"][0] + y.nbytes
    base.reshape(-1).view(np.uint8)[end : end + 2] = 0xEE  # two bytes of the next tensor


def test_run_kernel_guarded_catches_a_write_past_the_output():
    reg = testing.registry()
    key = ("neg", "cpu", np.dtype("int16"))
    old = reg.kernels[key]
    try:
        reg.add_kernel(
            "neg", "cpu", ["int16"], _writes_past_its_output, broadcast=old.broadcast, override=True
        )
        testing.clear_kernel_cache()
        assert testing.find_kernel("neg", "cpu", "int16").fn is _writes_past_its_output
        x = testing.put(np.arange(7, dtype=np.int16), "cpu")
        with pytest.raises(
            testing.CheckFailure,
            match=r"\[neg\] the kernel wrote 2 bytes outside its 14-byte output \(first after it\)",
        ) as info:
            testing.run_kernel_guarded("neg", [x], {}, "cpu")
        assert "0xee" in info.value.got
    finally:
        reg.kernels[key] = old
        testing.clear_kernel_cache()
    assert testing.find_kernel("neg", "cpu", "int16") is old


def test_introspection():
    assert "add" in testing.op_names("primitive") and "max_pool2d" in testing.op_names("composite")
    assert set(testing.op_names()) >= set(testing.op_names("primitive"))
    assert testing.plugin_of("cpu") == "cpu" and testing.plugin_of("no-such-device") is None
    h = testing.runtime_of("cpu")
    assert h.index == 0 and h.runtime.device_count() >= 1
    assert testing.find_kernel("add", "cpu", np.float32) is not None
    assert testing.find_kernel("add", "cpu", np.dtype("clongdouble")) is None
    assert testing.parse_device("cpu") == fw.Device("cpu", 0)
    with pytest.raises(fw.DeviceError, match="unknown device 'nosuch'"):
        testing.parse_device("nosuch")
    with pytest.raises(KeyError, match=r"\[testing\] no op named 'nosuch'"):
        testing.run_op("nosuch", [])


def test_framework_all_is_explicit_and_complete():
    import ast
    import pathlib

    tree = ast.parse(pathlib.Path(fw.__file__).read_text())
    assigned = [
        n
        for n in tree.body
        if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in n.targets)
    ]
    assert len(assigned) == 1 and isinstance(assigned[0].value, ast.List), "__all__ must be a literal list"
    public = {n for n in vars(fw) if not n.startswith("_") and n not in {"annotations", "testing"}}
    assert sorted(set(fw.__all__) ^ public) == [], (
        "framework.__all__ and the public names of framework differ"
    )
    assert len(fw.__all__) == len(set(fw.__all__))


# -- gradients at ties ---------------------------------------------------------------------
def _tie_cases():
    from conformance.tiers.autograd import _tie_cases

    return {c.name: c for c in _tie_cases()}


TIE_NAMES = sorted(_tie_cases())


@pytest.mark.parametrize("name", TIE_NAMES)
def test_gradient_at_ties_follows_the_contract(device, name):
    from conformance.tiers.autograd import check_ties

    case = _tie_cases()[name]
    check_ties(case, "float32", device)
    if (
        fw.registered_kernels(device).get(case.primitive)
        and np.dtype("float64") in fw.registered_kernels(device)[case.primitive]
    ):
        check_ties(case, "float64", device)


@pytest.mark.parametrize("name", TIE_NAMES)
def test_tie_samples_hold_ties_that_change_the_gradient(name):
    """Each sample has ties where they matter: giving the whole gradient to one tied element
    (the first, as an argmax-based backward would) gives a different answer."""
    case = _tie_cases()[name]
    xs = case.inputs(np.random.default_rng(0))
    out = case.run(*[fw.to_tensor(x, device="cpu") for x in xs])
    w = np.ones(out.shape)
    want = case.grads(w, *xs)
    if name.startswith("topk"):  # argmax-based: the lower index wins; the higher one must differ
        x = xs[0]
        flipped = case.grads(w, x[..., ::-1])[0][..., ::-1]
        assert not np.array_equal(flipped, want[0])
    elif name.startswith(("maximum", "minimum")):
        x, y = np.broadcast_arrays(*xs)
        assert np.any(x == y), "no tie between the operands"
    else:
        shares = np.concatenate([g.ravel() for g in want])
        assert np.any((shares > 0) & (shares != np.round(shares))), "no tie splits a gradient"


def test_a_first_wins_gradient_fails_the_tie_check():
    """The check can fail: a reference that gives ties' gradient to one operand (what
    an argmax-based rule does) is not what the device computes."""
    from dataclasses import replace

    from conformance.tiers.autograd import check_ties

    case = _tie_cases()["maximum"]

    def first_wins(w, x, y):
        gx = np.where(x >= y, w, 0.0)
        return [gx, w - gx]

    with pytest.raises(
        testing.CheckFailure, match=r"d/d\(input 0\) of sum\(maximum\(...\) \* w\) at exact ties"
    ):
        check_ties(replace(case, grads=first_wins), "float32", "cpu")


# -- the sizes the suite samples ----------------------------------------------------------------
def test_every_op_samples_past_65536_elements_and_reductions_past_1024_along_an_axis():
    """The op database judges by class: each primitive has a sample whose data (input or
    output) is past 65,536 elements, and each reduction one whose reduced axis is past 1,024
    and not a power of two (where launch geometries change)."""
    from conformance.opdb import OPDB, dtype_of

    short = []
    for name, info in OPDB.items():
        d = dtype_of(info.dtypes[0])
        largest, longest = 0, 0
        for s in info.samples(d, np.random.default_rng(0)):
            sizes = [a.size for a in s.ins] + [s.attrs.get("n", 0)]
            if "shape" in s.attrs:  # creation ops (and expand): the output's shape
                sizes.append(int(np.prod(s.attrs["shape"])))
            largest = max(largest, *sizes)
            axes = s.attrs.get("axes", ()) or ((s.attrs["axis"],) if "axis" in s.attrs and s.ins else ())
            if s.ins and axes and name in ("sum", "prod", "max", "min", "argmax", "argmin"):
                longest = max(longest, int(np.prod([s.ins[0].shape[a] for a in axes])))
        if largest <= 65536:
            short.append(f"{name}: largest sample {largest} elements")
        if name in ("sum", "prod", "max", "min", "argmax", "argmin") and (
            longest <= 1024 or not longest & (longest - 1)
        ):
            short.append(f"{name}: longest reduced axis {longest}")
    assert not short, short


def test_the_sizes_table_in_the_docs_is_the_databases():
    from conformance.opdb import LARGE_SAMPLES

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "docs", "conformance.md")) as f:
        text = f.read()
    for family, sizes in LARGE_SAMPLES.items():
        assert f"| {family} | {sizes} |" in text, family
