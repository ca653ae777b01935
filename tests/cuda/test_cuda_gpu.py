"""Tests that need an NVIDIA GPU. Without one every test here is SKIPPED with the reason
``no CUDA device (...)``.

Kernels run through the registered entries (cupy, the device, the default stream) and are
compared with the same bodies run by numpy, which test_cuda_kernels_numpy.py checks against
independent references. ``OARLOCK_CUDA_ALL_DTYPES=1`` runs every registered dtype (slower:
cupy compiles one kernel per op and dtype on first use).
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
from cuda_marks import requires_cuda
from test_cuda_kernels_numpy import sample

import plugins.cuda as cuda_plugin
from adapter_api import KernelContext, OpArgumentError, OutOfMemoryError, Registry
from plugins.cuda import kernels as K
from plugins.cuda import philox

pytestmark = requires_cuda

BF16 = np.dtype(ml_dtypes.bfloat16)
_REGISTRY = Registry(plugin="cuda")
cuda_plugin.oarlock_register(_REGISTRY)

FAST_DTYPES = {np.dtype("float32"), BF16}
SOME_DTYPES = {np.dtype(d) for d in ("float16", "float64", "int32", "int64", "uint8", "bool")}
SOME_OPS = {
    "add",
    "mul",
    "eq",
    "lt",
    "where",
    "cast",
    "sum",
    "max",
    "argmax",
    "matmul",
    "gather",
    "scatter_add",
    "scatter",
    "full",
    "arange",
    "pad",
    "concat",
    "copy",
    "neg",
    "exp",
    "floor_divide",
    "remainder",
}


def _cases():
    full = os.environ.get("OARLOCK_CUDA_ALL_DTYPES") == "1"
    out = []
    for spec in K.KERNELS:
        for d in map(np.dtype, spec.dtypes):
            if spec.op == "philox_uniform":
                continue
            if full or d in FAST_DTYPES or (d in SOME_DTYPES and spec.op in SOME_OPS):
                out.append((spec.op, d))
    return out


def _float(d):
    return d.kind == "f" or d == BF16


def make_case(op, d):
    """(inputs as host arrays of d, attrs, output shape, output dtype)."""
    x = sample(d, (3, 4), positive=op in ("log", "sqrt", "rsqrt", "pow"), nonzero=op in ("div",))
    y = sample(d, (1, 4), nonzero=op in ("div", "floor_divide", "remainder"), positive=op == "pow")
    if op in K._FLOAT_UNARY or op in ("rsqrt", "erf", "neg", "abs", "sign", "floor", "ceil", "logical_not"):
        return [x], {}, x.shape, d
    if op in ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "floor_divide", "remainder"):
        return [x, y], {}, x.shape, d
    if op in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"):
        return [x, y], {}, x.shape, np.dtype(bool)
    if op == "where":
        return [sample(bool, (3, 1)), x, y], {}, x.shape, d
    if op == "cast":
        target = np.dtype("int32") if _float(d) else np.dtype("float32")
        return [x], {"dtype": target}, x.shape, target
    if op in ("sum", "prod", "max", "min"):
        return [x], {"axes": (1,), "keepdim": True}, (3, 1), d
    if op in ("argmax", "argmin"):
        return [x], {"axis": 0, "keepdim": False}, (4,), np.dtype(np.int64)
    if op == "matmul":
        return [x, sample(d, (4, 5))], {}, (3, 5), d
    if op == "copy":
        return [x], {}, x.shape, d
    if op == "permute":
        return [x], {"perm": (1, 0)}, (4, 3), d
    if op == "expand":
        return [y], {"shape": (3, 4)}, (3, 4), d
    if op == "slice":
        return [x], {"starts": (1, 0), "stops": (3, 4), "steps": (1, 2)}, (2, 2), d
    if op == "concat":
        return [x, y], {"axis": 0}, (4, 4), d
    if op == "pad":
        return [x], {"pads": ((1, 0), (0, 2)), "value": 1}, (4, 6), d
    if op == "gather":
        return [x, np.array([[2, 0], [1, 2]], np.int64)], {"axis": 0}, (2, 2, 4), d
    if op in ("scatter", "scatter_add"):
        index = np.array([1, 1, 3] if op == "scatter_add" else [3, 0, 1], np.int64)
        return [x, index, sample(d, (3, 3))], {"axis": 1}, x.shape, d
    if op == "full":
        return [], {"shape": (5, 2), "value": 1, "dtype": d}, (5, 2), d
    if op == "arange":
        return [], {"start": 1, "step": 2, "dtype": d}, (6,), d
    raise AssertionError(f"no GPU case for {op}")


def bits(a):
    return a.view(np.uint16) if a.dtype == BF16 else a


def to_device(runtime, a):
    a = np.ascontiguousarray(bits(np.asarray(a)))
    buf = runtime.allocate(0, max(a.nbytes, 1))
    runtime.copy_h2d(0, buf, 0, a, None)
    return runtime.view(buf, 0, a.shape, a.dtype)


def empty_device(runtime, shape, dtype):
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return runtime.view(runtime.allocate(0, max(nbytes, 1)), 0, shape, dtype)


def run_cuda(runtime, op, d, ins, attrs, shape, out_dtype):
    entry = _REGISTRY.kernels[(op, "cuda", d)]
    out = empty_device(runtime, shape, out_dtype)
    entry.fn(KernelContext(0, None, runtime), [out], [to_device(runtime, a) for a in ins], **attrs)
    host = np.empty(shape, np.uint16 if np.dtype(out_dtype) == BF16 else out_dtype)
    runtime.synchronize_stream(runtime.default_stream(0))
    host[...] = out.get()
    return host


def run_numpy(op, d, ins, attrs, shape, out_dtype):
    spec = next(s for s in K.KERNELS if s.op == op and d in map(np.dtype, s.dtypes))
    out = np.zeros(shape, np.uint16 if np.dtype(out_dtype) == BF16 else out_dtype)
    spec.body(np, [out], [bits(np.asarray(a)) for a in ins], **attrs)
    return out


@pytest.mark.parametrize("op,d", _cases(), ids=str)
def test_kernel_matches_numpy_body(runtime, op, d):
    ins, attrs, shape, odt = make_case(op, d)
    got = run_cuda(runtime, op, d, ins, attrs, shape, odt)
    want = run_numpy(op, d, ins, attrs, shape, odt)
    odt = np.dtype(odt)
    if odt == BF16:
        np.testing.assert_allclose(
            got.view(BF16).astype(np.float32), want.view(BF16).astype(np.float32), rtol=1e-2, atol=1e-2
        )
    elif odt.kind == "f":
        tol = 2e-3 if odt == np.float16 else 1e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)


# -- runtime --------------------------------------------------------------------------------


def test_properties(runtime):
    assert runtime.device_count() >= 1 and runtime.unavailable_reason is None
    p = runtime.properties(0)
    assert p.vendor == "NVIDIA" and p.name and p.total_memory > 2**30 and p.compute_units > 0
    assert p.extra["compute_capability"].count(".") == 1 and p.driver_version and p.runtime_version
    assert not runtime.own_pool  # the core's caching allocator pools tensor memory


def test_copies_sync_and_async(runtime):
    a = np.arange(1000, dtype=np.float32)
    buf = runtime.allocate(0, a.nbytes + 64)
    s = runtime.create_stream(0)
    runtime.memset(0, buf, 0, 0, a.nbytes + 64, s)
    runtime.copy_h2d(0, buf, 64, a, s, blocking=False)
    other = runtime.allocate(0, a.nbytes)
    runtime.copy_d2d(0, other, 0, buf, 64, a.nbytes, s, blocking=False)
    out = np.zeros_like(a)
    runtime.copy_d2h(0, out, other, 0, s, blocking=False)
    runtime.synchronize_stream(s)
    np.testing.assert_array_equal(out, a)
    head = np.ones(16, np.float32)
    runtime.copy_d2h(0, head, buf, 0, None)
    assert (head == 0).all()
    v = runtime.view(buf, 64 + 4 * 10, (5,), np.float32)
    np.testing.assert_array_equal(v.get(), a[10:15])
    with pytest.raises(OpArgumentError, match="does not fit"):
        runtime.view(buf, 64, (2000,), np.float32)
    runtime.free(0, buf)
    runtime.free(0, other)


def test_events_and_streams(runtime):
    s = runtime.create_stream(0)
    e0, e1 = runtime.create_event(0), runtime.create_event(0)
    runtime.record_event(e0, s)
    x = empty_device(runtime, (1 << 20,), np.float32)
    with s:
        x.fill(1.0)
    runtime.record_event(e1, s)
    runtime.stream_wait_event(runtime.default_stream(0), e1)
    runtime.synchronize_event(e1)
    assert runtime.query_event(e1) and runtime.query_stream(s)
    assert runtime.elapsed_ms(e0, e1) >= 0.0
    runtime.synchronize(0)


def test_out_of_memory_is_a_clear_error(runtime):
    with pytest.raises(
        OutOfMemoryError, match=r"^\[cuda\] out of memory on cuda:0, asked for 1125899906842624 bytes"
    ):
        runtime.allocate(0, 1 << 50)


def test_gather_out_of_range_raises_on_device(runtime):
    entry = _REGISTRY.kernels[("gather", "cuda", np.dtype("float32"))]
    x = to_device(runtime, np.zeros((4, 2), np.float32))
    idx = to_device(runtime, np.array([0, 4], np.int64))
    out = empty_device(runtime, (2, 2), np.float32)
    with pytest.raises(OpArgumentError, match="index 4 is out of range for axis 0 of size 4"):
        entry.fn(KernelContext(0, None, runtime), [out], [x, idx], axis=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "size,seed,offset", [(1, 0, 0), (5, 7, 3), (4099, 2**40 + 9, 2**32 - 1), (1 << 20, 1234, 0)]
)
def test_philox_bitwise_equal_to_reference(runtime, dtype, size, seed, offset):
    entry = _REGISTRY.kernels[("philox_uniform", "cuda", np.dtype(dtype))]
    out = empty_device(runtime, (size,), dtype)
    entry.fn(
        KernelContext(0, None, runtime),
        [out],
        [],
        shape=(size,),
        seed=seed,
        offset=offset,
        dtype=np.dtype(dtype),
    )
    runtime.synchronize(0)
    np.testing.assert_array_equal(out.get(), philox.philox_uniform_reference(np, size, seed, offset, dtype))


# -- compile access -------------------------------------------------------------------------


def test_compile_load_launch(runtime):
    from test_cuda_compiler import SCALE

    cc = cuda_plugin.CUDACompiler(runtime, 0)
    fn = cc.load(cc.compile(SCALE, "scale"), "scale")
    x = to_device(runtime, np.arange(1000, dtype=np.float32))
    cc.launch(fn, [x, np.float32(2.0), np.int64(1000)], (1000,), None, None)
    runtime.synchronize(0)
    np.testing.assert_array_equal(x.get(), 2 * np.arange(1000, dtype=np.float32))


# -- NCCL, one rank -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def comm(runtime):
    from cupy.cuda import nccl

    if not getattr(nccl, "available", True):
        pytest.skip("NCCL is not available (pip install 'nvidia-nccl-cu12>=2.18')")
    c = cuda_plugin.NCCLCommunicator(runtime, 0, 0, 1, cuda_plugin.NCCLCommunicator.unique_id())
    yield c
    c.destroy()


@pytest.mark.parametrize("op", ["sum", "avg", "max", "min", "prod"])
@pytest.mark.parametrize("dtype", ["float32", "int64", BF16], ids=str)
def test_nccl_single_rank_reductions(runtime, comm, op, dtype):
    a = sample(dtype, (8,))
    send, recv = to_device(runtime, a), empty_device(runtime, (8,), bits(a).dtype)
    comm.all_reduce(send, recv, op, None)
    runtime.synchronize(0)
    np.testing.assert_array_equal(recv.get(), bits(a))
    comm.reduce(send, recv, op, 0, None)
    comm.reduce_scatter(send, recv, op, None)
    runtime.synchronize(0)
    np.testing.assert_array_equal(recv.get(), bits(a))


def test_nccl_single_rank_data_movement(runtime, comm):
    a = np.arange(6, dtype=np.float32)
    send, recv = to_device(runtime, a), empty_device(runtime, (6,), np.float32)
    comm.broadcast(send, 0, None)
    comm.all_gather(send, recv, None)
    runtime.synchronize(0)
    np.testing.assert_array_equal(recv.get(), a)
    recv2 = empty_device(runtime, (6,), np.float32)
    comm.all_to_all(send, recv2, None)
    comm.group_start()
    comm.send(send, 0, None)
    comm.recv(recv, 0, None)
    comm.group_end()
    comm.barrier()
    runtime.synchronize(0)
    np.testing.assert_array_equal(recv2.get(), a)
    np.testing.assert_array_equal(recv.get(), a)


def test_graph_capture_replays_the_launched_kernels(runtime):
    cp = runtime._cupy(0)
    assert runtime.supports_graphs(0)
    s = runtime.create_stream(0)
    x = empty_device(runtime, (1024,), np.float32)
    y = empty_device(runtime, (1024,), np.float32)
    runtime.begin_capture(0, s)
    with s:
        cp.multiply(x, 2.0, out=y)
        cp.add(y, 1.0, out=y)
    g = runtime.end_capture(0, s)
    for v in (1.0, 3.0):  # the graph reads x where it was captured: new values each replay
        with s:
            x.fill(v)
        runtime.launch_graph(g, s)
        runtime.synchronize_stream(s)
        np.testing.assert_array_equal(cp.asnumpy(y), np.full(1024, 2 * v + 1, np.float32))
    runtime.destroy_graph(g)


def test_a_static_program_runs_as_one_cuda_graph():
    import framework as fw
    from framework import ir

    text = (
        "module @chain(%0: tensor<[s0, 64], float32, cuda>, %1: tensor<[64, 32], float32, cuda>) -> (tensor<[s0, 32], float32, cuda>) {\n"
        "  %2 = op.matmul(%0, %1) : tensor<[s0, 32], float32, cuda>\n"
        "  %3 = op.exp(%2) : tensor<[s0, 32], float32, cuda>\n"
        "  %4 = op.sum(%3) {axes = (1,), keepdim = true} : tensor<[s0, 1], float32, cuda>\n"
        "  %5 = op.div(%3, %4) : tensor<[s0, 32], float32, cuda>\n"
        "  builtin.return(%5)\n"
        "}\n"
    )
    ex = ir.Executor(ir.parse_program(text), "cuda", graphs=True)
    rng = np.random.default_rng(0)
    outs = []
    for _ in range(4):  # run 1: instruction list; run 2: capture + replay; then replays
        a = (rng.standard_normal((8, 64)) * 0.1).astype(np.float32)
        w = (rng.standard_normal((64, 32)) * 0.1).astype(np.float32)
        y = ex(fw.to_tensor(a, device="cuda"), fw.to_tensor(w, device="cuda"))[0]
        e = np.exp(a.astype(np.float64) @ w)
        outs.append((y, e / e.sum(1, keepdims=True)))
    stats = ex.memory_stats({"s0": 8})
    assert stats["graph"], stats["graph_off"]
    for y, want in outs:  # earlier outputs were copied out of the graph's buffers
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-6)
