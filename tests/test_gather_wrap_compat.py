"""``gather``'s ``wrap`` attribute is contract 1.2: a plugin written for 1.1 (whose gather kernel
takes no ``wrap`` keyword, tests/plugins_for_tests/oldgather.py) never receives it. On such a
plugin ``fw.gather`` wraps a negative index with element-wise ops before a plain gather (1.1's
behaviour), with Paddle's values and the same range error; plugins of 1.2 (cpu, opencl) keep
the one in-kernel gather. The conformance suite does not sample ``wrap`` on the old plugin."""

from __future__ import annotations

import numpy as np
import pytest

import framework as fw
from adapter_api import CONTRACT_VERSION, takes_attr
from conformance.opdb import OPDB
from conformance.tiers import primitives as prim_tier
from conformance.tiers import static as static_tier
from framework.testing import kernel_takes
from tests.plugins_for_tests import oldgather

try:
    import paddle
except ImportError:  # pragma: no cover
    paddle = None

OLD = "oldgather"


@pytest.fixture(scope="module")
def old() -> str:
    if OLD not in fw.plugins():
        fw.register_plugin("tests.plugins_for_tests.oldgather", name=OLD)
    assert fw.plugins()[OLD].contract == (1, 1) and fw.plugins()[OLD].error is None
    return OLD


def _operators(fn):  # type: ignore[no-untyped-def]
    with fw.profiler.Profiler(on_trace_ready=lambda p: None) as p:
        out = fn().numpy()
    return out, [e.name for e in p.profiler_result.events if e.cat == "Operator"]


def test_the_contract_records_wrap_as_1_2():
    assert CONTRACT_VERSION >= (1, 2)
    assert not takes_attr((1, 0), "gather", "wrap") and not takes_attr((1, 1), "gather", "wrap")
    assert takes_attr((1, 2), "gather", "wrap") and takes_attr((1, 1), "gather", "axis")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_an_old_plugin_gathers_negative_indices_as_paddle(old, dtype, axis):
    if paddle is None:
        pytest.skip("no paddle")
    rng = np.random.default_rng(axis)
    x = (rng.standard_normal((7, 5, 6)) * 10).astype(dtype)
    n = x.shape[axis]
    idx = rng.integers(-n, n, 13)
    idx[:2] = [-n, n - 1]
    want = paddle.gather(paddle.to_tensor(x), paddle.to_tensor(idx), axis=axis).numpy()
    np.testing.assert_array_equal(want, np.take(x, idx, axis))  # the oracle agrees with numpy
    del oldgather.CALLS[:]
    got, ops = _operators(
        lambda: fw.gather(fw.to_tensor(x, device=old), fw.to_tensor(idx, device=old), axis=axis)
    )
    np.testing.assert_array_equal(got, want)
    assert oldgather.CALLS == [{"axis": axis}]  # its own kernel ran, and got no wrap
    assert ops[-1] == "gather" and "where" in ops, ops  # the wrap ran as element-wise ops before it


def test_the_in_kernel_path_stays_on_plugins_of_1_2(device):
    assert fw.plugins()[device.split(":")[0]].contract >= (1, 2)
    assert kernel_takes("gather", "wrap", device, "float32")
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    idx = np.array([-1, 0, -6, 5])
    got, ops = _operators(lambda: fw.gather(fw.to_tensor(x, device=device), fw.to_tensor(idx, device=device)))
    np.testing.assert_array_equal(got, x[idx])
    assert ops == ["gather"], ops


@pytest.mark.parametrize("bad", [1000, -1001, 1 << 40, -(1 << 40)])
def test_an_old_plugin_raises_the_same_range_error(old, bad):
    idx = np.array([0, -1000, 999, bad, 3])
    msgs = []
    for dev in (old, "cpu"):
        x = fw.to_tensor(np.zeros((1000, 4), np.float32), device=dev)
        with pytest.raises(IndexError) as err:
            fw.gather(x, fw.to_tensor(idx, device=dev)).numpy()
        assert isinstance(err.value, fw.OpArgumentError)
        msgs.append(str(err.value))
    assert msgs[0] == msgs[1], msgs
    assert (
        msgs[0]
        == f"[gather] index {bad} is out of range for axis 0 of size 1000; indices must be in [-1000, 1000)"
    )


def test_an_old_plugin_differentiates_a_wrapped_gather(old):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    idx = np.array([-1, 4, 0, -5, -1])
    w = rng.standard_normal((5, 3)).astype(np.float32)
    t = fw.to_tensor(x, device=old, stop_gradient=False)
    (fw.gather(t, fw.to_tensor(idx, device=old)) * fw.to_tensor(w, device=old)).sum().backward()
    want = np.zeros_like(x)
    np.add.at(want, idx % 5, w)
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_conformance_does_not_flag_the_old_plugins_gather(old, dtype):
    """The suite samples ``wrap`` only where the contract passes it: the old plugin's gather
    passes every tier that runs it (samples, the range check, programs), with no wrap call."""
    assert not kernel_takes("gather", "wrap", old, dtype)
    del oldgather.CALLS[:]
    assert prim_tier.run_case("gather", dtype, old)["samples"] > 0
    prim_tier.check_index_out_of_range(OPDB["gather"], np.dtype(dtype), old)
    assert static_tier.primitive_case("gather", dtype, old)["samples"] > 0
    assert oldgather.CALLS and all("wrap" not in c for c in oldgather.CALLS)
    with pytest.raises(TypeError):  # what the suite would have flagged had it passed wrap
        oldgather._gather(None, [np.empty(1)], [np.zeros(2), np.array([-1])], axis=0, wrap=True)


def test_a_program_traced_on_an_old_plugin_wraps_each_runs_index(old):
    @fw.jit.to_static
    def f(x, i):
        return fw.gather(x, i)

    x = np.arange(18, dtype=np.float32).reshape(6, 3)
    del oldgather.CALLS[:]
    for idx in ([-1, 0, -6, 5], [-2, 1, 0, -3]):
        i = np.array(idx)
        got = f(fw.to_tensor(x, device=old), fw.to_tensor(i, device=old)).numpy()
        np.testing.assert_array_equal(got, x[i])
    assert oldgather.CALLS and all(c == {"axis": 0} for c in oldgather.CALLS)


class _Rows(fw.nn.Layer):
    def forward(self, x, i):
        return fw.gather(x, i, axis=0) * 2.0, fw.gather(x, i[:2], axis=1)


@pytest.mark.parametrize("spec", [[6, 3], [None, 3]], ids=["static", "dynamic"])
def test_a_program_saved_on_a_1_2_device_runs_on_an_old_plugin(old, tmp_path, spec):
    """Saved on cpu (contract 1.2), the program's gathers carry ``wrap = true``; loaded onto a
    1.1 plugin they are rewritten as fw.gather's fallback (the index wrapped before a plain
    gather): Paddle's values, and the old kernel never gets ``wrap`` (a KernelError before)."""
    specs = [fw.static.InputSpec(spec, "float32", "x"), fw.static.InputSpec([4], "int64", "i")]
    fw.jit.save(_Rows(), str(tmp_path / "m"), input_spec=specs)
    assert "wrap = true" in open(tmp_path / "m.oarlock").read()
    layer = fw.jit.load(str(tmp_path / "m"), device=old)
    del oldgather.CALLS[:]
    for n, idx in ((6, [-1, 0, -6, 5]), (5, [-2, 1, 0, -3]), (3, [-3, 2, -1, 0])):
        if spec[0] == 6 and n != 6:
            continue
        x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        a, b = layer(fw.to_tensor(x, device=old), fw.to_tensor(np.array(idx), device=old))
        want_a, want_b = np.take(x, idx, 0) * 2.0, np.take(x, idx[:2], 1)
        if paddle is not None:
            want_a = paddle.gather(paddle.to_tensor(x), paddle.to_tensor(idx), axis=0).numpy() * 2.0
            want_b = paddle.gather(paddle.to_tensor(x), paddle.to_tensor(idx[:2]), axis=1).numpy()
        np.testing.assert_array_equal(a.numpy(), want_a)
        np.testing.assert_array_equal(b.numpy(), want_b)
    assert oldgather.CALLS and all("wrap" not in c for c in oldgather.CALLS)
    from framework.ir import print_program
    from framework.jit.io import retarget

    on_old, on_cpu = (print_program(retarget(layer.program, d)) for d in (old, "cpu"))
    assert "wrap" not in on_old and on_old.count("op.where") == 2
    assert on_cpu.count("wrap = true") == 2 and "op.where" not in on_cpu  # cpu keeps its in-kernel wrap
