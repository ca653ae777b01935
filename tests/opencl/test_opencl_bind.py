"""The OpenCL kernels' bind fast path (adapter_api's ``Binder``): a kernel run once with a
recording queue, then replayed as enqueues of kernel objects of its own whose arguments stay
set. Values are checked against numpy, on views at a non-zero offset (the harness's), run
twice and interleaved with other bound calls of the same OpenCL kernel."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from opencl_harness import PAD, assert_close

from adapter_api import OpArgumentError

pytest.importorskip("pyopencl")

import framework as fw  # noqa: E402


def _bound(h, op, outs, ins, dtype=None, **attrs):
    entry = h.kernel(op, dtype or ins[0].dtype)
    assert entry.bind is not None
    call = entry.bind(h.ctx, outs, ins, **attrs)
    assert call is not None, f"the binder of {op} declined"
    return call


CASES = [
    # op, inputs, output shape, attrs, numpy reference
    ("exp", [(5, 7)], (5, 7), {}, lambda a: np.exp(a)),
    ("add", [(4, 1, 6), (3, 1)], (4, 3, 6), {}, lambda a, b: a + b),
    ("mul", [(), (9,)], (9,), {}, lambda a, b: a * b),
    ("sum", [(6, 40)], (6,), {"axes": (1,)}, lambda a: a.sum(1)),
    ("max", [(3, 50, 4)], (3, 4), {"axes": (1,)}, lambda a: a.max(1)),
    ("matmul", [(2, 9, 13), (2, 13, 5)], (2, 9, 5), {}, lambda a, b: a @ b),
    (
        "matmul_t",
        [(3, 4, 16), (3, 64, 16)],
        (3, 4, 64),
        {"transpose_x": False, "transpose_y": True},
        lambda a, b: a @ np.swapaxes(b, -1, -2),
    ),
    ("permute", [(3, 4, 5)], (5, 3, 4), {"perm": (2, 0, 1)}, lambda a: a.transpose(2, 0, 1)),
    (
        "slice",
        [(6, 8)],
        (2, 3),
        {"starts": (1, 2), "stops": (5, 8), "steps": (2, 2)},
        lambda a: a[1:5:2, 2:8:2],
    ),
]


@pytest.mark.parametrize("op,shapes,out_shape,attrs,ref", CASES, ids=[c[0] for c in CASES])
def test_a_bound_kernel_equals_numpy_run_twice(h, op, shapes, out_shape, attrs, ref):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    out = h.empty(out_shape, np.float32)
    call = _bound(h, op, [out], [h.put(a) for a in arrays], **attrs)
    gc.collect()  # scratch buffers (matmul's panels, matmul_t's transposes) live with the call
    call()
    first = h.get(out)
    h.rt.memset(0, out.buffer, PAD, 0, out.nbytes, h.q)
    call()
    assert_close(first, ref(*arrays))
    np.testing.assert_array_equal(h.get(out), first)


def test_bound_calls_of_one_kernel_keep_their_own_arguments(h):
    """Two instructions of the same OpenCL kernel: each bound call has a kernel object of its
    own, so running them interleaved never reads the other's buffers."""
    a, b = np.arange(12, dtype=np.float32), np.full(12, 3.0, np.float32)
    ya, yb = h.empty((12,), np.float32), h.empty((12,), np.float32)
    ca = _bound(h, "neg", [ya], [h.put(a)])
    cb = _bound(h, "neg", [yb], [h.put(b)])
    for _ in range(2):
        cb()
        ca()
    np.testing.assert_array_equal(h.get(ya), -a)
    np.testing.assert_array_equal(h.get(yb), -b)


def test_bound_calls_are_cached_by_views_and_give_their_kernel_objects_back(h):
    """Binding the same views again returns the recorded call; a call dropped from the cache
    and by its holder gives its kernel object back for the next binding."""
    dev = h.rt.device(0)
    x, y = h.put(np.ones(8, np.float32)), h.empty((8,), np.float32)
    call = _bound(h, "sqrt", [y], [x])
    assert _bound(h, "sqrt", [y], [x]) is call
    other = _bound(h, "sqrt", [h.empty((8,), np.float32)], [x])
    assert other is not call
    key = dev.kernel_keys[id(dev.kernel("math", "float32", "u_sqrt"))]
    dev.bound.clear()
    dev.bound_scratch = 0
    idle = len(dev.kernel_pool.get(key, []))
    del call
    assert len(dev.kernel_pool[key]) == idle + 1
    again = _bound(h, "sqrt", [y], [x])  # the next binding of that kernel reuses it
    assert len(dev.kernel_pool[key]) == idle
    again()
    other()
    np.testing.assert_array_equal(h.get(y), np.ones(8, np.float32))


def test_a_binder_declines_what_the_kernel_rejects(h):
    """What the plain call rejects (it names the op) makes the binder decline: max over an
    empty axis; the same kernel binds a valid call."""
    entry = h.kernel("max", np.float32)
    empty = h.put(np.ones((0, 3), np.float32))
    assert entry.bind(h.ctx, [h.empty((3,), np.float32)], [empty], axes=(0,)) is None
    with pytest.raises(OpArgumentError, match=r"\[max\] reduction over an empty axis"):
        entry.fn(h.ctx, [h.empty((3,), np.float32)], [empty], axes=(0,))
    x = h.put(np.ones((2, 3), np.float32))
    assert entry.bind(h.ctx, [h.empty((2,), np.float32)], [x], axes=(1,)) is not None


def test_a_bound_gather_reports_a_bad_index_at_the_next_read(h):
    """A bound gather does not wait for the queue to check its indices: the next blocking
    read of that queue reports the bad index as an OpArgumentError naming the op."""
    x = h.put(np.arange(10, dtype=np.float32).reshape(5, 2))
    good, bad = h.put(np.array([4, 0], np.int64)), h.put(np.array([1, 7], np.int64))
    y = h.empty((2, 2), np.float32)
    call = _bound(h, "gather", [y], [x, good], axis=0)
    call()
    np.testing.assert_array_equal(h.get(y), [[8, 9], [0, 1]])
    _bound(h, "gather", [y], [x, bad], axis=0)()
    with pytest.raises(OpArgumentError, match=r"\[gather\] index 7 out of range for axis 0 of size 5"):
        h.get(y)
    call()  # the flag was cleared: the device goes on
    np.testing.assert_array_equal(h.get(y), [[8, 9], [0, 1]])


def _devices() -> list[str]:
    try:
        n = fw.device_count("opencl")
    except Exception:  # noqa: BLE001 — no plugin or no driver: the test is not collected
        n = 0
    return [f"opencl:{i}" for i in range(n)]


@pytest.mark.parametrize("device", _devices())
def test_a_static_program_runs_bound_on_each_opencl_device(device):
    """A to_static function with a transposed matmul, a gather and a reduction runs on
    bound calls only (no eager step), from new inputs each run, and equals numpy."""

    @fw.jit.to_static
    def step(ids, table, w):
        e = fw.gather(table, ids, axis=0)
        s = fw.matmul(e, w, transpose_y=True)
        return (s - s.max(axis=-1, keepdim=True)).exp().sum(axis=-1)

    rng = np.random.default_rng(1)
    table = rng.standard_normal((11, 8)).astype(np.float32)
    w = rng.standard_normal((6, 8)).astype(np.float32)
    tt, tw = fw.to_tensor(table, device=device), fw.to_tensor(w, device=device)
    for seed in range(3):
        ids = np.random.default_rng(seed).integers(0, 11, 5)
        got = step(fw.to_tensor(ids, device=device), tt, tw).numpy()
        s = table[ids] @ w.T
        np.testing.assert_allclose(got, np.exp(s - s.max(-1, keepdims=True)).sum(-1), rtol=1e-5)
    (plan,) = [p for cp in step._programs.values() for p in cp.executor._plans.values()]
    assert all(ins[1] is not None for ins in plan.instrs), "an eager step in the plan"
    assert not any(getattr(b, "func", None) is ins[0] for b, ins in zip(plan.bound, plan.instrs))


def test_a_small_host_copy_does_not_wait_and_owns_its_bytes(runtime):
    """copy_h2d of a few bytes enqueues without blocking; the host array can change at once."""
    src = np.arange(6, dtype=np.int64)
    buf = runtime.allocate(0, src.nbytes)
    runtime.copy_h2d(0, buf, 0, src, None)
    src[:] = -1
    out = np.empty(6, np.int64)
    runtime.copy_d2h(0, out, buf, 0, None)
    np.testing.assert_array_equal(out, np.arange(6))
    assert not runtime.device(0).inflight  # the blocking read drained the queue
    runtime.free(0, buf)
