"""The caching allocator and streams: a block freed while work queued on its stream may still
read it is not handed to another stream before that work is done (per-stream pools, an
event recorded at free time), with the cpu plugin's streams (worker threads: real async)."""

from __future__ import annotations

import threading

import numpy as np

import framework as fw
from framework._src import device as _dev

N = 4096  # 16 KiB of float32: a size class of its own in this test


def _gate(stream: fw.Stream) -> threading.Event:
    """Stall ``stream``: its worker waits on the returned event before later work runs."""
    gate = threading.Event()
    stream.handle.submit(gate.wait)
    return gate


def test_block_freed_on_a_busy_stream_is_not_reused_by_another_stream():
    a, b = fw.Stream("cpu"), fw.Stream("cpu")
    src = np.arange(N, dtype=np.float32)
    with fw.stream(a):
        x = fw.tensor(src)
        a.synchronize()
        gate = _gate(a)
        y = x * 2.0  # queued on a behind the gate: reads x when a runs again
        freed = x._block.handle
        del x  # freed while a's queued kernel still reads it
    with fw.stream(b):
        z = fw.full([N], 7.0)  # the same size on stream b; filled on b's worker at once
        b.synchronize()
    aliased = z._block.handle is freed
    gate.set()
    a.synchronize()
    assert not aliased, "stream b was given the block stream a's queued kernel still reads"
    np.testing.assert_array_equal(y.numpy(), src * 2.0)
    np.testing.assert_array_equal(z.numpy(), np.full(N, 7.0, np.float32))


def test_block_is_reused_across_streams_once_the_work_is_done():
    a, b = fw.Stream("cpu"), fw.Stream("cpu")
    alloc = _dev.allocator_of(_dev.parse("cpu"))
    alloc.empty_cache()  # no cached block of another test in the way
    with fw.stream(a):
        x = fw.tensor(np.ones(N + 1, np.float32))  # another size class than the test above
        y = x + 1.0
        freed = x._block.handle
        del x  # filed, with its event, at the next allocation (never inside the finaliser)
        _ = fw.zeros([1])
        a.synchronize()  # the work that read x is done: its free-time event has completed
    hits = alloc.num_cache_hits
    with fw.stream(b):
        z = fw.zeros([N + 1])
        b.synchronize()
    assert z._block.handle is freed
    assert alloc.num_cache_hits == hits + 1
    np.testing.assert_array_equal(y.numpy(), np.full(N + 1, 2.0, np.float32))


def test_same_stream_reuse_needs_no_wait():
    """On its own stream a freed block is reused at once: the stream runs in order."""
    a = fw.Stream("cpu")
    with fw.stream(a):
        x = fw.tensor(np.ones(N + 7, np.float32))
        gate = _gate(a)
        y = x * 3.0
        freed = x._block.handle
        del x
        z = fw.full([N + 7], 5.0)  # queued behind y on the same stream: safe to alias
        reused = z._block.handle is freed
        gate.set()
        a.synchronize()
    assert reused
    np.testing.assert_array_equal(y.numpy(), np.full(N + 7, 3.0, np.float32))
    np.testing.assert_array_equal(z.numpy(), np.full(N + 7, 5.0, np.float32))


def test_block_used_on_a_second_stream_waits_for_that_stream():
    """``record_stream``: a block read by work on another stream than its own is reused,
    on any stream, only once that work is done."""
    a, b = fw.Stream("cpu"), fw.Stream("cpu")
    alloc = _dev.allocator_of(_dev.parse("cpu"))
    alloc.empty_cache()  # no cached block of another test in the way
    with fw.stream(a):
        x = fw.tensor(np.ones(N + 3, np.float32))
        a.synchronize()
    gate = _gate(b)
    with fw.stream(b):
        y = x * 4.0  # b reads x, allocated on a, once the gate opens
    alloc.record_stream(x._block, b.handle)
    freed = x._block.handle
    del x
    with fw.stream(a):
        z = fw.full([N + 3], 9.0)  # a's own pool: but b still reads the block
        a.synchronize()
    aliased = z._block.handle is freed
    gate.set()
    b.synchronize()
    assert not aliased
    np.testing.assert_array_equal(y.numpy(), np.full(N + 3, 4.0, np.float32))
    with fw.stream(a):  # b's work is done: the block is back in a's pool
        w = fw.zeros([N + 3])
        a.synchronize()
    assert w._block.handle is freed
    np.testing.assert_array_equal(z.numpy(), np.full(N + 3, 9.0, np.float32))


def test_a_free_made_by_a_finaliser_never_calls_into_the_plugin():
    """Block.__del__ can run inside the plugin's own code (the garbage collector may run
    while a ThreadPoolExecutor's submit holds its lock to start a worker); recording the
    free-time event there re-entered that submit and hung. The free is filed, with its
    event, at the next allocation instead."""
    a, b = fw.Stream("cpu"), fw.Stream("cpu")
    alloc = _dev.allocator_of(_dev.parse("cpu"))
    calls: list[str] = []
    rt = alloc.runtime
    with fw.stream(a):
        x = fw.tensor(np.ones(N + 3, np.float32))
    with fw.stream(b):  # two streams used: frees from now on need events
        real = rt.record_event

        def counting(ev, stream):
            calls.append("record_event")
            return real(ev, stream)

        rt.record_event = counting
        try:
            freed = x._block.handle
            del x  # the finaliser: no plugin call
            assert calls == []
            z = fw.zeros([N + 3])  # the next allocation files it (its event recorded now)
            b.synchronize()
        finally:
            del rt.record_event
    assert calls, "the deferred free recorded no event"
    a.synchronize()
    assert z._block.handle is not freed or alloc._events.get(id(freed)) is None
