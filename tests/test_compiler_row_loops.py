"""Row kernels in chunks (framework/compiler/emit/rows.py ``_RowLoops``): each reduction keeps one
partial result per lane of a chunk, the second pass prefetches the next row, and the vector
width (elements per chunk) is tuned per device and row length (tune.py). Every width gives
numpy's values: sums, products, max/min with NaN in a full chunk and in the tail, integers
that wrap, bool any/all, float16 rounded once; rows shorter than a chunk take the plain loop."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import framework as fw
import framework.nn.functional as F
from framework import compiler
from framework._src import device as _dev
from framework.compiler import eager, loop_ir, tune

ROWS = 5


def _rows_device(device: str) -> str:
    if not compiler.has_compile_access(device):
        pytest.skip(f"{device} has no compile access")
    if (
        eager.make_kernel(_program("float32", 64)[0], _comp(device).language, device_kind=_kind(device)).width
        is None
    ):
        pytest.skip(f"{device}: its kernels are not of the rows layout")
    return device


def _comp(device: str):
    return compiler.compiler_for(_dev.parse(device))


def _kind(device: str) -> str:
    return eager.device_kind(_dev.parse(device))


def _program(dtype: str, n: int) -> tuple[loop_ir.Program, list[str]]:
    """Every lane-kept reduction of a row in one pass and, for floats, ``x - max`` in a second."""
    dt = np.dtype(dtype)
    b = loop_ir.Builder()
    x = b.input(0, dt, True, True)
    kinds = ["max", "min"] if dt == np.bool_ else ["sum", "prod", "max", "min"]
    outs = [b.reduce(k, x) for k in kinds]
    col = [False] * len(outs)
    if dt.kind == "f":
        outs.append(b.binary("sub", x, outs[kinds.index("max")]))
        col.append(True)
        kinds.append("x - max")
    return loop_ir.Program("lanes", n, [(dt, True, True)], outs, col, b.nodes), kinds


def _data(dtype: str, n: int) -> np.ndarray:
    r = np.random.default_rng(n)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        x = r.random((ROWS, n)) < 0.9
        x[0] = True  # all
        x[1] = False  # none
        return x
    if dt.kind == "i":
        return r.integers(-1000, 1000, (ROWS, n)).astype(dt)
    x = (1.0 + 0.01 * r.standard_normal((ROWS, n))).astype(dt)  # products stay finite
    x[1, 33 % n] = np.nan  # inside a full chunk
    x[2, n - 1] = np.nan  # the tail
    x[3, 3] = 1.5  # a max in lane 3
    return x


def _reference(kind: str, x: np.ndarray) -> np.ndarray:
    if x.dtype == np.bool_:
        return x.any(1) if kind == "max" else x.all(1)
    if x.dtype.kind == "i":  # integers wrap, as in C
        if kind in ("sum", "prod"):
            return (np.sum if kind == "sum" else np.prod)(x, axis=1, dtype=x.dtype)
        return (np.max if kind == "max" else np.min)(x, axis=1)
    wide = x.astype(np.float64)
    if kind == "x - max":
        return (wide - wide.max(1, keepdims=True)).astype(x.dtype)
    return {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[kind](wide, axis=1).astype(x.dtype)


TOL = {"float32": 2e-6, "float64": 1e-13, "float16": 1e-3}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "bool"])
@pytest.mark.parametrize("n,width", [(37, 8), (100, 32), (7, 32), (64, 1)])
def test_every_width_gives_numpy_values(device, dtype, n, width):
    device = _rows_device(device)
    prog, kinds = _program(dtype, n)
    k = eager.make_kernel(prog, _comp(device).language, device_kind=_kind(device), width=width)
    assert k.width == width
    chunked = n >= width > 1
    assert ("_l[" in k.source) == chunked and (f"jj += {width})" in k.source) == chunked
    x = _data(dtype, n)
    outs = [
        fw.empty([ROWS, n] if c else [ROWS], dtype=o.dtype, device=device)
        for o, c in zip(prog.outputs, prog.out_col)
    ]
    k.launch(_dev.parse(device), [fw.to_tensor(x, device=device)], outs, ROWS)
    for kind, out in zip(kinds, outs):
        got, want = out.numpy(), _reference(kind, x)
        if np.dtype(dtype).kind == "f":
            np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype], err_msg=kind)
        else:
            np.testing.assert_array_equal(got, want, err_msg=kind)


def test_the_second_pass_prefetches_the_next_row_and_odd_rows_have_a_tail():
    x = fw.to_tensor(np.zeros((2, 4096), np.float32))
    prog = compiler.lower("softmax", x, axis=-1)
    wide = eager.make_kernel(prog, "c", width=32).source
    # max, exp and sum, normalise (in chunks too: it streams its row out chunk by chunk), and
    # the thread's last row's normalise after its loop (the others run during the next exp pass)
    passes = wide.split("jj += 32)")
    assert len(passes) == 5 and "oarlock_stream64_f32(out0 + r * N + jj, t0, 32);" in passes[3]
    deferred = passes[2].split("if (pend >= 0) {")[1]  # the pending row's: its names bound first
    assert (
        deferred.lstrip().startswith("const int64_t r = pend;")
        and "const float* restrict dst0 = prv0;" in deferred
    )
    assert "oarlock_stream64_f32(out0 + r * N + jj, t0, 32);" in deferred
    assert "__builtin_prefetch(in0 + (r + 1) * N + jj + 16, 0, 2);" in passes[2]
    assert "__builtin_prefetch" not in passes[1] and wide.count("__builtin_prefetch") == 2
    assert len(re.findall(r"float acc\d+_l\[32\];", wide)) == 2
    plain = eager.make_kernel(prog, "c", width=1).source
    assert "_l[" not in plain and "__builtin_prefetch" not in plain
    assert "oarlock_stream64_f32(out0 + r * N + jj, t0, 32);" in plain  # chunks of its own
    odd = eager.make_kernel(
        compiler.lower("softmax", fw.to_tensor(np.zeros((2, 100), np.float32)), axis=-1), "c"
    )
    assert "const int64_t jj = 96;" in odd.source and "for (int64_t j = jj; j < N; ++j)" in odd.source
    # rows under PIPELINE_ROW_MIN bytes keep their last pass in place
    assert "oarlock_stream" in odd.source and "pend" not in odd.source.split("#define N")[1]


def _softmax(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_the_width_is_tuned_once_per_row_length_and_kept_on_disk(fresh_tuning):
    compiles = compiler.cache_stats()["compiles"]
    a = np.random.default_rng(0).standard_normal((64, 2048)).astype(np.float32)
    np.testing.assert_allclose(F.softmax(fw.to_tensor(a)).numpy(), _softmax(a), rtol=1e-5, atol=1e-7)
    assert tune.STATS["measured"] == 1  # C launches have no work-group size to tune
    assert compiler.cache_stats()["compiles"] == compiles + len(tune.WIDTHS)  # a build per width
    (k, v), *_ = json.loads((fresh_tuning / "tuning.json").read_text())["entries"].items()
    entry = k.split("|")[1]
    assert k == tune.width_key(_comp("cpu").identity(), entry, 2048) and entry.startswith("softmax")
    assert v["width"] in tune.WIDTHS and v["default"] == 32 and set(v["ms"]) == {str(w) for w in tune.WIDTHS}
    b = a[:40] * 2  # another row count, same row length: the same choice
    np.testing.assert_allclose(F.softmax(fw.to_tensor(b)).numpy(), _softmax(b), rtol=1e-5, atol=1e-7)
    tune.reset()
    compiler.reset()  # as a new process: the choice comes from the file, the build from the cache
    compiles = compiler.cache_stats()["compiles"]
    np.testing.assert_allclose(F.softmax(fw.to_tensor(a)).numpy(), _softmax(a), rtol=1e-5, atol=1e-7)
    assert tune.STATS == {"measured": 0, "from_disk": 1} and compiler.cache_stats()["compiles"] == compiles


def test_tuning_off_builds_only_the_default_width(fresh_tuning, monkeypatch):
    monkeypatch.setenv("OARLOCK_TUNE", "0")
    a = np.random.default_rng(1).standard_normal((64, 2048)).astype(np.float32)
    compiles = compiler.cache_stats()["compiles"]
    np.testing.assert_allclose(F.softmax(fw.to_tensor(a)).numpy(), _softmax(a), rtol=1e-5, atol=1e-7)
    assert compiler.cache_stats()["compiles"] == compiles + 1 and tune.STATS["measured"] == 0
    assert not (fresh_tuning / "tuning.json").exists()
    src = compiler.generated_source("softmax", fw.to_tensor(a), axis=-1)
    assert "jj += 32)" in src  # the emitter's default


def test_each_width_is_its_own_cache_entry():
    from framework.compiler.cache import program_key

    prog = compiler.lower("softmax", fw.to_tensor(np.zeros((2, 256), np.float32)), axis=-1)
    comp = _comp("cpu")
    keys = {
        program_key(comp, k.source, k.entry, k.options)
        for k in (eager.make_kernel(prog, "c", width=w) for w in tune.WIDTHS)
    }
    assert len(keys) == len(tune.WIDTHS)
    assert len({eager.make_kernel(prog, "c", width=w).entry for w in tune.WIDTHS}) == 1


# -- exp of masked values on cpu (emit/masked_expf.h) -------------------------------------------
def _cpu_with_compiler() -> None:
    if not compiler.has_compile_access("cpu"):
        pytest.skip("cpu has no compile access (no C compiler)")


def test_a_causal_softmax_equals_numpy_masked_lanes_exact_zero_and_an_all_masked_row_nan():
    _cpu_with_compiler()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 40, 40)).astype(np.float32) * 4
    mask = np.tril(np.ones((40, 40), bool))
    mask[7] = False  # a row with nothing kept: max is -inf, every exp(-inf - -inf) is NaN

    def f(x, m):
        return F.softmax(fw.where(m, x, fw.full([1, 1, 1, 1], float("-inf"))), axis=-1)

    sf = fw.jit.to_static(f)
    for _ in range(2):
        got = sf(fw.to_tensor(x), fw.to_tensor(mask)).numpy()
    s = np.where(mask, x.astype(np.float64), -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(-1, keepdims=True))
        want = e / e.sum(-1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=0)  # NaNs in the same places
    masked = ~mask
    masked[7] = False
    assert (got[..., masked] == 0).all()  # exactly +0 where the mask drops a value
    assert np.isnan(got[..., 7, :]).all()


def test_exp_of_a_masked_fill_keeps_glibc_values_and_the_edges():
    _cpu_with_compiler()
    edge = np.array(
        [np.nan, np.inf, -np.inf, 88.8, 88.7, -87.2, -87.4, -100, -103.9, -104, -104.5, -1e30, 0, -0.0]
    )
    x = np.concatenate([edge, np.random.default_rng(1).uniform(-120, 89, 4096 - edge.size)]).astype(
        np.float32
    )
    keep = np.ones(x.size, bool)
    keep[::7] = False
    f = fw.jit.to_static(lambda x, m: fw.exp(fw.where(m, x, fw.full([1], float("-inf")))))
    for _ in range(2):
        got = f(fw.to_tensor(x.reshape(64, 64)), fw.to_tensor(keep.reshape(64, 64))).numpy().ravel()
    with np.errstate(over="ignore"):
        want = np.exp(np.where(keep, x, -np.inf).astype(np.float64))
    finite = np.isfinite(want) & (want < np.finfo(np.float32).max)
    np.testing.assert_allclose(got[finite], want[finite], rtol=4e-7, atol=2e-45)  # glibc: <= 2.5 ulp
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(
        np.isinf(got), ~finite & ~np.isnan(want)
    )
    assert (got[~keep] == 0).all() and not np.signbit(got[~keep]).any()


def _elementwise(n: int | None, weight: bool = False) -> loop_ir.Program:
    """tanh(x * s) * z and x + z (s a scalar input; with ``weight``, z is a (n,) vector)."""
    f32 = np.dtype(np.float32)
    b = loop_ir.Builder()
    x, s, z = b.input(0, f32, True, True), b.input(1, f32, False, False), b.input(2, f32, not weight, True)
    outs = [b.binary("mul", b.unary("tanh", b.binary("mul", x, s)), z), b.binary("add", x, z)]
    ins = [(f32, True, True), (f32, False, False), (f32, not weight, True)]
    return loop_ir.Program("flat", n, ins, outs, [True, True], b.nodes)


def test_an_elementwise_row_with_a_tail_runs_as_one_loop_over_every_element():
    _cpu_with_compiler()
    rows, n = 1601, 172  # 275372 elements: the OpenMP team runs it; 172 = 10 vectors and a tail of 12
    k = eager.make_kernel(_elementwise(n), "c")
    assert "for (int64_t i = 0; i < rows * N; ++i)" in k.source and "int64_t r = 0" not in k.source
    # a whole number of vectors, or a weight read along the row: row by row as before
    for prog in (_elementwise(64), _elementwise(n, weight=True)):
        src = eager.make_kernel(prog, "c").source
        assert "for (int64_t r = 0; r < rows; ++r)" in src and "rows * N; ++i" not in src
    rng = np.random.default_rng(3)
    x, z = (rng.standard_normal((rows, n)).astype(np.float32) * 3 for _ in range(2))
    x[5, n - 1], x[6, 0] = np.nan, np.inf  # a NaN in a row's tail, an inf at a row's start
    s = np.array([0.7], np.float32)
    outs = [fw.empty([rows, n], dtype="float32") for _ in range(2)]
    k.launch(_dev.parse("cpu"), [fw.to_tensor(a) for a in (x, s, z)], outs, rows)
    wide = x.astype(np.float64)
    np.testing.assert_allclose(outs[0].numpy(), np.tanh(wide * 0.7) * z, rtol=2e-6, atol=1e-6)
    np.testing.assert_array_equal(outs[1].numpy(), x + z)


def test_an_elementwise_group_of_a_row_length_known_only_when_run_gives_numpy_values():
    _cpu_with_compiler()
    from framework.ir import passes
    from framework.static import InputSpec

    before = passes.fusion_stats()["groups"]
    f = fw.jit.to_static(lambda a, b: F.silu(a) * b, input_spec=[InputSpec(["rows", "n"], "float32")] * 2)
    rng = np.random.default_rng(4)
    for shape in [(37, 172), (5, 9), (3, 64)]:
        a, b = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
        got = f(fw.to_tensor(a), fw.to_tensor(b)).numpy()
        w = a.astype(np.float64)
        np.testing.assert_allclose(got, w / (1 + np.exp(-w)) * b, rtol=2e-6, atol=1e-6)
    assert passes.fusion_stats()["groups"] > before


def test_a_kernel_updating_in_place_is_not_tuned_on_its_own_arguments(fresh_tuning):
    """Tuning launches a kernel several times on its arguments: a kernel whose output is its
    input's storage (an update in place) runs once, at the default width, and gives numpy's
    values; the same kernel on separate storage is measured (every width differs in source)."""
    dt = np.dtype(np.float32)
    b = loop_ir.Builder()
    x = b.input(0, dt, True, True)
    prog = loop_ir.Program(
        "inplace", 512, [(dt, True, True)], [b.binary("sub", x, b.reduce("max", x))], [True], b.nodes
    )
    k = eager.make_kernel(prog, "c")
    assert len({k.variant(w).source for w in tune.WIDTHS}) > 1
    xn = np.random.default_rng(3).standard_normal((512, 512)).astype(np.float32)
    want = xn - xn.max(1, keepdims=True)
    t = fw.to_tensor(xn)
    before = tune.STATS["measured"]
    k.launch(t.device, [t], [t], 512)
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-6, atol=1e-6)
    assert tune.STATS["measured"] == before
    out = fw.empty([512, 512])
    k.launch(out.device, [fw.to_tensor(xn)], [out], 512)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6, atol=1e-6)
    assert tune.STATS["measured"] > before
