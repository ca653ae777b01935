"""The contract as the spec: adapter_api.primitives states the expected dtypes, the dispatch
input and the error for bad input; conformance reads them and checks the exception type.

A throwaway plugin ``contractdev`` (the cpu runtime, with hand-picked kernels) is registered
in-process the way ``fw.register_plugin`` documents it."""

from __future__ import annotations

import types

import numpy as np
import pytest

import framework as fw
from adapter_api import PRIMITIVES, OpArgumentError, hookimpl
from conformance.checks import CheckFailure
from conformance.opdb import OPDB
from conformance.tiers.primitives import check_index_out_of_range

DEVICE = "contractdev"


def _gather_raising_index_error(ctx, outs, ins, axis):  # type: ignore[no-untyped-def]
    x, index = ins
    if index.size and (index.min() < 0 or index.max() >= x.shape[axis]):
        raise IndexError("index out of range")
    outs[0][...] = np.take(x, index, axis)


def _gather_clamping(ctx, outs, ins, axis):  # type: ignore[no-untyped-def]
    x, index = ins
    outs[0][...] = np.take(x, np.clip(index, 0, x.shape[axis] - 1), axis)


def _gather_checked(ctx, outs, ins, axis, wrap=False):  # type: ignore[no-untyped-def]
    x, index = ins
    low = -x.shape[axis] if wrap else 0
    if index.size and (index.min() < low or index.max() >= x.shape[axis]):
        raise OpArgumentError(f"[{DEVICE}] gather: index out of range [{low}, {x.shape[axis]})")
    outs[0][...] = np.take(x, index, axis)


def _where(ctx, outs, ins):  # type: ignore[no-untyped-def]
    outs[0][...] = np.where(*ins)


@pytest.fixture(scope="module")
def device():
    from framework._src.plugins import host

    if DEVICE not in host().registry.runtimes:
        mod = types.ModuleType("oarlock_contractdev")
        mod.CONTRACT = (1, 2)  # its int64 gather takes wrap

        @hookimpl
        def oarlock_register(registry):  # type: ignore[no-untyped-def]
            from plugins.cpu.runtime import CPURuntime

            registry.add_runtime(DEVICE, CPURuntime)
            for (op, typ, dtype), entry in list(registry.kernels.items()):
                if typ == "cpu" and op not in ("where", "gather"):
                    registry.add_kernel(op, DEVICE, [dtype], entry.fn, broadcast=entry.broadcast)
            registry.add_kernel("where", DEVICE, ["float32"], _where, broadcast=True)  # by x's dtype
            registry.add_kernel("gather", DEVICE, ["float32"], _gather_raising_index_error)
            registry.add_kernel("gather", DEVICE, ["float64"], _gather_clamping)
            registry.add_kernel("gather", DEVICE, ["int64"], _gather_checked)

        mod.oarlock_register = oarlock_register
        fw.register_plugin(mod, name="contractdev")
    return DEVICE


def test_conformance_runs_the_dtypes_the_contract_states():
    assert {n: info.dtypes for n, info in OPDB.items()} == {n: s.dtypes for n, s in PRIMITIVES.items()}
    assert "bool" in PRIMITIVES["add"].dtypes and "bool" not in PRIMITIVES["sub"].dtypes
    assert PRIMITIVES["div"].dtypes == ("float32", "float64", "float16", "bfloat16")
    assert PRIMITIVES["where"].key_input == 1 and PRIMITIVES["gather"].key_input == 0


def test_where_is_looked_up_by_the_dtype_of_x(device):
    rng = np.random.default_rng(0)
    c = rng.random((3, 4)) < 0.5
    for dt, fallbacks in (("float32", {}), ("float64", {"where@contractdev": 1})):
        x, y = rng.standard_normal((3, 4)).astype(dt), rng.standard_normal((3, 4)).astype(dt)
        fw.reset_fallback_stats()
        with fw.no_grad():
            z = fw.where(
                fw.to_tensor(c, device=device), fw.to_tensor(x, device=device), fw.to_tensor(y, device=device)
            )
        np.testing.assert_array_equal(z.numpy(), np.where(c, x, y))
        assert fw.fallback_stats() == fallbacks


def test_an_out_of_range_index_must_raise_op_argument_error(device):
    check_index_out_of_range(OPDB["gather"], np.dtype("int64"), device)  # the contract's error passes
    with pytest.raises(
        CheckFailure,
        match=r"gather\[float32\]: an out-of-range index 5 .* raised KernelError, "
        r"not OpArgumentError",
    ):
        check_index_out_of_range(OPDB["gather"], np.dtype("float32"), device)
    with pytest.raises(
        CheckFailure, match=r"gather\[float64\]: an out-of-range index \(5, axis of size 5\) did not raise"
    ):
        check_index_out_of_range(OPDB["gather"], np.dtype("float64"), device)


def test_the_kernel_cache_key_holds_the_plugin_identity():
    """Two plugins' compilers with one identity() string never share a cached binary."""
    from adapter_api import Compiler
    from framework.compiler.cache import program_key

    class VendorACompiler(Compiler):
        language = "c"

        def identity(self):  # type: ignore[no-untyped-def]
            return "gcc 12 x86-64"

    class VendorBCompiler(VendorACompiler):
        pass

    src = "void k(const float* in0, float* out0, long rows) {}"
    a, b = program_key(VendorACompiler(), src, "k", ()), program_key(VendorBCompiler(), src, "k", ())
    assert a != b and a == program_key(VendorACompiler(), src, "k", ())
