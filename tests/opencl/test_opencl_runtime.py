"""The OpenCL device runtime: devices, memory, copies, streams and events."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyopencl")

from adapter_api import DeviceError, DeviceProperties, KernelContext, OpArgumentError, OutOfMemoryError  # noqa: E402


def test_devices_and_properties(runtime):
    assert runtime.device_count() >= 1
    p = runtime.properties(0)
    assert isinstance(p, DeviceProperties)
    assert p.name and p.vendor and p.total_memory > 0 and p.compute_units > 0
    assert {"float32", "int64", "bool", "float16"} <= set(p.dtypes)
    assert p.driver_version and p.runtime_version
    for key in ("platform", "local_memory", "max_work_group_size", "fp64", "fp16", "max_alloc"):
        assert key in p.extra
    with pytest.raises(DeviceError, match=r"\[opencl\] no device with index 99"):
        runtime.properties(99)


def test_devices_are_ordered_gpus_first_then_pocl_then_by_name(runtime):
    from plugins.opencl import platforms

    keys = [(*platforms.sort_key(d.device.platform.name, rt_type(d)), d.name) for d in runtime.devices]
    assert keys == sorted(keys)
    kinds = [k[0] for k in keys]
    assert kinds == sorted(kinds)  # GPUs and accelerators (0) before CPUs (1)


def rt_type(d):
    import pyopencl as cl

    return "gpu" if d.device.type & (cl.device_type.GPU | cl.device_type.ACCELERATOR) else "cpu"


@pytest.mark.parametrize("nbytes", [0, 1, 3, 8, 1000, 4096 + 5, 1 << 20])
@pytest.mark.parametrize("offset", [0, 1, 8, 100])
def test_copy_round_trip(runtime, nbytes, offset):
    q = runtime.default_stream(0)
    buf = runtime.allocate(0, nbytes + offset)
    src = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    runtime.copy_h2d(0, buf, offset, src, q)
    other = runtime.allocate(0, nbytes + 3)
    runtime.copy_d2d(0, other, 3, buf, offset, nbytes, q)
    back = np.zeros(nbytes, np.uint8)
    runtime.copy_d2h(0, back, other, 3, q)
    np.testing.assert_array_equal(back, src)
    runtime.free(0, buf)
    runtime.free(0, other)


def test_typed_round_trip_and_memset(runtime):
    q = runtime.default_stream(0)
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    buf = runtime.allocate(0, x.nbytes)
    runtime.copy_h2d(0, buf, 0, x, q)
    runtime.memset(0, buf, 8, 0, 16, q)
    back = np.empty_like(x)
    runtime.copy_d2h(0, back, buf, 0, q)
    want = x.copy()
    want.reshape(-1)[1:3] = 0
    np.testing.assert_array_equal(back, want)
    scalar = np.empty((), np.float64)
    runtime.copy_d2h(0, scalar, buf, 24, q)
    assert scalar == 3.0


def test_async_copies_with_events(runtime):
    s = runtime.create_stream(0)
    n = 1 << 22
    src = np.random.default_rng(0).random(n).astype(np.float32)
    buf = runtime.allocate(0, src.nbytes)
    start, end = runtime.create_event(0), runtime.create_event(0)
    runtime.record_event(start, s)
    runtime.copy_h2d(0, buf, 0, src, s, blocking=False)
    back = np.zeros_like(src)
    runtime.copy_d2h(0, back, buf, 0, s, blocking=False)
    runtime.record_event(end, s)
    runtime.synchronize_event(end)
    assert runtime.query_event(end)
    np.testing.assert_array_equal(back, src)
    assert runtime.elapsed_ms(start, end) > 0
    runtime.synchronize_stream(s)
    assert runtime.query_stream(s)


def test_stream_wait_event_orders_work_across_streams(runtime, registry):
    """A kernel on stream b that waits on an event of stream a sees a's result."""
    a, b = runtime.create_stream(0), runtime.create_stream(0)
    n = 1 << 20
    x = runtime.view(runtime.allocate(0, 4 * n), 0, (n,), np.float32)
    y = runtime.view(runtime.allocate(0, 4 * n), 0, (n,), np.float32)
    full = registry.kernels[("full", "opencl", np.dtype(np.float32))].fn
    exp = registry.kernels[("exp", "opencl", np.dtype(np.float32))].fn
    full(KernelContext(0, a, runtime), [x], [], shape=(n,), value=0.0, dtype=np.dtype(np.float32))
    for _ in range(3):  # keep stream a busy for a while
        exp(KernelContext(0, a, runtime), [x], [x])
    ev = runtime.create_event(0)
    runtime.record_event(ev, a)
    runtime.stream_wait_event(b, ev)
    exp(KernelContext(0, b, runtime), [y], [x])
    out = np.empty(n, np.float32)
    runtime.copy_d2h(0, out, y.buffer, 0, b)
    want = np.float32(np.exp(np.exp(np.exp(np.exp(np.float32(0))))))
    np.testing.assert_allclose(out, want, rtol=1e-5)
    runtime.synchronize(0)


def test_unrecorded_event(runtime):
    ev = runtime.create_event(0)
    assert runtime.query_event(ev)
    runtime.synchronize_event(ev)
    runtime.stream_wait_event(runtime.default_stream(0), ev)
    with pytest.raises(OpArgumentError, match="never recorded"):
        runtime.elapsed_ms(ev, ev)


def test_zero_byte_allocation_and_too_large(runtime):
    buf = runtime.allocate(0, 0)
    assert buf.size >= 1
    runtime.free(0, buf)
    with pytest.raises(OutOfMemoryError, match=r"\[opencl\] allocating \d+ bytes"):
        runtime.allocate(0, 1 << 50)


def test_view_is_light_and_checks_alignment(runtime):
    buf = runtime.allocate(0, 64)
    v = runtime.view(buf, 8, (2, 3), np.float32)
    assert (v.buffer, v.offset, v.shape, v.dtype) == (buf, 8, (2, 3), np.dtype(np.float32))
    assert v.size == 6 and v.eoff == 2 and v.nbytes == 24
    with pytest.raises(OpArgumentError, match="not a multiple of the itemsize"):
        runtime.view(buf, 6, (2,), np.float32)
