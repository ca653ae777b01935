"""Generated primitives in OpenCL C, run for real: the opencl plugin's own element-wise,
comparison, cast, reduction and creation kernels are hidden and every check of
tests/test_generated_primitives.py runs on the kernels the core generates instead, for every
dtype the device holds, against numpy. PoCL (opencl:0) runs both layouts: one work-item per
row (what a CPU device gets) and one work-group per row with a tree reduction in local memory
(what a GPU gets; the CUDA emitter shares that code), and Intel's runtime (opencl:1) the first;
those two on a representative set of dtypes (each build costs seconds on a CPU driver).
"""

from __future__ import annotations

import importlib.util
import os
import pathlib

import pytest

import framework as fw
from framework import compiler
from framework._src import device as _dev
from framework.compiler import eager

pytest.importorskip("pyopencl", reason="pyopencl is not installed")

_spec = importlib.util.spec_from_file_location(
    "_generated_checks", pathlib.Path(__file__).parents[1] / "test_generated_primitives.py"
)
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)

# NOTE: an OpenCL CPU driver takes seconds per program (PoCL: about 2 s plus 1 s per
# kernel), so the broadcast and axis patterns are a subset of the C test's: one of each kind
checks.BROADCASTS = [((3, 4, 5), (3, 4, 5)), ((3, 4, 5), ()), ((3, 4, 5), (3, 1, 5))]
checks.AXES = [(), (2,), (0, 2)]

# PoCL's rows layout checks every dtype; the other two a representative set (a float computed
# in float, a half, a wide and a narrow integer, bool)
SOME = ("float32", "float16", "int64", "uint8", "bool")
CASES = [("opencl:0", "rows", None), ("opencl:0", "groups", SOME), ("opencl:1", "rows", SOME)]


@pytest.fixture(scope="module", autouse=True)
def _generic_work_groups():
    """PoCL launches each kernel here through the generic work-group function its binary
    already holds, instead of compiling one more specialised for the launch's shape.

    NOTE: a binary from OpenCLCompiler.compile holds a generic function of every kernel; by
    default PoCL compiles another per launch shape on a cold cache (582 of this module's 1603
    compiles, about 0.2 s each). Both compute the same; PoCL reads this at each launch.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("POCL_WORK_GROUP_SPECIALIZATION", os.environ.get("POCL_WORK_GROUP_SPECIALIZATION", "0"))
        yield


@pytest.fixture(scope="module", params=CASES, ids=[f"{d}-{k}" for d, k, _ in CASES])
def generated(request):
    device, layout, only = request.param
    try:
        if not compiler.has_compile_access(device):
            pytest.skip(f"{device}: no compile access")
    except fw.OarlockError as exc:
        pytest.skip(f"{device}: {exc}")
    dev = _dev.parse(device)
    kind = eager._kind(dev)
    eager._KINDS[dev] = "cpu" if layout == "rows" else ""
    try:
        with checks.kernels_hidden("opencl"):
            yield checks.Generated(device, only)
    finally:
        eager._KINDS[dev] = kind


test_arithmetic_every_dtype_and_broadcast = checks.test_arithmetic_every_dtype_and_broadcast
test_integers_wrap_and_floor_like_numpy = checks.test_integers_wrap_and_floor_like_numpy
test_float_math_and_division = checks.test_float_math_and_division
test_cast_every_pair = checks.test_cast_every_pair
test_float16_and_bfloat16_round_once_to_nearest_even = (
    checks.test_float16_and_bfloat16_round_once_to_nearest_even
)
test_reductions_over_any_axes = checks.test_reductions_over_any_axes
test_max_and_argmax_see_nan_and_sums_wrap = checks.test_max_and_argmax_see_nan_and_sums_wrap
test_creation = checks.test_creation
test_public_ops_run_generated_with_autograd = checks.test_public_ops_run_generated_with_autograd
