"""Property-based fuzzing of the primitives through the public API (hypothesis).

For every primitive of the op database with a public function (elementwise unary and binary,
where, reductions, argmax/argmin, gather, matmul), on cpu and on the primitives-only test
plugin: random shapes (0-d, empty, broadcast), every dtype the contract defines, NaN and
infinities, out-of-range indices and axes, and operands on the wrong device. Each draw must
give the value of the numpy reference (``conformance.reference``), or raise an
``OarlockError`` whose message names the op; never another exception, a crash or a hang.

In CI the run is short and fixed (``derandomize``: the same examples every time). The long
run is ``ci/fuzz [EXAMPLES]`` (20,000 examples with random seeds by default; the same as
``OARLOCK_FUZZ_EXAMPLES=20000 OARLOCK_FUZZ_RANDOM=1 python -m pytest -q tests/test_fuzz_ops.py``). A failure found is added below as an ``@example``.
"""

from __future__ import annotations

import os
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import framework as fw
from adapter_api import PRIMITIVES
from conformance import reference as R

EXAMPLES = int(os.environ.get("OARLOCK_FUZZ_EXAMPLES", "150"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    derandomize=os.environ.get("OARLOCK_FUZZ_RANDOM") != "1",
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
DEVICES = ("cpu", "primonly")
BF16 = np.dtype(ml_dtypes.bfloat16)

UNARY = {
    n: getattr(fw, n)
    for n in (
        "abs",
        "ceil",
        "cos",
        "erf",
        "exp",
        "floor",
        "log",
        "neg",
        "rsqrt",
        "sign",
        "sin",
        "sqrt",
        "tanh",
        "logical_not",
    )
}
BINARY = {
    "add": fw.add,
    "sub": fw.subtract,
    "mul": fw.multiply,
    "div": fw.divide,
    "maximum": fw.maximum,
    "minimum": fw.minimum,
    "pow": fw.pow,
    "remainder": fw.remainder,
    "floor_divide": fw.floor_divide,
    "eq": fw.equal,
    "ne": fw.not_equal,
    "lt": fw.less_than,
    "le": fw.less_equal,
    "gt": fw.greater_than,
    "ge": fw.greater_equal,
    "logical_and": fw.logical_and,
    "logical_or": fw.logical_or,
}
REDUCE = {"sum": fw.sum, "prod": fw.prod, "max": fw.max, "min": fw.min}
ARG = {"argmax": fw.argmax, "argmin": fw.argmin}
PUBLIC_NAMES = {
    "sub": "subtract",
    "mul": "multiply",
    "div": "divide",
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less_than",
    "le": "less_equal",
    "gt": "greater_than",
    "ge": "greater_equal",
}
TOL = {
    "float64": (1e-12, 1e-14),
    "float32": (1e-5, 1e-6),
    "float16": (2e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
}


@pytest.fixture(scope="module", autouse=True)
def _primonly():
    fw.register_plugin("tests.plugins_for_tests.primonly", name="primonly")


def _dtypes(op: str) -> list[str]:
    ds = sorted(PRIMITIVES[op].dtypes)
    if op in ("div",):  # the public divide gives floats for integers: fuzz it where it is the primitive
        ds = [d for d in ds if d.startswith(("float", "bfloat"))]
    if op in ("logical_and", "logical_or", "logical_not"):  # the public ops cast to bool first
        ds = ["bool"]
    return ds


def _np_dtype(name: str) -> np.dtype:
    return BF16 if name == "bfloat16" else np.dtype(name)


def _values(draw, dtype: str, shape: tuple[int, ...], small: bool = False) -> np.ndarray:
    d = _np_dtype(dtype)
    if d == np.bool_:
        return draw(hnp.arrays(np.bool_, shape))
    if d.kind in "iu":
        lo, hi = (0, 40) if d.kind == "u" else (-20, 20)
        if small:
            lo, hi = (0, 5) if d.kind == "u" else (-3, 5)
        return draw(hnp.arrays(d, shape, elements=st.integers(lo, hi)))
    width = 16 if d.name == "float16" else 32 if d.name in ("float32", "bfloat16") else 64
    elems = st.floats(width=width, allow_nan=True, allow_infinity=True)
    if small:
        elems = st.one_of(
            st.floats(-4, 4, width=width), st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0])
        )
    return draw(hnp.arrays(np.float64 if d == BF16 else d, shape, elements=elems)).astype(d)


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)


@st.composite
def cases(draw):
    kind = draw(st.sampled_from(["unary", "binary", "where", "reduce", "arg", "gather", "matmul"]))
    device = draw(st.sampled_from(DEVICES))
    wrong_device = draw(st.integers(0, 15)) == 0
    if kind == "unary":
        op = draw(st.sampled_from(sorted(UNARY)))
        dt = draw(st.sampled_from(_dtypes(op)))
        return kind, op, device, False, [_values(draw, dt, draw(shapes))], {}
    if kind == "binary":
        op = draw(st.sampled_from(sorted(BINARY)))
        dt = draw(st.sampled_from(_dtypes(op)))
        sa, sb = draw(
            hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4)
        ).input_shapes
        small = op == "pow"
        return (
            kind,
            op,
            device,
            wrong_device,
            [_values(draw, dt, sa, small), _values(draw, dt, sb, small)],
            {},
        )
    if kind == "where":
        dt = draw(st.sampled_from(_dtypes("where")))
        sc, sa, sb = draw(
            hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=4)
        ).input_shapes
        return (
            kind,
            "where",
            device,
            wrong_device,
            [_values(draw, "bool", sc), _values(draw, dt, sa), _values(draw, dt, sb)],
            {},
        )
    x_shape = draw(shapes)
    nd = len(x_shape)
    if kind in ("reduce", "arg"):
        op = draw(st.sampled_from(sorted(REDUCE if kind == "reduce" else ARG)))
        dt = draw(st.sampled_from(_dtypes(op)))
        axis = (
            draw(st.one_of(st.none(), st.integers(-nd - 1, nd)))
            if kind == "arg"
            else draw(
                st.one_of(
                    st.none(),
                    st.integers(-nd - 1, nd),
                    st.lists(st.integers(-nd, max(nd - 1, 0)), max_size=3),
                )
            )
        )
        return (
            kind,
            op,
            device,
            False,
            [_values(draw, dt, x_shape, small=op == "prod")],
            {"axis": axis, "keepdim": draw(st.booleans())},
        )
    if kind == "gather":
        dt = draw(st.sampled_from(_dtypes("gather")))
        x_shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
        axis = draw(st.integers(-len(x_shape), len(x_shape) - 1))
        n = x_shape[axis]
        idx = draw(
            hnp.arrays(
                np.int64,
                draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=4)),
                elements=st.integers(-2, n + 1),
            )
        )
        return kind, "gather", device, wrong_device, [_values(draw, dt, x_shape), idx], {"axis": axis}
    dt = draw(st.sampled_from([d for d in _dtypes("matmul")]))
    n, k, m = draw(st.integers(0, 4)), draw(st.integers(0, 4)), draw(st.integers(0, 4))
    a_shape = draw(st.sampled_from([(n, k), (k,)]))
    b_shape = draw(st.sampled_from([(k, m), (k,)]))
    if draw(st.integers(0, 7)) == 0:
        b_shape = (k + 1, m)  # mismatched inner dimension: an error
    return (
        kind,
        "matmul",
        device,
        wrong_device,
        [_values(draw, dt, a_shape, small=True), _values(draw, dt, b_shape, small=True)],
        {},
    )


def _reference(kind: str, op: str, ins: list[np.ndarray], attrs: dict) -> np.ndarray:
    if kind in ("unary", "binary", "where", "matmul"):
        if kind == "matmul" and (ins[0].ndim == 1 or ins[1].ndim == 1):
            return np.matmul(ins[0].astype(np.float64), ins[1].astype(np.float64)).astype(ins[0].dtype)
        return np.asarray(R.REFERENCES[op](*ins))
    x = ins[0]
    if kind == "reduce":
        axis, nd1 = attrs["axis"], max(x.ndim, 1)
        raw = list(range(x.ndim)) if axis is None else [axis] if isinstance(axis, int) else list(axis)
        if any(not -nd1 <= a < nd1 for a in raw):
            raise IndexError(f"axis {axis}")
        norm = [a % nd1 for a in raw]
        if len(set(norm)) != len(norm):
            raise ValueError(f"repeated axis {axis}")
        if op in ("sum", "prod") and x.dtype.kind in "biu":
            x = x.astype(np.int64)  # integer sums and products are int64 (Paddle's rule)
        return np.asarray(R.REFERENCES[op](x, tuple(sorted(norm)) if x.ndim else (), attrs["keepdim"]))
    if kind == "arg":
        axis = attrs["axis"]
        if axis is None:
            return np.asarray(R.REFERENCES[op](x.reshape(-1), 0, False)).reshape(
                (1,) * x.ndim if attrs["keepdim"] else ()
            )
        if not -max(x.ndim, 1) <= axis < max(x.ndim, 1):
            raise IndexError(f"axis {axis}")
        return np.asarray(
            R.REFERENCES[op](x, axis % max(x.ndim, 1), attrs["keepdim"])
            if x.ndim
            else R.REFERENCES[op](x.reshape(1), 0, False).reshape(())
        )
    x, idx = ins
    axis = attrs["axis"] % x.ndim
    n = x.shape[axis]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError("index out of range")
    # fw.gather takes Paddle's [-n, n) (a negative index counts from the end); the primitive's
    # reference takes [0, n)
    return np.asarray(R.REFERENCES["gather"](x, np.where(idx < 0, idx + n, idx), axis))


def _call(kind: str, op: str, ts: list, attrs: dict):
    if kind == "unary":
        return UNARY[op](ts[0])
    if kind == "binary":
        return BINARY[op](ts[0], ts[1])
    if kind == "where":
        return fw.where(ts[0], ts[1], ts[2])
    if kind == "reduce":
        return REDUCE[op](ts[0], axis=attrs["axis"], keepdim=attrs["keepdim"])
    if kind == "arg":
        return ARG[op](ts[0], axis=attrs["axis"], keepdim=attrs["keepdim"])
    if kind == "gather":
        return fw.gather(ts[0], ts[1], axis=attrs["axis"])
    return fw.matmul(ts[0], ts[1])


def _same(
    got: np.ndarray, want: np.ndarray, dtype: np.dtype, magnitude: np.ndarray | None, what: str
) -> None:
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    if got.size == 0:
        return
    if want.dtype.kind in "biu" and got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    g, e = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(e)), (
        f"{what}: NaN at other places: got {got}, expected {want}"
    )
    inf = np.isinf(e) | np.isinf(g)
    assert np.array_equal(g[inf], e[inf]), f"{what}: infinities differ: got {got}, expected {want}"
    fin = ~(np.isnan(e) | inf)
    rtol, atol = TOL.get(_np_dtype(str(dtype)).name if dtype != BF16 else "bfloat16", (0.0, 0.0))
    allowed = atol + rtol * (np.abs(e) + (magnitude if magnitude is not None else 0.0))
    assert np.all(np.abs(g - e)[fin] <= np.broadcast_to(allowed, e.shape)[fin]), (
        f"{what}: got {got}, expected {want}"
    )


def _names(kind: str, op: str) -> set[str]:
    return {op, PUBLIC_NAMES.get(op, op)}


@SETTINGS
@given(cases())
@example(
    ("gather", "gather", "cpu", False, [np.arange(6.0).reshape(2, 3), np.array([0, 3])], {"axis": 1})
)  # index == size
@example(
    ("binary", "pow", "cpu", False, [np.array([2], np.int64), np.array([-1], np.int64)], {})
)  # int ** negative int
@example(
    (
        "where",
        "where",
        "primonly",
        False,
        [np.arange(2048) % 3 == 0, np.full((1, 2048), np.nan, np.float32), np.ones((2, 1), np.float32)],
        {},
    )
)  # the cpu bit-select path, NaN
@example(
    ("reduce", "max", "cpu", False, [np.array(0.0, np.float32)], {"axis": [0, 0], "keepdim": False})
)  # found: 0-d, axis twice
def test_every_draw_gives_the_reference_or_an_error_naming_the_op(case):
    kind, op, device, wrong_device, ins, attrs = case
    what = f"{op} on {device} with inputs {[(a.dtype.name, a.shape) for a in ins]} {attrs}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = _reference(kind, op, ins, attrs)
            ref_error = None
    except (ValueError, IndexError, ZeroDivisionError, TypeError) as exc:
        want, ref_error = None, exc
    devices = [device] * len(ins)
    if wrong_device and len(ins) > 1:
        devices[-1] = "cpu" if device != "cpu" else "primonly"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ts = [fw.to_tensor(a, dtype=a.dtype, device=d) for a, d in zip(ins, devices)]
            got = _call(kind, op, ts, attrs)
            got_np = got.numpy()
    except fw.OarlockError as exc:
        named = {f"[{n}]" for n in _names(kind, op)}
        assert any(n in str(exc) for n in named), f"{what}: the error does not name the op: {exc}"
        return
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"{what}: a foreign exception {type(exc).__name__}: {exc}")
    assert not wrong_device or len(ins) == 1, f"{what}: operands on two devices were accepted"
    assert ref_error is None, f"{what}: numpy raises {ref_error!r}, Oarlock returned {got_np!r}"
    assert str(got.device).split(":")[0] == device
    magnitude = None  # summed results may be off by rtol times what was summed
    finite = [np.nan_to_num(np.abs(a.astype(np.float64)), nan=0.0, posinf=0.0, neginf=0.0) for a in ins]
    if kind == "reduce" and op == "sum":
        magnitude = finite[0].sum()
    if kind == "matmul":
        magnitude = finite[0].sum() * finite[1].max(initial=0.0)
    _same(got_np, want, want.dtype, magnitude, what)
