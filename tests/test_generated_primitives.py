"""Generated primitives (framework.compiler.primitives): with the cpu plugin's own kernels
hidden, every element-wise, comparison, cast, reduction and creation primitive runs as a
kernel the core generates in C, for every dtype, and is checked against numpy; a plugin whose
build is broken falls back to the CPU plugin with a warning and a count."""

from __future__ import annotations

import contextlib
import types
import warnings

import numpy as np
import pytest

import framework as fw
from adapter_api import hookimpl
from framework import compiler, testing
from framework.compiler import primitives as gp

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int8", "int16", "int32", "int64", "uint8"]
HIDDEN = [*gp.GENERATED]

pytestmark = pytest.mark.skipif(
    not compiler.has_compile_access("cpu"), reason="no C compiler on this machine"
)


def dt(name: str) -> np.dtype:
    return np.dtype(getattr(fw, name) if name == "bfloat16" else name)


class Generated:
    """Runs primitives on ``device`` with its plugin's own kernels of the generated ops hidden,
    checking each ran as a generated kernel."""

    def __init__(self, device: str, only: tuple[str, ...] | None = None) -> None:
        self.device = device
        self.type = device.split(":")[0]
        self.holds = set(fw.get_device_properties(device).dtypes)
        self.only = only  #: the dtypes a dtype-parametrised check runs for here (None: all)

    def __call__(self, name, *arrays, **attrs):
        ins = [fw.to_tensor(a, device=self.device) for a in arrays]
        before = compiler.primitive_stats()
        out = testing.run_primitive(name, ins, attrs, self.device)[0].numpy()
        key = f"{name}[{(arrays[0].dtype if arrays else np.dtype(attrs['dtype'])).name}]@{self.type}"
        assert compiler.primitive_stats().get(key, 0) == before.get(key, 0) + 1, (
            f"{key} did not run generated"
        )
        return out

    def need(self, *names: str) -> None:
        missing = [n for n in names if n not in self.holds]
        if missing:
            pytest.skip(f"{self.device} does not hold {missing}")
        if self.only is not None and names[0] not in self.only:
            pytest.skip(f"{names[0]} is checked in another layout or device (builds cost seconds here)")


@contextlib.contextmanager
def kernels_hidden(device_type: str):
    """The plugin's kernels of the generated ops taken out of the registry (put back after)."""
    reg = testing.registry()
    saved = {k: v for k, v in reg.kernels.items() if k[1] == device_type and k[0] in HIDDEN}
    for k in saved:
        del reg.kernels[k]
    compiler.reset()
    try:
        yield
    finally:
        reg.kernels.update(saved)
        compiler.reset()


@pytest.fixture(scope="module")
def generated():
    with kernels_hidden("cpu"):
        yield Generated("cpu")


def sample(name: str, shape, rng) -> np.ndarray:
    d = dt(name)
    if d.kind in "iu":
        info = np.iinfo(d)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(d)
    return (rng.standard_normal(shape) * 3).astype(d)


def wide(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64) if a.dtype.kind == "f" or a.dtype.name == "bfloat16" else a


def close(got, want, d):
    d = np.dtype(d)
    if d.name in ("float16", "bfloat16"):
        np.testing.assert_allclose(wide(got), wide(want.astype(d)), rtol=1e-2, atol=1e-3)
    elif d.kind == "f":
        np.testing.assert_allclose(got, want.astype(d), rtol=1e-5 if d == np.float32 else 1e-12, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want.astype(d))


BROADCASTS = [
    ((3, 4, 5), (3, 4, 5)),
    ((3, 4, 5), ()),
    ((3, 4, 5), (1, 1, 5)),
    ((3, 4, 5), (3, 4, 1)),
    ((3, 4, 5), (3, 1, 5)),
    ((2, 3, 4, 5), (1, 3, 1, 5)),
    ((6,), (6,)),
]


@pytest.mark.parametrize("name", FLOATS + INTS)
def test_arithmetic_every_dtype_and_broadcast(generated, name):
    generated.need(name, "bool")
    rng = np.random.default_rng(0)
    for xs, ys in BROADCASTS:
        x, y = sample(name, xs, rng), sample(name, ys, rng)
        y = np.broadcast_to(y, y.shape if len(y.shape) == len(xs) else (1,) * (len(xs) - len(ys)) + ys).copy()
        every = xs == ys  # every op on full inputs; each broadcast pattern on add and lt
        for op, fn in (
            ("add", np.add),
            ("sub", np.subtract),
            ("mul", np.multiply),
            ("maximum", np.maximum),
            ("minimum", np.minimum),
        ):
            if every or op == "add":
                with np.errstate(all="ignore"):
                    want = fn(wide(x), wide(y))
                close(generated(op, x, y), np.asarray(want), name)
        for op, fn in (("lt", np.less), ("eq", np.equal), ("ge", np.greater_equal), ("ne", np.not_equal)):
            if every or op == "lt":
                np.testing.assert_array_equal(generated(op, x, y), fn(wide(x), wide(y)))
        c = rng.random(np.broadcast_shapes(x.shape, y.shape)) < 0.5
        np.testing.assert_array_equal(generated("where", c, x, y), np.where(c, x, y))
    x = sample(name, (4, 7), rng)
    np.testing.assert_array_equal(generated("neg", x), -x)
    np.testing.assert_array_equal(generated("copy", x), x)
    np.testing.assert_array_equal(generated("sign", x), np.sign(x))
    if name != "uint8":
        np.testing.assert_array_equal(generated("abs", x), np.abs(x))


@pytest.mark.parametrize("name", INTS)
def test_integers_wrap_and_floor_like_numpy(generated, name):
    generated.need(name)
    d = dt(name)
    info = np.iinfo(d)
    x = np.array([info.max, info.min, 7, -7 if d.kind == "i" else 7, 0, 5], d)
    y = np.array([1, 1, 2, 2, 3, 0], d) if d.kind == "u" else np.array([1, -1, -2, 2, -3, 0], d)
    with np.errstate(all="ignore"):
        for op, fn in (
            ("add", np.add),
            ("sub", np.subtract),
            ("mul", np.multiply),
            ("floor_divide", np.floor_divide),
            ("remainder", np.remainder),
        ):
            np.testing.assert_array_equal(generated(op, x, y), fn(x, y), err_msg=op)
        e = np.array([0, 1, 3, 2, 5, 1], d)
        np.testing.assert_array_equal(generated("pow", x, e), np.power(x, e, dtype=d))
        np.testing.assert_array_equal(generated("neg", x), np.negative(x))


@pytest.mark.parametrize("name", FLOATS)
def test_float_math_and_division(generated, name):
    generated.need(name)
    rng = np.random.default_rng(1)
    x = sample(name, (5, 6), rng)
    y = sample(name, (5, 6), rng)
    y[0, :3] = 0
    with np.errstate(all="ignore"):
        for op, fn in (("exp", np.exp), ("tanh", np.tanh), ("floor", np.floor), ("sin", np.sin)):
            close(generated(op, x), fn(wide(x)), name)
        close(generated("sqrt", np.abs(x)), np.sqrt(wide(np.abs(x))), name)
        for op, fn in (
            ("div", np.divide),
            ("floor_divide", np.floor_divide),
            ("remainder", np.remainder),
            ("pow", np.power),
        ):
            got, want = (
                generated(op, x if op != "pow" else np.abs(x), y),
                fn(wide(x if op != "pow" else np.abs(x)), wide(y)),
            )
            close(got, want, name)


CASTS = ["float32", "float64", "float16", "bfloat16", "int8", "int32", "int64", "uint8", "bool"]


@pytest.mark.parametrize("src", CASTS)
def test_cast_every_pair(generated, src):
    generated.need(src)
    rng = np.random.default_rng(2)
    x = sample(src, (3, 9), rng) if src != "bool" else rng.random((3, 9)) < 0.5
    if src in FLOATS:  # ties and the cases of the contract: -1.5 -> uint8 0, 300.7 -> 255, NaN -> 0
        x[0, :8] = np.array([-1.5, 300.7, 2.5, -0.0, np.nan, np.inf, -np.inf, -3.0e9]).astype(dt(src))
    for dst in [c for c in CASTS if c in generated.holds]:
        d = dt(dst)
        got = generated("cast", x, dtype=d)
        if dst == "bool":
            want = x != 0
        elif src in FLOATS and d.kind in "iu":  # truncate, saturate, NaN -> 0 (in Python ints)
            info = np.iinfo(d)
            want = np.array(
                [
                    0
                    if v != v
                    else max(info.min, min(info.max, int(v) if abs(v) < 1e300 else int(np.sign(v)) << 64))
                    for v in wide(x).astype(np.float64).reshape(-1).tolist()
                ],
                dtype=d,
            ).reshape(x.shape)
        else:
            want = wide(x).astype(d) if src in FLOATS else x.astype(d)
        assert got.dtype == d
        np.testing.assert_array_equal(wide(got), wide(want), err_msg=f"{src} -> {dst}")


def test_float16_and_bfloat16_round_once_to_nearest_even(generated):
    # float64 values just above a float16 tie: rounding through float32 first would tie to even
    x = np.array([1 + 2**-11 + 2**-40, 65519.0, 65520.0, 2**-25, 2**-25 + 2**-60, -3e-8, np.inf, np.nan])
    if "float64" not in generated.holds:
        pytest.skip(f"{generated.device} does not hold float64")
    with np.errstate(over="ignore"):
        for half in [h for h in ("float16", "bfloat16") if h in generated.holds]:
            want = x.astype(dt(half))
            np.testing.assert_array_equal(
                wide(generated("cast", x, dtype=dt(half))), wide(want), err_msg=half
            )


AXES = [(), (0,), (1,), (2,), (0, 2), (1, 2), (0, 1, 2)]


@pytest.mark.parametrize("name", FLOATS + INTS + ["bool"])
def test_reductions_over_any_axes(generated, name):
    generated.need(name)
    rng = np.random.default_rng(3)
    x = sample(name, (3, 4, 5), rng) if name != "bool" else rng.random((3, 4, 5)) < 0.5
    for axes in AXES:
        for keep in (False, True):
            for op, fn in (("max", np.max), ("min", np.min), ("sum", np.sum), ("prod", np.prod)):
                if name == "bool" and op in ("sum", "prod"):
                    continue
                src = x if op != "prod" or name in INTS else x * 0.5
                with np.errstate(all="ignore"):
                    want = fn(wide(src), axis=axes, keepdims=keep) if axes else src
                close(generated(op, src, axes=axes, keepdim=keep), np.asarray(want), name)
    for axis in range(3):
        for op, fn in (("argmax", np.argmax), ("argmin", np.argmin)):
            np.testing.assert_array_equal(generated(op, x, axis=axis, keepdim=False), fn(wide(x), axis=axis))


def test_max_and_argmax_see_nan_and_sums_wrap(generated):
    x = np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 2.0, 4.0, -1.0]], np.float32)
    np.testing.assert_array_equal(generated("max", x, axes=(1,), keepdim=False), np.max(x, axis=1))
    np.testing.assert_array_equal(generated("min", x, axes=(0,), keepdim=False), np.min(x, axis=0))
    np.testing.assert_array_equal(generated("argmax", x, axis=1, keepdim=False), np.argmax(x, axis=1))
    np.testing.assert_array_equal(generated("argmin", x, axis=1, keepdim=False), np.argmin(x, axis=1))
    big = np.full((3, 1000), 2**40, np.int64)
    np.testing.assert_array_equal(generated("sum", big, axes=(1,), keepdim=False), big.sum(axis=1))
    small = np.full((300,), 100, np.int8 if "int8" in generated.holds else np.uint8)
    np.testing.assert_array_equal(
        generated("sum", small, axes=(0,), keepdim=False), small.sum(dtype=small.dtype)
    )


def test_creation(generated):
    from conformance.reference import philox_uniform

    for name in [n for n in FLOATS + INTS + ["bool"] if n in generated.holds]:
        d = dt(name)
        v = True if name == "bool" else -3 if d.kind == "i" else 7
        np.testing.assert_array_equal(
            generated("full", shape=(2, 3), value=v, dtype=d), np.full((2, 3), v, d)
        )
    for name in [n for n in FLOATS + INTS if n in generated.holds]:
        d = dt(name)
        got = testing.run_primitive(
            "arange", [], {"start": 2, "step": 3, "dtype": d, "n": 9}, generated.device
        )[0].numpy()
        np.testing.assert_array_equal(got, (np.arange(9) * 3 + 2).astype(d))
    for d in [d for d in (np.float32, np.float64) if np.dtype(d).name in generated.holds]:
        got = generated("philox_uniform", shape=(3, 7), seed=2**40 + 5, offset=11, dtype=np.dtype(d))
        np.testing.assert_array_equal(got, philox_uniform((3, 7), 2**40 + 5, 11, d))


def test_public_ops_run_generated_with_autograd(generated):
    a = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    x = fw.to_tensor(a, stop_gradient=False, device=generated.device)
    y = (x * x + fw.exp(x)).sum()
    y.backward()
    xn = x.numpy()
    np.testing.assert_allclose(y.numpy(), (xn * xn + np.exp(xn)).sum(), rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), 2 * xn + np.exp(xn), rtol=1e-5)


# -- a deliberately broken build ------------------------------------------------------------
def test_a_broken_build_falls_back_with_a_warning_and_a_count():
    pytest.importorskip("oarlock_ccdev")
    import oarlock_ccdev as cc

    class BrokenCompiler(cc.CCCompiler):
        flags = (*cc.CCCompiler.flags, "-fno-such-flag-for-oarlock")  # the real compiler rejects it

    mod = types.ModuleType("oarlock_brokencc")

    @hookimpl
    def oarlock_register(registry):
        registry.add_runtime("brokencc", cc.CCRuntime)
        registry.add_compiler("brokencc", BrokenCompiler)
        for op, dtypes, fn in cc.KERNELS:
            registry.add_kernel(op, "brokencc", dtypes, fn)

    mod.oarlock_register = oarlock_register
    mod.CONTRACT = cc.CONTRACT
    if "brokencc" not in testing.registry().runtimes:
        fw.register_plugin(mod, name="brokencc")
    fw.reset_fallback_stats()
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = fw.to_tensor(a, device="brokencc")
        got = (x + x).numpy()
    np.testing.assert_array_equal(got, a + a)
    kinds = {type(w.message).__name__ for w in caught}
    assert "CompileWarning" in kinds and "FallbackWarning" in kinds, kinds
    assert compiler.primitive_stats().get("add[float32]@brokencc failed", 0) >= 1
    assert fw.fallback_stats().get("add@brokencc", 0) >= 1
    with pytest.raises(fw.KernelNotFoundError, match="strict"):
        fw.set_strict_kernels(True)
        try:
            (x + x).numpy()
        finally:
            fw.set_strict_kernels(False)


# -- CUDA C: no GPU here, so the source is only checked for C++ validity -------------------
_CUDA_EXTRA = """
#define __device__
static float __uint_as_float(unsigned) { return 0; }
static unsigned __float_as_uint(float) { return 0; }
using std::ldexp; using std::frexp; using std::nearbyint; using std::signbit; using std::isinf;
using std::fabs; using std::floor; using std::fmod; using std::copysign; using std::pow; using std::erf;
using std::tanh; using std::sin; using std::cos; using std::log; using std::ceil;
"""


def test_cuda_batches_are_valid_cpp(tmp_path):
    """The CUDA emitter shares the OpenCL emitter's code; until a GPU runs it, its batches
    (every family, halves, integers, reductions with NaN and index state) must be valid C++."""
    import shutil
    import subprocess

    from framework.compiler.emit import emitter
    from tests.test_compiler import _CUDA_SHIM

    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    progs = []
    for d in (np.float32, np.float64, np.float16, np.int8, np.int64, np.uint8, np.bool_):
        d = np.dtype(d)
        x = [((3, 4, 5), d), ((3, 1, 5), d)]
        for op in ("add", "floor_divide", "pow", "lt", "maximum"):
            out = np.dtype(np.bool_) if op == "lt" else d
            if d != np.bool_ or op in ("add", "maximum", "lt"):
                progs.append(gp.lower(op, x, (3, 4, 5), out, {})[0])
        for op in ("max", "argmax", "sum") if d != np.bool_ else ("max", "argmin"):
            attrs = {"axis": 1} if op.startswith("arg") else {"axes": (0, 2)}
            progs.append(gp.lower(op, x[:1], (4,), np.dtype(np.int64) if "arg" in op else d, attrs)[0])
        progs.append(gp.lower("cast", x[:1], (3, 4, 5), np.dtype(np.float16), {"dtype": np.float16})[0])
    progs.append(gp.lower("philox_uniform", [], (3, 7), np.dtype(np.float32), {"seed": 5, "offset": 1})[0])
    em = emitter("cuda")
    named = [(p, f"k{i}") for i, p in enumerate(progs)]
    src = tmp_path / "batch.cpp"
    src.write_text(_CUDA_SHIM + _CUDA_EXTRA + em.batch_source(named, "unused"))
    r = subprocess.run([cxx, "-fsyntax-only", "-std=c++17", str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:4000]
